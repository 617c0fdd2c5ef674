/* The [instance] limits against the sum of the volumes it counts. */
#include <errno.h>
#include <stdio.h>
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
	size_t len = 0, size = 1;
	bool is_valid = true;
	char *devices;

	if (!ic->is_declared) {
		return 0;
	}
	for (size_t i = 0; i < sample->n_devices; i++) {
		size += counts_for_instance(d, &sample->devices[i]) ? strlen(sample->devices[i].name) + 1 : 0;
	}
	devices = malloc(size);
	if (!devices) {
		return -ENOMEM;
	}
	devices[0] = '\0';
	for (size_t i = 0; i < sample->n_devices; i++) {
		const struct sample_device *sd = &sample->devices[i];
		const struct device_rates *r = sd->rates;

		if (!counts_for_instance(d, sd)) {
			continue;
		}
		len += (size_t)snprintf(devices + len, size - len, "%s%s", len ? "," : "", sd->name);
		is_valid = is_valid && r->valid;
		iops += r->read_iops + r->write_iops;
		bytes += r->read_bytes_per_sec + r->write_bytes_per_sec;
		interval = r->interval_sec;
	}
	shared_ceiling_account_instance(&d->instance, ic,
					d->cfg->ceiling_threshold > 0 ? d->cfg->ceiling_threshold : 0.95,
					iops, bytes, interval, is_valid && len > 0, ret);
	ret->devices = devices;
	return 0;
}
