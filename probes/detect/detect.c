/* The detection stage's entry point: run after each sample. See detect.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "detect-private.h"
#include "macro.h"
#include "name_index.h"
#include "topology.h"

/* All or nothing: the previous regex stays when the new one does not
 * compile. */
static int compile_instance_regex(struct detect *d, const struct config *cfg)
{
	const char *pattern = cfg->instance.devices;
	regex_t re;

	if (pattern && pattern[0] != '\0' && regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0) {
		return -EINVAL;
	}
	if (d->has_instance_regex) {
		regfree(&d->instance_regex);
	}
	d->has_instance_regex = pattern && pattern[0] != '\0';
	if (d->has_instance_regex) {
		d->instance_regex = re;
	}
	return 0;
}

int detect_new(const struct config *cfg, struct detect **ret)
{
	struct detect *d = calloc(1, sizeof(*d));
	int r;

	if (!d) {
		return -ENOMEM;
	}
	d->cfg = cfg;
	if (ceiling_set_new(NULL, &d->ceilings) < 0 || shared_ceiling_new(NULL, NULL, &d->shared) < 0) {
		detect_free(d);
		return -ENOMEM;
	}
	r = compile_instance_regex(d, cfg);
	if (r < 0) {
		detect_free(d);
		return r;
	}
	*ret = d;
	return 0;
}

struct detect *detect_free(struct detect *d)
{
	if (!d) {
		return NULL;
	}
	if (d->has_instance_regex) {
		regfree(&d->instance_regex);
	}
	ceiling_set_free(d->ceilings);
	shared_ceiling_free(d->shared);
	free(d->devs);
	free(d);
	return NULL;
}

int detect_set_config(struct detect *d, const struct config *cfg)
{
	/* the old config is about to be freed: adopt the new one even when its
	 * regex does not compile */
	int r = compile_instance_regex(d, cfg);

	d->cfg = cfg;
	return r;
}

struct ceiling_set *detect_ceilings(struct detect *d)
{
	return d->ceilings;
}

static const char *dev_name_get(const void *base, size_t i)
{
	return ((const struct detect_dev *)base)[i].name;
}

/* Align the per-device state with the sample's devices: a surviving device
 * keeps its hold-over, a new one starts without. */
static int remap(struct detect *d, const struct sample *sample)
{
	struct name_index idx = {0};
	struct detect_dev *devs;
	bool same = sample->n_devices == d->n_devs;
	int r;

	for (size_t i = 0; same && i < d->n_devs; i++) {
		same = strcmp(d->devs[i].name, sample->devices[i].name) == 0;
	}
	if (same) {
		return 0;
	}
	devs = calloc(sample->n_devices ? sample->n_devices : 1, sizeof(*devs));
	if (!devs) {
		return -ENOMEM;
	}
	r = name_index_build(&idx, d->devs, d->n_devs, dev_name_get);
	if (r < 0) {
		free(devs);
		return r;
	}
	for (size_t i = 0; i < sample->n_devices; i++) {
		size_t j = name_index_find(&idx, d->devs, dev_name_get, sample->devices[i].name);

		if (j != SIZE_MAX) {
			devs[i] = d->devs[j];
		}
		snprintf(devs[i].name, sizeof(devs[i].name), "%s", sample->devices[i].name);
	}
	name_index_done(&idx);
	free(d->devs);
	d->devs = devs;
	d->n_devs = sample->n_devices;
	return 0;
}

static int cmp_shared_device(const void *a, const void *b)
{
	return strcmp(((const struct shared_ceiling_device *)a)->name,
		      ((const struct shared_ceiling_device *)b)->name);
}

/* Ceilings shared by several whole disks (partitions, md, dm and loop
 * devices would count the same I/O twice). */
static void update_shared(struct detect *d, const struct sample *sample)
{
	_cleanup_free_ struct shared_ceiling_device *devs =
	    calloc(sample->n_devices ? sample->n_devices : 1, sizeof(*devs));
	size_t n = 0;

	if (!devs) {
		return;
	}
	for (size_t i = 0; i < sample->n_devices; i++) {
		const struct sample_device *sd = &sample->devices[i];
		const struct ceiling_state *st;

		if (!sd->is_tracked || sd->td->topo.kind != DEVICE_KIND_DISK) {
			continue;
		}
		st = ceiling_set_find(d->ceilings, sd->name);
		if (st) {
			devs[n++] = (struct shared_ceiling_device){
			    .name = sd->name,
			    .st = st,
			    .known_iops =
				sd->dc && sd->dc->iops_limit ? (double)sd->dc->iops_limit : st->peak_iops,
			};
		}
	}
	qsort(devs, n, sizeof(*devs), cmp_shared_device);
	shared_ceiling_update(d->shared, devs, n);
}

static int copy_shared(const struct detect *d, struct sampler_snapshot *snap)
{
	const struct shared_ceiling_group *g;
	size_t n = shared_ceiling_groups(d->shared, &g);

	if (n == 0) {
		return 0;
	}
	snap->shared = malloc(n * sizeof(*g));
	if (!snap->shared) {
		return -ENOMEM;
	}
	memcpy(snap->shared, g, n * sizeof(*g));
	snap->n_shared = n;
	return 0;
}

/* Each tracked device's ceiling from its rates (and member rates); the
 * detector state and counters such as at_ceiling_*_seconds persist in
 * d->ceilings, by device name. */
static void update_ceilings(struct detect *d, const struct sample *sample)
{
	ceiling_set_start_sample(d->ceilings, sample->realtime_usec);
	for (size_t i = 0; i < sample->n_devices; i++) {
		const struct sample_device *sd = &sample->devices[i];

		if (sd->is_tracked) {
			/* -ENOMEM still leaves the declared limits in the verdict */
			(void)ceiling_set_update(d->ceilings, sd->name, sd->dc, sd->rates, sd->member_rates,
						 sd->is_array_member, &d->devs[i].ceiling);
		}
	}
}

int detect_run(struct detect *d, const struct sample *sample, struct sampler_snapshot *snap)
{
	int r = remap(d, sample);

	if (r < 0) {
		return r;
	}
	update_ceilings(d, sample);
	detect_propagate_holds(d, sample);
	update_shared(d, sample);
	ceiling_set_end_sample(d->ceilings);
	for (size_t i = 0; i < sample->n_devices; i++) {
		size_t k = sample->devices[i].snapshot_index;

		if (k < snap->n_devices) {
			snap->devices[k].ceiling = d->devs[i].ceiling;
		}
	}
	r = copy_shared(d, snap);
	if (r < 0) {
		return r;
	}
	return detect_account_instance(d, sample, &snap->instance);
}
