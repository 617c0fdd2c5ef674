/* /metrics: the [instance] section, the machine's volumes together. */
#include "prom.h"

#include <stdlib.h>

#include "sampler.h"

/* ---- [instance]: the machine's volumes together (only when declared) ---- */

static void sample_resource(struct prom_writer *w, const char *name, const char *resource, double v)
{
	struct prom_label l = {"resource", resource};

	prom_sample(w, name, &l, 1, v);
}

/* The machine as SMBIOS names it, for fleets to join on: on EC2 the vendor
 * "Amazon EC2" and the instance type (product_name). */
static void render_instance_type(struct prom_writer *w, const struct sampler_snapshot *ss)
{
	struct prom_label l[2] = {{"instance_type", ss->dmi.product}, {"vendor", ss->dmi.vendor}};

	if (!ss->dmi.product[0] && !ss->dmi.vendor[0]) {
		return;
	}
	prom_family(w, "iopsd_instance_type_info", FAMILY_GAUGE,
		    "Always 1; the machine's vendor and product (the instance type on EC2) from SMBIOS.");
	prom_sample(w, "iopsd_instance_type_info", l, 2, 1);
}

/* iopsd_instance_info, the volumes counted as its devices label. */
static void render_instance_info(struct prom_writer *w, const struct instance_state *in)
{
	char *devices = device_names_join_new(in->devices, in->n_devices);
	struct prom_label l = {"devices", devices};

	if (!devices) {
		w->has_failed = true;
		return;
	}
	prom_family(w, "iopsd_instance_info", FAMILY_GAUGE,
		    "Always 1; the volumes the [instance] limits count.");
	prom_sample(w, "iopsd_instance_info", &l, 1, 1);
	free(devices);
}

void prom_render_instance(struct prom_writer *w, const struct sampler_snapshot *ss)
{
	const struct instance_state *in = ss ? &ss->instance : NULL;

	if (ss) {
		render_instance_type(w, ss);
	}
	if (!in || !in->is_declared) {
		return;
	}
	render_instance_info(w, in);
	prom_family(w, "iopsd_instance_iops", FAMILY_GAUGE,
		    "Those volumes' IOPS summed over the last sample interval.");
	prom_sample(w, "iopsd_instance_iops", NULL, 0, in->iops);
	prom_family(w, "iopsd_instance_throughput_bytes_per_second", FAMILY_GAUGE,
		    "Those volumes' throughput summed over the last sample interval, in bytes per second.");
	prom_sample(w, "iopsd_instance_throughput_bytes_per_second", NULL, 0, in->bytes_per_sec);
	if (in->iops_limit > 0) {
		prom_family(w, "iopsd_instance_iops_limit", FAMILY_GAUGE,
			    "Declared IOPS limit of the instance ([instance] iops_limit).");
		prom_sample_u64(w, "iopsd_instance_iops_limit", NULL, 0, in->iops_limit);
	}
	if (in->throughput_limit > 0) {
		prom_family(w, "iopsd_instance_throughput_limit_bytes", FAMILY_GAUGE,
			    "Declared throughput limit of the instance in bytes per second ([instance] "
			    "throughput_limit).");
		prom_sample_u64(w, "iopsd_instance_throughput_limit_bytes", NULL, 0, in->throughput_limit);
	}
	if (in->iops_limit == 0 && in->throughput_limit == 0) {
		return;
	}
	prom_family(
	    w, "iopsd_instance_limit_ratio", FAMILY_GAUGE,
	    "The volumes' summed rate over the instance's declared limit in the last sample interval.");
	if (in->iops_limit > 0) {
		sample_resource(w, "iopsd_instance_limit_ratio", "iops", in->iops_limit_ratio);
	}
	if (in->throughput_limit > 0) {
		sample_resource(w, "iopsd_instance_limit_ratio", "throughput", in->throughput_limit_ratio);
	}
	prom_family(w, "iopsd_instance_at_ceiling_seconds_total", FAMILY_COUNTER,
		    "Seconds the volumes together ran at the instance's declared limit (ratio at or above "
		    "ceiling_threshold).");
	if (in->iops_limit > 0) {
		sample_resource(w, "iopsd_instance_at_ceiling_seconds_total", "iops",
				in->at_ceiling_iops_seconds);
	}
	if (in->throughput_limit > 0) {
		sample_resource(w, "iopsd_instance_at_ceiling_seconds_total", "throughput",
				in->at_ceiling_throughput_seconds);
	}
}
