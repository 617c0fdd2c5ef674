/* Whole-file access to procfs and sysfs, from a buffer read at once. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

/* The first buffer read_virtual_file() tries: most procfs and sysfs files
 * fit, and a buffer of max_size (16 MiB for mountinfo) would be a mapping
 * of its own whose free raises glibc's mmap threshold to that size, after
 * which every freed buffer below it stays in the heap. */
#define VIRTUAL_FILE_FIRST_SIZE ((size_t)16384)

ssize_t read_from_start(int fd, char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)done);

		if (n < 0) {
			return -errno;
		}
		if (n == 0) {
			break;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int read_virtual_file(const char *path, size_t max_size, char **ret_buf)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t size = max_size < VIRTUAL_FILE_FIRST_SIZE ? max_size : VIRTUAL_FILE_FIRST_SIZE;
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		return -errno;
	}
	for (;;) {
		char *b = realloc(buf, size + 1);

		if (!b) {
			return -ENOMEM;
		}
		buf = b;
		/* from the start; a file that does not fit is read again
		 * whole into a larger buffer, never continued from where the
		 * first buffer ended */
		n = read_from_start(fd, buf, size + 1);
		if (n < 0) {
			return (int)n;
		}
		if ((size_t)n <= size) {
			break;
		}
		if (size == max_size) {
			return -EFBIG;
		}
		size = size > max_size / 4 ? max_size : size * 4;
	}
	buf[n] = '\0';
	*ret_buf = TAKE_PTR(buf);
	return (int)n;
}

int read_one_line(const char *path, char *buf, size_t len)
{
	_cleanup_close_ int fd = -1;
	ssize_t n;

	if (len == 0) {
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		return -errno;
	}
	n = read(fd, buf, len - 1);
	if (n < 0) {
		return -errno;
	}
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) {
		buf[--n] = '\0';
	}
	return (int)n;
}

char *path_join(const char *a, const char *b)
{
	char *p;
	size_t la = strlen(a);

	while (la > 1 && a[la - 1] == '/') {
		la--;
	}
	while (*b == '/') {
		b++;
	}
	if (asprintf(&p, "%.*s/%s", (int)la, a, b) < 0) {
		return NULL;
	}
	return p;
}
