/* Per-direction ceilings: a device's reads and its writes each watched by
 * a plateau detector of their own (ceiling.h), as if each were a device,
 * and the verdict of ceiling_resource.h over them and the device's total:
 * separate read and write caps flagged each with its estimate (and no
 * total claimed), a throughput cap told from the IOPS it implies, the
 * declared read/write limits' ratios and seconds at the limit, and the
 * provider-counted IOPS where the I/O unit is known. Pure: fed one
 * interval at a time. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "ceiling.h"
#include "ceiling_resource.h"
#include "device_limits.h"

struct ceiling_dir {
	struct ceiling_state read, write;
	double at_ceiling_read_sec, at_ceiling_write_sec;	      /* declared read/write IOPS limits */
	double at_ceiling_read_bytes_sec, at_ceiling_write_bytes_sec; /* read/write throughput limits */
	/* the last verdict that named a resource, kept as estimates are kept
	 * while the load is away, until another names a different one */
	struct ceiling_verdict last;
	double last_read_estimate, last_write_estimate;
};

struct ceiling_dir_result {
	struct ceiling_verdict verdict; /* the last one that named a resource (see struct ceiling_dir) */
	double read_iops_estimate, write_iops_estimate; /* 0: none */
	double average_io_bytes;			/* of the interval, both directions; 0 when idle */
	double provider_iops;	 /* I/Os weighted by size in units; NAN without a unit */
	double iops_limit_ratio; /* against iops_limit, in units where known; NAN without a limit */
	double read_iops_limit_ratio, write_iops_limit_ratio;	  /* NAN without a limit */
	double at_ceiling_read_seconds, at_ceiling_write_seconds; /* counters */
	/* against read_throughput_limit, write_throughput_limit (bytes/s) */
	double read_throughput_limit_ratio, write_throughput_limit_ratio; /* NAN without a limit */
	double at_ceiling_read_throughput_seconds, at_ceiling_write_throughput_seconds;
};

void ceiling_dir_init(struct ceiling_dir *cd);

/* Feed interval `r` of a device whose total detector gave `total` (this
 * interval's ceiling_update), with its effective limits `lim` (NULL: none)
 * and the ratio counted as at the limit, and fill *ret. */
void ceiling_dir_update(struct ceiling_dir *cd, const struct ceiling_params *p,
			const struct device_limits *lim, double threshold, const struct device_rates *r,
			const struct device_ceiling *total, struct ceiling_dir_result *ret);
