/* /metrics: ceilings shared by several devices. */
#include "prom.h"

#include "macro.h"
#include "sampler.h"
#include "shared_ceiling.h"

/* ---- ceilings shared by several devices (only where one was found) ---- */

void prom_render_shared(struct prom_writer *w, const struct sampler_snapshot *ss)
{
	static const struct {
		const char *name;
		const char *help;
	} families[] = {
	    {"iopsd_shared_ceiling_iops_estimate",
	     "IOPS at which the sum of several devices was seen flat while each sat below its own cap (an "
	     "instance or group limit nobody declared)."},
	    {"iopsd_shared_ceiling_iops", "The devices' IOPS summed over the last sample interval."},
	    {"iopsd_shared_ceiling_throttled",
	     "1 while that sum is held at the shared ceiling with requests waiting, else 0."},
	};

	if (!ss || ss->n_shared == 0) {
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(families); i++) {
		prom_family(w, families[i].name, FAMILY_GAUGE, families[i].help);
		for (size_t j = 0; j < ss->n_shared; j++) {
			const struct shared_ceiling_group *g = &ss->shared[j];
			struct prom_label l = {"devices", g->devices};
			double v = i == 0 ? g->iops_estimate : i == 1 ? g->iops : g->is_throttled;

			prom_sample(w, families[i].name, &l, 1, v);
		}
	}
}
