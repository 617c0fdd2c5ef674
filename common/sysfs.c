/* The one sysfs reader. See sysfs.h. */
#include "sysfs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "units.h"

int sysfs_block_dir(const char *sysfs, const char *name, char *buf, size_t len)
{
	char sname[NAME_MAX + 1];

	snprintf(sname, sizeof(sname), "%s", name);
	for (char *p = sname; *p; p++) {
		if (*p == '/') {
			*p = '!';
		}
	}
	if ((size_t)snprintf(buf, len, "%s/class/block/%s", sysfs, sname) >= len) {
		return -ENAMETOOLONG;
	}
	if (access(buf, F_OK) == 0) {
		return 0;
	}
	if ((size_t)snprintf(buf, len, "%s/block/%s", sysfs, sname) >= len) {
		return -ENAMETOOLONG;
	}
	return access(buf, F_OK) == 0 ? 0 : -ENOENT;
}

int sysfs_devnum_dir(const char *sysfs, unsigned major, unsigned minor, char *buf, size_t len)
{
	if (major == 0) {
		return -ENOENT;
	}
	if ((size_t)snprintf(buf, len, "%s/dev/block/%u:%u", sysfs, major, minor) >= len) {
		return -ENAMETOOLONG;
	}
	return 0;
}

int sysfs_attr_read(const char *dir, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, attr) >= sizeof(path)) {
		return -ENAMETOOLONG;
	}
	return read_one_line(path, buf, len);
}

int sysfs_attr_u64(const char *dir, const char *attr, uint64_t *ret)
{
	char buf[32];
	int r;

	r = sysfs_attr_read(dir, attr, buf, sizeof(buf));
	return r < 0 ? r : parse_uint64(buf, ret);
}

bool sysfs_attr_exists(const char *dir, const char *attr)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, attr) >= sizeof(path)) {
		return false;
	}
	return access(path, F_OK) == 0;
}

char *sysfs_attr_strdup(const char *dir, const char *attr)
{
	char buf[PATH_MAX];

	if (sysfs_attr_read(dir, attr, buf, sizeof(buf)) < 0) {
		buf[0] = '\0';
	}
	return strdup(buf);
}
