/* The [instance] limits against the sum of the volumes it counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "detect-private.h"
#include "topology.h"

/* The volumes [instance] counts: whole disks, those its devices= names if
 * set. */
static bool counts_for_instance(const struct detect *d, const struct sample_device *sd)
{
	if (!sd->is_tracked || sd->td->topo.kind != DEVICE_KIND_DISK) {
		return false;
	}
	return !d->has_instance_regex || regexec(&d->instance_regex, sd->name, 0, NULL, 0) == 0;
}

int detect_account_instance(struct detect *d, const struct sample *sample, struct instance_state *ret)
{
	const struct instance_config *ic = &d->cfg->instance;
	double iops = 0.0, bytes = 0.0, interval = 0.0;
	bool is_valid = true;
	const char **devices;
	size_t n = 0;

	if (!ic->is_declared) {
		return 0;
	}
	devices = calloc(sample->n_devices ? sample->n_devices : 1, sizeof(*devices));
	if (!devices) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < sample->n_devices; i++) {
		const struct sample_device *sd = &sample->devices[i];
		const struct device_rates *r = sd->rates;

		if (!counts_for_instance(d, sd)) {
			continue;
		}
		/* the snapshot holds the topology, and so the name */
		devices[n++] = sd->td->name;
		is_valid = is_valid && r->valid;
		iops += r->read_iops + r->write_iops;
		bytes += r->read_bytes_per_sec + r->write_bytes_per_sec;
		interval = r->interval_sec;
	}
	shared_ceiling_account_instance(&d->instance, ic,
					d->cfg->ceiling_threshold > 0 ? d->cfg->ceiling_threshold : 0.95,
					iops, bytes, interval, is_valid && n > 0, ret);
	ret->devices = devices;
	ret->n_devices = n;
	return 0;
}
