/* The probe identities of a configuration. See identities.h. */
#include "identities.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct probe_identity *kept_identity(const struct identities *old, const char *name,
					    const char *target)
{
	for (size_t i = 0; old && i < old->n; i++) {
		if (strcmp(old->ids[i]->name, name) == 0 && strcmp(old->ids[i]->target, target) == 0) {
			return probe_identity_ref(old->ids[i]);
		}
	}
	return NULL;
}

int identities_build(const struct config *cfg, const struct identities *old, struct identities *ret)
{
	struct identities n = {.ids = calloc(cfg->n_probes ? cfg->n_probes : 1, sizeof(*n.ids))};

	if (!n.ids) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < cfg->n_probes; i++) {
		const struct probe_config *pc = &cfg->probes[i];
		const char *target = pc->directory ? pc->directory : pc->filename;

		n.ids[i] = kept_identity(old, pc->name, target);
		if (!n.ids[i]) {
			n.ids[i] = probe_identity_new(pc->name, target);
		}
		if (!n.ids[i]) {
			identities_clear(&n);
			return -ENOMEM;
		}
		n.n++;
	}
	*ret = n;
	return 0;
}

void identities_place(const struct identities *ids, const struct topology *t)
{
	for (size_t i = 0; i < ids->n; i++) {
		targets_place_identity(t, ids->ids[i]);
	}
}

void identities_clear(struct identities *ids)
{
	for (size_t i = 0; i < ids->n; i++) {
		probe_identity_unref(ids->ids[i]);
	}
	free(ids->ids);
	*ids = (struct identities){0};
}
