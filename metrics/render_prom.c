/* Prometheus text 0.0.4 and OpenMetrics 1.0.0 from a snapshot. Families are
 * tables of {name, type, help, emitter}: adding a family is one table entry
 * and, when its value is not a plain field, one small emitter. */
#include "render_prom.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"
#include "ebs_nvme.h"
#include "histogram.h"
#include "iopsd-build.h"
#include "macro.h"
#include "timeutil.h"
#include "probe.h"
#include "shared_ceiling.h"
#include "utf8.h"

enum family_type {
	FAMILY_COUNTER,
	FAMILY_GAUGE,
	FAMILY_HISTOGRAM,
	FAMILY_SUMMARY,
};

struct writer {
	FILE *f;
	enum metrics_format fmt;
};

struct label {
	const char *name;
	const char *value;
};

const char *metrics_format_content_type(enum metrics_format fmt)
{
	return fmt == METRICS_FORMAT_OPENMETRICS ? OPENMETRICS_CONTENT_TYPE : PROMETHEUS_CONTENT_TYPE;
}

/* Escape for a label value (quote = true) or HELP text (quote only in
 * OpenMetrics); invalid UTF-8 becomes U+FFFD. */
static void write_escaped(FILE *f, const char *value, bool escape_quote)
{
	const unsigned char *p = (const unsigned char *)value;

	while (*p) {
		size_t n;

		switch (*p) {
		case '\\':
			fputs("\\\\", f);
			p++;
			continue;
		case '\n':
			fputs("\\n", f);
			p++;
			continue;
		case '"':
			fputs(escape_quote ? "\\\"" : "\"", f);
			p++;
			continue;
		default:
			break;
		}
		n = utf8_sequence_length((const char *)p);
		if (n == 0) {
			fputs(UTF8_REPLACEMENT, f);
			p++;
			continue;
		}
		fwrite(p, 1, n, f);
		p += n;
	}
}

void prom_write_label_value(FILE *f, const char *value)
{
	write_escaped(f, value, true);
}

void prom_format_value(char *buf, size_t len, double v)
{
	if (isnan(v)) {
		snprintf(buf, len, "NaN");
	} else if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	} else if (v == 0) {
		snprintf(buf, len, "0");
	} else if (v == trunc(v) && fabs(v) < 1e15) {
		snprintf(buf, len, "%.0f", v);
	} else {
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(buf, len, "%.*g", prec, v);
			if (strtod(buf, NULL) == v) {
				break;
			}
		}
	}
}

void prom_format_le(char *buf, size_t len, double bound, enum metrics_format fmt)
{
	prom_format_value(buf, len, bound);
	/* OpenMetrics' canonical form of an integral bound has a ".0" */
	if (fmt == METRICS_FORMAT_OPENMETRICS && isfinite(bound) && !strpbrk(buf, ".eE")) {
		size_t n = strlen(buf);

		if (n + 2 < len) {
			memcpy(buf + n, ".0", 3);
		}
	}
}

static void family(struct writer *w, const char *name, enum family_type type, const char *help)
{
	static const char *const type_names[] = {
	    [FAMILY_COUNTER] = "counter",
	    [FAMILY_GAUGE] = "gauge",
	    [FAMILY_HISTOGRAM] = "histogram",
	    [FAMILY_SUMMARY] = "summary",
	};
	size_t n = strlen(name);

	/* OpenMetrics names a counter family without its _total suffix */
	if (w->fmt == METRICS_FORMAT_OPENMETRICS && type == FAMILY_COUNTER && n > 6 &&
	    strcmp(name + n - 6, "_total") == 0) {
		n -= 6;
	}
	fprintf(w->f, "# HELP %.*s ", (int)n, name);
	write_escaped(w->f, help, w->fmt == METRICS_FORMAT_OPENMETRICS);
	fprintf(w->f, "\n# TYPE %.*s %s\n", (int)n, name, type_names[type]);
}

static void sample_text(struct writer *w, const char *name, const char *suffix, const struct label *labels,
			size_t n_labels, const char *value)
{
	fputs(name, w->f);
	fputs(suffix, w->f);
	if (n_labels > 0) {
		fputc('{', w->f);
		for (size_t i = 0; i < n_labels; i++) {
			fprintf(w->f, "%s%s=\"", i ? "," : "", labels[i].name);
			prom_write_label_value(w->f, labels[i].value);
			fputc('"', w->f);
		}
		fputc('}', w->f);
	}
	fputc(' ', w->f);
	fputs(value, w->f);
	fputc('\n', w->f);
}

static void sample(struct writer *w, const char *name, const struct label *labels, size_t n_labels, double v)
{
	char buf[64];

	prom_format_value(buf, sizeof(buf), v);
	sample_text(w, name, "", labels, n_labels, buf);
}

static void sample_u64(struct writer *w, const char *name, const struct label *labels, size_t n_labels,
		       uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	sample_text(w, name, "", labels, n_labels, buf);
}

/* Bucket i of a histogram being written: its upper bound in seconds and
 * the observations at or below it; false leaves bound i out. */
typedef bool (*bucket_fn)(void *userdata, size_t i, double *ret_le_seconds, uint64_t *ret_count);

/* A cumulative histogram: the buckets 0..n-1 that `bucket` gives, then +Inf
 * and _count holding `count`, and _sum. `labels` must have room for one
 * more entry (le). */
static void sample_histogram(struct writer *w, const char *name, struct label *labels, size_t n_labels,
			     bucket_fn bucket, void *userdata, size_t n, uint64_t count, double sum_seconds)
{
	char le[32], buf[64];

	labels[n_labels].name = "le";
	labels[n_labels].value = le;
	for (size_t i = 0; i < n; i++) {
		double bound;
		uint64_t below;

		if (!bucket(userdata, i, &bound, &below)) {
			continue;
		}
		prom_format_le(le, sizeof(le), bound, w->fmt);
		snprintf(buf, sizeof(buf), "%" PRIu64, below);
		sample_text(w, name, "_bucket", labels, n_labels + 1, buf);
	}
	snprintf(le, sizeof(le), "+Inf");
	snprintf(buf, sizeof(buf), "%" PRIu64, count);
	sample_text(w, name, "_bucket", labels, n_labels + 1, buf);
	prom_format_value(buf, sizeof(buf), sum_seconds);
	sample_text(w, name, "_sum", labels, n_labels, buf);
	snprintf(buf, sizeof(buf), "%" PRIu64, count);
	sample_text(w, name, "_count", labels, n_labels, buf);
}

/* iopsd's latency histogram (struct histogram) with its exported bounds. */
static bool latency_bucket(void *userdata, size_t i, double *ret_le_seconds, uint64_t *ret_count)
{
	const struct histogram *h = userdata;
	double bound = histogram_prom_bounds_seconds[i];

	*ret_le_seconds = bound;
	*ret_count =
	    h->count > 0 ? histogram_count_le(h, (uint64_t)llround(bound * (double)NSEC_PER_SEC)) : 0;
	return true;
}

static void sample_latency_histogram(struct writer *w, const char *name, struct label *labels,
				     size_t n_labels, const struct histogram *h)
{
	sample_histogram(w, name, labels, n_labels, latency_bucket, (void *)h, histogram_n_prom_bounds,
			 h->count, (double)h->sum_ns / (double)NSEC_PER_SEC);
}

/* ---- process and self ---- */

static void render_self(struct writer *w, const struct snapshot *s)
{
	const struct process_stats *p = &s->process;
	struct label l = {"version", IOPSD_VERSION};

	family(w, "iopsd_build_info", FAMILY_GAUGE, "Always 1; the version of the running iopsd.");
	sample(w, "iopsd_build_info", &l, 1, 1);
	family(w, "iopsd_healthy", FAMILY_GAUGE,
	       "1 while every probe and the sampler run on schedule (the /healthz verdict), else 0.");
	sample(w, "iopsd_healthy", NULL, 0, s->is_healthy ? 1 : 0);
	family(w, "iopsd_snapshot_timestamp_seconds", FAMILY_GAUGE,
	       "When the served snapshot was published, seconds since the epoch.");
	sample(w, "iopsd_snapshot_timestamp_seconds", NULL, 0,
	       (double)s->realtime_usec / (double)USEC_PER_SEC);
	family(w, "iopsd_snapshot_publishes_total", FAMILY_COUNTER, "Snapshots published since start.");
	sample_u64(w, "iopsd_snapshot_publishes_total", NULL, 0, s->generation);
	family(w, "iopsd_snapshot_render_seconds", FAMILY_GAUGE,
	       "Time the previous publish took to pre-render the /metrics bodies scraped lately.");
	sample(w, "iopsd_snapshot_render_seconds", NULL, 0, s->last_render_seconds);
	family(w, "iopsd_start_time_seconds", FAMILY_GAUGE,
	       "When the daemon started, seconds since the epoch.");
	sample(w, "iopsd_start_time_seconds", NULL, 0, (double)s->start_realtime_usec / (double)USEC_PER_SEC);

	if (!p->available) {
		return;
	}
	family(w, "process_cpu_seconds_total", FAMILY_COUNTER,
	       "CPU time (user and system) the daemon used, in seconds.");
	sample(w, "process_cpu_seconds_total", NULL, 0, p->cpu_seconds);
	family(w, "process_max_fds", FAMILY_GAUGE, "The limit on open file descriptors (RLIMIT_NOFILE).");
	sample_u64(w, "process_max_fds", NULL, 0, p->max_fds);
	family(w, "process_open_fds", FAMILY_GAUGE, "File descriptors the daemon has open.");
	sample_u64(w, "process_open_fds", NULL, 0, p->open_fds);
	family(w, "process_resident_memory_bytes", FAMILY_GAUGE, "Resident set size of the daemon in bytes.");
	sample_u64(w, "process_resident_memory_bytes", NULL, 0, p->resident_memory_bytes);
	family(w, "process_start_time_seconds", FAMILY_GAUGE,
	       "When the process started, seconds since the epoch.");
	sample(w, "process_start_time_seconds", NULL, 0, p->start_time_seconds);
	family(w, "process_virtual_memory_bytes", FAMILY_GAUGE,
	       "Virtual memory size of the daemon in bytes.");
	sample_u64(w, "process_virtual_memory_bytes", NULL, 0, p->virtual_memory_bytes);
}

static void render_sampler(struct writer *w, const struct sampler_snapshot *ss)
{
	if (!ss) {
		return;
	}
	family(w, "iopsd_sample_timestamp_seconds", FAMILY_GAUGE,
	       "When the latest /proc/diskstats sample was taken, seconds since the epoch.");
	sample(w, "iopsd_sample_timestamp_seconds", NULL, 0,
	       (double)ss->realtime_usec / (double)USEC_PER_SEC);
	family(w, "iopsd_diskstats_parse_errors_total", FAMILY_COUNTER,
	       "Malformed /proc/diskstats lines skipped since start.");
	sample_u64(w, "iopsd_diskstats_parse_errors_total", NULL, 0, ss->parse_errors_total);
	if (ss->pressure.available) {
		family(w, "iopsd_pressure_io_waiting_seconds_total", FAMILY_COUNTER,
		       "Time in seconds that some tasks were stalled on I/O (/proc/pressure/io some).");
		sample(w, "iopsd_pressure_io_waiting_seconds_total", NULL, 0,
		       (double)ss->pressure.some_total_usec / (double)USEC_PER_SEC);
		family(
		    w, "iopsd_pressure_io_stalled_seconds_total", FAMILY_COUNTER,
		    "Time in seconds that all non-idle tasks were stalled on I/O (/proc/pressure/io full).");
		sample(w, "iopsd_pressure_io_stalled_seconds_total", NULL, 0,
		       (double)ss->pressure.full_total_usec / (double)USEC_PER_SEC);
	}
}

/* ---- devices ---- */

struct device_family;
typedef void (*device_emit_fn)(struct writer *w, const struct device_family *f, const struct device_state *d);

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

static void emit_raw(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	struct label l = {"device", d->raw.name};
	uint64_t v;

	if (d->raw.n_fields < f->min_fields) {
		return;
	}
	memcpy(&v, (const char *)&d->raw + f->offset, sizeof(v));
	if (f->div > 1) {
		sample(w, f->name, &l, 1, (double)v * (double)f->mult / (double)f->div);
	} else {
		sample_u64(w, f->name, &l, 1, v * f->mult);
	}
}

static void sample_device_op(struct writer *w, const char *name, const struct device_state *d,
			     const char *label, const char *op, double v)
{
	struct label l[2] = {{"device", d->raw.name}, {label, op}};

	sample(w, name, l, op[0] ? 2 : 1, v);
}

static void sample_device(struct writer *w, const char *name, const struct device_state *d, double v)
{
	sample_device_op(w, name, d, "", "", v);
}

static void emit_rates(struct writer *w, const struct device_family *f, const struct device_state *d)
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

static void emit_member_utilization(struct writer *w, const struct device_family *f,
				    const struct device_state *d)
{
	if (d->has_member_rates && d->member_rates.valid) {
		sample_device(w, f->name, d, d->member_rates.utilization);
	}
}

/* volume_id only where there is one: an absent label is an empty one to
 * PromQL, and the series of other devices stay as they were. */
static void emit_info(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	const struct device_topology *t = &d->topo;
	bool has_volume_id = t->volume_id && t->volume_id[0];
	struct label l[] = {
	    {"device", d->raw.name},
	    {"kind", device_kind_to_string(t->kind)},
	    {"members", t->members ? t->members : ""},
	    {"mountpoint", t->mountpoints ? t->mountpoints : ""},
	    {"volume_id", has_volume_id ? t->volume_id : ""},
	};

	sample(w, f->name, l, ELEMENTSOF(l) - (has_volume_id ? 0 : 1), 1);
}

static void emit_size(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	struct label l = {"device", d->raw.name};

	if (d->topo.size_bytes > 0) {
		sample_u64(w, f->name, &l, 1, d->topo.size_bytes);
	}
}

#define CEILING(field) .offset = offsetof(struct device_ceiling, field)

/* A declared limit (uint64_t), when there is one. */
static void emit_ceiling_limit(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	struct label l = {"device", d->raw.name};
	uint64_t v;

	memcpy(&v, (const char *)&d->ceiling + f->offset, sizeof(v));
	if (v > 0) {
		sample_u64(w, f->name, &l, 1, v);
	}
}

/* A double figure, always. */
static void emit_ceiling_gauge(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	double v;

	memcpy(&v, (const char *)&d->ceiling + f->offset, sizeof(v));
	sample_device(w, f->name, d, v);
}

/* A bool, as 1 or 0. */
static void emit_ceiling_flag(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	bool v;

	memcpy(&v, (const char *)&d->ceiling + f->offset, sizeof(v));
	sample_device(w, f->name, d, v ? 1 : 0);
}

static void emit_limit_ratio(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	const struct device_ceiling *c = &d->ceiling;

	if (c->iops_limit > 0) {
		sample_device_op(w, f->name, d, "resource", "iops", c->iops_limit_ratio);
	}
	if (c->throughput_limit > 0) {
		sample_device_op(w, f->name, d, "resource", "throughput", c->throughput_limit_ratio);
	}
}

/* The ceiling found over the limit declared, where there are both (a burst
 * model's limit of the moment does not count). */
static void emit_ceiling_limit_ratio(struct writer *w, const struct device_family *f,
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

static void emit_at_ceiling(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	const struct device_ceiling *c = &d->ceiling;

	if (c->iops_limit > 0) {
		sample_device_op(w, f->name, d, "resource", "iops", c->at_ceiling_iops_seconds);
	}
	if (c->throughput_limit > 0) {
		sample_device_op(w, f->name, d, "resource", "throughput", c->at_ceiling_throughput_seconds);
	}
}

static void emit_burst_balance(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	if (d->ceiling.has_burst_model) {
		sample_device(w, f->name, d, d->ceiling.burst_balance_ratio);
	}
}

/* A figure of the burst bucket iopsd learned, once it saw one run out. */
static void emit_learned_burst(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	double v;

	if (!d->ceiling.has_learned_burst) {
		return;
	}
	memcpy(&v, (const char *)&d->ceiling + f->offset, sizeof(v));
	sample_device(w, f->name, d, v);
}

static void emit_burst_exhausted(struct writer *w, const struct device_family *f,
				 const struct device_state *d)
{
	if (d->ceiling.has_learned_burst && d->ceiling.burst_exhausted_realtime_usec > 0) {
		sample_device(w, f->name, d,
			      (double)d->ceiling.burst_exhausted_realtime_usec / (double)USEC_PER_SEC);
	}
}

/* md/dm: one series per member, 1 while it holds the array. */
static void emit_held_by(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	char member[DISKSTATS_NAME_MAX];
	unsigned k = 0;

	if (d->topo.kind != DEVICE_KIND_MD && d->topo.kind != DEVICE_KIND_DM) {
		return;
	}
	for (const char *p = d->topo.members; k < 64 && (p = device_list_next(p, member)); k++) {
		struct label l[] = {{"device", d->raw.name}, {"member", member}};

		sample(w, f->name, l, ELEMENTSOF(l), (d->ceiling.held_by_mask >> k) & 1 ? 1 : 0);
	}
}

static void emit_md_degraded(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	if (d->md.is_known) {
		sample_device(w, f->name, d, d->md.degraded);
	}
}

/* md: one series per member, 1 once md marked it faulty. */
static void emit_member_failed(struct writer *w, const struct device_family *f, const struct device_state *d)
{
	char member[DISKSTATS_NAME_MAX];
	unsigned k = 0;

	if (!d->md.is_known) {
		return;
	}
	for (const char *p = d->topo.members; k < 64 && (p = device_list_next(p, member)); k++) {
		struct label l[] = {{"device", d->raw.name}, {"member", member}};

		sample(w, f->name, l, ELEMENTSOF(l), (d->md.failed_mask >> k) & 1 ? 1 : 0);
	}
}

static const struct device_family device_families[] = {
    {"iopsd_device_info", FAMILY_GAUGE,
     "Always 1; the device's kind (disk, partition, md, dm, loop), md/dm members, mount points and, where "
     "its serial is an EBS volume id, volume_id.",
     emit_info},
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
    {"iopsd_device_ceiling_limit_ratio", FAMILY_GAUGE,
     "The ceiling iopsd found over the declared limit: about 1 when the volume delivers what was "
     "provisioned, well below 1 when a lower ceiling holds it.",
     emit_ceiling_limit_ratio},
};

static void render_devices(struct writer *w, const struct sampler_snapshot *ss)
{
	if (!ss) {
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(device_families); i++) {
		const struct device_family *f = &device_families[i];

		family(w, f->name, f->type, f->help);
		for (size_t j = 0; j < ss->n_devices; j++) {
			f->emit(w, f, &ss->devices[j]);
		}
	}
}

/* ---- ceilings shared by several devices (only where one was found) ---- */

static void render_shared(struct writer *w, const struct sampler_snapshot *ss)
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
		family(w, families[i].name, FAMILY_GAUGE, families[i].help);
		for (size_t j = 0; j < ss->n_shared; j++) {
			const struct shared_ceiling_group *g = &ss->shared[j];
			struct label l = {"devices", g->devices};
			double v = i == 0 ? g->iops_estimate : i == 1 ? g->iops : g->is_throttled;

			sample(w, families[i].name, &l, 1, v);
		}
	}
}

/* ---- [instance]: the machine's volumes together (only when declared) ---- */

static void sample_resource(struct writer *w, const char *name, const char *resource, double v)
{
	struct label l = {"resource", resource};

	sample(w, name, &l, 1, v);
}

static void render_instance(struct writer *w, const struct sampler_snapshot *ss)
{
	const struct instance_state *in = ss ? &ss->instance : NULL;
	struct label l = {"devices", in && in->devices ? in->devices : ""};

	if (!in || !in->is_declared) {
		return;
	}
	family(w, "iopsd_instance_info", FAMILY_GAUGE, "Always 1; the volumes the [instance] limits count.");
	sample(w, "iopsd_instance_info", &l, 1, 1);
	family(w, "iopsd_instance_iops", FAMILY_GAUGE,
	       "Those volumes' IOPS summed over the last sample interval.");
	sample(w, "iopsd_instance_iops", NULL, 0, in->iops);
	family(w, "iopsd_instance_throughput_bytes_per_second", FAMILY_GAUGE,
	       "Those volumes' throughput summed over the last sample interval, in bytes per second.");
	sample(w, "iopsd_instance_throughput_bytes_per_second", NULL, 0, in->bytes_per_sec);
	if (in->iops_limit > 0) {
		family(w, "iopsd_instance_iops_limit", FAMILY_GAUGE,
		       "Declared IOPS limit of the instance ([instance] iops_limit).");
		sample_u64(w, "iopsd_instance_iops_limit", NULL, 0, in->iops_limit);
	}
	if (in->throughput_limit > 0) {
		family(w, "iopsd_instance_throughput_limit_bytes", FAMILY_GAUGE,
		       "Declared throughput limit of the instance in bytes per second ([instance] "
		       "throughput_limit).");
		sample_u64(w, "iopsd_instance_throughput_limit_bytes", NULL, 0, in->throughput_limit);
	}
	if (in->iops_limit == 0 && in->throughput_limit == 0) {
		return;
	}
	family(w, "iopsd_instance_limit_ratio", FAMILY_GAUGE,
	       "The volumes' summed rate over the instance's declared limit in the last sample interval.");
	if (in->iops_limit > 0) {
		sample_resource(w, "iopsd_instance_limit_ratio", "iops", in->iops_limit_ratio);
	}
	if (in->throughput_limit > 0) {
		sample_resource(w, "iopsd_instance_limit_ratio", "throughput", in->throughput_limit_ratio);
	}
	family(w, "iopsd_instance_at_ceiling_seconds_total", FAMILY_COUNTER,
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
static void sample_ebs_histogram(struct writer *w, const char *name, struct label *labels, size_t n_labels,
				 const struct ebs_nvme_histogram *h, uint64_t ops, uint64_t time_usec)
{
	struct ebs_buckets b = {.h = h};
	uint64_t in_bins = 0;

	for (unsigned i = 0; i < h->n_bins; i++) {
		in_bins += h->bins[i].count;
	}
	/* +Inf must equal _count: the page's op counter, unless the bins
	 * (32-bit counts) say more */
	sample_histogram(w, name, labels, n_labels, ebs_bucket, &b, h->n_bins, in_bins > ops ? in_bins : ops,
			 usec_to_sec(time_usec));
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
static size_t render_ebs_readable(struct writer *w, const struct sampler_snapshot *ss)
{
	static const char name[] = "iopsd_ebs_volume_statistics_readable";
	size_t n_read = 0;

	family(w, name, FAMILY_GAUGE,
	       "1 when the volume's EBS statistics (NVMe log page 0xD0) were read, else 0 with the reason "
	       "(eacces, eperm: no access to the controller or no CAP_SYS_ADMIN).");
	for (size_t j = 0; j < ss->n_ebs; j++) {
		const struct ebs_nvme_volume *v = &ss->ebs[j];
		const char *errname = v->error ? strerrorname_np(-v->error) : NULL;
		char reason[32] = "other";
		struct label l[] = {
		    {"device", v->device}, {"volume_id", v->volume_id}, {"reason", reason}, {0}};

		if (v->error == 0) {
			sample(w, name, l, 2, 1);
			n_read++;
			continue;
		}
		for (size_t k = 0; errname && errname[k] && k + 1 < sizeof(reason); k++) {
			reason[k] = (char)tolower((unsigned char)errname[k]);
			reason[k + 1] = '\0';
		}
		sample(w, name, l, 3, 0);
	}
	return n_read;
}

static void render_ebs(struct writer *w, const struct sampler_snapshot *ss)
{
	if (!ss || ss->n_ebs == 0 || render_ebs_readable(w, ss) == 0) {
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(ebs_families); i++) {
		family(w, ebs_families[i].name, ebs_families[i].type, ebs_families[i].help);
		for (size_t j = 0; j < ss->n_ebs; j++) {
			const struct ebs_nvme_volume *v = &ss->ebs[j];
			const struct ebs_nvme_stats *st = &v->stats;
			struct label l[] = {
			    {"device", v->device}, {"volume_id", v->volume_id}, {"op", "read"}, {0}};
			const char *name = ebs_families[i].name;

			if (v->error) {
				continue;
			}

			switch ((enum ebs_field)i) {
			case EBS_VOLUME_EXCEEDED_IOPS:
				sample(w, name, l, 2, usec_to_sec(st->volume_exceeded_iops_usec));
				break;
			case EBS_VOLUME_EXCEEDED_THROUGHPUT:
				sample(w, name, l, 2, usec_to_sec(st->volume_exceeded_throughput_usec));
				break;
			case EBS_INSTANCE_EXCEEDED_IOPS:
				sample(w, name, l, 2, usec_to_sec(st->instance_exceeded_iops_usec));
				break;
			case EBS_INSTANCE_EXCEEDED_THROUGHPUT:
				sample(w, name, l, 2, usec_to_sec(st->instance_exceeded_throughput_usec));
				break;
			case EBS_QUEUE_LENGTH:
				sample_u64(w, name, l, 2, st->queue_length);
				break;
			case EBS_OPS:
				sample_u64(w, name, l, 3, st->read_ops);
				l[2].value = "write";
				sample_u64(w, name, l, 3, st->write_ops);
				break;
			case EBS_BYTES:
				sample_u64(w, name, l, 3, st->read_bytes);
				l[2].value = "write";
				sample_u64(w, name, l, 3, st->write_bytes);
				break;
			case EBS_LATENCY:
				sample_ebs_histogram(w, name, l, 3, &st->read_latency, st->read_ops,
						     st->read_time_usec);
				l[2].value = "write";
				l[3] = (struct label){0};
				sample_ebs_histogram(w, name, l, 3, &st->write_latency, st->write_ops,
						     st->write_time_usec);
				break;
			}
		}
	}
}

/* ---- probes ---- */

struct probe_family;
typedef void (*probe_emit_fn)(struct writer *w, const struct probe_family *f, const struct probe_state *p);

struct probe_family {
	const char *name;
	enum family_type type;
	const char *help;
	probe_emit_fn emit;
	/* emit_probe_counter: a uint64_t of struct probe_state;
	 * emit_op_total, emit_last_op_rate: a field of struct probe_op_result */
	size_t offset;
	bool data_only; /* not for fsync, which moves no data */
};

#define PROBE_STATE(field) .offset = offsetof(struct probe_state, field)
#define OP_RESULT(field)   .offset = offsetof(struct probe_op_result, field)

/* The ops a probe performs, in order. */
#define FOREACH_PROBE_OP(op, p)                                                                              \
	for (enum probe_op op = 0; op < _PROBE_OP_MAX; op++)                                                 \
		if (probe_state_does_op((p), op))

static void emit_probe_info(struct writer *w, const struct probe_family *f, const struct probe_state *p)
{
	struct label l[] = {
	    {"probe", p->name},
	    {"target", p->target},
	    {"device", p->device},
	    {"rw", probe_rw_to_string(p->rw)},
	};

	sample(w, f->name, l, ELEMENTSOF(l), 1);
}

static void emit_probe_counter(struct writer *w, const struct probe_family *f, const struct probe_state *p)
{
	struct label l[] = {{"probe", p->name}, {"target", p->target}};
	uint64_t v;

	memcpy(&v, (const char *)p + f->offset, sizeof(v));
	sample_u64(w, f->name, l, 2, v);
}

/* A counter of each op since start. */
static void emit_op_total(struct writer *w, const struct probe_family *f, const struct probe_state *p)
{
	FOREACH_PROBE_OP(op, p)
	{
		struct label l[] = {
		    {"probe", p->name}, {"target", p->target}, {"op", probe_op_to_string(op)}};
		uint64_t v;

		if (f->data_only && op == PROBE_OP_FSYNC) {
			continue;
		}
		memcpy(&v, (const char *)&p->total[op] + f->offset, sizeof(v));
		sample_u64(w, f->name, l, 3, v);
	}
}

static void emit_errors(struct writer *w, const struct probe_family *f, const struct probe_state *p)
{
	FOREACH_PROBE_OP(op, p)
	{
		for (enum probe_error_reason r = 0; r < _PROBE_ERR_MAX; r++) {
			struct label l[] = {
			    {"probe", p->name},
			    {"target", p->target},
			    {"op", probe_op_to_string(op)},
			    {"reason", probe_error_reason_to_string(r)},
			};

			sample_u64(w, f->name, l, 4, p->total[op].errors[r]);
		}
	}
}

static void emit_latency(struct writer *w, const struct probe_family *f, const struct probe_state *p)
{
	FOREACH_PROBE_OP(op, p)
	{
		struct label l[4] = {
		    {"probe", p->name}, {"target", p->target}, {"op", probe_op_to_string(op)}};

		sample_latency_histogram(w, f->name, l, 3, &p->total[op].lat);
	}
}

/* A rate of each op in the last run. */
static void emit_last_op_rate(struct writer *w, const struct probe_family *f, const struct probe_state *p)
{
	if (!p->has_last) {
		return;
	}
	FOREACH_PROBE_OP(op, p)
	{
		struct label l[] = {
		    {"probe", p->name}, {"target", p->target}, {"op", probe_op_to_string(op)}};
		double v;

		if (f->data_only && op == PROBE_OP_FSYNC) {
			continue;
		}
		memcpy(&v, (const char *)&p->last.op[op] + f->offset, sizeof(v));
		sample(w, f->name, l, 3, v);
	}
}

/* A summary: quantiles of the last run (the window a summary's quantiles
 * cover), _sum and _count since start (cumulative, as a summary's are). */
static void emit_quantiles(struct writer *w, const struct probe_family *f, const struct probe_state *p)
{
	static const struct {
		const char *label;
		double percentile;
	} quantiles[] = {{"0.5", 50}, {"0.9", 90}, {"0.99", 99}, {"0.999", 99.9}};

	FOREACH_PROBE_OP(op, p)
	{
		const struct histogram *last = &p->last.op[op].lat, *total = &p->total[op].lat;
		struct label l[] = {
		    {"probe", p->name},
		    {"target", p->target},
		    {"op", probe_op_to_string(op)},
		    {"quantile", NULL},
		};
		char buf[64];

		for (size_t i = 0; p->has_last && last->count > 0 && i < ELEMENTSOF(quantiles); i++) {
			l[3].value = quantiles[i].label;
			sample(w, f->name, l, 4,
			       (double)histogram_percentile(last, quantiles[i].percentile) /
				   (double)NSEC_PER_SEC);
		}
		prom_format_value(buf, sizeof(buf), (double)total->sum_ns / (double)NSEC_PER_SEC);
		sample_text(w, f->name, "_sum", l, 3, buf);
		snprintf(buf, sizeof(buf), "%" PRIu64, total->count);
		sample_text(w, f->name, "_count", l, 3, buf);
	}
}

static void emit_success(struct writer *w, const struct probe_family *f, const struct probe_state *p)
{
	struct label l[] = {{"probe", p->name}, {"target", p->target}};

	if (p->has_last) {
		sample(w, f->name, l, 2, p->last.success ? 1 : 0);
	}
}

static void emit_last_run(struct writer *w, const struct probe_family *f, const struct probe_state *p)
{
	struct label l[] = {{"probe", p->name}, {"target", p->target}};

	if (p->has_last) {
		sample(w, f->name, l, 2, (double)p->last_run_realtime_usec / (double)USEC_PER_SEC);
	}
}

static void emit_last_duration(struct writer *w, const struct probe_family *f, const struct probe_state *p)
{
	struct label l[] = {{"probe", p->name}, {"target", p->target}};

	if (p->has_last) {
		sample(w, f->name, l, 2, (double)p->last.runtime_usec / (double)USEC_PER_SEC);
	}
}

static const struct probe_family probe_families[] = {
    {"iopsd_probe_info", FAMILY_GAUGE, "Always 1; the probe's device and fio rw mode.", emit_probe_info},
    {"iopsd_probe_runs_total", FAMILY_COUNTER, "Completed runs of the probe.", emit_probe_counter,
     PROBE_STATE(runs_total)},
    {"iopsd_probe_failures_total", FAMILY_COUNTER, "Runs of the probe that ended with an error.",
     emit_probe_counter, PROBE_STATE(failures_total)},
    {"iopsd_probe_ops_total", FAMILY_COUNTER, "I/O operations completed by the probe.", emit_op_total,
     OP_RESULT(ops)},
    {"iopsd_probe_bytes_total", FAMILY_COUNTER, "Bytes transferred by the probe.", emit_op_total,
     OP_RESULT(bytes), .data_only = true},
    {"iopsd_probe_errors_total", FAMILY_COUNTER, "I/O errors seen by the probe, by reason.", emit_errors},
    {"iopsd_probe_latency_seconds", FAMILY_HISTOGRAM,
     "Completion latency of the probe's I/O (submit to reap), O_DIRECT, since start.", emit_latency},
    {"iopsd_probe_iops", FAMILY_GAUGE, "Operations per second in the last run.", emit_last_op_rate,
     OP_RESULT(iops)},
    {"iopsd_probe_throughput_bytes_per_second", FAMILY_GAUGE, "Bytes per second in the last run.",
     emit_last_op_rate, OP_RESULT(bw_bytes), .data_only = true},
    {"iopsd_probe_latency_quantile_seconds", FAMILY_SUMMARY,
     "Completion latency quantiles of the last run; _sum and _count since start.", emit_quantiles},
    {"iopsd_probe_success", FAMILY_GAUGE, "1 when the last run completed its budget without error, else 0.",
     emit_success},
    {"iopsd_probe_last_run_timestamp_seconds", FAMILY_GAUGE,
     "When the last run started, seconds since the epoch.", emit_last_run},
    {"iopsd_probe_last_run_duration_seconds", FAMILY_GAUGE, "Wall time of the last run's I/O phase.",
     emit_last_duration},
};

static void render_probes(struct writer *w, const struct snapshot *s)
{
	for (size_t i = 0; i < ELEMENTSOF(probe_families); i++) {
		const struct probe_family *f = &probe_families[i];

		family(w, f->name, f->type, f->help);
		for (size_t j = 0; j < s->n_probes; j++) {
			f->emit(w, f, &s->probes[j]);
		}
	}
}

int render_prom(const struct snapshot *s, enum metrics_format fmt, char **ret_text, size_t *ret_len)
{
	struct writer w = {.fmt = fmt};
	char *text = NULL;
	size_t len = 0;
	bool failed;

	w.f = open_memstream(&text, &len);
	if (!w.f) {
		return -ENOMEM;
	}
	/* single-threaded use: skip stdio's per-call locking */
	__fsetlocking(w.f, FSETLOCKING_BYCALLER);

	render_self(&w, s);
	render_sampler(&w, s->samples);
	render_devices(&w, s->samples);
	render_shared(&w, s->samples);
	render_instance(&w, s->samples);
	render_ebs(&w, s->samples);
	render_probes(&w, s);
	if (fmt == METRICS_FORMAT_OPENMETRICS) {
		fputs("# EOF\n", w.f);
	}

	failed = ferror(w.f);
	if (fclose(w.f) != 0 || failed) {
		free(text);
		return -ENOMEM;
	}
	*ret_text = text;
	*ret_len = len;
	return 0;
}
