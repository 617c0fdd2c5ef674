/* /metrics: the per-device families (diskstats counters, iostat -x rates,
 * ceilings, bursts, md health), a table of {name, type, help, emitter}. */
#include "prom.h"

#include <stddef.h>
#include <string.h>

#include "macro.h"
#include "sampler.h"

/* ---- devices ---- */

struct device_family;
typedef void (*device_emit_fn)(struct prom_writer *w, const struct device_family *f,
			       const struct device_state *d);

/* One figure of struct device_rates, exported with label op=`op` (no label
 * when op is ""), for devices whose diskstats have at least min_fields. */
struct rate_column {
	const char *op;
	size_t offset;
	unsigned min_fields;
};

struct device_family {
	const char *name;
	enum family_type type;
	const char *help;
	device_emit_fn emit;
	/* emit_raw: a uint64_t of struct diskstats_raw, times mult / div;
	 * emit_ceiling_*: a field of struct device_ceiling */
	size_t offset;
	uint64_t mult, div;
	unsigned min_fields; /* 18: discard fields, 20: flush fields */
	/* derived figures: a list ending with op == NULL */
	const struct rate_column *columns;
};

#define RAW(field) offsetof(struct diskstats_raw, field)
#define RATE(op, field, min_fields)                                                                          \
	{                                                                                                    \
		op, offsetof(struct device_rates, field), min_fields                                         \
	}

static const struct rate_column iops_columns[] = {
    RATE("read", read_iops, 0),
    RATE("write", write_iops, 0),
    RATE("discard", discard_iops, 18),
    RATE("flush", flush_iops, 20),
    {NULL, 0, 0},
};
static const struct rate_column throughput_columns[] = {
    RATE("read", read_bytes_per_sec, 0),
    RATE("write", write_bytes_per_sec, 0),
    RATE("discard", discard_bytes_per_sec, 18),
    {NULL, 0, 0},
};
static const struct rate_column merges_columns[] = {
    RATE("read", read_merges_per_sec, 0),
    RATE("write", write_merges_per_sec, 0),
    {NULL, 0, 0},
};
static const struct rate_column await_columns[] = {
    RATE("read", read_await_sec, 0),
    RATE("write", write_await_sec, 0),
    RATE("discard", discard_await_sec, 18),
    RATE("flush", flush_await_sec, 20),
    {NULL, 0, 0},
};
static const struct rate_column queue_depth_column[] = {RATE("", queue_depth, 0), {NULL, 0, 0}};
static const struct rate_column utilization_column[] = {RATE("", utilization, 0), {NULL, 0, 0}};

static void emit_raw(struct prom_writer *w, const struct device_family *f, const struct device_state *d)
{
	struct prom_label l = {"device", d->raw.name};
	uint64_t v;

	if (d->raw.n_fields < f->min_fields) {
		return;
	}
	memcpy(&v, (const char *)&d->raw + f->offset, sizeof(v));
	if (f->div > 1) {
		prom_sample(w, f->name, &l, 1, (double)v * (double)f->mult / (double)f->div);
	} else {
		prom_sample_u64(w, f->name, &l, 1, v * f->mult);
	}
}

static void sample_device_op(struct prom_writer *w, const char *name, const struct device_state *d,
			     const char *label, const char *op, double v)
{
	struct prom_label l[2] = {{"device", d->raw.name}, {label, op}};

	prom_sample(w, name, l, op[0] ? 2 : 1, v);
}

static void sample_device(struct prom_writer *w, const char *name, const struct device_state *d, double v)
{
	sample_device_op(w, name, d, "", "", v);
}

static void emit_rates(struct prom_writer *w, const struct device_family *f, const struct device_state *d)
{
	if (!d->rates.valid) {
		return;
	}
	for (const struct rate_column *c = f->columns; c->op; c++) {
		double v;

		if (d->raw.n_fields < c->min_fields) {
			continue;
		}
		memcpy(&v, (const char *)&d->rates + c->offset, sizeof(v));
		sample_device_op(w, f->name, d, "op", c->op, v);
	}
}

static void emit_member_utilization(struct prom_writer *w, const struct device_family *f,
				    const struct device_state *d)
{
	if (d->has_member_rates && d->member_rates.valid) {
		sample_device(w, f->name, d, d->member_rates.utilization);
	}
}

/* volume_id only where there is one: an absent label is an empty one to
 * PromQL, and the series of other devices stay as they were. */
static void emit_info(struct prom_writer *w, const struct device_family *f, const struct device_state *d)
{
	const struct device_topology *t = &d->topo;
	bool has_volume_id = t->volume_id && t->volume_id[0];
	char members[DEVICE_MAX_MEMBERS * DISKSTATS_NAME_MAX];
	struct prom_label l[] = {
	    {"device", d->raw.name},
	    {"kind", device_kind_to_string(t->kind)},
	    {"members", members},
	    {"mountpoint", t->mountpoints ? t->mountpoints : ""},
	    {"volume_id", has_volume_id ? t->volume_id : ""},
	};

	device_names_join((const char *const *)t->members, t->n_members, members, sizeof(members));
	prom_sample(w, f->name, l, ELEMENTSOF(l) - (has_volume_id ? 0 : 1), 1);
}

/* A series per Kubernetes PersistentVolume and pod the kubelet's mount
 * paths name on the device, pod_uid only where a path names one; none on
 * other devices. A family of its own: iopsd_device_info keeps one series,
 * and its labels, per device. */
static void emit_persistentvolume(struct prom_writer *w, const struct device_family *f,
				  const struct device_state *d)
{
	for (size_t i = 0; i < d->topo.n_persistentvolumes; i++) {
		const struct device_persistentvolume *v = &d->topo.persistentvolumes[i];
		struct prom_label l[] = {
		    {"device", d->raw.name},
		    {"persistentvolume", v->persistentvolume},
		    {"pod_uid", v->pod_uid},
		};

		prom_sample(w, f->name, l, ELEMENTSOF(l) - (v->pod_uid[0] ? 0 : 1), 1);
	}
}

static void emit_size(struct prom_writer *w, const struct device_family *f, const struct device_state *d)
{
	struct prom_label l = {"device", d->raw.name};

	if (d->topo.size_bytes > 0) {
		prom_sample_u64(w, f->name, &l, 1, d->topo.size_bytes);
	}
}

#define CEILING(field) .offset = offsetof(struct device_ceiling, field)

/* A declared limit (uint64_t), when there is one. */
static void emit_ceiling_limit(struct prom_writer *w, const struct device_family *f,
			       const struct device_state *d)
{
	struct prom_label l = {"device", d->raw.name};
	uint64_t v;

	memcpy(&v, (const char *)&d->ceiling + f->offset, sizeof(v));
	if (v > 0) {
		prom_sample_u64(w, f->name, &l, 1, v);
	}
}

/* A double figure, always. */
static void emit_ceiling_gauge(struct prom_writer *w, const struct device_family *f,
			       const struct device_state *d)
{
	double v;

	memcpy(&v, (const char *)&d->ceiling + f->offset, sizeof(v));
	sample_device(w, f->name, d, v);
}

/* A bool, as 1 or 0. */
static void emit_ceiling_flag(struct prom_writer *w, const struct device_family *f,
			      const struct device_state *d)
{
	bool v;

	memcpy(&v, (const char *)&d->ceiling + f->offset, sizeof(v));
	sample_device(w, f->name, d, v ? 1 : 0);
}

/* Each declared limit of a device: its resource label, the limit (uint64_t)
 * and, of struct device_ceiling, its ratio and seconds at it (doubles). */
struct declared_limit {
	const char *resource;
	size_t limit, ratio, seconds;
};

#define DECLARED(res, lim, rat, sec)                                                                         \
	{                                                                                                    \
		res, offsetof(struct device_ceiling, lim), offsetof(struct device_ceiling, rat),             \
		    offsetof(struct device_ceiling, sec)                                                     \
	}

static const struct declared_limit declared_limits[] = {
    DECLARED("iops", iops_limit, iops_limit_ratio, at_ceiling_iops_seconds),
    DECLARED("throughput", throughput_limit, throughput_limit_ratio, at_ceiling_throughput_seconds),
    DECLARED("read_iops", read_iops_limit, read_iops_limit_ratio, at_ceiling_read_iops_seconds),
    DECLARED("write_iops", write_iops_limit, write_iops_limit_ratio, at_ceiling_write_iops_seconds),
    DECLARED("read_throughput", read_throughput_limit, read_throughput_limit_ratio,
	     at_ceiling_read_throughput_seconds),
    DECLARED("write_throughput", write_throughput_limit, write_throughput_limit_ratio,
	     at_ceiling_write_throughput_seconds),
};

static double ceiling_double(const struct device_state *d, size_t offset)
{
	double v;

	memcpy(&v, (const char *)&d->ceiling + offset, sizeof(v));
	return v;
}

/* resource=NAME for each declared limit: the ratio (is_seconds false) or
 * the seconds at it. */
static void emit_declared(struct prom_writer *w, const struct device_family *f, const struct device_state *d,
			  bool is_seconds)
{
	for (size_t i = 0; i < ELEMENTSOF(declared_limits); i++) {
		const struct declared_limit *l = &declared_limits[i];
		uint64_t limit;

		memcpy(&limit, (const char *)&d->ceiling + l->limit, sizeof(limit));
		if (limit > 0) {
			sample_device_op(w, f->name, d, "resource", l->resource,
					 ceiling_double(d, is_seconds ? l->seconds : l->ratio));
		}
	}
}

static void emit_limit_ratio(struct prom_writer *w, const struct device_family *f,
			     const struct device_state *d)
{
	emit_declared(w, f, d, false);
}

/* A read and a write figure as op="read" and op="write", each where it is
 * above 0. */
static void emit_op_pair(struct prom_writer *w, const struct device_family *f, const struct device_state *d,
			 double read, double write)
{
	if (read > 0) {
		sample_device_op(w, f->name, d, "op", "read", read);
	}
	if (write > 0) {
		sample_device_op(w, f->name, d, "op", "write", write);
	}
}

/* The declared read and write IOPS limits, op="read"/"write". */
static void emit_op_limit(struct prom_writer *w, const struct device_family *f, const struct device_state *d)
{
	emit_op_pair(w, f, d, (double)d->ceiling.read_iops_limit, (double)d->ceiling.write_iops_limit);
}

/* The declared read and write throughput limits, op="read"/"write". */
static void emit_op_throughput_limit(struct prom_writer *w, const struct device_family *f,
				     const struct device_state *d)
{
	emit_op_pair(w, f, d, (double)d->ceiling.read_throughput_limit,
		     (double)d->ceiling.write_throughput_limit);
}

/* Each direction's own ceiling, where the directions have caps of their own. */
static void emit_op_estimate(struct prom_writer *w, const struct device_family *f,
			     const struct device_state *d)
{
	emit_op_pair(w, f, d, d->ceiling.read_iops_estimate, d->ceiling.write_iops_estimate);
}

/* I/Os weighted by size in the provider's units, where one is known. */
static void emit_provider_iops(struct prom_writer *w, const struct device_family *f,
			       const struct device_state *d)
{
	if (d->ceiling.iops_unit && d->rates.valid) {
		sample_device(w, f->name, d, d->ceiling.provider_iops);
	}
}

/* The limit that holds the device, 1 with its name as a label. */
static void emit_resource(struct prom_writer *w, const struct device_family *f, const struct device_state *d)
{
	if (d->ceiling.resource) {
		sample_device_op(w, f->name, d, "resource", d->ceiling.resource, 1);
	}
}

/* The ceiling found over the limit declared, where there are both (a burst
 * model's limit of the moment does not count). */
static void emit_ceiling_limit_ratio(struct prom_writer *w, const struct device_family *f,
				     const struct device_state *d)
{
	const struct device_ceiling *c = &d->ceiling;

	if (c->iops_ceiling_limit_ratio > 0) {
		sample_device_op(w, f->name, d, "resource", "iops", c->iops_ceiling_limit_ratio);
	}
	if (c->throughput_ceiling_limit_ratio > 0) {
		sample_device_op(w, f->name, d, "resource", "throughput", c->throughput_ceiling_limit_ratio);
	}
}

static void emit_at_ceiling(struct prom_writer *w, const struct device_family *f,
			    const struct device_state *d)
{
	emit_declared(w, f, d, true);
}

static void emit_burst_balance(struct prom_writer *w, const struct device_family *f,
			       const struct device_state *d)
{
	if (d->ceiling.has_burst_model) {
		sample_device(w, f->name, d, d->ceiling.burst_balance_ratio);
	}
}

/* A figure of the burst bucket iopsd learned, once it saw one run out. */
static void emit_learned_burst(struct prom_writer *w, const struct device_family *f,
			       const struct device_state *d)
{
	double v;

	if (!d->ceiling.has_learned_burst) {
		return;
	}
	memcpy(&v, (const char *)&d->ceiling + f->offset, sizeof(v));
	sample_device(w, f->name, d, v);
}

static void emit_burst_exhausted(struct prom_writer *w, const struct device_family *f,
				 const struct device_state *d)
{
	if (d->ceiling.has_learned_burst && d->ceiling.burst_exhausted_realtime_usec > 0) {
		sample_device(w, f->name, d,
			      (double)d->ceiling.burst_exhausted_realtime_usec / (double)USEC_PER_SEC);
	}
}

/* md/dm: one series per member, 1 while it holds the array. */
static void emit_held_by(struct prom_writer *w, const struct device_family *f, const struct device_state *d)
{
	if (d->topo.kind != DEVICE_KIND_MD && d->topo.kind != DEVICE_KIND_DM) {
		return;
	}
	for (unsigned k = 0; k < d->topo.n_members && k < DEVICE_MAX_MEMBERS; k++) {
		struct prom_label l[] = {{"device", d->raw.name}, {"member", d->topo.members[k]}};

		prom_sample(w, f->name, l, ELEMENTSOF(l), (d->ceiling.held_by_mask >> k) & 1 ? 1 : 0);
	}
}

static void emit_md_degraded(struct prom_writer *w, const struct device_family *f,
			     const struct device_state *d)
{
	if (d->md.is_known) {
		sample_device(w, f->name, d, d->md.degraded);
	}
}

/* md: one series per member, 1 once md marked it faulty. */
static void emit_member_failed(struct prom_writer *w, const struct device_family *f,
			       const struct device_state *d)
{
	if (!d->md.is_known) {
		return;
	}
	for (unsigned k = 0; k < d->topo.n_members && k < DEVICE_MAX_MEMBERS; k++) {
		struct prom_label l[] = {{"device", d->raw.name}, {"member", d->topo.members[k]}};

		prom_sample(w, f->name, l, ELEMENTSOF(l), (d->md.failed_mask >> k) & 1 ? 1 : 0);
	}
}

static const struct device_family device_families[] = {
    {"iopsd_device_info", FAMILY_GAUGE,
     "Always 1; the device's kind (disk, partition, md, dm, loop), md/dm members, mount points and, where "
     "its serial is an EBS volume id, volume_id.",
     emit_info},
    {"iopsd_device_persistentvolume_info", FAMILY_GAUGE,
     "Always 1; a Kubernetes PersistentVolume on the device, as the kubelet's mount paths name it, and a pod "
     "that mounts it (pod_uid, where a path names one). Join kube-state-metrics' "
     "kube_persistentvolume_claim_ref on persistentvolume for its claim.",
     emit_persistentvolume},
    {"iopsd_device_size_bytes", FAMILY_GAUGE, "Size of the device in bytes.", emit_size},
    /* /proc/diskstats, named after node_exporter's node_disk_* */
    {"iopsd_device_reads_completed_total", FAMILY_COUNTER, "Reads completed (diskstats field 1).", emit_raw,
     RAW(reads), 1, 1, 0},
    {"iopsd_device_reads_merged_total", FAMILY_COUNTER,
     "Adjacent reads merged before issue (diskstats field 2).", emit_raw, RAW(reads_merged), 1, 1, 0},
    {"iopsd_device_read_bytes_total", FAMILY_COUNTER, "Bytes read (diskstats field 3, 512-byte sectors).",
     emit_raw, RAW(read_sectors), 512, 1, 0},
    {"iopsd_device_read_time_seconds_total", FAMILY_COUNTER,
     "Seconds spent by all reads (diskstats field 4).", emit_raw, RAW(read_ms), 1, 1000, 0},
    {"iopsd_device_writes_completed_total", FAMILY_COUNTER, "Writes completed (diskstats field 5).", emit_raw,
     RAW(writes), 1, 1, 0},
    {"iopsd_device_writes_merged_total", FAMILY_COUNTER,
     "Adjacent writes merged before issue (diskstats field 6).", emit_raw, RAW(writes_merged), 1, 1, 0},
    {"iopsd_device_written_bytes_total", FAMILY_COUNTER,
     "Bytes written (diskstats field 7, 512-byte sectors).", emit_raw, RAW(write_sectors), 512, 1, 0},
    {"iopsd_device_write_time_seconds_total", FAMILY_COUNTER,
     "Seconds spent by all writes (diskstats field 8).", emit_raw, RAW(write_ms), 1, 1000, 0},
    {"iopsd_device_io_now", FAMILY_GAUGE, "I/Os in flight when the sample was taken (diskstats field 9).",
     emit_raw, RAW(in_flight), 1, 1, 0},
    {"iopsd_device_io_time_seconds_total", FAMILY_COUNTER,
     "Seconds the device had I/O in flight (diskstats field 10).", emit_raw, RAW(io_ms), 1, 1000, 0},
    {"iopsd_device_io_time_weighted_seconds_total", FAMILY_COUNTER,
     "Seconds spent doing I/O weighted by the number in flight (diskstats field 11).", emit_raw,
     RAW(weighted_ms), 1, 1000, 0},
    {"iopsd_device_discards_completed_total", FAMILY_COUNTER, "Discards completed (diskstats field 12).",
     emit_raw, RAW(discards), 1, 1, 18},
    {"iopsd_device_discards_merged_total", FAMILY_COUNTER,
     "Adjacent discards merged before issue (diskstats field 13).", emit_raw, RAW(discards_merged), 1, 1, 18},
    {"iopsd_device_discarded_bytes_total", FAMILY_COUNTER,
     "Bytes discarded (diskstats field 14, 512-byte sectors).", emit_raw, RAW(discard_sectors), 512, 1, 18},
    {"iopsd_device_discard_time_seconds_total", FAMILY_COUNTER,
     "Seconds spent by all discards (diskstats field 15).", emit_raw, RAW(discard_ms), 1, 1000, 18},
    {"iopsd_device_flush_requests_total", FAMILY_COUNTER, "Flush requests completed (diskstats field 16).",
     emit_raw, RAW(flushes), 1, 1, 20},
    {"iopsd_device_flush_requests_time_seconds_total", FAMILY_COUNTER,
     "Seconds spent by all flush requests (diskstats field 17).", emit_raw, RAW(flush_ms), 1, 1000, 20},
    /* iostat -x over the last sample interval */
    {"iopsd_device_iops", FAMILY_GAUGE,
     "Completed I/O operations per second over the last sample interval (iostat r/s, w/s, d/s, f/s).",
     emit_rates, .columns = iops_columns},
    {"iopsd_device_throughput_bytes_per_second", FAMILY_GAUGE,
     "Bytes per second over the last sample interval (iostat rkB/s, wkB/s, dkB/s in bytes).", emit_rates,
     .columns = throughput_columns},
    {"iopsd_device_merges_per_second", FAMILY_GAUGE,
     "Requests merged per second over the last sample interval (iostat rrqm/s, wrqm/s).", emit_rates,
     .columns = merges_columns},
    {"iopsd_device_await_seconds", FAMILY_GAUGE,
     "Average time from issue to completion of the requests completed in the last sample interval (iostat "
     "r_await, w_await, in seconds).",
     emit_rates, .columns = await_columns},
    {"iopsd_device_queue_depth", FAMILY_GAUGE,
     "Average number of requests in flight over the last sample interval (iostat aqu-sz).", emit_rates,
     .columns = queue_depth_column},
    {"iopsd_device_utilization_ratio", FAMILY_GAUGE,
     "Fraction of the last sample interval the device had I/O in flight (iostat %util / 100).", emit_rates,
     .columns = utilization_column},
    {"iopsd_device_member_utilization_ratio", FAMILY_GAUGE,
     "md/dm devices: the highest utilization among the members over the last sample interval.",
     emit_member_utilization},
    /* ceilings */
    {"iopsd_device_iops_limit", FAMILY_GAUGE, "Declared IOPS limit of the device (iops_limit).",
     emit_ceiling_limit, CEILING(iops_limit)},
    {"iopsd_device_throughput_limit_bytes", FAMILY_GAUGE,
     "Declared throughput limit of the device in bytes per second (throughput_limit).", emit_ceiling_limit,
     CEILING(throughput_limit)},
    {"iopsd_device_op_iops_limit", FAMILY_GAUGE,
     "Declared IOPS limit of the device's reads or writes alone (read_iops_limit, write_iops_limit).",
     emit_op_limit},
    {"iopsd_device_op_throughput_limit_bytes", FAMILY_GAUGE,
     "Declared throughput limit of the device's reads or writes alone in bytes per second "
     "(read_throughput_limit, write_throughput_limit).",
     emit_op_throughput_limit},
    {"iopsd_device_iops_unit_bytes", FAMILY_GAUGE,
     "The provider's I/O unit: an I/O larger counts as its size in units (iops_unit, or volume_type's).",
     emit_ceiling_limit, CEILING(iops_unit)},
    {"iopsd_device_provider_iops", FAMILY_GAUGE,
     "I/Os per second as the provider counts them: weighted by their size in units of "
     "iopsd_device_iops_unit_bytes.",
     emit_provider_iops},
    {"iopsd_device_limit_ratio", FAMILY_GAUGE,
     "Observed rate over the declared limit in the last sample interval.", emit_limit_ratio},
    {"iopsd_device_at_ceiling_seconds_total", FAMILY_COUNTER,
     "Seconds the device ran at its declared limit (ratio at or above ceiling_threshold).", emit_at_ceiling},
    {"iopsd_device_burst_balance_ratio", FAMILY_GAUGE,
     "Modelled burst credit balance, 0 (empty) to 1 (full), for devices with a burst model (declared, or "
     "learned from a burst seen to run out).",
     emit_burst_balance},
    {"iopsd_device_burst_iops_estimate", FAMILY_GAUGE,
     "IOPS of the last burst iopsd saw run out under the same demand (learned, declared model or not).",
     emit_learned_burst, CEILING(burst_iops_estimate)},
    {"iopsd_device_burst_base_iops_estimate", FAMILY_GAUGE,
     "IOPS the device settled to when that burst ran out: its base rate, at which credits come back.",
     emit_learned_burst, CEILING(burst_base_iops_estimate)},
    {"iopsd_device_burst_credits_estimate", FAMILY_GAUGE,
     "Size of the learned burst bucket in I/Os over the base: (burst - base) x the burst's length.",
     emit_learned_burst, CEILING(burst_credits_estimate)},
    {"iopsd_device_burst_duration_seconds", FAMILY_GAUGE,
     "How long the last burst lasted, from the start of the demand to running out.", emit_learned_burst,
     CEILING(burst_duration_seconds)},
    {"iopsd_device_burst_exhausted_timestamp_seconds", FAMILY_GAUGE,
     "When the last burst ran out, seconds since the epoch.", emit_burst_exhausted},
    {"iopsd_device_throttled", FAMILY_GAUGE,
     "1 while the device is held at a ceiling (limit reached, or IOPS flat while latency and queue grow), "
     "else 0.",
     emit_ceiling_flag, CEILING(is_throttled)},
    {"iopsd_device_held_by", FAMILY_GAUGE,
     "md/dm devices: 1 while the member is throttled and so holds the array to its pace (the array is "
     "throttled then too), else 0.",
     emit_held_by},
    {"iopsd_device_md_degraded", FAMILY_GAUGE,
     "md arrays: members the array runs without, missing or failed (md's degraded; on RAID0 and linear the "
     "failed members, at least 1 once the array is broken).",
     emit_md_degraded},
    {"iopsd_device_member_failed", FAMILY_GAUGE, "md arrays: 1 for a member md marked faulty, else 0.",
     emit_member_failed},
    {"iopsd_device_saturated", FAMILY_GAUGE,
     "1 while the device is saturated (busy all the time with a growing queue), else 0.", emit_ceiling_flag,
     CEILING(is_saturated)},
    {"iopsd_device_iops_ceiling_estimate", FAMILY_GAUGE,
     "IOPS at which the device was seen to hit a ceiling; 0 when none was detected.", emit_ceiling_gauge,
     CEILING(iops_ceiling_estimate)},
    {"iopsd_device_throughput_ceiling_estimate_bytes_per_second", FAMILY_GAUGE,
     "Throughput in bytes per second at which the device was seen to hit a ceiling; 0 when none was "
     "detected.",
     emit_ceiling_gauge, CEILING(throughput_ceiling_estimate)},
    {"iopsd_device_op_iops_ceiling_estimate", FAMILY_GAUGE,
     "IOPS at which the device's reads or writes alone hit a ceiling of their own (separate caps).",
     emit_op_estimate},
    {"iopsd_device_ceiling_resource", FAMILY_GAUGE,
     "1 for the limit that holds the device: iops, read_iops, write_iops or throughput.", emit_resource},
    {"iopsd_device_ceiling_limit_ratio", FAMILY_GAUGE,
     "The ceiling iopsd found over the declared limit: about 1 when the volume delivers what was "
     "provisioned, well below 1 when a lower ceiling holds it.",
     emit_ceiling_limit_ratio},
};

void prom_render_devices(struct prom_writer *w, const struct sampler_snapshot *ss)
{
	if (!ss) {
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(device_families); i++) {
		const struct device_family *f = &device_families[i];

		prom_family(w, f->name, f->type, f->help);
		for (size_t j = 0; j < ss->n_devices; j++) {
			f->emit(w, f, &ss->devices[j]);
		}
	}
}
