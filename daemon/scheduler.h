/* The probe scheduler: one thread per configured probe, each running its
 * probe every `interval` and handing the result to a callback. Runs of
 * probes on the same disk are serialised (unless allow_overlap=1) and their
 * first runs staggered; a slow disk only ever delays its own probes. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct pin_store;
struct probe_identity;
struct probe_result;
struct scheduler;

/* Asked on a probe's thread right before each run: 0 to run now, or how
 * many usec to wait before asking again (a ceiling probe waits for a quiet
 * device this way). A run that is still gated at its next interval is
 * skipped. Must be thread-safe. */
typedef uint64_t (*scheduler_gate_fn)(void *userdata, const struct probe_identity *id,
				      const struct probe_config *pc);

/* Called on a probe's thread after each of its runs (the daemon hands the
 * result to the registry and the ceiling gate). Must be thread-safe. */
typedef void (*scheduler_done_fn)(void *userdata, const struct probe_identity *id,
				  const struct probe_result *res);

/* After each run: done(userdata, id, result), then 1 is written to
 * `wake_fd` (an eventfd) so that the main loop publishes. `sysfs` is the
 * sysfs mount point (kept, not copied). */
int scheduler_new(scheduler_done_fn done, void *userdata, int wake_fd, const char *sysfs,
		  struct scheduler **ret);
struct scheduler *scheduler_free(struct scheduler *s);

/* The store of the probe directories' filesystem pins (kept, not owned;
 * may be NULL): a probe starts with its pin from there, and a new pin is
 * saved there. Call while the scheduler is stopped. */
void scheduler_set_pins(struct scheduler *s, struct pin_store *pins);

/* Install a gate for the probes it returns non-zero for; call while the
 * scheduler is stopped. `fn` may be NULL to remove it. */
void scheduler_set_gate(struct scheduler *s, scheduler_gate_fn fn, void *userdata);

/* Start one thread per probe of `cfg` (which must stay alive until
 * scheduler_stop()), ids[i] the identity of cfg->probes[i] (the scheduler
 * takes references). Runs of probes whose identities were placed on one
 * disk are serialised. */
int scheduler_start(struct scheduler *s, const struct config *cfg, struct probe_identity *const *ids);

/* Cancel running probes, stop and join every thread. Returns promptly: a
 * run stuck in the kernel is abandoned to its own threads. Idempotent. */
void scheduler_stop(struct scheduler *s);
