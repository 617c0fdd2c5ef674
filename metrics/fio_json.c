/* fio 3.33's --output-format=json and json+ for `iopsd --once`: fio's keys
 * with fio's meaning and units, iopsd's own beside them. */
#include "fio_json.h"

#include <string.h>
#include <time.h>

#include "json_probe.h"
#include "macro.h"
#include "render_json.h"

/* json_object_set_new() that remembers the first failure. */
static void set(json_t *obj, const char *key, json_t *v, bool *ok)
{
	if (!v || json_object_set_new(obj, key, v) < 0) {
		*ok = false;
	}
}

/* min, max, mean, stddev, N; with the percentiles and (json+) the bins
 * when a histogram is given and not empty. */
static json_t *lat_to_json(const struct fiostat_stat *st, const struct histogram *h, bool is_plus)
{
	json_auto_t *o = json_object();
	uint64_t min = 0, max = 0, v[HISTOGRAM_N_FIO_PERCENTILES];
	double mean = 0, dev = 0;
	bool ok = o != NULL;

	if (!o) {
		return NULL;
	}
	if (!fiostat_stat_calc(st, &min, &max, &mean, &dev)) {
		min = max = 0, mean = dev = 0;
	}
	set(o, "min", json_integer((json_int_t)min), &ok);
	set(o, "max", json_integer((json_int_t)max), &ok);
	set(o, "mean", json_real(mean), &ok);
	set(o, "stddev", json_real(dev), &ok);
	set(o, "N", json_integer((json_int_t)st->samples), &ok);
	if (h && st->samples > 0 && fio_percentiles(h, v) > 0) {
		json_t *p = json_object(), *bins = is_plus ? json_object() : NULL;
		char key[32];

		set(o, "percentile", p, &ok);
		for (size_t i = 0; p && i < HISTOGRAM_N_FIO_PERCENTILES; i++) {
			snprintf(key, sizeof(key), "%f", histogram_fio_percentiles[i]);
			set(p, key, json_integer((json_int_t)v[i]), &ok);
		}
		if (is_plus) {
			set(o, "bins", bins, &ok);
		}
		for (size_t i = 0; bins && i < HISTOGRAM_BUCKETS; i++) {
			if (h->buckets[i]) {
				snprintf(key, sizeof(key), "%llu",
					 (unsigned long long)fio_plat_idx_to_val(i));
				set(bins, key, json_integer((json_int_t)h->buckets[i]), &ok);
			}
		}
	}
	return ok ? TAKE_PTR(o) : NULL;
}

static void samples_to_json(json_t *o, const struct fio_group *g, enum fio_ddir d,
			    const struct fiostat_dir *f, bool *ok)
{
	uint64_t min = 0, max = 0;
	double mean = 0, dev = 0, per = 0;

	if (fiostat_stat_calc(&f->bw, &min, &max, &mean, &dev)) {
		per = 100.0;
		if (g->agg[d] > 1024) {
			per = mean * 100.0 / ((double)g->agg[d] / 1024.0);
			per = per > 100.0 ? 100.0 : per;
		}
	}
	set(o, "bw_min", json_integer((json_int_t)min), ok);
	set(o, "bw_max", json_integer((json_int_t)max), ok);
	set(o, "bw_agg", json_real(per), ok);
	set(o, "bw_mean", json_real(mean), ok);
	set(o, "bw_dev", json_real(dev), ok);
	set(o, "bw_samples", json_integer((json_int_t)f->bw.samples), ok);
	if (!fiostat_stat_calc(&f->iops, &min, &max, &mean, &dev)) {
		min = max = 0, mean = dev = 0;
	}
	set(o, "iops_min", json_integer((json_int_t)min), ok);
	set(o, "iops_max", json_integer((json_int_t)max), ok);
	set(o, "iops_mean", json_real(mean), ok);
	set(o, "iops_stddev", json_real(dev), ok);
	set(o, "iops_samples", json_integer((json_int_t)f->iops.samples), ok);
}

/* "read", "write" or "trim" (iopsd never trims: all zero). */
static json_t *ddir_to_json(const struct fio_report *r, const struct fio_job *j, const struct fio_group *g,
			    enum fio_ddir d)
{
	static const struct probe_op_result none;
	const struct probe_op_result *p = fio_job_dir(j, d);
	const struct probe_op_result *op = p ? p : &none;
	uint64_t runt = fio_job_runtime_msec(j, d), bw_bytes = runt ? 1000 * op->bytes / runt : 0;
	json_auto_t *o = json_object();
	bool ok = o != NULL;

	if (!o) {
		return NULL;
	}
	set(o, "io_bytes", json_integer((json_int_t)op->bytes), &ok);
	set(o, "io_kbytes", json_integer((json_int_t)(op->bytes >> 10)), &ok);
	set(o, "bw_bytes", json_integer((json_int_t)bw_bytes), &ok);
	set(o, "bw", json_integer((json_int_t)(bw_bytes / 1024)), &ok);
	set(o, "iops", json_real(runt ? 1000.0 * (double)op->ops / (double)runt : 0.0), &ok);
	set(o, "runtime", json_integer((json_int_t)runt), &ok);
	set(o, "total_ios", json_integer((json_int_t)op->ops), &ok);
	set(o, "short_ios", json_integer(0), &ok);
	set(o, "drop_ios", json_integer(0), &ok);
	set(o, "slat_ns", lat_to_json(&op->fio.slat, NULL, false), &ok);
	set(o, "clat_ns", lat_to_json(&op->fio.clat, &op->lat, r->is_json_plus), &ok);
	set(o, "lat_ns", lat_to_json(&op->fio.lat, NULL, false), &ok);
	samples_to_json(o, g, d, &op->fio, &ok);
	set(o, "errors", probe_errors_to_json(op->errors), &ok);
	return ok ? TAKE_PTR(o) : NULL;
}

static json_t *sync_to_json(const struct fio_report *r, const struct fio_job *j)
{
	const struct probe_op_result *s = &j->res->op[PROBE_OP_FSYNC];
	json_auto_t *o = json_object();
	bool ok = o != NULL;

	if (!o) {
		return NULL;
	}
	set(o, "total_ios", json_integer((json_int_t)s->ops), &ok);
	/* iopsd's own, kept from the JSON --once printed before it had formats */
	set(o, "iops", json_real(s->iops), &ok);
	set(o, "lat_ns", lat_to_json(&s->fio.clat, &s->lat, r->is_json_plus), &ok);
	set(o, "errors", probe_errors_to_json(s->errors), &ok);
	return ok ? TAKE_PTR(o) : NULL;
}

/* {"1": %, "2": %, ...}: a depth map under fio's key names. */
static json_t *dist_to_json(const char *const *keys, const uint64_t *map, uint64_t total)
{
	json_auto_t *o = json_object();
	double pct[FIOSTAT_MAP_NR];
	bool ok = o != NULL;

	fiostat_calc_dist(map, total, pct);
	for (size_t i = 0; o && i < FIOSTAT_MAP_NR; i++) {
		set(o, keys[i], json_real(pct[i]), &ok);
	}
	return ok ? TAKE_PTR(o) : NULL;
}

static json_t *lat_buckets_to_json(const uint64_t *src, unsigned nr, uint64_t total)
{
	static const char *const keys[] = {"2",	  "4",	 "10",	"20",	"50",	"100",
					   "250", "500", "750", "1000", "2000", ">=2000"};
	json_auto_t *o = json_object();
	double pct[FIOSTAT_LAT_M_NR];
	bool ok = o != NULL;

	fiostat_calc_lat(src, nr, total, pct);
	for (unsigned i = 0; o && i < nr; i++) {
		set(o, keys[i], json_real(pct[i]), &ok);
	}
	return ok ? TAKE_PTR(o) : NULL;
}

static void job_tail_to_json(json_t *o, const struct fio_job *j, bool *ok)
{
	static const char *const depth[] = {"1", "2", "4", "8", "16", "32", ">=64"};
	static const char *const calls[] = {"0", "4", "8", "16", "32", "64", ">=64"};
	const struct fiostat_job *f = &j->res->fio;
	uint64_t total = fio_job_total_ios(j);
	double usr, sys;

	fio_job_cpu(j, &usr, &sys);
	set(o, "job_runtime", json_integer((json_int_t)f->run_msec), ok);
	set(o, "usr_cpu", json_real(usr), ok);
	set(o, "sys_cpu", json_real(sys), ok);
	set(o, "ctx", json_integer((json_int_t)f->ctx), ok);
	set(o, "majf", json_integer((json_int_t)f->majf), ok);
	set(o, "minf", json_integer((json_int_t)f->minf), ok);
	set(o, "iodepth_level", dist_to_json(depth, f->io_u_map, total), ok);
	set(o, "iodepth_submit", dist_to_json(calls, f->io_u_submit, f->total_submit), ok);
	set(o, "iodepth_complete", dist_to_json(calls, f->io_u_complete, f->total_complete), ok);
	set(o, "latency_ns", lat_buckets_to_json(f->lat_n, FIOSTAT_LAT_N_NR, total), ok);
	set(o, "latency_us", lat_buckets_to_json(f->lat_u, FIOSTAT_LAT_U_NR, total), ok);
	set(o, "latency_ms", lat_buckets_to_json(f->lat_m, FIOSTAT_LAT_M_NR, total), ok);
	/* latency_target's figures as fio's (without it: 0, 0, 100 and iodepth) */
	set(o, "latency_depth", json_integer(fio_job_latency_depth(j)), ok);
	set(o, "latency_target", json_integer((json_int_t)(j->pc->wl.latency_target_usec * 1000)),
	    ok); /* ns */
	set(o, "latency_percentile", json_real(fio_job_latency_percentile(j)), ok);
	set(o, "latency_window", json_integer((json_int_t)j->pc->wl.latency_window_usec), ok);
}

/* iopsd's own figures, under its own names (today's --once keys). */
static void job_extras_to_json(json_t *o, const struct fio_job *j, bool *ok)
{
	const struct probe_result *r = j->res;
	const char *name = r->error ? strerrorname_np(-r->error) : NULL;
	uint64_t errors[_PROBE_ERR_MAX] = {0};

	for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
		for (size_t e = 0; e < _PROBE_ERR_MAX; e++) {
			errors[e] += r->op[op].errors[e];
		}
	}
	set(o, "success", json_boolean(r->success), ok);
	set(o, "error_name", json_string(name ? name : ""), ok);
	set(o, "message", render_json_string(r->message), ok);
	set(o, "timestamp_ms", json_integer((json_int_t)(r->start_realtime_usec / USEC_PER_MSEC)), ok);
	set(o, "runtime_usec", json_integer((json_int_t)r->runtime_usec), ok);
	set(o, "layout_usec", json_integer((json_int_t)r->layout_usec), ok);
	set(o, "errors", probe_errors_to_json(errors), ok);
	set(o, "target", json_string(j->target), ok);
}

/* ss=: fio's "steadystate" object. */
static json_t *ss_to_json(const struct steady *ss)
{
	json_auto_t *o = json_object(), *data = json_object(), *iops = json_array(), *bw = json_array();
	char buf[64];
	uint64_t sum_iops = 0, sum_bw = 0;
	bool ok = o && data && iops && bw;

	if (!ok) {
		return NULL;
	}
	snprintf(buf, sizeof(buf), "%s%s:%f%s", ss->is_iops ? "iops" : "bw", ss->is_slope ? "_slope" : "",
		 ss->limit, ss->is_pct ? "%" : "");
	set(o, "ss", json_string(buf), &ok);
	set(o, "duration", json_integer(ss->dur), &ok);
	set(o, "attained", json_integer(ss->is_attained), &ok);
	snprintf(buf, sizeof(buf), "%f%s", ss->criterion, ss->is_pct ? "%" : "");
	set(o, "criterion", json_string(buf), &ok);
	set(o, "max_deviation", json_real(ss->deviation), &ok);
	set(o, "slope", json_real(ss->slope), &ok);
	for (unsigned i = 0; i < ss->n; i++) {
		sum_iops += steady_value(ss, true, i);
		sum_bw += steady_value(ss, false, i);
		ok &= json_array_append_new(iops, json_integer((json_int_t)steady_value(ss, true, i))) == 0;
		ok &= json_array_append_new(bw, json_integer((json_int_t)steady_value(ss, false, i))) == 0;
	}
	set(data, "bw_mean", json_integer((json_int_t)(ss->n ? sum_bw / ss->n : 0)), &ok);
	set(data, "iops_mean", json_integer((json_int_t)(ss->n ? sum_iops / ss->n : 0)), &ok);
	set(data, "iops", TAKE_PTR(iops), &ok);
	set(data, "bw", TAKE_PTR(bw), &ok);
	set(o, "data", TAKE_PTR(data), &ok);
	return ok ? TAKE_PTR(o) : NULL;
}

static json_t *job_to_json(const struct fio_report *r, const struct fio_job *j)
{
	json_auto_t *o = json_object();
	struct fio_group g;
	bool ok = o != NULL;

	if (!o) {
		return NULL;
	}
	fio_group_stats(r, j->groupid, &g);
	set(o, "jobname", json_string(j->pc->name), &ok);
	set(o, "groupid", json_integer(j->groupid), &ok);
	set(o, "error", json_integer(j->res->error < 0 ? -j->res->error : j->res->error), &ok);
	set(o, "eta", json_integer(0), &ok);
	set(o, "elapsed", json_integer((json_int_t)r->elapsed_sec), &ok);
	set(o, "job options", fio_job_options_to_json(j->pc), &ok);
	for (size_t d = 0; d < _FIO_DDIR_MAX; d++) {
		set(o, fio_ddir_name((enum fio_ddir)d), ddir_to_json(r, j, &g, (enum fio_ddir)d), &ok);
	}
	set(o, "sync", sync_to_json(r, j), &ok);
	job_tail_to_json(o, j, &ok);
	if (j->res->ss.is_enabled) {
		set(o, "steadystate", ss_to_json(&j->res->ss), &ok);
	}
	job_extras_to_json(o, j, &ok);
	return ok ? TAKE_PTR(o) : NULL;
}

static json_t *disk_to_json(const struct fio_disk *d)
{
	json_auto_t *o = json_object();
	unsigned n = d->slavecount;
	bool ok = o != NULL;

	if (!o) {
		return NULL;
	}
	set(o, "name", json_string(d->name), &ok);
	set(o, "read_ios", json_integer((json_int_t)d->ios[0]), &ok);
	set(o, "write_ios", json_integer((json_int_t)d->ios[1]), &ok);
	set(o, "read_merges", json_integer((json_int_t)d->merges[0]), &ok);
	set(o, "write_merges", json_integer((json_int_t)d->merges[1]), &ok);
	set(o, "read_ticks", json_integer((json_int_t)d->ticks[0]), &ok);
	set(o, "write_ticks", json_integer((json_int_t)d->ticks[1]), &ok);
	set(o, "in_queue", json_integer((json_int_t)d->time_in_queue), &ok);
	set(o, "util", json_real(fio_disk_util(d)), &ok);
	if (n) {
		set(o, "aggr_read_ios", json_integer((json_int_t)(d->agg_ios[0] / n)), &ok);
		set(o, "aggr_write_ios", json_integer((json_int_t)(d->agg_ios[1] / n)), &ok);
		set(o, "aggr_read_merges", json_integer((json_int_t)(d->agg_merges[0] / n)), &ok);
		/* sic: fio's name for it */
		set(o, "aggr_write_merge", json_integer((json_int_t)(d->agg_merges[1] / n)), &ok);
		set(o, "aggr_read_ticks", json_integer((json_int_t)(d->agg_ticks[0] / n)), &ok);
		set(o, "aggr_write_ticks", json_integer((json_int_t)(d->agg_ticks[1] / n)), &ok);
		set(o, "aggr_in_queue", json_integer((json_int_t)(d->agg_time_in_queue / n)), &ok);
		set(o, "aggr_util", json_real(d->agg_max_util), &ok);
	}
	return ok ? TAKE_PTR(o) : NULL;
}

static json_t *disks_to_json(const struct fio_report *r)
{
	json_auto_t *a = json_array();

	for (size_t i = 0; a && i < r->n_disks; i++) {
		if (json_array_append_new(a, disk_to_json(&r->disks[i])) < 0) {
			return NULL;
		}
	}
	return TAKE_PTR(a);
}

json_t *fio_json_report(const struct fio_report *r)
{
	json_auto_t *o = json_object(), *jobs = json_array();
	time_t t = (time_t)(r->realtime_usec / USEC_PER_SEC);
	char when[32] = "";
	bool ok = o && jobs;

	if (!ok) {
		return NULL;
	}
	ctime_r(&t, when);
	when[strcspn(when, "\n")] = '\0';
	set(o, "iopsd version", json_string(r->version), &ok);
	set(o, "timestamp", json_integer((json_int_t)t), &ok);
	set(o, "timestamp_ms", json_integer((json_int_t)(r->realtime_usec / USEC_PER_MSEC)), &ok);
	set(o, "time", json_string(when), &ok);
	for (size_t i = 0; i < r->n_jobs; i++) {
		if (json_array_append_new(jobs, job_to_json(r, &r->jobs[i])) < 0) {
			ok = false;
		}
	}
	set(o, "jobs", TAKE_PTR(jobs), &ok);
	set(o, "disk_util", disks_to_json(r), &ok);
	return ok ? TAKE_PTR(o) : NULL;
}

json_t *fio_job_options_to_json(const struct probe_config *pc)
{
	return json_pack("{s:s, s:I, s:I, s:i, s:i, s:i, s:s, s:i, s:i, s:I, s:I, s:I, s:I, s:b, s:i, s:I}",
			 "rw", probe_rw_to_string(pc->rw), "bs", (json_int_t)pc->bs, "size",
			 (json_int_t)pc->size, "nrfiles", (int)pc->nrfiles, "iodepth", (int)pc->iodepth,
			 "numjobs", (int)pc->numjobs, "ioengine", probe_engine_to_string(pc->ioengine),
			 "rwmixread", (int)pc->rwmixread, "fsync", (int)pc->fsync, "runtime_usec",
			 (json_int_t)pc->runtime_usec, "number_ios", (json_int_t)pc->number_ios, "rate_iops",
			 (json_int_t)pc->rate_iops, "ramp_time_usec", (json_int_t)pc->ramp_usec, "time_based",
			 pc->time_based, "loops", (int)pc->loops, "rate", (json_int_t)pc->rate_bytes);
}
