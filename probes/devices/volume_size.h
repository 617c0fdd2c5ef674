/* The size of the volume a [device NAME] section names, from sysfs: NAME a
 * kernel device name (/sys/block/NAME/size) or a path on it (its device
 * number, /sys/dev/block/MAJ:MIN/size; a partition's disk's). */
#pragma once

#include <stdint.h>

/* Returns 0 and the size in bytes, or -errno (-ENOENT: no such device, or
 * a partition's kernel name). */
int volume_size_bytes(const char *sysfs, const char *name, uint64_t *ret_bytes);
/* The same for the device numbered major:minor (SYSFS/dev/block/MAJ:MIN):
 * a partition's disk's size; -ENOENT for an anonymous device (major 0). */
int volume_size_bytes_devnum(const char *sysfs, unsigned major, unsigned minor, uint64_t *ret_bytes);
