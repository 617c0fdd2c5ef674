/* The probe identities of a configuration as the daemon builds them
 * (daemon/identities.c), for the tests below daemon/: one new identity per
 * probe, aligned with cfg->probes. */
#pragma once

#include <stdlib.h>

#include <cmocka.h>

#include "config.h"
#include "targets.h"

static inline struct probe_identity **fixture_identities(const struct config *cfg)
{
	struct probe_identity **ids = calloc(cfg->n_probes ? cfg->n_probes : 1, sizeof(*ids));

	assert_non_null(ids);
	for (size_t i = 0; i < cfg->n_probes; i++) {
		const struct probe_config *pc = &cfg->probes[i];

		ids[i] = probe_identity_new(pc->name, pc->directory ? pc->directory : pc->filename);
		assert_non_null(ids[i]);
	}
	return ids;
}

static inline void fixture_identities_free(struct probe_identity **ids, size_t n)
{
	for (size_t i = 0; ids && i < n; i++) {
		probe_identity_unref(ids[i]);
	}
	free(ids);
}
