/* A volume's size in bytes from sysfs (the 512-byte sectors of "size"). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fileio.h"
#include "macro.h"
#include "volume_size.h"

static int read_sectors(const char *path, uint64_t *ret_bytes)
{
	char buf[32], *end;
	unsigned long long v;
	int r = read_one_line(path, buf, sizeof(buf));

	if (r < 0) {
		return r;
	}
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf || *end || v > UINT64_MAX / 512) {
		return -EINVAL;
	}
	*ret_bytes = (uint64_t)v * 512;
	return 0;
}

/* The disk of a partition (its "partition" attribute, then "..") or the
 * device itself. */
static int size_of_devnum(const char *sysfs, unsigned maj, unsigned min, uint64_t *ret_bytes)
{
	char rel[96];
	_cleanup_free_ char *dir = NULL, *part = NULL, *disk = NULL;
	struct stat st;

	snprintf(rel, sizeof(rel), "dev/block/%u:%u", maj, min);
	dir = path_join(sysfs, rel);
	part = dir ? path_join(dir, "partition") : NULL;
	disk = dir ? path_join(dir, stat(part ? part : "", &st) == 0 ? "../size" : "size") : NULL;
	if (!disk) {
		return -ENOMEM;
	}
	return read_sectors(disk, ret_bytes);
}

int volume_size_bytes(const char *sysfs, const char *name, uint64_t *ret_bytes)
{
	char rel[96];
	_cleanup_free_ char *path = NULL;
	struct stat st;

	if (name[0] == '/') {
		if (stat(name, &st) < 0) {
			return -errno;
		}
		if (S_ISBLK(st.st_mode)) {
			return size_of_devnum(sysfs, major(st.st_rdev), minor(st.st_rdev), ret_bytes);
		}
		return size_of_devnum(sysfs, major(st.st_dev), minor(st.st_dev), ret_bytes);
	}
	if (strchr(name, '/') || snprintf(rel, sizeof(rel), "block/%s/size", name) >= (int)sizeof(rel)) {
		return -EINVAL;
	}
	path = path_join(sysfs, rel);
	if (!path) {
		return -ENOMEM;
	}
	return read_sectors(path, ret_bytes);
}
