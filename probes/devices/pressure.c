/* /proc/pressure/io. */
#include "pressure.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"

#define PRESSURE_BUF_SIZE 512

/* "total=N" in the line that starts at `line` (up to its newline). */
static bool line_total(const char *line, uint64_t *ret)
{
	const char *eol = strchr(line, '\n');
	const char *t = strstr(line, " total=");
	unsigned long long v;
	char *end;

	if (!t || (eol && t > eol)) {
		return false;
	}
	t += strlen(" total=");
	if (*t < '0' || *t > '9') {
		return false;
	}
	errno = 0;
	v = strtoull(t, &end, 10);
	if (errno != 0 || (*end != '\0' && *end != '\n' && *end != ' ')) {
		return false;
	}
	*ret = v;
	return true;
}

int pressure_parse(const char *buf, struct pressure_io *ret)
{
	struct pressure_io p = {0};
	bool has_some = false;

	for (const char *line = buf; line && *line;) {
		if (strncmp(line, "some ", 5) == 0) {
			has_some = line_total(line, &p.some_total_usec);
		} else if (strncmp(line, "full ", 5) == 0) {
			line_total(line, &p.full_total_usec);
		}
		line = strchr(line, '\n');
		if (line) {
			line++;
		}
	}
	if (!has_some) {
		return -EINVAL;
	}
	p.available = true;
	*ret = p;
	return 0;
}

static bool is_absent(int err)
{
	return err == ENOENT || err == EOPNOTSUPP || err == ENOTSUP || err == ENOTDIR;
}

int pressure_read(const char *procfs, int *fd, struct pressure_io *ret)
{
	char buf[PRESSURE_BUF_SIZE];
	ssize_t n;

	if (*fd < 0) {
		_cleanup_free_ char *path = path_join(procfs, "pressure/io");

		if (!path) {
			return -ENOMEM;
		}
		*fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (*fd < 0) {
			if (is_absent(errno)) {
				*ret = (struct pressure_io){0};
				return 0;
			}
			return -errno;
		}
	}
	n = pread(*fd, buf, sizeof(buf) - 1, 0);
	if (n < 0) {
		int err = errno;

		close(*fd);
		*fd = -1;
		if (is_absent(err)) {
			*ret = (struct pressure_io){0};
			return 0;
		}
		return -err;
	}
	buf[n] = '\0';
	if (pressure_parse(buf, ret) < 0) {
		*ret = (struct pressure_io){0};
	}
	return 0;
}
