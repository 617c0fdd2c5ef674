/* Single-read() access to procfs and sysfs. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"

int read_virtual_file(const char *path, size_t max_size, char **ret_buf)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		return -errno;
	}
	buf = malloc(max_size + 1);
	if (!buf) {
		return -ENOMEM;
	}
	n = read(fd, buf, max_size + 1);
	if (n < 0) {
		return -errno;
	}
	if ((size_t)n > max_size) {
		return -EFBIG;
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
