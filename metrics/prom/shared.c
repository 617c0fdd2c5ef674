/* /metrics: ceilings shared by several devices. */
#include "prom.h"

#include "macro.h"
#include "sampler.h"
#include "shared_ceiling.h"
#include "timeutil.h"

/* ---- ceilings shared by several devices (only where one was found) ---- */

/* The devices label: the group's names joined. */
static const char *group_label(const struct shared_ceiling_group *g, char *buf, size_t len)
{
	const char *names[SHARED_CEILING_MAX_MEMBERS];

	device_names_join(names, shared_ceiling_group_names(g, names), buf, len);
	return buf;
}

/* The bucket learned from a shared ceiling's sum, as a volume's is. */
static void render_shared_burst(struct prom_writer *w, const struct sampler_snapshot *ss)
{
	static const struct {
		const char *name;
		const char *help;
	} families[] = {
	    {"iopsd_shared_ceiling_burst_iops_estimate",
	     "The rate the devices' sum burst at before it settled to the shared ceiling (an instance's "
	     "burst)."},
	    {"iopsd_shared_ceiling_burst_base_iops_estimate", "The level that sum settled to."},
	    {"iopsd_shared_ceiling_burst_credits_estimate",
	     "The shared bucket's size: (rate - base) x length."},
	    {"iopsd_shared_ceiling_burst_exhausted_timestamp_seconds",
	     "When the shared burst ran out, seconds since the epoch."},
	};

	for (size_t i = 0; i < ELEMENTSOF(families); i++) {
		bool has_family = false;

		for (size_t j = 0; j < ss->n_shared; j++) {
			const struct shared_ceiling_group *g = &ss->shared[j];
			char devices[SHARED_CEILING_MAX_MEMBERS * DISKSTATS_NAME_MAX];
			struct prom_label l = {"devices", group_label(g, devices, sizeof(devices))};
			double v = i == 0   ? g->burst_iops_estimate
				   : i == 1 ? g->burst_base_iops_estimate
				   : i == 2 ? g->burst_credits_estimate
					    : usec_to_sec(g->burst_exhausted_usec);

			if (!g->has_burst || (i == 3 && !g->burst_exhausted_usec)) {
				continue;
			}
			if (!has_family) {
				prom_family(w, families[i].name, FAMILY_GAUGE, families[i].help);
				has_family = true;
			}
			prom_sample(w, families[i].name, &l, 1, v);
		}
	}
}

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
			char devices[SHARED_CEILING_MAX_MEMBERS * DISKSTATS_NAME_MAX];
			struct prom_label l = {"devices", group_label(g, devices, sizeof(devices))};
			double v = i == 0 ? g->iops_estimate : i == 1 ? g->iops : g->is_throttled;

			prom_sample(w, families[i].name, &l, 1, v);
		}
	}
	render_shared_burst(w, ss);
}
