/* The detection stage's entry point: run after each sample. See detect.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "detect-private.h"
#include "ebs_nvme.h"
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
	ceiling_params_default(&d->params);
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

/* The limits a device works to: its [device] section with the preset of
 * its volume_type= for the volume's size (device_limits.h) in place of what
 * the section left out. A preset that cannot be derived (the size unknown)
 * leaves the section as written. NULL without a section. */
static const struct device_config *effective_config(const struct sample_device *sd, struct device_config *eff,
						    struct device_limits *lim)
{
	struct device_declared dd;
	char notices[DEVICE_LIMITS_NOTICES_MAX][DEVICE_LIMITS_NOTICE_LEN];
	size_t n;
	const char *why;

	if (!sd->dc) {
		return NULL;
	}
	dd = device_config_declared(sd->dc);
	if (device_limits_resolve(&dd, sd->td->topo.size_bytes, lim, notices, &n, &why) < 0) {
		dd.provider.volume_type = -1;
		(void)device_limits_resolve(&dd, 0, lim, notices, &n, &why);
	}
	*eff = *sd->dc;
	eff->iops_limit = lim->iops_limit;
	eff->throughput_limit = lim->throughput_limit;
	eff->burst_iops = lim->burst_iops;
	eff->burst_credits = lim->burst_credits;
	eff->credit_rate = lim->credit_rate;
	eff->burst_throughput = lim->burst_throughput;
	eff->burst_throughput_credits = lim->burst_throughput_credits;
	eff->provider.iops_unit = lim->iops_unit;
	return eff;
}

/* A declared per-direction limit with its ratio and seconds at it. */
static void declared(uint64_t *ret_limit, double *ret_ratio, double *ret_seconds, uint64_t limit,
		     double ratio, double seconds)
{
	*ret_limit = limit;
	*ret_ratio = ratio;
	*ret_seconds = seconds;
}

/* The per-direction verdict into the device's: the binding resource, each
 * direction's estimate, the provider-counted IOPS; an IOPS estimate that is
 * only the shadow of a throughput cap or of the directions' own caps is not
 * the volume's. */
static void update_directions(struct detect *d, struct detect_dev *dd, const struct device_config *dc,
			      const struct device_limits *lim, const struct sample_device *sd)
{
	struct device_ceiling *c = &dd->ceiling;
	struct ceiling_dir_result res;
	const struct ceiling_verdict *v = &res.verdict;

	if (!dd->has_dir) {
		ceiling_dir_init(&dd->dir);
		dd->has_dir = true;
	}
	ceiling_dir_update(&dd->dir, &d->params, dc ? lim : NULL, dc ? dc->ceiling_threshold : 0.95,
			   sd->rates, c, &res);
	c->resource = ceiling_resource_to_string(v->resource);
	c->read_iops_estimate = res.read_iops_estimate;
	c->write_iops_estimate = res.write_iops_estimate;
	/* the directions' own caps, or a throughput cap: the total is their shadow */
	c->is_throttled |= v->is_read_flagged || v->is_write_flagged;
	if (v->resource != CEILING_RESOURCE_NONE && !v->has_iops_ceiling &&
	    v->resource != CEILING_RESOURCE_IOPS) {
		c->iops_ceiling_estimate = 0;
		c->iops_ceiling_limit_ratio = 0;
	}
	c->iops_unit = dc ? lim->iops_unit : 0;
	c->provider_iops = res.provider_iops;
	c->average_io_bytes = res.average_io_bytes;
	declared(&c->read_iops_limit, &c->read_iops_limit_ratio, &c->at_ceiling_read_iops_seconds,
		 dc ? lim->read_iops_limit : 0, res.read_iops_limit_ratio, res.at_ceiling_read_seconds);
	declared(&c->write_iops_limit, &c->write_iops_limit_ratio, &c->at_ceiling_write_iops_seconds,
		 dc ? lim->write_iops_limit : 0, res.write_iops_limit_ratio, res.at_ceiling_write_seconds);
	declared(&c->read_throughput_limit, &c->read_throughput_limit_ratio,
		 &c->at_ceiling_read_throughput_seconds, dc ? lim->read_throughput_limit : 0,
		 res.read_throughput_limit_ratio, res.at_ceiling_read_throughput_seconds);
	declared(&c->write_throughput_limit, &c->write_throughput_limit_ratio,
		 &c->at_ceiling_write_throughput_seconds, dc ? lim->write_throughput_limit : 0,
		 res.write_throughput_limit_ratio, res.at_ceiling_write_throughput_seconds);
}

/* The EBS volume `name` among the snapshot's, NULL when it is none or its
 * page was not read. */
static const struct ebs_nvme_stats *ebs_stats(const struct sampler_snapshot *snap, const char *name)
{
	for (size_t i = 0; snap && i < snap->n_ebs; i++) {
		if (strcmp(snap->ebs[i].device, name) == 0) {
			return snap->ebs[i].error == 0 ? &snap->ebs[i].stats : NULL;
		}
	}
	return NULL;
}

/* What the provider counted over the volume's limits since the last
 * sample, noted on its detector (the provider test, plateau.c): the
 * difference of EBS's exceeded counters. A volume seen for the first time,
 * or whose counters went back (reattached), notes nothing. */
static void note_exceeded(struct detect *d, struct detect_dev *dd, const struct sampler_snapshot *snap)
{
	const struct ebs_nvme_stats *ebs = ebs_stats(snap, dd->name);
	struct ceiling_state *st = ceiling_set_find(d->ceilings, dd->name);
	bool had = dd->has_exceeded;
	uint64_t iops_usec = dd->exceeded_iops_usec, throughput_usec = dd->exceeded_throughput_usec;

	dd->has_exceeded = ebs != NULL;
	if (!ebs) {
		return;
	}
	dd->exceeded_iops_usec = ebs->volume_exceeded_iops_usec;
	dd->exceeded_throughput_usec = ebs->volume_exceeded_throughput_usec;
	if (had && st && ebs->volume_exceeded_iops_usec >= iops_usec &&
	    ebs->volume_exceeded_throughput_usec >= throughput_usec) {
		ceiling_state_note_exceeded(st, (double)(ebs->volume_exceeded_iops_usec - iops_usec) / 1e6,
					    (double)(ebs->volume_exceeded_throughput_usec - throughput_usec) /
						1e6);
	}
}

/* Each tracked device's ceiling from its rates (and member rates) and what
 * its provider counted; the detector state and counters such as
 * at_ceiling_*_seconds persist in d->ceilings, by device name. */
static void update_ceilings(struct detect *d, const struct sample *sample,
			    const struct sampler_snapshot *snap)
{
	ceiling_set_start_sample(d->ceilings, sample->realtime_usec);
	for (size_t i = 0; i < sample->n_devices; i++) {
		const struct sample_device *sd = &sample->devices[i];
		struct device_config eff;
		struct device_limits lim = {0};
		const struct device_config *dc;

		if (sd->is_tracked) {
			note_exceeded(d, &d->devs[i], snap);
			dc = effective_config(sd, &eff, &lim);
			/* -ENOMEM still leaves the declared limits in the verdict */
			(void)ceiling_set_update(d->ceilings, sd->name, dc, sd->rates, sd->member_rates,
						 sd->is_array_member, &d->devs[i].ceiling);
			update_directions(d, &d->devs[i], dc, &lim, sd);
		}
	}
}

int detect_run(struct detect *d, const struct sample *sample, struct sampler_snapshot *snap)
{
	int r = remap(d, sample);

	if (r < 0) {
		return r;
	}
	update_ceilings(d, sample, snap);
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
