/* Probe results as JSON (jansson), shaped like fio's --output-format=json. */
#include "json_probe.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "render_json.h"

/* json_object_set_new() that remembers the first failure. */
static void set(json_t *obj, const char *key, json_t *v, bool *ok)
{
	if (!v || json_object_set_new(obj, key, v) < 0) {
		*ok = false;
	}
}

/* {"1.000000": ns, ...} with fio's default percentile list. */
static json_t *percentiles_to_json(const struct histogram *h)
{
	json_auto_t *p = json_object();
	bool ok = true;

	if (!p) {
		return NULL;
	}
	for (size_t i = 0; i < HISTOGRAM_N_FIO_PERCENTILES; i++) {
		char key[32];

		snprintf(key, sizeof(key), "%f", histogram_fio_percentiles[i]);
		set(p, key, json_integer((json_int_t)histogram_percentile(h, histogram_fio_percentiles[i])),
		    &ok);
	}
	return ok ? TAKE_PTR(p) : NULL;
}

static json_t *latency_to_json(const struct histogram *h)
{
	json_auto_t *o = json_object();
	bool ok = true;

	if (!o) {
		return NULL;
	}
	set(o, "min", json_integer((json_int_t)(h->count ? h->min_ns : 0)), &ok);
	set(o, "max", json_integer((json_int_t)h->max_ns), &ok);
	set(o, "mean", json_real(histogram_mean(h)), &ok);
	set(o, "stddev", json_real(histogram_stddev(h)), &ok);
	set(o, "N", json_integer((json_int_t)h->count), &ok);
	if (h->count > 0) {
		set(o, "percentile", percentiles_to_json(h), &ok);
	}
	return ok ? TAKE_PTR(o) : NULL;
}

json_t *probe_errors_to_json(const uint64_t errors[_PROBE_ERR_MAX])
{
	json_auto_t *o = json_object();
	bool ok = true;

	if (!o) {
		return NULL;
	}
	for (size_t i = 0; i < _PROBE_ERR_MAX; i++) {
		set(o, probe_error_reason_to_string((enum probe_error_reason)i),
		    json_integer((json_int_t)errors[i]), &ok);
	}
	return ok ? TAKE_PTR(o) : NULL;
}

/* One op of a run: read/write as fio's "read" and "write" objects (latency
 * in "clat_ns"), fsync as fio's "sync" object (latency in "lat_ns"), plus
 * iopsd's "errors" by reason. `runtime_usec` is fio's "runtime" (ms in the
 * output). */
static json_t *op_result_to_json(const struct probe_op_result *r, enum probe_op op, uint64_t runtime_usec)
{
	json_auto_t *o = json_object();
	bool ok = true;

	if (!o) {
		return NULL;
	}
	set(o, "total_ios", json_integer((json_int_t)r->ops), &ok);
	set(o, "iops", json_real(r->iops), &ok);
	if (op == PROBE_OP_FSYNC) {
		set(o, "lat_ns", latency_to_json(&r->lat), &ok);
	} else {
		set(o, "io_bytes", json_integer((json_int_t)r->bytes), &ok);
		set(o, "io_kbytes", json_integer((json_int_t)(r->bytes / 1024)), &ok);
		set(o, "bw_bytes", json_integer((json_int_t)(r->bw_bytes + 0.5)), &ok);
		set(o, "bw", json_integer((json_int_t)(r->bw_bytes / 1024 + 0.5)), &ok);
		set(o, "runtime", json_integer((json_int_t)(runtime_usec / USEC_PER_MSEC)), &ok);
		set(o, "clat_ns", latency_to_json(&r->lat), &ok);
	}
	set(o, "errors", probe_errors_to_json(r->errors), &ok);
	return ok ? TAKE_PTR(o) : NULL;
}

json_t *probe_result_to_json(const struct probe_result *r)
{
	static const char *const keys[_PROBE_OP_MAX] = {
	    [PROBE_OP_READ] = "read",
	    [PROBE_OP_WRITE] = "write",
	    [PROBE_OP_FSYNC] = "sync",
	};
	json_auto_t *o = json_object();
	uint64_t errors[_PROBE_ERR_MAX] = {0};
	const char *name = r->error ? strerrorname_np(-r->error) : NULL;
	bool ok = true;

	if (!o) {
		return NULL;
	}
	set(o, "success", json_boolean(r->success), &ok);
	set(o, "error", json_integer(r->error < 0 ? -r->error : r->error), &ok);
	set(o, "error_name", json_string(name ? name : ""), &ok);
	set(o, "message", render_json_string(r->message), &ok); /* may quote a path */
	set(o, "timestamp_ms", json_integer((json_int_t)(r->start_realtime_usec / USEC_PER_MSEC)), &ok);
	set(o, "job_runtime", json_integer((json_int_t)(r->runtime_usec / USEC_PER_MSEC)), &ok);
	set(o, "runtime_usec", json_integer((json_int_t)r->runtime_usec), &ok);
	set(o, "layout_usec", json_integer((json_int_t)r->layout_usec), &ok);
	for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
		set(o, keys[op], op_result_to_json(&r->op[op], (enum probe_op)op, r->runtime_usec), &ok);
		for (size_t e = 0; e < _PROBE_ERR_MAX; e++) {
			errors[e] += r->op[op].errors[e];
		}
	}
	set(o, "errors", probe_errors_to_json(errors), &ok);
	return ok ? TAKE_PTR(o) : NULL;
}
