/* Burst buckets found without a declared model: a volume that runs at a
 * higher rate from the start of a demand and then drops, under the same
 * demand, to a lower level it holds (a gp2/RDS bucket, QEMU's
 * iops-total-max running dry). The tracker learns the burst rate, the base
 * rate, the bucket size and when it ran out, then runs the bucket it
 * learned, so that a later burst is known for what it is. Pure: fed one
 * sample at a time by the ceiling module. iopsd(8), BURST BUCKETS. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct burst_params {
	double drop_ratio;	    /* a burst ends in a drop below (1 - this) of its rate (0.2) */
	unsigned settle_samples;    /* ... to a level held this many samples (5) */
	double settle_tolerance;    /* ... each within this share of their mean (0.02) */
	unsigned min_burst_samples; /* a burst lasts at least this many samples (10) */
	unsigned calm_samples;	    /* samples without requests waiting that end a demand (3) */
	unsigned give_up_samples;   /* lower samples after which the demand changed, no burst (30) */
	double size_tolerance;	    /* request size before and after within this share (0.25) */
};

void burst_params_default(struct burst_params *ret);

/* One sample as the tracker sees it. */
struct burst_sample {
	double interval_sec;
	double iops;
	double bytes_per_sec;
	bool is_queueing; /* requests waiting, device busy (ceiling.h) */
	bool has_demand;  /* requests waiting, busy or not (a guest short of CPU leaves
			   * its device idle now and then with requests queued) */
};

#define BURST_RECENT_MAX 16

/* What was learned; is_known false until a burst was seen to run out. */
struct burst_model {
	bool is_known;
	double burst_iops;	   /* the rate of the burst */
	double base_iops;	   /* the level it settled to: credits come back at this rate */
	double base_bytes_per_sec; /* the throughput of that level */
	double credits;		   /* bucket size: (burst - base) x the burst's length */
	double balance;		   /* credits now, as the learned bucket runs */
	double duration_sec;	   /* length of the last burst */
	uint64_t exhausted_usec;   /* when it ran out (CLOCK_REALTIME), 0 when unknown */
};

struct burst_tracker {
	struct burst_sample recent[BURST_RECENT_MAX]; /* latest last */
	unsigned n_recent;
	bool is_in_demand;   /* a demand runs (queueing, with at most calm_samples gaps) */
	bool is_first_phase; /* the level held since the demand began */
	bool is_done;	     /* nothing more to learn in this demand */
	unsigned n_calm, n_demand, n_low, n_high;
	double start_balance;		      /* the learned bucket when the demand began */
	double high_n, high_iops, high_bytes; /* sums over the first phase's samples */
	double phase_sec, phase_ios;	      /* time and I/Os since the demand began */
	double high_end_sec, high_end_ios;    /* ... up to the last sample of the first phase */
	struct burst_model model;
};

/* Feed one sample that ends at realtime `now_usec` (0: unknown). Returns
 * true when a burst was just seen to run out (the model is then updated and
 * the device sits at model.base_iops). */
bool burst_tracker_update(struct burst_tracker *bt, const struct burst_params *p,
			  const struct burst_sample *s, uint64_t now_usec);

/* Whether a rate of `iops` now is the burst of the learned bucket: near
 * the burst rate and above the base, while the learned bucket has credits
 * or while a demand that began at the burst rate has not dropped yet (the
 * bucket refilled faster than learned), for up to twice the burst's learned
 * length and 10 s. */
bool burst_tracker_is_bursting(const struct burst_tracker *bt, double iops);
