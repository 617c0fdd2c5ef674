/* The figures fio's formats share, derived as fio's stat.c and
 * diskutil.c derive them. */
#include "fio_report.h"

#include <string.h>

#include "macro.h"

const char *fio_ddir_name(enum fio_ddir d)
{
	static const char *const names[_FIO_DDIR_MAX] = {"read", "write", "trim"};

	return d < _FIO_DDIR_MAX ? names[d] : "";
}

const struct probe_op_result *fio_job_dir(const struct fio_job *j, enum fio_ddir d)
{
	if (d == FIO_DDIR_READ) {
		return &j->res->op[PROBE_OP_READ];
	}
	if (d == FIO_DDIR_WRITE) {
		return &j->res->op[PROBE_OP_WRITE];
	}
	return NULL;
}

uint64_t fio_job_runtime_msec(const struct fio_job *j, enum fio_ddir d)
{
	const struct probe_op_result *o = fio_job_dir(j, d);
	uint64_t ms = j->res->runtime_usec / USEC_PER_MSEC;

	if (!o || o->ops == 0) {
		return 0;
	}
	return ms ? ms : 1;
}

void fio_job_cpu(const struct fio_job *j, double *ret_usr, double *ret_sys)
{
	const struct fiostat_job *f = &j->res->fio;
	/* fio: usr_time (us) * 100 / total_run_time (ms), i.e. percent x 1000 */
	double runt = (double)f->run_msec * 1000.0;

	*ret_usr = runt > 0 ? (double)f->usr_usec * 100.0 / runt : 0;
	*ret_sys = runt > 0 ? (double)f->sys_usec * 100.0 / runt : 0;
}

unsigned fio_job_latency_depth(const struct fio_job *j)
{
	return j->res->fio.latency_depth ? j->res->fio.latency_depth : j->pc->iodepth;
}

double fio_job_latency_percentile(const struct fio_job *j)
{
	double p = j->pc->wl.latency_percentile;

	return p > 0 ? p : 100.0;
}

uint64_t fio_job_total_ios(const struct fio_job *j)
{
	return j->res->op[PROBE_OP_READ].ops + j->res->op[PROBE_OP_WRITE].ops;
}

static void group_add_job(struct fio_group *g, const struct fio_job *j, bool is_first)
{
	for (size_t d = 0; d < _FIO_DDIR_MAX; d++) {
		const struct probe_op_result *o = fio_job_dir(j, (enum fio_ddir)d);
		uint64_t run = fio_job_runtime_msec(j, (enum fio_ddir)d), lo, hi;

		if (!o || run == 0) {
			continue;
		}
		/* a probe's jobs are one, as under fio's group_reporting */
		lo = hi = o->bytes * 1000 / run;
		if (is_first || g->max_run[d] == 0 || lo < g->min_bw[d]) {
			g->min_bw[d] = lo;
		}
		if (hi > g->max_bw[d]) {
			g->max_bw[d] = hi;
		}
		if (g->min_run[d] == 0 || run < g->min_run[d]) {
			g->min_run[d] = run;
		}
		if (run > g->max_run[d]) {
			g->max_run[d] = run;
		}
		g->iobytes[d] += o->bytes;
	}
}

void fio_group_stats(const struct fio_report *r, unsigned groupid, struct fio_group *ret)
{
	struct fio_group g = {.groupid = groupid};
	bool is_first = true;

	for (size_t i = 0; i < r->n_jobs; i++) {
		if (r->jobs[i].groupid == groupid) {
			group_add_job(&g, &r->jobs[i], is_first);
			is_first = false;
		}
	}
	for (size_t d = 0; d < _FIO_DDIR_MAX; d++) {
		g.agg[d] = g.max_run[d] ? g.iobytes[d] * 1000 / g.max_run[d] : 0;
	}
	*ret = g;
}

uint64_t fio_plat_idx_to_val(size_t idx)
{
	unsigned error_bits;
	uint64_t base, k;

	if (idx < 2 * HISTOGRAM_SUB_COUNT) {
		return idx;
	}
	error_bits = (unsigned)(idx >> HISTOGRAM_SUB_BITS) - 1;
	base = (uint64_t)1 << (error_bits + HISTOGRAM_SUB_BITS);
	k = idx % HISTOGRAM_SUB_COUNT;
	return base + (uint64_t)(((double)k + 0.5) * (double)((uint64_t)1 << error_bits));
}

size_t fio_percentiles(const struct histogram *h, uint64_t ret[HISTOGRAM_N_FIO_PERCENTILES])
{
	long double sum = 0;
	size_t j = 0;

	if (h->count == 0) {
		return 0;
	}
	for (size_t i = 0; i < HISTOGRAM_BUCKETS && j < HISTOGRAM_N_FIO_PERCENTILES; i++) {
		sum += (long double)h->buckets[i];
		while (j < HISTOGRAM_N_FIO_PERCENTILES &&
		       sum >= (long double)histogram_fio_percentiles[j] / 100.0L * (long double)h->count) {
			ret[j++] = fio_plat_idx_to_val(i);
		}
	}
	while (j < HISTOGRAM_N_FIO_PERCENTILES) {
		ret[j++] = fio_plat_idx_to_val(HISTOGRAM_BUCKETS - 1);
	}
	return HISTOGRAM_N_FIO_PERCENTILES;
}

static unsigned n_digits(uint64_t v)
{
	unsigned n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

char *fio_num2str(uint64_t num, int maxlen, int base, bool pow2, enum fio_n2s_unit unit, char *buf,
		  size_t len)
{
	static const char *const si[] = {"", "k", "M", "G", "T", "P", "E"};
	static const char *const iec[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
	static const char *const units[] = {
	    [FIO_N2S_NONE] = "", [FIO_N2S_BYTE] = "B", [FIO_N2S_BYTEPERSEC] = "B/s"};
	const unsigned thousand = pow2 ? 1024 : 1000;
	const char *const *prefix = pow2 ? iec : si;
	unsigned post = 0, modulo = 0;
	bool has_modulo = false, carry = false;
	char frac[32];
	int room;

	for (; base > 1; post++) {
		base /= (int)thousand;
	}
	while (post < ELEMENTSOF(si) && (int)n_digits(num) > maxlen) {
		modulo = (unsigned)(num % thousand);
		num /= thousand;
		carry = modulo >= thousand / 2;
		has_modulo = true;
		post++;
	}
	if (post >= ELEMENTSOF(si)) {
		post = 0;
	}
	room = maxlen - (int)n_digits(num);
	if (!has_modulo || room <= 1) {
		snprintf(buf, len, "%llu%s%s", (unsigned long long)(num + (has_modulo && carry)),
			 prefix[post], units[unit]);
		return buf;
	}
	/* the remainder as decimals, rounding into the integer part as fio does */
	snprintf(frac, sizeof(frac), "%.*f", room - 1, (double)modulo / (double)thousand);
	if (frac[0] == '1') {
		num++;
	}
	snprintf(buf, len, "%llu.%s%s%s", (unsigned long long)num, frac + 2, prefix[post], units[unit]);
	return buf;
}

double fio_disk_util(const struct fio_disk *d)
{
	double u = d->msec ? 100.0 * (double)d->io_ticks / (double)d->msec : 0;

	return u > 100.0 ? 100.0 : u;
}

void fio_disk_from_raw(const struct diskstats_raw *a, const struct diskstats_raw *b, uint64_t msec,
		       struct fio_disk *ret)
{
	struct fio_disk d = {.msec = msec};

	snprintf(d.name, sizeof(d.name), "%s", b->name);
	d.ios[0] = b->reads - a->reads;
	d.ios[1] = b->writes - a->writes;
	d.merges[0] = b->reads_merged - a->reads_merged;
	d.merges[1] = b->writes_merged - a->writes_merged;
	d.ticks[0] = b->read_ms - a->read_ms;
	d.ticks[1] = b->write_ms - a->write_ms;
	d.io_ticks = b->io_ms - a->io_ms;
	d.time_in_queue = b->weighted_ms - a->weighted_ms;
	*ret = d;
}

void fio_disk_add_member(struct fio_disk *master, const struct fio_disk *member)
{
	double util = member->msec ? 100.0 * (double)member->io_ticks / (double)member->msec : 0;

	for (size_t i = 0; i < 2; i++) {
		master->agg_ios[i] += member->ios[i];
		master->agg_merges[i] += member->merges[i];
		master->agg_ticks[i] += member->ticks[i];
	}
	master->agg_time_in_queue += member->time_in_queue;
	master->slavecount++;
	if (util > master->agg_max_util) {
		master->agg_max_util = util > 100.0 ? 100.0 : util;
	}
}
