/* /metrics: EBS NVMe statistics (log page 0xD0) of the volumes found. */
#include "prom.h"

#include <ctype.h>
#include <string.h>

#include "ebs_nvme.h"
#include "macro.h"
#include "sampler.h"
#include "timeutil.h"

/* ---- EBS NVMe log page 0xD0 (only where such volumes exist) ---- */

/* The bins of an EBS histogram, counted up as they are written. */
struct ebs_buckets {
	const struct ebs_nvme_histogram *h;
	uint64_t cum;
};

static bool ebs_bucket(void *userdata, size_t i, double *ret_le_seconds, uint64_t *ret_count)
{
	struct ebs_buckets *b = userdata;

	b->cum += b->h->bins[i].count;
	/* an open-ended last bin is the +Inf bucket */
	if (b->h->bins[i].upper_usec >= (UINT64_C(1) << 53)) {
		return false;
	}
	*ret_le_seconds = usec_to_sec(b->h->bins[i].upper_usec);
	*ret_count = b->cum;
	return true;
}

/* The device's own latency histogram: its bins' upper bounds become the
 * buckets, the summed latency of completed I/O the _sum. */
static void sample_ebs_histogram(struct prom_writer *w, const char *name, struct prom_label *labels,
				 size_t n_labels, const struct ebs_nvme_histogram *h, uint64_t ops,
				 uint64_t time_usec)
{
	struct ebs_buckets b = {.h = h};
	uint64_t in_bins = 0;

	for (unsigned i = 0; i < h->n_bins; i++) {
		in_bins += h->bins[i].count;
	}
	/* +Inf must equal _count: the page's op counter, unless the bins
	 * (32-bit counts) say more */
	prom_sample_histogram(w, name, labels, n_labels, ebs_bucket, &b, h->n_bins,
			      in_bins > ops ? in_bins : ops, usec_to_sec(time_usec));
}

enum ebs_field {
	EBS_VOLUME_EXCEEDED_IOPS,
	EBS_VOLUME_EXCEEDED_THROUGHPUT,
	EBS_INSTANCE_EXCEEDED_IOPS,
	EBS_INSTANCE_EXCEEDED_THROUGHPUT,
	EBS_QUEUE_LENGTH,
	EBS_OPS,
	EBS_BYTES,
	EBS_LATENCY,
};

static const struct {
	const char *name;
	enum family_type type;
	const char *help;
} ebs_families[] = {
    [EBS_VOLUME_EXCEEDED_IOPS] =
	{"iopsd_ebs_volume_performance_exceeded_iops_seconds_total", FAMILY_COUNTER,
	 "Time the volume's IOPS demand exceeded its provisioned IOPS (EBS log page 0xD0)."},
    [EBS_VOLUME_EXCEEDED_THROUGHPUT] =
	{"iopsd_ebs_volume_performance_exceeded_throughput_seconds_total", FAMILY_COUNTER,
	 "Time the volume's throughput demand exceeded its provisioned throughput."},
    [EBS_INSTANCE_EXCEEDED_IOPS] = {"iopsd_ebs_instance_performance_exceeded_iops_seconds_total",
				    FAMILY_COUNTER,
				    "Time IOPS demand exceeded the instance's maximum EBS IOPS."},
    [EBS_INSTANCE_EXCEEDED_THROUGHPUT] =
	{"iopsd_ebs_instance_performance_exceeded_throughput_seconds_total", FAMILY_COUNTER,
	 "Time throughput demand exceeded the instance's maximum EBS throughput."},
    [EBS_QUEUE_LENGTH] = {"iopsd_ebs_volume_queue_length", FAMILY_GAUGE,
			  "I/O operations waiting at the volume, as EBS saw it when last read."},
    [EBS_OPS] = {"iopsd_ebs_volume_ops_total", FAMILY_COUNTER,
		 "Operations the volume completed, as EBS counts them."},
    [EBS_BYTES] = {"iopsd_ebs_volume_bytes_total", FAMILY_COUNTER,
		   "Bytes the volume transferred, as EBS counts them."},
    [EBS_LATENCY] = {"iopsd_ebs_volume_latency_seconds", FAMILY_HISTOGRAM,
		     "Latency of completed operations as EBS measured it, with the volume's own buckets."},
};

/* Every EBS volume found says whether its page was read, and why not
 * (errno's name in lower case): the packaged unit grants no CAP_SYS_ADMIN,
 * so there it is 0 with reason "eacces" or "eperm". Returns how many were
 * read. */
static size_t render_ebs_readable(struct prom_writer *w, const struct sampler_snapshot *ss)
{
	static const char name[] = "iopsd_ebs_volume_statistics_readable";
	size_t n_read = 0;

	prom_family(
	    w, name, FAMILY_GAUGE,
	    "1 when the volume's EBS statistics (NVMe log page 0xD0) were read, else 0 with the reason "
	    "(eacces, eperm: no access to the controller or no CAP_SYS_ADMIN).");
	for (size_t j = 0; j < ss->n_ebs; j++) {
		const struct ebs_nvme_volume *v = &ss->ebs[j];
		const char *errname = v->error ? strerrorname_np(-v->error) : NULL;
		char reason[32] = "other";
		struct prom_label l[] = {
		    {"device", v->device}, {"volume_id", v->volume_id}, {"reason", reason}, {0}};

		if (v->error == 0) {
			prom_sample(w, name, l, 2, 1);
			n_read++;
			continue;
		}
		for (size_t k = 0; errname && errname[k] && k + 1 < sizeof(reason); k++) {
			reason[k] = (char)tolower((unsigned char)errname[k]);
			reason[k + 1] = '\0';
		}
		prom_sample(w, name, l, 3, 0);
	}
	return n_read;
}

void prom_render_ebs(struct prom_writer *w, const struct sampler_snapshot *ss)
{
	if (!ss || ss->n_ebs == 0 || render_ebs_readable(w, ss) == 0) {
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(ebs_families); i++) {
		prom_family(w, ebs_families[i].name, ebs_families[i].type, ebs_families[i].help);
		for (size_t j = 0; j < ss->n_ebs; j++) {
			const struct ebs_nvme_volume *v = &ss->ebs[j];
			const struct ebs_nvme_stats *st = &v->stats;
			struct prom_label l[] = {
			    {"device", v->device}, {"volume_id", v->volume_id}, {"op", "read"}, {0}};
			const char *name = ebs_families[i].name;

			if (v->error) {
				continue;
			}

			switch ((enum ebs_field)i) {
			case EBS_VOLUME_EXCEEDED_IOPS:
				prom_sample(w, name, l, 2, usec_to_sec(st->volume_exceeded_iops_usec));
				break;
			case EBS_VOLUME_EXCEEDED_THROUGHPUT:
				prom_sample(w, name, l, 2, usec_to_sec(st->volume_exceeded_throughput_usec));
				break;
			case EBS_INSTANCE_EXCEEDED_IOPS:
				prom_sample(w, name, l, 2, usec_to_sec(st->instance_exceeded_iops_usec));
				break;
			case EBS_INSTANCE_EXCEEDED_THROUGHPUT:
				prom_sample(w, name, l, 2,
					    usec_to_sec(st->instance_exceeded_throughput_usec));
				break;
			case EBS_QUEUE_LENGTH:
				prom_sample_u64(w, name, l, 2, st->queue_length);
				break;
			case EBS_OPS:
				prom_sample_u64(w, name, l, 3, st->read_ops);
				l[2].value = "write";
				prom_sample_u64(w, name, l, 3, st->write_ops);
				break;
			case EBS_BYTES:
				prom_sample_u64(w, name, l, 3, st->read_bytes);
				l[2].value = "write";
				prom_sample_u64(w, name, l, 3, st->write_bytes);
				break;
			case EBS_LATENCY:
				sample_ebs_histogram(w, name, l, 3, &st->read_latency, st->read_ops,
						     st->read_time_usec);
				l[2].value = "write";
				l[3] = (struct prom_label){0};
				sample_ebs_histogram(w, name, l, 3, &st->write_latency, st->write_ops,
						     st->write_time_usec);
				break;
			}
		}
	}
}
