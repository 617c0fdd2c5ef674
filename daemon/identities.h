/* The probe identities of a configuration (targets.h), which the daemon
 * builds and hands to the registry, the scheduler and the ceiling gate. */
#pragma once

#include <stddef.h>

#include "config.h"
#include "targets.h"

struct identities {
	struct probe_identity **ids; /* aligned with cfg->probes, references */
	size_t n;
};

/* The identities of cfg's probes into *ret (which must be empty): a probe
 * that keeps its name and target keeps its identity in `old` (may be
 * empty), and with it its device. 0 or -ENOMEM (then *ret stays empty). */
int identities_build(const struct config *cfg, const struct identities *old, struct identities *ret);

/* Place every identity on topology t (NULL: none yet). Main thread. */
void identities_place(const struct identities *ids, const struct topology *t);

/* Let go of the references; *ids is empty after. */
void identities_clear(struct identities *ids);
