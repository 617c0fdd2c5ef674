/* A volume's size in bytes from sysfs (the 512-byte sectors of "size"),
 * read through the one sysfs reader (common/sysfs.h). */
#include "volume_size.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "sysfs.h"

/* DIR/ATTR, in sectors, as bytes. */
static int read_sectors(const char *dir, const char *attr, uint64_t *ret_bytes)
{
	uint64_t v;
	int r = sysfs_attr_u64(dir, attr, &v);

	if (r < 0) {
		return r;
	}
	if (v > UINT64_MAX / 512) {
		return -EINVAL;
	}
	*ret_bytes = v * 512;
	return 0;
}

int volume_size_bytes_devnum(const char *sysfs, unsigned major, unsigned minor, uint64_t *ret_bytes)
{
	char dir[PATH_MAX];
	int r = sysfs_devnum_dir(sysfs, major, minor, dir, sizeof(dir));

	if (r < 0) {
		return r;
	}
	/* a partition's volume is its disk, the directory above */
	return read_sectors(dir, sysfs_attr_exists(dir, "partition") ? "../size" : "size", ret_bytes);
}

int volume_size_bytes(const char *sysfs, const char *name, uint64_t *ret_bytes)
{
	char dir[PATH_MAX];
	struct stat st;
	int r;

	if (name[0] == '/') {
		if (stat(name, &st) < 0) {
			return -errno;
		}
		if (S_ISBLK(st.st_mode)) {
			return volume_size_bytes_devnum(sysfs, major(st.st_rdev), minor(st.st_rdev),
							ret_bytes);
		}
		return volume_size_bytes_devnum(sysfs, major(st.st_dev), minor(st.st_dev), ret_bytes);
	}
	if (strchr(name, '/')) {
		return -EINVAL;
	}
	r = sysfs_block_dir(sysfs, name, dir, sizeof(dir));
	if (r < 0) {
		return r;
	}
	/* a kernel name names a whole disk, as SYSFS/block lists them */
	if (sysfs_attr_exists(dir, "partition")) {
		return -ENOENT;
	}
	return read_sectors(dir, "size", ret_bytes);
}
