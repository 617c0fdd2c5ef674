/* The size of the volume a [device NAME] section names, from sysfs: NAME a
 * kernel device name (/sys/block/NAME/size) or a path on it (its device
 * number, /sys/dev/block/MAJ:MIN/size; a partition's disk's). */
#pragma once

#include <stdint.h>

/* Returns 0 and the size in bytes, or -errno (-ENOENT: no such device). */
int volume_size_bytes(const char *sysfs, const char *name, uint64_t *ret_bytes);
