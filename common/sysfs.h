/* The one sysfs reader: a block device's directory and its attributes.
 * Every module that reads sysfs (the topology, md health, EBS NVMe, the
 * probe's block size, a [device] section's volume size) goes through it, so
 * that a device is found the same way everywhere. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The directory of block device `name` (a '/' in it spelled '!', as sysfs
 * does: cciss!c0d0): SYSFS/class/block/NAME (every disk and partition),
 * else SYSFS/block/NAME (disks only). 0, -ENOENT, or -ENAMETOOLONG. */
int sysfs_block_dir(const char *sysfs, const char *name, char *buf, size_t len);

/* The directory of the block device numbered major:minor:
 * SYSFS/dev/block/MAJ:MIN. -ENOENT for an anonymous device (major 0:
 * tmpfs, btrfs, overlayfs), -ENAMETOOLONG. */
int sysfs_devnum_dir(const char *sysfs, unsigned major, unsigned minor, char *buf, size_t len);

/* DIR/ATTR's first line into buf (read_one_line()); -errno, -ENAMETOOLONG. */
int sysfs_attr_read(const char *dir, const char *attr, char *buf, size_t len);
/* DIR/ATTR as an unsigned number. */
int sysfs_attr_u64(const char *dir, const char *attr, uint64_t *ret);
/* Whether DIR/ATTR exists. */
bool sysfs_attr_exists(const char *dir, const char *attr);
/* DIR/ATTR's first line, newly allocated; "" when unreadable; NULL without
 * memory. */
char *sysfs_attr_strdup(const char *dir, const char *attr);
