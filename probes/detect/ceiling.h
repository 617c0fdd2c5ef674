/* Ceilings: declared limits (ratio, time at the limit, a gp2-style burst
 * bucket) and detection of an undeclared ceiling from the per-second samples
 * (IOPS or throughput holding a flat top while requests queue). Pure: fed
 * one interval at a time, no I/O and no clock of its own. The algorithm is
 * described in iopsd(8), CEILING DETECTION. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "burst.h"
#include "config.h"
#include "device.h"
#include "diskstats.h"
#include "pulse.h"

#define CEILING_WINDOW_MAX 120
/* The reads kept for the pulse test (pulse.h): 3 s at one every 50 ms. */
#define CEILING_FINE_MAX 64

/* Detection parameters. The daemon uses ceiling_params_default(); tests and
 * bench/detect may tune them. */
/* The stages, in the order ceiling_update() runs them (iopsd(8), CEILING
 * DETECTION): the sample is taken; a burst (declared, or learned) is not a
 * ceiling; the onset test looks at the first seconds of a demand that began
 * after a quiet spell; the window test at the last window_sec; a plateau
 * found holds while the device stays on it. Durations are in seconds, so a
 * shorter sample interval does not shrink them. */
struct ceiling_params {
	double window_sec;		/* the window test's window (20 s) */
	double onset_quiet_sec;		/* the onset test: a demand that began after this long
					 * without requests waiting (3 s), or when iopsd began
					 * watching ... */
	double onset_horizon_sec;	/* ... and is at most this old (12 s) ... */
	double onset_sec;		/* ... whose last onset_sec (5 s; 0: no onset test) ... */
	double onset_tolerance;		/* ... all sit within this share of their median (0.001) ... */
	double onset_slack_ios;		/* ... or this many I/Os per interval (3) ... */
	double onset_slack_max;		/* ... but no more than this share of it (0.003) */
	double onset_quick_sec;		/* the onset test's quick form: the last onset_quick_sec
					 * (4 s; 0: none) of such a demand all within
					 * onset_tolerance of their median, no slack ... */
	double onset_quick_ios;		/* ... where they average at least this many I/Os
					 * per interval (500) */
	double onset_sum_sec;		/* the sum test: the last onset_sum_sec of such a demand
					 * (8 s; 0, or onset_sec 0: none) ... */
	double onset_sum_spread;	/* ... each second within this many onset bands (1.5), the
					 * running sum within one band, never less than a request
					 * ... */
	double onset_sum_jitter_sec;	/* ... nor than this many seconds at the level (0.0075): where
					 * a guest's second ends against the hypervisor's */
	double plateau_tolerance;	/* half-width of the plateau band, relative to its level (0.015) */
	double plateau_slack_ios;	/* ... widened to at least this many I/Os per interval (2.5) */
	double plateau_fraction;	/* share of the window that must be queueing (0.8) */
	double member_plateau_fraction; /* ... for a member of an md/dm array (0.3): the members of
					 * a stripe capped alike take turns at holding the queue */
	double member_outlier_fraction; /* ... whose outliers are this share of its queueing samples
					 * instead of max_outliers (0.25): the seconds in which the
					 * queue moves over are partly at the cap */
	unsigned max_outliers;		/* queueing samples allowed off the band (3) */
	unsigned max_made_up;		/* ... and pairs of a short second and the next making up
					 * for it, each off the band the other way (3) */
	double outlier_fraction;	/* ... or this share of them, when more (0) */
	double min_queue;		/* aqu-sz of a queueing sample (0.9) */
	double min_utilization;		/* busy ratio of a queueing sample (0.8) */
	double min_iops;		/* a plateau lower than this is idling, not a ceiling (10) */
	double exceeded_sec;		/* the provider test: the last exceeded_sec (2 s) ... */
	double exceeded_share;		/* ... each counted over the limit for at least this share
					 * of it (0.9) by the provider */
	double contradict_factor;	/* an estimate exceeded by this factor ... (1.10) */
	unsigned contradict_samples;	/* ... for this many samples in a row is dropped (3) */
	double saturation;		/* busy ratio from which a device is saturated (0.95) */
	struct pulse_params pulse;	/* the pulse test, in the first onset_horizon_sec of a
					 * demand, on reads every pulse.slice_sec / 2 (slice_sec
					 * 0: none) */
	struct burst_params burst;	/* learning a burst bucket (burst.h) */
};

void ceiling_params_default(struct ceiling_params *ret);

/* The samples in the window test's window at `interval_sec` per sample, at
 * most CEILING_WINDOW_MAX. */
unsigned ceiling_params_window(const struct ceiling_params *p, double interval_sec);

/* One device's detector state. Plain data: zero it (or ceiling_state_init)
 * to start. */
struct ceiling_sample {
	double interval_sec;
	double iops;	      /* reads + writes per second */
	double bytes_per_sec; /* read + write bytes per second */
	double queue_depth;   /* aqu-sz */
	double utilization;   /* 0..1 */
	double own_ops;	      /* I/Os iopsd's own probes reported in this interval */
	/* the time in this interval the provider counted the demand over the
	 * volume's IOPS and throughput limits (EBS NVMe's log page); 0 where
	 * it keeps no such count */
	double exceeded_iops_sec, exceeded_throughput_sec;
};

/* Which stage last found the plateau a detector holds. */
enum ceiling_stage {
	CEILING_STAGE_NONE,
	CEILING_STAGE_ONSET,	/* the first seconds of a demand */
	CEILING_STAGE_WINDOW,	/* the window test */
	CEILING_STAGE_BURST,	/* the level a burst was seen to run out to */
	CEILING_STAGE_PROBE,	/* measured by the ceiling probe (ceiling_state_measured()) */
	CEILING_STAGE_PROVIDER, /* the provider counted the demand over the volume's limit */
	CEILING_STAGE_PULSE,	/* the pulse test: slices of the same count (pulse.h) */
};

/* The stage's name in /api/v1/devices (found_by), NULL for none. */
const char *ceiling_stage_name(enum ceiling_stage stage);

struct ceiling_detector {
	double estimate;	     /* 0 = none */
	bool is_active;		     /* the plateau holds in the latest sample */
	unsigned n_above;	     /* consecutive samples above estimate * contradict_factor */
	unsigned n_off;		     /* the hold: 1 after a second off the estimate */
	enum ceiling_stage found_by; /* of the estimate */
};

/* Samples in a row held at a declared base that say its bucket is empty. */
#define CEILING_BASE_HELD_SAMPLES 3u

struct ceiling_state {
	struct ceiling_sample ring[CEILING_WINDOW_MAX];
	unsigned head; /* next slot to write */
	unsigned n;    /* valid samples in the ring, <= CEILING_WINDOW_MAX */
	struct ceiling_detector iops, throughput;
	double at_ceiling_iops_sec;
	double at_ceiling_throughput_sec;
	bool has_burst_balance;
	double burst_balance; /* credits */
	unsigned n_held;      /* samples in a row held near the declared base, queued */
	double held_iops[CEILING_BASE_HELD_SAMPLES]; /* the last of them, oldest first */
	double pending_own_ops;			     /* noted since the last sample */
	double pending_exceeded_iops_sec;	     /* ... and the provider's exceeded times */
	double pending_exceeded_throughput_sec;
	struct burst_tracker burst; /* the burst bucket learned from the samples */
	double peak_iops;	    /* the highest IOPS ceiling found or measured, bursts aside:
				     * what the device is known to do on its own */
	uint64_t now_usec;	    /* CLOCK_REALTIME at the end of the interval fed next; the set
				     * fills it, 0 when unknown */
	double units_per_io;	    /* the provider's units per I/O in the latest busy interval (1
				     * without a declared iops_unit; 0 before one) */
	struct pulse_read fine[CEILING_FINE_MAX]; /* the pulse test's reads since the demand
						   * began, oldest first */
	unsigned n_fine;
};

void ceiling_state_init(struct ceiling_state *st);

/* Feed one interval of `r` (r->valid false: a gap, the window restarts) with
 * the device's declared limits `dc` (NULL: none declared) and fill *ret.
 * Counters and estimates persist in `st` across calls. */
void ceiling_update(struct ceiling_state *st, const struct ceiling_params *p, const struct device_config *dc,
		    const struct device_rates *r, struct device_ceiling *ret);

/* A direct measurement (the ceiling probe's burst on a quiet device): it
 * becomes the estimate until a plateau says otherwise. Values <= 0 are
 * ignored. */
void ceiling_state_measured(struct ceiling_state *st, double iops, double bytes_per_sec);

/* iopsd's own probes did `ops` I/Os on the device since the last sample:
 * they are subtracted when deciding whether the device is quiet. */
void ceiling_state_note_own_ops(struct ceiling_state *st, double ops);

/* The provider counted `iops_sec` and `throughput_sec` of demand over the
 * volume's IOPS and throughput limits since the last sample (EBS NVMe's
 * "exceeded" counters): the provider test's evidence (plateau.h). */
void ceiling_state_note_exceeded(struct ceiling_state *st, double iops_sec, double throughput_sec);

/* Whether the device is in the first onset_horizon_sec of a demand that
 * rose from quiet, queueing: the pulse test wants its counters read every
 * pulse.slice_sec / 2 until the next sample (ceiling_state_note_fine_read()).
 * Its reads are dropped at the first sample that no longer wants them. */
bool ceiling_state_wants_fine_reads(const struct ceiling_state *st, const struct ceiling_params *p);
void ceiling_state_note_fine_read(struct ceiling_state *st, uint64_t monotonic_usec, uint64_t ios);

/* True when the last `seconds` of samples exist and, after subtracting the
 * I/Os of iopsd's own probes, averaged at most max_iops. */
bool ceiling_state_is_quiet(const struct ceiling_state *st, double seconds, double max_iops);

/* For detectors over several devices (shared_ceiling.h): the i-th most
 * recent sample of a state (0 = latest), NULL past its window; whether a
 * state's samples hold an IOPS plateau that the latest is on, and its level;
 * the samples an onset test judges now (the last `seconds` of a demand
 * that rose from quiet within onset_horizon_sec; 0: none); whether a
 * sample queues; the plateau band around a level. */
const struct ceiling_sample *ceiling_state_recent(const struct ceiling_state *st, unsigned i);
bool ceiling_state_iops_plateau(const struct ceiling_state *st, const struct ceiling_params *p,
				double *ret_level);
double ceiling_median(double *v, unsigned n); /* of v[0..n-1], n > 0, sorting v */
unsigned ceiling_state_onset_samples(const struct ceiling_state *st, const struct ceiling_params *p,
				     double seconds);
bool ceiling_sample_is_queueing(const struct ceiling_params *p, const struct ceiling_sample *s);
double ceiling_band(const struct ceiling_params *p, double level, const struct ceiling_sample *s);

/* Per-device states kept across samples, keyed by device name (the
 * detection stage owns one, detect.h). A device not updated during a sample is forgotten at
 * ceiling_set_end_sample(). */
struct ceiling_set;

int ceiling_set_new(const struct ceiling_params *p, struct ceiling_set **ret);
struct ceiling_set *ceiling_set_free(struct ceiling_set *s);

/* Update device `name` (created on first sight) from its rates and its
 * [device] section `dc` (NULL: none), and fill *ret. `member` (NULL when
 * none) are the md/dm member aggregates of sampler.h: an md device accounts
 * no busy time or queue of its own, so the busiest member's utilization and
 * the members' queue stand in when larger. `is_array_member`: the device is
 * a member of an md/dm array, whose plateau needs only
 * member_plateau_fraction of the window queueing. Returns 0, or -ENOMEM
 * (then *ret holds the declared limits only). */
int ceiling_set_update(struct ceiling_set *s, const char *name, const struct device_config *dc,
		       const struct device_rates *r, const struct device_rates *member, bool is_array_member,
		       struct device_ceiling *ret);
/* The sample about to be fed ends at `realtime_usec` (for the times the
 * states report, such as when a burst ran out). */
void ceiling_set_start_sample(struct ceiling_set *s, uint64_t realtime_usec);

/* Whether rates `r` are a queueing sample by the set's parameters (requests
 * waiting, device busy): the evidence the plateau test counts. */
bool ceiling_set_is_queueing(const struct ceiling_set *s, const struct device_rates *r);

/* Close a sample: forget devices that were not updated since the last call. */
void ceiling_set_end_sample(struct ceiling_set *s);

/* The state of `name`, NULL when unknown. */
struct ceiling_state *ceiling_set_find(struct ceiling_set *s, const char *name);

/* The devices that want their counters read before the next sample
 * (ceiling_state_wants_fine_reads()), at most max of them, into
 * ret_names (valid until the next ceiling_set_end_sample()); their count.
 * *ret_period_usec: how often. */
size_t ceiling_set_fine_wanted(const struct ceiling_set *s, const char **ret_names, size_t max,
			       uint64_t *ret_period_usec);
/* A read of device `name`'s counters (reads and writes completed) at
 * monotonic_usec; ignored for a device that does not want them. */
void ceiling_set_note_fine_read(struct ceiling_set *s, const char *name, uint64_t monotonic_usec,
				uint64_t ios);
