/* `iopsd --once`'s "Disk stats": each target's disk (the whole disk of a
 * partition) and, for md/dm, its members, as /proc/diskstats deltas over
 * the run, the way fio's disk util thread measures them. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "fio_report.h"

struct once_disks;

/* Take the first sample (the window starts now). NULL when the sampler
 * cannot start (no diskstats): the report then has no disks, as fio's
 * on a filesystem without one. */
struct once_disks *once_disks_start(const struct config *cfg, const char *procfs, const char *sysfs);
/* End the window at the last 250-ms tick taken by `end_usec` (CLOCK_MONOTONIC:
 * when the run's I/O ended; 0, or no tick by then: now) and fill *ret
 * (malloc'd, the caller frees it) with the targets' disks, each md/dm
 * followed by its members. Returns the count; frees `d`. */
size_t once_disks_finish(struct once_disks *d, const struct config *cfg, uint64_t end_usec,
			 struct fio_disk **ret);
/* Which of n ticks (their CLOCK_MONOTONIC times) ends a window at end_usec:
 * the latest at or before it; SIZE_MAX when none is, or end_usec is 0. */
size_t once_disks_pick(const uint64_t *tick_usec, size_t n, uint64_t end_usec);
