/* A ceiling shared by several devices that nobody declared: an instance's
 * EBS limit (EC2 "EBS-optimized" bandwidth and IOPS), a QEMU throttle group,
 * the one disk under several loop files. Each device sits below its own cap
 * while the sum of the devices under load is flat. Pure: fed the devices'
 * ceiling states once per sample. iopsd(8), SHARED CEILINGS. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "ceiling.h"
#include "config.h"
#include "device.h"
#include "diskstats.h"
#include "shared_fine.h"

#define SHARED_CEILING_MAX_GROUPS  4
#define SHARED_CEILING_MAX_MEMBERS 16

struct shared_ceiling_params {
	double max_variance_ratio;	 /* the sum varies at most this share of its parts' variance (0.25) */
	double onset_sec;		 /* the onset test: the last onset_sec (7 s; 0: none) of a
					  * demand that rose from quiet (ceiling_params' onset_*) ... */
	double onset_tolerance;		 /* ... the sum's seconds all within this share of their
					  * median (0.01) ... */
	double onset_max_variance_ratio; /* ... and varying at most this share of its parts' (0.03) */
	double held_below;		 /* a member held below this share of what it is known to do (0.87) */
	unsigned min_members;		 /* devices that must queue together (2) */
	struct shared_fine_params fine;	 /* the onset test over fewer seconds, when the members'
					  * reads between samples show the sum held (shared_fine.h) */
};

void shared_ceiling_params_default(struct shared_ceiling_params *ret);

/* One candidate device of a sample: a whole disk (partitions, md, dm and
 * loop devices count their I/O again). */
struct shared_ceiling_device {
	const char *name;
	const struct ceiling_state *st;
	double known_iops; /* what it is known to do on its own: its declared iops_limit,
			    * else its highest ceiling found; 0 when unknown */
};

struct shared_ceiling_group {
	char names[SHARED_CEILING_MAX_MEMBERS][DISKSTATS_NAME_MAX]; /* sorted, n_members of them */
	unsigned n_members;
	double iops_estimate;	     /* the level of their flat sum */
	double iops;		     /* their sum over the last interval */
	bool is_throttled;	     /* the sum holds the level with requests waiting */
	enum ceiling_stage found_by; /* the test that found the level: onset or window */
	bool by_reads;		     /* the onset test over fine.onset_sec, the members' reads between
				      * samples showing the sum held (shared_fine.h) */
	unsigned n_above;	     /* samples in a row the sum did more */
	/* the bucket learned from the candidates' sum (burst.h), where the
	 * level is the base it settled to: an instance's burst */
	bool has_burst;
	double burst_iops_estimate, burst_base_iops_estimate, burst_credits_estimate;
	uint64_t burst_exhausted_usec; /* CLOCK_REALTIME, 0 when unknown */
};

/* The group's n_members names as pointers into g, for device_names_join()
 * and the JSON list; returns n_members. */
size_t shared_ceiling_group_names(const struct shared_ceiling_group *g,
				  const char *ret[SHARED_CEILING_MAX_MEMBERS]);

struct shared_ceiling;

int shared_ceiling_new(const struct ceiling_params *cp, const struct shared_ceiling_params *p,
		       struct shared_ceiling **ret);
struct shared_ceiling *shared_ceiling_free(struct shared_ceiling *sc);

/* One sample: the n candidate devices, sorted by name. Groups are found,
 * followed, kept when the load goes away (as estimates are), and dropped
 * when their members do more together or one of them goes. */
void shared_ceiling_update(struct shared_ceiling *sc, const struct shared_ceiling_device *devs, size_t n);

/* The groups known now; valid until the next update. */
size_t shared_ceiling_groups(const struct shared_ceiling *sc, const struct shared_ceiling_group **ret);

/* The declared side: an [instance] section's limits against the sum of
 * the volumes it counts, with a ratio and time at the limit like a
 * device's. The counters persist in *acc; `is_valid` false (a volume's
 * first sample, a reset) counts nothing. Fills every figure of *ret but
 * devices. */
struct shared_ceiling_instance {
	double at_ceiling_iops_sec;
	double at_ceiling_throughput_sec;
};

void shared_ceiling_account_instance(struct shared_ceiling_instance *acc, const struct instance_config *ic,
				     double default_threshold, double iops, double bytes_per_sec,
				     double interval_sec, bool is_valid, struct instance_state *ret);
