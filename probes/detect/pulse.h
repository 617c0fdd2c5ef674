/* The pulse test: a throttle that deals a slice's budget at once (the
 * kernel's blk-throttle, behind a cgroup's io.max or blkio limits, a
 * unit's IOReadIOPSMax=, a container's --device-read-iops) completes the
 * same number of I/Os in every slice of 100 ms, in a burst, then nothing.
 * Read every half slice, one of the two ways of pairing the reads puts
 * each window's edges between bursts, and those windows all hold the same
 * count. Pure: fed the reads, no I/O and no clock of its own.
 * bench/README.md, "Why a cgroup's cap at 20000 IOPS is sometimes flat". */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One read of a device's counters. */
struct pulse_read {
	uint64_t monotonic_usec; /* when it was read */
	uint64_t ios;		 /* reads and writes completed, as /proc/diskstats counts them */
	bool is_before_sample;	 /* a sample was taken after this read, before the next one
				  * (ceiling_update()) */
};

struct pulse_params {
	double slice_sec;	  /* the throttle's slice (0.1 s); reads come every half of it */
	double test_sec;	  /* the windows judged: the last test_sec of reads (2 s) ... */
	double tolerance;	  /* ... each window's count within this share of their median (0.001) ... */
	double slack_ios;	  /* ... or this many I/Os (1) ... */
	double min_ios;		  /* ... the median at least this many I/Os (50) ... */
	double max_spacing_error; /* ... the reads' spacing off half a slice by at most this share of
				   * it (0.2) */
};

void pulse_params_default(struct pulse_params *ret);

/* The reads a test needs: test_sec at two a slice, and one more. */
size_t pulse_reads_needed(const struct pulse_params *p);

/* Whether the last pulse_reads_needed() of reads[0..n-1] (oldest first)
 * show a slice throttle: under one pairing of them, every window of two
 * half slices holds the same count (within tolerance, or slack_ios), of at
 * least min_ios. On success, *ret_iops is the I/Os completed over those
 * windows divided by the time they span. False when there are too few
 * reads or their spacing is off. */
bool pulse_test(const struct pulse_read *reads, size_t n, const struct pulse_params *p, double *ret_iops);
