/* Where a probe target lives (a directory or file: the device of its
 * filesystem; a raw device path: that device), from a topology. */
#pragma once

#include <sys/types.h>

#include "topology.h"

/* The device that holds `target`: by stat() first (a device node's st_rdev,
 * else the filesystem's st_dev), then by mountinfo (resolving symlinks when
 * the path exists here) for anonymous devices and paths that do not exist
 * yet. NULL when unknown, or when target or t is NULL. */
const struct topology_device *targets_device(const struct topology *t, const char *target);

/* Place a probe target: its device's name into ret_name
 * (DISKSTATS_NAME_MAX bytes) and, in *ret_disk, the device number of its
 * whole disk (the disk of a partition, the device itself otherwise). A
 * target on a filesystem without a block device (tmpfs, overlayfs) gets ""
 * and the filesystem's number. -ENODEV when the topology does not know it
 * (yet). */
int targets_place(const struct topology *t, const char *target, char *ret_name, dev_t *ret_disk);
