/* The metric registry: probes and the sampler publish into it; after each
 * update an immutable snapshot (with its /metrics text pre-rendered) is
 * built and swapped in atomically. A scrape takes a reference to the current
 * snapshot and never waits for a probe or does I/O. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "device.h"
#include "probe.h"

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
	uint64_t next_run_monotonic_usec; /* for /healthz: is it on schedule? */
	uint64_t interval_usec;
};

struct snapshot {
	unsigned refcount;            /* atomic */
	uint64_t generation;
	uint64_t realtime_usec;
	struct sampler_snapshot *samples; /* may be NULL before the first sample */
	struct probe_state *probes;   /* copies, owned */
	size_t n_probes;
	bool is_healthy;
	char health_reason[256];
	char *prom_text;              /* Prometheus text 0.0.4, pre-rendered */
	size_t prom_len;
	char *openmetrics_text;       /* OpenMetrics 1.0.0, pre-rendered */
	size_t openmetrics_len;
};

struct snapshot *snapshot_ref(struct snapshot *s);
struct snapshot *snapshot_unref(struct snapshot *s);

struct registry;

int registry_new(struct registry **ret);
struct registry *registry_free(struct registry *r);

/* Replace the probe list (at start and on reload); cumulative counters of
 * probes that keep their name are kept. Not thread-safe with respect to
 * registry_probe_done(); the scheduler must be stopped around it. */
int registry_set_probes(struct registry *r, const struct config *cfg);

/* Record one completed run of probe `index`. Thread-safe (called from probe
 * threads). Does not publish; the caller wakes the main loop. */
void registry_probe_done(struct registry *r, size_t index, const struct probe_result *res);

/* Install the latest sampler snapshot (takes a reference). Main thread. */
void registry_set_samples(struct registry *r, struct sampler_snapshot *s);

/* Build a new snapshot from the current state and swap it in. Main thread. */
int registry_publish(struct registry *r);

/* A reference to the current snapshot (never NULL after the first publish;
 * NULL before). Any thread. Release with snapshot_unref(). */
struct snapshot *registry_acquire(struct registry *r);
