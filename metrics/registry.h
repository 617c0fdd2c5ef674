/* The metric registry: probes and the sampler publish into it; after each
 * update an immutable snapshot is built and swapped in atomically. A reader
 * (a scrape) takes a reference to the current snapshot and never waits for a
 * probe or does I/O. The registry knows no exposition format: the renderers
 * read snapshots, and a publish hook lets the exposition side prepare each
 * one before it is served. */
#pragma once

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "sampler.h"
#include "probe.h"
#include "targets.h"

struct history;
struct probe_block;

/* Cumulative state of one configured probe. */
struct probe_state {
	struct probe_identity *id; /* a reference */
	const char *name;	   /* id's, for the renderers */
	const char *target;
	char device[DISKSTATS_NAME_MAX]; /* id's device when published, "" while unknown */
	enum probe_rw rw;
	uint64_t runs_total;
	uint64_t failures_total;
	struct probe_op_result total[_PROBE_OP_MAX]; /* since start: ops, bytes, errors, latency */
	bool has_last;
	struct probe_result last; /* the last completed run */
	uint64_t last_run_realtime_usec;
	uint64_t last_done_monotonic_usec; /* when the last run was recorded, 0 before */
	uint64_t interval_usec;
	uint64_t runtime_usec; /* budget of one run, for the /healthz slack */
	bool has_fsync;	       /* fsync ops are part of the probe */
};

/* Whether the probe performs `op` (and has figures for it to show). */
bool probe_state_does_op(const struct probe_state *p, enum probe_op op);

/* The standard process_* figures, which the daemon reads from /proc/self before each publish. */
struct process_stats {
	bool available;
	double cpu_seconds;
	uint64_t resident_memory_bytes;
	uint64_t virtual_memory_bytes;
	uint64_t open_fds;
	uint64_t max_fds;
	double start_time_seconds; /* since the epoch */
};

struct snapshot {
	unsigned refcount; /* atomic */
	uint64_t generation;
	uint64_t realtime_usec; /* when it was published */
	uint64_t monotonic_usec;
	uint64_t start_realtime_usec; /* when the registry was created */
	uint64_t start_monotonic_usec;
	uint64_t sample_interval_usec;
	uint64_t history_usec;		  /* configured history length */
	char hostname[HOST_NAME_MAX + 1]; /* registry_set_process()'s, "" when unknown */
	uint64_t stale_after_usec;	  /* /healthz: a snapshot older than this is unhealthy */
	struct sampler_snapshot *samples; /* may be NULL before the first sample */
	struct probe_state *probes;	  /* in probe_block */
	size_t n_probes;
	/* the registry's copies of probes[], shared by the snapshots published
	 * while no probe changed */
	struct probe_block *probe_block;
	struct history *history; /* borrowed, thread-safe; NULL without one */
	struct process_stats process;
	double last_render_seconds; /* how long the previous publish's hook took (the
				     * /metrics pre-render), see registry_set_publish_hook() */
	bool is_healthy;
	char health_reason[256];
	bool has_failed_reload;		      /* the last reload kept the previous configuration */
	uint64_t config_loaded_realtime_usec; /* the start's or the last good reload's; 0: the start */
};

struct snapshot *snapshot_ref(struct snapshot *s);
struct snapshot *snapshot_unref(struct snapshot *s);

struct registry;

/* The outcome of a reload, on the main thread: whether the new
 * configuration is in force (then from now on), or the previous one runs
 * on. Published with the next snapshot. */
void registry_set_reload(struct registry *r, bool is_ok);

int registry_new(struct registry **ret);
struct registry *registry_free(struct registry *r);

/* Replace the probe list (at start and on reload): ids[i] is the identity
 * of cfg->probes[i] (the registry takes references). A probe that keeps its
 * name keeps its cumulative counters, and its device too when it also keeps
 * its identity. Also takes the sample interval and history length from
 * `cfg`. Not thread-safe with respect to registry_probe_done(); the
 * scheduler must be stopped around it. 0 or -ENOMEM. */
int registry_set_probes(struct registry *r, const struct config *cfg, struct probe_identity *const *ids);

/* Record one completed run of the probe `id`. Thread-safe (called from
 * probe threads). Does not publish; the caller wakes the main loop. */
void registry_probe_done(struct registry *r, const struct probe_identity *id, const struct probe_result *res);

/* The history ring that /api/v1/history reads (not owned: it must outlive
 * every snapshot user, i.e. the HTTP server). Main thread. */
void registry_set_history(struct registry *r, struct history *h);

/* Follow the devices the identities were placed on since (the labels show
 * them). Main thread, after the daemon placed them. */
void registry_update_devices(struct registry *r);

/* Install the latest sampler snapshot (takes a reference). Main thread. */
void registry_set_samples(struct registry *r, struct sampler_snapshot *s);

/* The process's figures and the host's name for the next publishes (the
 * daemon reads them before each; none before the first call). Main
 * thread. */
void registry_set_process(struct registry *r, const struct process_stats *p, const char *hostname);

/* Build a new snapshot from the current state, judge health, hand it to the publish hook and swap it in. Main
 * thread. Returns 0, or -ENOMEM (the previous snapshot stays current). */
int registry_publish(struct registry *r);

/* Called by registry_publish() with each new snapshot before it becomes
 * current, on the main thread; may take references. How long it took is
 * the next snapshot's last_render_seconds. */
typedef void (*registry_publish_fn)(void *userdata, struct snapshot *s);
/* Install the publish hook (NULL: none). Main thread. */
void registry_set_publish_hook(struct registry *r, registry_publish_fn fn, void *userdata);

/* A reference to the current snapshot (never NULL after the first publish;
 * NULL before). Any thread. Release with snapshot_unref(). */
struct snapshot *registry_acquire(struct registry *r);

/* Judge whether the sampler and every probe are on schedule at
 * `now_monotonic_usec`. Returns true, or false with a reason in `reason`.
 * Pure; used at publish time and by /healthz to catch a stale snapshot. */
bool snapshot_check_health(const struct snapshot *s, uint64_t now_monotonic_usec, char *reason, size_t len);
