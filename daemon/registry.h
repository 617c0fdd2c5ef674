/* The metric registry: probes and the sampler publish into it; after each
 * update an immutable snapshot (with its /metrics text pre-rendered) is
 * built and swapped in atomically. A scrape takes a reference to the current
 * snapshot and never waits for a probe or does I/O. */
#pragma once

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "device.h"
#include "probe.h"

struct history;
struct probe_block;

/* Cumulative state of one configured probe. */
struct probe_state {
	char *name;
	char *target;                 /* directory or filename */
	char *device;                 /* device name the target lives on, "" if unknown */
	enum probe_rw rw;
	uint64_t runs_total;
	uint64_t failures_total;
	struct probe_op_result total[_PROBE_OP_MAX]; /* since start: ops, bytes, errors, latency */
	bool has_last;
	struct probe_result last;     /* the last completed run */
	uint64_t last_run_realtime_usec;
	uint64_t last_done_monotonic_usec; /* when the last run was recorded, 0 before */
	uint64_t interval_usec;
	uint64_t runtime_usec;        /* budget of one run, for the /healthz slack */
	bool has_fsync;               /* fsync ops are part of the probe */
};

/* Whether the probe performs `op` (and has figures for it to show). */
bool probe_state_does_op(const struct probe_state *p, enum probe_op op);

/* The /metrics exposition formats. */
enum metrics_format {
	METRICS_FORMAT_PROMETHEUS,    /* text 0.0.4 */
	METRICS_FORMAT_OPENMETRICS,   /* OpenMetrics 1.0.0 */
	_METRICS_FORMAT_MAX,
};

/* One /metrics body. text and gz are set once, at publish or by the first
 * scrape that needs them, and never change after: read them through
 * snapshot_metrics_body(). */
struct rendered_body {
	char *text;
	size_t len;
	char *gz;                     /* the same bytes, gzip-compressed */
	size_t gz_len;
};

/* How long a scrape of one format and encoding keeps it pre-rendered at
 * every publish. */
#define REGISTRY_DEMAND_USEC (300ULL * 1000000ULL)

/* The standard process_* figures, read from /proc/self at publish time. */
struct process_stats {
	bool available;
	double cpu_seconds;
	uint64_t resident_memory_bytes;
	uint64_t virtual_memory_bytes;
	uint64_t open_fds;
	uint64_t max_fds;
	double start_time_seconds;    /* since the epoch */
};

struct snapshot {
	unsigned refcount;            /* atomic */
	uint64_t generation;
	uint64_t realtime_usec;       /* when it was published */
	uint64_t monotonic_usec;
	uint64_t start_realtime_usec; /* when the registry was created */
	uint64_t start_monotonic_usec;
	uint64_t sample_interval_usec;
	uint64_t history_usec;        /* configured history length */
	char hostname[HOST_NAME_MAX + 1]; /* gethostname() at publish time, "" if it failed */
	uint64_t stale_after_usec;    /* /healthz: a snapshot older than this is unhealthy */
	struct sampler_snapshot *samples; /* may be NULL before the first sample */
	struct probe_state *probes;   /* copies: owned, or in probe_block */
	size_t n_probes;
	/* the registry's copies of probes[], shared by the snapshots published
	 * while no probe changed; NULL in a hand-built snapshot, whose
	 * probes[] is its own */
	struct probe_block *probe_block;
	struct history *history;      /* borrowed, thread-safe; NULL without one */
	struct process_stats process;
	double last_render_seconds;   /* how long the previous publish took to render */
	bool is_healthy;
	char health_reason[256];
	pthread_mutex_t render_lock;  /* serialises rendering metrics[] late */
	struct rendered_body metrics[_METRICS_FORMAT_MAX]; /* /metrics, see snapshot_metrics_body() */
};

struct snapshot *snapshot_ref(struct snapshot *s);
struct snapshot *snapshot_unref(struct snapshot *s);

/* The /metrics body of `s` in `fmt`, gzip'd when `gzip` asks for it and
 * compression works (*ret_is_gzip says). A body that the publish rendered
 * is returned as it is; one nobody asked for lately is rendered now, once,
 * into the snapshot. The bytes stay valid while the caller holds a
 * reference. Thread-safe. Returns 0, or -ENOMEM. */
int snapshot_metrics_body(struct snapshot *s, enum metrics_format fmt, bool gzip, const char **ret_data,
			  size_t *ret_len, bool *ret_is_gzip);

struct registry;

int registry_new(struct registry **ret);
struct registry *registry_free(struct registry *r);

/* Replace the probe list (at start and on reload); cumulative counters of
 * probes that keep their name are kept. Also takes the sample interval and
 * history length from `cfg`. Not thread-safe with respect to
 * registry_probe_done(); the scheduler must be stopped around it. */
int registry_set_probes(struct registry *r, const struct config *cfg);

/* Record one completed run of probe `index`. Thread-safe (called from probe
 * threads). Does not publish; the caller wakes the main loop. */
void registry_probe_done(struct registry *r, size_t index, const struct probe_result *res);

/* The history ring that /api/v1/history reads (not owned: it must outlive
 * every snapshot user, i.e. the HTTP server). Main thread. */
void registry_set_history(struct registry *r, struct history *h);

/* Fill in the device of each probe whose device is not known yet, from the
 * sampler's topology (sampler_device_for_target). Main thread, after a
 * sample. */
struct sampler;
void registry_resolve_probe_devices(struct registry *r, struct sampler *sampler);

/* Install the latest sampler snapshot (takes a reference). Main thread. */
void registry_set_samples(struct registry *r, struct sampler_snapshot *s);

/* Build a new snapshot from the current state, read the process_* figures,
 * judge health, pre-render the /metrics bodies scraped in the last
 * REGISTRY_DEMAND_USEC (format and encoding) and swap it in. Main thread. */
int registry_publish(struct registry *r);

/* A scrape asked for `fmt`, gzip'd or not: publishes pre-render it for the
 * next REGISTRY_DEMAND_USEC. Any thread. */
void registry_note_scrape(struct registry *r, enum metrics_format fmt, bool gzip);

/* A reference to the current snapshot (never NULL after the first publish;
 * NULL before). Any thread. Release with snapshot_unref(). */
struct snapshot *registry_acquire(struct registry *r);

/* Judge whether the sampler and every probe are on schedule at
 * `now_monotonic_usec`. Returns true, or false with a reason in `reason`.
 * Pure; used at publish time and by /healthz to catch a stale snapshot. */
bool snapshot_check_health(const struct snapshot *s, uint64_t now_monotonic_usec, char *reason,
			   size_t len);
