/* The ceiling probe's gate. A probe with ceiling=1 is a short burst at a
 * high queue depth that measures what a device delivers; it must neither
 * disturb a busy device nor run often. The gate lets it run only when its
 * device has been quiet (iopsd's own probes aside) for a few seconds, and
 * at most once per CEILING_GATE_MIN_SPACING_USEC; each successful run's
 * IOPS and throughput become the device's ceiling estimate. Other probes'
 * I/O is reported to the ceiling detector so that it does not count
 * against quietness. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ceiling.h"
#include "probe.h"
#include "targets.h"

#define CEILING_GATE_MIN_SPACING_USEC (600ULL * 1000000ULL) /* at most one run per 10 minutes */
#define CEILING_GATE_QUIET_SEC	      5.0		    /* quiet for this long ... */
#define CEILING_GATE_QUIET_IOPS	      5.0		    /* ... at no more than this */
#define CEILING_GATE_RETRY_USEC	      (1000000ULL)	    /* ask again when not quiet */

struct ceiling_gate;

int ceiling_gate_new(struct ceiling_gate **ret);
struct ceiling_gate *ceiling_gate_free(struct ceiling_gate *g);

/* Forget every probe (no ceiling probe runs until the next
 * ceiling_gate_set_config()): when a reload fails before it, so that the
 * gate keeps no pointer into the configuration it replaces. */
void ceiling_gate_clear(struct ceiling_gate *g);

/* CLOCK_MONOTONIC in usec by default; tests pass their own clock. */
typedef uint64_t (*ceiling_gate_clock_fn)(void *userdata);
void ceiling_gate_set_clock(struct ceiling_gate *g, ceiling_gate_clock_fn fn, void *userdata);

/* The probes of `cfg`, ids[i] the identity of cfg->probes[i] (the gate
 * takes references). Call while the scheduler is stopped; a probe that
 * keeps its name keeps its last run time. On failure (-ENOMEM) the gate
 * knows no probe (no ceiling probe runs) until the next call. */
int ceiling_gate_set_config(struct ceiling_gate *g, const struct config *cfg,
			    struct probe_identity *const *ids);

/* A run of probe `id` completed (the scheduler's done callback, on the
 * probe's thread): its I/O count, and a ceiling probe's result, wait for
 * the next ceiling_gate_collect(). Thread-safe. */
void ceiling_gate_probe_done(struct ceiling_gate *g, const struct probe_identity *id,
			     const struct probe_result *res);

/* Main loop, right before a device sample (g may be NULL: nothing to do):
 * hand the runs completed since the last call to the ceiling detector: a
 * ceiling probe's result as a measurement, any other probe's I/O count as
 * iopsd's own. */
void ceiling_gate_collect(struct ceiling_gate *g, struct ceiling_set *ceilings);

/* Main loop, right after a device sample and the identities' placing:
 * recompute which ceiling probes' devices are quiet. */
void ceiling_gate_refresh(struct ceiling_gate *g, struct ceiling_set *ceilings);

/* The scheduler_gate_fn (scheduler.h), called on probe threads: 0 to run
 * now, else how long to wait. Probes without ceiling=1 always pass. */
uint64_t ceiling_gate_check(void *userdata, const struct probe_identity *id, const struct probe_config *pc);
