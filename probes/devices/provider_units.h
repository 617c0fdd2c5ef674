/* I/Os as a provider counts them: each I/O larger than the provider's unit
 * (256 KiB on EBS SSD volumes, 1 MiB on HDD ones; QEMU's
 * throttling.iops-size) counts as its size in units. Pure. */
#pragma once

#include <stdint.h>

/* The units `ios` I/Os of `bytes` together count for, in one direction over
 * one interval (diskstats' completions and sectors x 512): each I/O counts
 * max(1, size / unit), which from the totals is max(ios, bytes / unit),
 * exact when every I/O of the interval is on the same side of the unit
 * (iopsd(8), PROVIDER UNITS). unit 0: no unit, the I/Os themselves. */
double provider_units(double ios, double bytes, uint64_t unit);

/* Reads and writes together: each direction weighted on its own (a second
 * of 4 KiB reads and 1 MiB writes is not one of 516 KiB I/Os). */
double provider_units_rw(double read_ios, double read_bytes, double write_ios, double write_bytes,
			 uint64_t unit);
