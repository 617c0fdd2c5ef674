/* The JSON API. Times are seconds since the epoch (floats), durations and
 * latencies seconds, rates per second, sizes bytes; a figure that is not
 * known (no limit declared, first sample, NaN) is null, never 0. */
#include "render_json.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"
#include "history.h"
#include "iopsd-build.h"
#include "json_probe.h"
#include "latency_quantiles.h"
#include "macro.h"
#include "timeutil.h"
#include "probe.h"
#include "shared_ceiling.h"
#include "utf8.h"

/* ---- small constructors: NULL only when out of memory ---- */

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* A figure stored as a float (the history): its 7 significant digits, not
 * the binary noise of widening it to a double. */
static json_t *num_float(float v)
{
	char buf[32];

	if (!isfinite(v)) {
		return json_null();
	}
	snprintf(buf, sizeof(buf), "%.7g", (double)v);
	return json_real(strtod(buf, NULL));
}

/* A declared or detected figure where 0 means "none". */
static json_t *num_or_null(double v)
{
	return v > 0 && isfinite(v) ? json_real(v) : json_null();
}

static json_t *count(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *seconds(uint64_t usec)
{
	return json_real(usec_to_sec(usec));
}

json_t *render_json_string(const char *s)
{
	_cleanup_free_ char *valid = NULL;

	if (!s) {
		s = "";
	}
	/* utf8.h's policy, not jansson's own check, decides what is valid */
	if (utf8_is_valid(s)) {
		return json_string_nocheck(s);
	}
	valid = utf8_make_valid(s);
	return valid ? json_string_nocheck(valid) : NULL;
}

static json_t *str(const char *s)
{
	return render_json_string(s);
}

/* n strings as a JSON array. */
static json_t *strings(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		if (json_array_append_new(a, str(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* ---- /api/v1/status ---- */

static json_t *devices_where(const struct sampler_snapshot *ss, bool saturated)
{
	json_t *a = json_array();

	for (size_t i = 0; a && ss && i < ss->n_devices; i++) {
		const struct device_state *d = &ss->devices[i];

		if ((saturated ? d->ceiling.is_saturated : d->ceiling.is_throttled) &&
		    json_array_append_new(a, str(d->raw.name)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *pressure_json(const struct sampler_snapshot *ss)
{
	if (!ss || !ss->pressure.available) {
		return json_null();
	}
	return json_pack("{s:o,s:o}", "waiting_seconds_total", seconds(ss->pressure.some_total_usec),
			 "stalled_seconds_total", seconds(ss->pressure.full_total_usec));
}

/* The machine as SMBIOS names it (EC2: vendor "Amazon EC2", type the
 * instance type), null without DMI. */
static json_t *machine_json(const struct sampler_snapshot *ss)
{
	if (!ss || (!ss->dmi.vendor[0] && !ss->dmi.product[0])) {
		return json_null();
	}
	return json_pack("{s:o,s:o}", "vendor", str(ss->dmi.vendor), "type", str(ss->dmi.product));
}

json_t *render_json_status(const struct snapshot *s, bool is_healthy, const char *health_reason)
{
	const struct sampler_snapshot *ss = s->samples;

	return json_pack("{s:s,s:o,s:o,s:b,s:s,s:o,s:o,s:o,s:I,s:o,s:o,s:o,s:I,s:I,s:o,s:o,s:o}", "version",
			 IOPSD_VERSION, "hostname", str(s->hostname), "instance", machine_json(ss), "healthy",
			 is_healthy, "health_reason", health_reason ? health_reason : "", "time",
			 seconds(s->realtime_usec), "start_time", seconds(s->start_realtime_usec),
			 "uptime_seconds", seconds(s->realtime_usec - s->start_realtime_usec), "generation",
			 (json_int_t)s->generation, "sample_interval_seconds",
			 seconds(s->sample_interval_usec), "history_seconds", seconds(s->history_usec),
			 "last_sample_time", ss ? seconds(ss->realtime_usec) : json_null(), "devices",
			 (json_int_t)(ss ? ss->n_devices : 0), "probes", (json_int_t)s->n_probes,
			 "throttled_devices", devices_where(ss, false), "saturated_devices",
			 devices_where(ss, true), "pressure_io", pressure_json(ss));
}

/* ---- /api/v1/devices ---- */

static json_t *rates_json(const struct device_rates *r, const struct diskstats_raw *raw)
{
	bool has_discard = raw->n_fields >= 18, has_flush = raw->n_fields >= 20;

	if (!r->valid) {
		return json_null();
	}
	return json_pack("{s:o,s:{s:o,s:o,s:o,s:o,s:o},s:{s:o,s:o,s:o,s:o},s:{s:o,s:o},"
			 "s:{s:o,s:o,s:o,s:o},s:o,s:o}",
			 "interval_seconds", num(r->interval_sec), "iops", "read", num(r->read_iops), "write",
			 num(r->write_iops), "discard", has_discard ? num(r->discard_iops) : json_null(),
			 "flush", has_flush ? num(r->flush_iops) : json_null(), "total",
			 num(r->read_iops + r->write_iops), "throughput_bytes_per_second", "read",
			 num(r->read_bytes_per_sec), "write", num(r->write_bytes_per_sec), "discard",
			 has_discard ? num(r->discard_bytes_per_sec) : json_null(), "total",
			 num(r->read_bytes_per_sec + r->write_bytes_per_sec), "merges_per_second", "read",
			 num(r->read_merges_per_sec), "write", num(r->write_merges_per_sec), "await_seconds",
			 "read", num(r->read_await_sec), "write", num(r->write_await_sec), "discard",
			 has_discard ? num(r->discard_await_sec) : json_null(), "flush",
			 has_flush ? num(r->flush_await_sec) : json_null(), "queue_depth",
			 num(r->queue_depth), "utilization", num(r->utilization));
}

static json_t *counters_json(const struct diskstats_raw *r)
{
	json_t *o;

	o = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "reads_completed", count(r->reads),
		      "reads_merged", count(r->reads_merged), "read_bytes", count(r->read_sectors * 512),
		      "read_time_seconds", num((double)r->read_ms / 1000.0), "writes_completed",
		      count(r->writes), "writes_merged", count(r->writes_merged), "written_bytes",
		      count(r->write_sectors * 512), "write_time_seconds", num((double)r->write_ms / 1000.0),
		      "io_now", count(r->in_flight), "io_time_seconds", num((double)r->io_ms / 1000.0),
		      "io_time_weighted_seconds", num((double)r->weighted_ms / 1000.0));
	if (o && r->n_fields >= 18 &&
	    (json_object_set_new(o, "discards_completed", count(r->discards)) < 0 ||
	     json_object_set_new(o, "discards_merged", count(r->discards_merged)) < 0 ||
	     json_object_set_new(o, "discarded_bytes", count(r->discard_sectors * 512)) < 0 ||
	     json_object_set_new(o, "discard_time_seconds", num((double)r->discard_ms / 1000.0)) < 0)) {
		json_decref(o);
		return NULL;
	}
	if (o && r->n_fields >= 20 &&
	    (json_object_set_new(o, "flush_requests", count(r->flushes)) < 0 ||
	     json_object_set_new(o, "flush_time_seconds", num((double)r->flush_ms / 1000.0)) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *limits_json(const struct device_ceiling *c)
{
	return json_pack(
	    "{s:o,s:o,s:o,s:o,s:{s:o,s:o},s:{s:o,s:o}}", "iops",
	    c->iops_limit ? count(c->iops_limit) : json_null(), "throughput_bytes_per_second",
	    c->throughput_limit ? count(c->throughput_limit) : json_null(), "iops_ratio",
	    c->iops_limit ? num(c->iops_limit_ratio) : json_null(), "throughput_ratio",
	    c->throughput_limit ? num(c->throughput_limit_ratio) : json_null(), "at_ceiling_seconds", "iops",
	    c->iops_limit ? num(c->at_ceiling_iops_seconds) : json_null(), "throughput",
	    c->throughput_limit ? num(c->at_ceiling_throughput_seconds) : json_null(), "ceiling_ratio",
	    "iops", c->iops_ceiling_limit_ratio > 0 ? num(c->iops_ceiling_limit_ratio) : json_null(),
	    "throughput",
	    c->throughput_ceiling_limit_ratio > 0 ? num(c->throughput_ceiling_limit_ratio) : json_null());
}

/* The members of t as a JSON array: those whose bit is set in mask, or all
 * of them when is_all. */
static json_t *members_json(const struct device_topology *t, uint64_t mask, bool is_all)
{
	json_t *a = json_array();

	for (unsigned k = 0; a && k < t->n_members && k < DEVICE_MAX_MEMBERS; k++) {
		if ((is_all || ((mask >> k) & 1)) && json_array_append_new(a, str(t->members[k])) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* md arrays: their state, how degraded, the members md marked faulty (null
 * for other devices). */
static json_t *md_json(const struct device_state *d)
{
	if (!d->md.is_known) {
		return json_null();
	}
	return json_pack("{s:s,s:I,s:o}", "array_state", d->md.array_state, "degraded",
			 (json_int_t)d->md.degraded, "failed_members",
			 members_json(&d->topo, d->md.failed_mask, false));
}

/* The burst bucket iopsd learned (null until it saw one run out). */
static json_t *learned_burst_json(const struct device_ceiling *c)
{
	if (!c->has_learned_burst) {
		return json_null();
	}
	return json_pack(
	    "{s:o,s:o,s:o,s:o,s:o}", "iops_estimate", num(c->burst_iops_estimate), "base_iops_estimate",
	    num(c->burst_base_iops_estimate), "credits_estimate", num(c->burst_credits_estimate),
	    "duration_seconds", num(c->burst_duration_seconds), "exhausted_time",
	    c->burst_exhausted_realtime_usec ? seconds(c->burst_exhausted_realtime_usec) : json_null());
}

static json_t *ceiling_json(const struct device_state *d)
{
	const struct device_ceiling *c = &d->ceiling;

	return json_pack("{s:b,s:o,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "throttled", c->is_throttled,
			 "held_by", members_json(&d->topo, d->ceiling.held_by_mask, false), "saturated",
			 c->is_saturated, "resource", c->resource ? str(c->resource) : json_null(),
			 "found_by", c->found_by ? str(c->found_by) : json_null(), "iops_estimate",
			 num_or_null(c->iops_ceiling_estimate), "read_iops_estimate",
			 num_or_null(c->read_iops_estimate), "write_iops_estimate",
			 num_or_null(c->write_iops_estimate), "throughput_estimate_bytes_per_second",
			 num_or_null(c->throughput_ceiling_estimate), "average_io_bytes",
			 c->resource ? num_or_null(c->average_io_bytes) : json_null(), "burst_balance_ratio",
			 c->has_burst_model ? num(c->burst_balance_ratio) : json_null(), "burst",
			 learned_burst_json(c));
}

/* A declared per-direction limit `name` (nothing when 0): limits.NAME (the
 * throughputs as NAME_bytes_per_second, as the total's), limits.NAME_ratio
 * and at_ceiling_seconds.NAME. */
static int add_declared_json(json_t *limits, json_t *at, const char *name, uint64_t limit, double ratio,
			     double seconds)
{
	char key[64], ratio_key[64];
	bool is_bytes = strstr(name, "throughput") != NULL;
	int r = 0;

	if (!limit) {
		return 0;
	}
	snprintf(key, sizeof(key), "%s%s", name, is_bytes ? "_bytes_per_second" : "");
	snprintf(ratio_key, sizeof(ratio_key), "%s_ratio", name);
	r |= json_object_set_new(limits, key, count(limit));
	r |= json_object_set_new(limits, ratio_key, num(ratio));
	r |= json_object_set_new(at, name, num(seconds));
	return r;
}

/* The figures of a provider's own counting, where they are declared: the
 * I/O unit, the read and write IOPS and throughput limits with their ratios
 * and seconds at them, and the I/Os weighted by size in units among the
 * rates. */
static int add_provider_json(const struct device_state *d, json_t *dev)
{
	const struct device_ceiling *c = &d->ceiling;
	json_t *limits = json_object_get(dev, "limits"), *rates = json_object_get(dev, "rates");
	json_t *at = limits ? json_object_get(limits, "at_ceiling_seconds") : NULL;
	int r = 0;

	if (!limits || !at) {
		return -ENOMEM;
	}
	if (c->iops_unit) {
		r |= json_object_set_new(limits, "iops_unit", count(c->iops_unit));
		if (json_is_object(rates)) {
			r |= json_object_set_new(rates, "provider_iops", num(c->provider_iops));
		}
	}
	r |= add_declared_json(limits, at, "read_iops", c->read_iops_limit, c->read_iops_limit_ratio,
			       c->at_ceiling_read_iops_seconds);
	r |= add_declared_json(limits, at, "write_iops", c->write_iops_limit, c->write_iops_limit_ratio,
			       c->at_ceiling_write_iops_seconds);
	r |= add_declared_json(limits, at, "read_throughput", c->read_throughput_limit,
			       c->read_throughput_limit_ratio, c->at_ceiling_read_throughput_seconds);
	r |= add_declared_json(limits, at, "write_throughput", c->write_throughput_limit,
			       c->write_throughput_limit_ratio, c->at_ceiling_write_throughput_seconds);
	return r < 0 ? -ENOMEM : 0;
}

/* What the kubelet's mount paths name on the device: {persistentvolumes:
 * [{persistentvolume, pod_uid (null where no path names a pod)}]}; null on
 * other devices. */
static json_t *kubernetes_json(const struct device_topology *t)
{
	json_t *a;

	if (t->n_persistentvolumes == 0) {
		return json_null();
	}
	a = json_array();
	for (size_t i = 0; a && i < t->n_persistentvolumes; i++) {
		const struct device_persistentvolume *v = &t->persistentvolumes[i];

		if (json_array_append_new(a, json_pack("{s:o,s:o}", "persistentvolume",
						       str(v->persistentvolume), "pod_uid",
						       v->pod_uid[0] ? str(v->pod_uid) : json_null())) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a ? json_pack("{s:o}", "persistentvolumes", a) : NULL;
}

static json_t *device_json(const struct device_state *d)
{
	const struct device_topology *t = &d->topo;

	return json_pack(
	    "{s:o,s:I,s:I,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "name",
	    str(d->raw.name), "major", (json_int_t)d->raw.major, "minor", (json_int_t)d->raw.minor, "kind",
	    device_kind_to_string(t->kind), "parent", str(t->parent), "members", members_json(t, 0, true),
	    "mountpoints", strings((const char *const *)t->mountpoint_list, t->n_mountpoints), "model",
	    str(t->model), "volume_id", t->volume_id && t->volume_id[0] ? str(t->volume_id) : json_null(),
	    "kubernetes", kubernetes_json(t), "rotational", t->is_rotational, "size_bytes",
	    t->size_bytes ? count(t->size_bytes) : json_null(), "logical_block_size",
	    t->logical_block_size ? count(t->logical_block_size) : json_null(), "rates",
	    rates_json(&d->rates, &d->raw), "member_rates",
	    d->has_member_rates ? rates_json(&d->member_rates, &d->raw) : json_null(), "limits",
	    limits_json(&d->ceiling), "ceiling", ceiling_json(d), "md", md_json(d), "counters",
	    counters_json(&d->raw));
}

static json_t *device_json_full(const struct device_state *d)
{
	json_t *o = device_json(d);

	if (o && add_provider_json(d, o) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Ceilings shared by several devices (probes/detect/shared_ceiling.h). */
static json_t *shared_json(const struct sampler_snapshot *ss)
{
	json_t *a = json_array();

	for (size_t i = 0; a && ss && i < ss->n_shared; i++) {
		const struct shared_ceiling_group *g = &ss->shared[i];
		const char *names[SHARED_CEILING_MAX_MEMBERS];
		size_t n = shared_ceiling_group_names(g, names);
		json_t *burst =
		    g->has_burst
			? json_pack("{s:o,s:o,s:o,s:o}", "iops_estimate", num(g->burst_iops_estimate),
				    "base_iops_estimate", num(g->burst_base_iops_estimate),
				    "credits_estimate", num(g->burst_credits_estimate), "exhausted_time",
				    g->burst_exhausted_usec ? seconds(g->burst_exhausted_usec) : json_null())
			: json_null();

		const char *found_by = ceiling_stage_name(g->found_by);

		if (json_array_append_new(
			a, json_pack("{s:o,s:o,s:o,s:b,s:o,s:o}", "devices", strings(names, n),
				     "iops_estimate", num_or_null(g->iops_estimate), "iops", num(g->iops),
				     "throttled", g->is_throttled, "found_by",
				     found_by ? str(found_by) : json_null(), "burst", burst)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* The [instance] limits against the sum of its volumes; null when none is
 * declared. */
static json_t *instance_json(const struct sampler_snapshot *ss)
{
	const struct instance_state *in = ss ? &ss->instance : NULL;

	if (!in || !in->is_declared) {
		return json_null();
	}
	return json_pack(
	    "{s:o,s:o,s:o,s:{s:o,s:o,s:o,s:o,s:{s:o,s:o}}}", "devices", strings(in->devices, in->n_devices),
	    "iops", num(in->iops), "throughput_bytes_per_second", num(in->bytes_per_sec), "limits", "iops",
	    in->iops_limit ? count(in->iops_limit) : json_null(), "throughput_bytes_per_second",
	    in->throughput_limit ? count(in->throughput_limit) : json_null(), "iops_ratio",
	    in->iops_limit ? num(in->iops_limit_ratio) : json_null(), "throughput_ratio",
	    in->throughput_limit ? num(in->throughput_limit_ratio) : json_null(), "at_ceiling_seconds",
	    "iops", in->iops_limit ? num(in->at_ceiling_iops_seconds) : json_null(), "throughput",
	    in->throughput_limit ? num(in->at_ceiling_throughput_seconds) : json_null());
}

json_t *render_json_devices(const struct snapshot *s, const char *device)
{
	const struct sampler_snapshot *ss = s->samples;
	json_t *devices = json_array();

	for (size_t i = 0; devices && ss && i < ss->n_devices; i++) {
		const struct device_state *d = &ss->devices[i];

		if (device && strcmp(d->raw.name, device) != 0) {
			continue;
		}
		if (json_array_append_new(devices, device_json_full(d)) < 0) {
			json_decref(devices);
			return NULL;
		}
	}
	return json_pack("{s:o,s:o,s:o,s:o,s:o}", "time", seconds(s->realtime_usec), "sample_time",
			 ss ? seconds(ss->realtime_usec) : json_null(), "devices", devices, "shared_ceilings",
			 shared_json(ss), "instance", instance_json(ss));
}

/* ---- /api/v1/probes ---- */

static json_t *latency_json(const struct histogram *h)
{
	json_t *o;
	int r;

	if (h->count == 0) {
		return json_null();
	}
	o = json_object();
	r = o ? 0 : -1;
	r |= json_object_set_new(o, "min", num((double)h->min_ns / 1e9));
	r |= json_object_set_new(o, "mean", num(histogram_mean(h) / 1e9));
	for (size_t i = 0; i < ELEMENTSOF(latency_quantiles); i++) {
		double v = (double)histogram_percentile(h, latency_quantiles[i].percentile) / 1e9;

		r |= json_object_set_new(o, latency_quantiles[i].json_key, num(v));
	}
	r |= json_object_set_new(o, "max", num((double)h->max_ns / 1e9));
	if (r < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static uint64_t errors_sum(const struct probe_op_result *o)
{
	uint64_t n = 0;

	for (size_t i = 0; i < _PROBE_ERR_MAX; i++) {
		n += o->errors[i];
	}
	return n;
}

static json_t *ops_json(const struct probe_state *p, const struct probe_op_result *ops, bool is_last)
{
	json_t *o = json_object();

	for (enum probe_op op = 0; o && op < _PROBE_OP_MAX; op++) {
		json_t *v;

		if (!probe_state_does_op(p, op)) {
			continue;
		}
		if (is_last) {
			v = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "ops", count(ops[op].ops), "bytes",
				      count(ops[op].bytes), "iops", num(ops[op].iops),
				      "throughput_bytes_per_second", num(ops[op].bw_bytes), "errors",
				      count(errors_sum(&ops[op])), "latency_seconds",
				      latency_json(&ops[op].lat));
		} else {
			v = json_pack("{s:o,s:o,s:o,s:o}", "ops", count(ops[op].ops), "bytes",
				      count(ops[op].bytes), "errors", count(errors_sum(&ops[op])),
				      "latency_seconds", latency_json(&ops[op].lat));
		}
		if (json_object_set_new(o, probe_op_to_string(op), v) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *last_run_json(const struct probe_state *p)
{
	const struct probe_result *r = &p->last;

	if (!p->has_last) {
		return json_null();
	}
	return json_pack("{s:o,s:b,s:o,s:o,s:o,s:o}", "time", seconds(r->start_realtime_usec), "success",
			 r->success, "error", str(r->message), "duration_seconds", seconds(r->runtime_usec),
			 "ops", ops_json(p, r->op, true), "fio", probe_result_to_json(r));
}

/* The members of the device a probe's target is on (an md/dm array's),
 * from the snapshot's topology; [] for a plain device or an unknown one. */
static json_t *probe_members_json(const struct snapshot *s, const struct probe_state *p)
{
	const struct device_state *d = p->device[0] ? sampler_snapshot_find(s->samples, p->device) : NULL;

	return d ? members_json(&d->topo, 0, true) : json_array();
}

static json_t *probe_json(const struct snapshot *s, const struct probe_state *p)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:s,s:o,s:I,s:I,s:o,s:o}", "name", str(p->name), "target",
			 str(p->target), "device", str(p->device), "members", probe_members_json(s, p), "rw",
			 probe_rw_to_string(p->rw), "interval_seconds", seconds(p->interval_usec),
			 "runs_total", (json_int_t)p->runs_total, "failures_total",
			 (json_int_t)p->failures_total, "last_run", last_run_json(p), "totals",
			 ops_json(p, p->total, false));
}

json_t *render_json_probes(const struct snapshot *s, const char *probe)
{
	json_t *probes = json_array();

	for (size_t i = 0; probes && i < s->n_probes; i++) {
		if (probe && strcmp(s->probes[i].name, probe) != 0) {
			continue;
		}
		if (json_array_append_new(probes, probe_json(s, &s->probes[i])) < 0) {
			json_decref(probes);
			return NULL;
		}
	}
	return json_pack("{s:o,s:o}", "time", seconds(s->realtime_usec), "probes", probes);
}

/* ---- /api/v1/history ---- */

/* Columns of the device series, in output order. */
enum {
	COL_TIME,
	COL_IOPS,
	COL_READ_IOPS,
	COL_WRITE_IOPS,
	COL_READ_BPS,
	COL_WRITE_BPS,
	COL_READ_AWAIT,
	COL_WRITE_AWAIT,
	COL_QUEUE_DEPTH,
	COL_UTILIZATION,
	COL_MEMBER_UTILIZATION,
	COL_AT_LIMIT,
	COL_THROTTLED,
	COL_SATURATED,
	_COL_MAX,
};

static const char *const column_names[_COL_MAX] = {
    [COL_TIME] = "time",
    [COL_IOPS] = "iops",
    [COL_READ_IOPS] = "read_iops",
    [COL_WRITE_IOPS] = "write_iops",
    [COL_READ_BPS] = "read_bytes_per_second",
    [COL_WRITE_BPS] = "write_bytes_per_second",
    [COL_READ_AWAIT] = "read_await_seconds",
    [COL_WRITE_AWAIT] = "write_await_seconds",
    [COL_QUEUE_DEPTH] = "queue_depth",
    [COL_UTILIZATION] = "utilization",
    [COL_MEMBER_UTILIZATION] = "member_utilization",
    [COL_AT_LIMIT] = "at_limit",
    [COL_THROTTLED] = "throttled",
    [COL_SATURATED] = "saturated",
};

static json_t *column_value(const struct history_point *p, int col)
{
	const struct history_rates *r = &p->rates;

	switch (col) {
	case COL_TIME:
		return seconds(p->realtime_usec);
	case COL_IOPS:
		return num_float(r->read_iops + r->write_iops);
	case COL_READ_IOPS:
		return num_float(r->read_iops);
	case COL_WRITE_IOPS:
		return num_float(r->write_iops);
	case COL_READ_BPS:
		return num_float(r->read_bytes_per_sec);
	case COL_WRITE_BPS:
		return num_float(r->write_bytes_per_sec);
	case COL_READ_AWAIT:
		return num_float(r->read_await_sec);
	case COL_WRITE_AWAIT:
		return num_float(r->write_await_sec);
	case COL_QUEUE_DEPTH:
		return num_float(r->queue_depth);
	case COL_UTILIZATION:
		return num_float(r->utilization);
	case COL_AT_LIMIT:
		return num_float(r->at_limit);
	case COL_THROTTLED:
		return num_float(r->throttled);
	case COL_SATURATED:
		return num_float(r->saturated);
	default:
		return num_float(r->member_utilization);
	}
}

static json_t *device_series(const struct history_point *pts, size_t n)
{
	json_t *o = json_object();

	for (int col = 0; o && col < _COL_MAX; col++) {
		json_t *a = json_array();

		for (size_t i = 0; a && i < n; i++) {
			if (json_array_append_new(a, column_value(&pts[i], col)) < 0) {
				json_decref(a);
				a = NULL;
			}
		}
		if (json_object_set_new(o, column_names[col], a) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *history_device_json(const struct snapshot *s, const char *name, uint64_t since, uint64_t step)
{
	const struct device_state *d = sampler_snapshot_find(s->samples, name);
	struct history_point *pts = NULL;
	size_t n = 0;
	json_t *series;
	int r;

	r = history_query(s->history, name, since, step, &pts, &n);
	if (r == -ENOMEM) {
		return NULL;
	}
	series = device_series(pts, r < 0 ? 0 : n);
	free(pts);
	return json_pack("{s:o,s:o,s:o,s:o?,s:o}", "name", str(name), "limits",
			 d ? limits_json(&d->ceiling) : json_null(), "ceiling",
			 d ? ceiling_json(d) : json_null(), "kind",
			 d ? json_string(device_kind_to_string(d->topo.kind)) : NULL, "series", series);
}

static json_t *probe_series(const struct history_probe_point *pts, size_t n)
{
	json_t *t = json_array(), *p50 = json_array(), *p99 = json_array(), *iops = json_array();

	for (size_t i = 0; t && p50 && p99 && iops && i < n; i++) {
		if (json_array_append_new(t, seconds(pts[i].realtime_usec)) < 0 ||
		    json_array_append_new(p50, num_float(pts[i].p50_sec)) < 0 ||
		    json_array_append_new(p99, num_float(pts[i].p99_sec)) < 0 ||
		    json_array_append_new(iops, num_float(pts[i].iops)) < 0) {
			break;
		}
	}
	return json_pack("{s:o,s:o,s:o,s:o}", "time", t, "p50_seconds", p50, "p99_seconds", p99, "iops",
			 iops);
}

static json_t *history_probe_json(const struct snapshot *s, const struct probe_state *p, uint64_t since)
{
	struct history_probe_point *pts = NULL;
	size_t n = 0;
	json_t *series;
	int r;

	r = history_probe_query(s->history, p->name, since, &pts, &n);
	if (r == -ENOMEM) {
		return NULL;
	}
	series = probe_series(pts, r < 0 ? 0 : n);
	free(pts);
	return json_pack("{s:o,s:o,s:o,s:o}", "name", str(p->name), "target", str(p->target), "device",
			 str(p->device), "series", series);
}

json_t *render_json_history(const struct snapshot *s, const struct history_request *q)
{
	uint64_t since = s->realtime_usec > q->window_usec ? s->realtime_usec - q->window_usec : 0;
	json_t *devices = json_array(), *probes = json_array();
	char **names = NULL;
	size_t n_names = 0;

	if (!devices || !probes) {
		goto fail;
	}
	if (s->history && q->device) {
		if (json_array_append_new(devices, history_device_json(s, q->device, since, q->step_usec)) <
		    0) {
			goto fail;
		}
	} else if (s->history) {
		if (history_devices(s->history, &names, &n_names) < 0) {
			goto fail;
		}
		for (size_t i = 0; i < n_names; i++) {
			if (json_array_append_new(
				devices, history_device_json(s, names[i], since, q->step_usec)) < 0) {
				history_names_free(names, n_names);
				goto fail;
			}
		}
		history_names_free(names, n_names);
	}
	for (size_t i = 0; s->history && i < s->n_probes; i++) {
		if (q->probe && strcmp(s->probes[i].name, q->probe) != 0) {
			continue;
		}
		if (json_array_append_new(probes, history_probe_json(s, &s->probes[i], since)) < 0) {
			goto fail;
		}
	}
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "time", seconds(s->realtime_usec), "from",
			 seconds(since), "window_seconds", seconds(q->window_usec), "step_seconds",
			 seconds(q->step_usec ? q->step_usec : s->sample_interval_usec), "devices", devices,
			 "probes", probes);
fail:
	json_decref(devices);
	json_decref(probes);
	return NULL;
}
