/* The shared ceiling's reads between samples: a cap that several devices
 * share deals the same total out differently from one fraction of a
 * second to the next, so over windows of 200 ms their sum is far flatter
 * than its parts, as it is over seconds (three volumes under a QEMU group
 * of 1500: the sum's windows wander by 0.3-1.8%, each member's by 2-10%;
 * bench/shared-reads/run). The
 * members of a demand that rose from quiet are read every 50 ms already
 * (the pulse test's reads, in each one's ceiling state, at the same
 * instants): evidence within the seconds, which lets the sum's onset test
 * judge fewer of them. Pure: fed the reads, no I/O and no clock of its
 * own. iopsd(8), "Shared ceilings"; bench/README.md, "What a group does
 * within a second". */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "pulse.h"

#define SHARED_FINE_MAX_MEMBERS 16
#define SHARED_FINE_MAX_WINDOWS 32

struct shared_fine_params {
	double onset_sec;	   /* the sum's onset test over this many seconds instead of its own
				    * (5 s; 0: never) when its members' reads agree: ... */
	double window_sec;	   /* ... their rates over windows of this long (0.2 s), each less
				    * the mean of its sample interval's ... */
	double test_sec;	   /* ... over the last test_sec of reads (3 s) ... */
	double max_variance_ratio; /* ... under one of two ways of cutting the reads into windows, the
				    * sum varying at most this share of its parts' variance (0.15) ... */
	double min_wander;	   /* ... the parts wandering by at least this share of their mean
				    * between them (0.01) */
};

void shared_fine_params_default(struct shared_fine_params *ret);

/* The reads a test needs: test_sec of them and one more, a read every
 * half of pp's slice. */
size_t shared_fine_reads_needed(const struct shared_fine_params *p, const struct pulse_params *pp);

/* Whether k members' reads (reads[j][0..n[j]-1], oldest first) show their
 * sum held: the last shared_fine_reads_needed() of each, taken at the same
 * instants, cut into windows of window_sec from the first read and again
 * from half a window on (a window spanning half or one and a half of it,
 * or with a sample inside, left out), and under one of the two cuts the
 * sum's variance over its windows at most max_variance_ratio of the sum of
 * its parts'. *ret_ratio is the lower
 * of the two ratios, INFINITY when the reads could not be judged. */
bool shared_fine_test(const struct pulse_read *const *reads, const size_t *n, size_t k,
		      const struct shared_fine_params *p, const struct pulse_params *pp, double *ret_ratio);
