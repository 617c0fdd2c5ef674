/* `iopsd --once`'s "Disk stats": each target's disk (the whole disk of a
 * partition) and, for md/dm, its members, as /proc/diskstats deltas over
 * the run, the way fio's disk util thread measures them. */
#pragma once

#include <stddef.h>

#include "config.h"
#include "fio_report.h"

struct once_disks;

/* Take the first sample (the window starts now). NULL when the sampler
 * cannot start (no diskstats): the report then has no disks, as fio's
 * on a filesystem without one. */
struct once_disks *once_disks_start(const struct config *cfg, const char *procfs, const char *sysfs);
/* Take the second sample and fill *ret (malloc'd, the caller frees it)
 * with the targets' disks, each md/dm followed by its members. Returns the
 * count; frees `d`. */
size_t once_disks_finish(struct once_disks *d, const struct config *cfg, struct fio_disk **ret);
