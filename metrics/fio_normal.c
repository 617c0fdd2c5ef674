/* fio 3.33's human-readable report (--output-format=normal): a block per
 * job, a "Run status" line per group, and the "Disk stats". */
#include "fio_normal.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "macro.h"

#define N2S_LEN	 40
#define SIG_FIGS 4

/* min/max/avg/stdev of ns figures in fio's unit: nsec, usec or msec. */
static void display_lat(FILE *out, const char *name, const struct fiostat_stat *st)
{
	uint64_t min, max;
	double mean, dev;
	const char *base = "(nsec)";
	char a[N2S_LEN], b[N2S_LEN];

	if (!fiostat_stat_calc(st, &min, &max, &mean, &dev)) {
		return;
	}
	if (min > 2000000 && max > 99999999ULL && dev > 1000000.0) {
		min /= 1000000, max /= 1000000, mean /= 1000000.0, dev /= 1000000.0;
		base = "(msec)";
	} else if (min > 2000 && max > 99999 && dev > 1000.0) {
		min /= 1000, max /= 1000, mean /= 1000.0, dev /= 1000.0;
		base = "(usec)";
	}
	fprintf(out, "    %s %s: min=%s, max=%s, avg=%5.02f, stdev=%5.02f\n", name, base,
		fio_num2str(min, 6, 1, false, FIO_N2S_NONE, a, sizeof(a)),
		fio_num2str(max, 6, 1, false, FIO_N2S_NONE, b, sizeof(b)), mean, dev);
}

/* fio's show_clat_percentiles(): four or so to a line, in the unit that
 * the spread of the values asks for. */
static void show_percentiles(FILE *out, const struct histogram *h, const char *pre)
{
	uint64_t v[HISTOGRAM_N_FIO_PERCENTILES], minv = UINT64_MAX, maxv = 0, divisor = 1;
	size_t n = fio_percentiles(h, v);
	int scale = 0, width, per_line;

	if (n == 0) {
		return;
	}
	for (size_t i = 0; i < n; i++) {
		minv = v[i] < minv ? v[i] : minv;
		maxv = v[i] > maxv ? v[i] : maxv;
	}
	if (minv > 2000000 && maxv > 99999999ULL) {
		scale = 2, divisor = 1000000;
	} else if (minv > 2000 && maxv > 99999) {
		scale = 1, divisor = 1000;
	}
	fprintf(out, "    %s percentiles (%s):\n     |", pre,
		scale == 2   ? "msec"
		: scale == 1 ? "usec"
			     : "nsec");
	width = (int)(log10((double)(maxv / divisor)) + 1);
	width = width > 5 ? width : 5;
	per_line = (80 - 7) / (2 + 10 + width);
	for (size_t j = 0; j < n; j++) {
		uint64_t x = v[j];

		if (j != 0 && j % (size_t)per_line == 0) {
			fputs("     |", out);
		}
		for (int i = 0; i < scale; i++) {
			x = (x + 999) / 1000;
		}
		fprintf(out, " %5.2fth=[%*llu]%c", histogram_fio_percentiles[j], width, (unsigned long long)x,
			j == n - 1 ? '\n' : ',');
		if (j != n - 1 && j % (size_t)per_line == (size_t)per_line - 1) {
			fputc('\n', out);
		}
	}
}

/* The "bw (  KiB/s)" and "iops" lines from the interval samples. */
static void show_samples(FILE *out, const struct fio_group *g, enum fio_ddir d, const struct fiostat_dir *f)
{
	uint64_t min, max;
	double mean, dev, per = 100.0;
	const char *unit = "KiB";

	if (fiostat_stat_calc(&f->bw, &min, &max, &mean, &dev)) {
		if (g->agg[d] > 1024) {
			per = mean * 100.0 / ((double)g->agg[d] / 1024.0);
			per = per > 100.0 ? 100.0 : per;
		}
		if (mean > 1024.0 * 1024.0) {
			min /= 1024, max /= 1024, mean /= 1024.0, dev /= 1024.0;
			unit = "MiB";
		}
		fprintf(out,
			"   bw (%5s/s): min=%5llu, max=%5llu, per=%3.2f%%, avg=%5.02f, stdev=%5.02f, "
			"samples=%llu\n",
			unit, (unsigned long long)min, (unsigned long long)max, per, mean, dev,
			(unsigned long long)f->bw.samples);
	}
	if (fiostat_stat_calc(&f->iops, &min, &max, &mean, &dev)) {
		fprintf(out,
			"   iops        : min=%5llu, max=%5llu, avg=%5.02f, stdev=%5.02f, samples=%llu\n",
			(unsigned long long)min, (unsigned long long)max, mean, dev,
			(unsigned long long)f->iops.samples);
	}
}

static void show_ddir(FILE *out, const struct fio_job *j, const struct fio_group *g, enum fio_ddir d)
{
	const struct probe_op_result *o = fio_job_dir(j, d);
	uint64_t runt = fio_job_runtime_msec(j, d);
	char io[N2S_LEN], bw[N2S_LEN], bw_alt[N2S_LEN], iops[N2S_LEN];

	if (!o || runt == 0) {
		return;
	}
	fprintf(out, "  %s: IOPS=%s, BW=%s (%s)(%s/%llumsec)%s\n", fio_ddir_name(d),
		fio_num2str(1000 * o->ops / runt, SIG_FIGS, 1, false, FIO_N2S_NONE, iops, sizeof(iops)),
		fio_num2str(1000 * o->bytes / runt, SIG_FIGS, 1, true, FIO_N2S_BYTEPERSEC, bw, sizeof(bw)),
		fio_num2str(1000 * o->bytes / runt, SIG_FIGS, 1, false, FIO_N2S_BYTEPERSEC, bw_alt,
			    sizeof(bw_alt)),
		fio_num2str(o->bytes, SIG_FIGS, 1, true, FIO_N2S_BYTE, io, sizeof(io)),
		(unsigned long long)runt, d == FIO_DDIR_WRITE ? "; 0 zone resets" : "");
	display_lat(out, "slat", &o->fio.slat);
	display_lat(out, "clat", &o->fio.clat);
	display_lat(out, " lat", &o->fio.lat);
	show_percentiles(out, &o->lat, "clat");
	show_samples(out, g, d, &o->fio);
}

/* fio's show_lat(): the non-empty buckets, five to a line. */
static void show_lat(FILE *out, const double *pct, unsigned nr, const char *unit)
{
	static const char *const ranges[] = {
	    "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=", ">=2000="};
	unsigned line = 0;
	bool is_shown = false;

	for (unsigned i = 0; i < nr; i++) {
		if (pct[i] <= 0.0) {
			continue;
		}
		if (line == 0) {
			fprintf(out, "%s  lat (%s)   : ", is_shown ? "\n" : "", unit);
		} else {
			fputs(", ", out);
		}
		is_shown = true;
		fprintf(out, "%s%3.2f%%", ranges[i], pct[i]);
		line = (line + 1) % 5;
	}
	if (is_shown) {
		fputc('\n', out);
	}
}

static void show_latencies(FILE *out, const struct fio_job *j)
{
	const struct fiostat_job *f = &j->res->fio;
	uint64_t total = fio_job_total_ios(j);
	double n[FIOSTAT_LAT_N_NR], u[FIOSTAT_LAT_U_NR], m[FIOSTAT_LAT_M_NR];

	fiostat_calc_lat(f->lat_n, FIOSTAT_LAT_N_NR, total, n);
	fiostat_calc_lat(f->lat_u, FIOSTAT_LAT_U_NR, total, u);
	fiostat_calc_lat(f->lat_m, FIOSTAT_LAT_M_NR, total, m);
	show_lat(out, n, FIOSTAT_LAT_N_NR, "nsec");
	show_lat(out, u, FIOSTAT_LAT_U_NR, "usec");
	show_lat(out, m, FIOSTAT_LAT_M_NR, "msec");
}

static void show_sync(FILE *out, const struct fio_job *j)
{
	const struct probe_op_result *s = &j->res->op[PROBE_OP_FSYNC];

	if (s->fio.clat.samples == 0) {
		return;
	}
	fputs("  fsync/fdatasync/sync_file_range:\n", out);
	display_lat(out, "sync", &s->fio.clat);
	show_percentiles(out, &s->lat, "sync");
}

static void show_dist(FILE *out, const char *label, const char *const *keys, const uint64_t *map,
		      uint64_t total)
{
	double pct[FIOSTAT_MAP_NR];

	fiostat_calc_dist(map, total, pct);
	fputs(label, out);
	for (unsigned i = 0; i < FIOSTAT_MAP_NR; i++) {
		fprintf(out, "%s%s=%3.1f%%", i ? ", " : "", keys[i], pct[i]);
	}
	fputc('\n', out);
}

static void show_depths(FILE *out, const struct fio_job *j)
{
	static const char *const depth[] = {"1", "2", "4", "8", "16", "32", ">=64"};
	static const char *const calls[] = {"0", "4", "8", "16", "32", "64", ">=64"};
	const struct fiostat_job *f = &j->res->fio;
	const struct probe_result *r = j->res;

	show_dist(out, "  IO depths    : ", depth, f->io_u_map, fio_job_total_ios(j));
	show_dist(out, "     submit    : ", calls, f->io_u_submit, f->total_submit);
	show_dist(out, "     complete  : ", calls, f->io_u_complete, f->total_complete);
	fprintf(out, "     issued rwts: total=%llu,%llu,0,%llu short=0,0,0,0 dropped=0,0,0,0\n",
		(unsigned long long)r->op[PROBE_OP_READ].ops, (unsigned long long)r->op[PROBE_OP_WRITE].ops,
		(unsigned long long)r->op[PROBE_OP_FSYNC].ops);
	fprintf(out, "     latency   : target=%llu, window=%llu, percentile=%.2f%%, depth=%u\n",
		(unsigned long long)(j->pc->wl.latency_target_usec * 1000),
		(unsigned long long)j->pc->wl.latency_window_usec, fio_job_latency_percentile(j),
		fio_job_latency_depth(j));
}

/* ss=: fio's "steadystate" line. */
static void show_ss(FILE *out, const struct steady *ss)
{
	uint64_t bw = 0, iops = 0;
	char a[N2S_LEN], b[N2S_LEN], c[N2S_LEN];

	for (unsigned i = 0; i < ss->n; i++) {
		bw += steady_value(ss, false, i);
		iops += steady_value(ss, true, i);
	}
	bw = ss->n ? bw / ss->n : 0;
	iops = ss->n ? iops / ss->n : 0;
	fprintf(out, "  steadystate  : attained=%s, bw=%s (%s), iops=%s, %s%s=%.3f%s\n",
		ss->is_attained ? "yes" : "no",
		fio_num2str(bw / 1024, SIG_FIGS, 1024, true, FIO_N2S_BYTEPERSEC, a, sizeof(a)),
		fio_num2str(bw / 1024, SIG_FIGS, 1024, false, FIO_N2S_BYTEPERSEC, b, sizeof(b)),
		fio_num2str(iops, SIG_FIGS, 1, false, FIO_N2S_NONE, c, sizeof(c)),
		ss->is_iops ? "iops" : "bw", ss->is_slope ? " slope" : " mean dev", ss->criterion,
		ss->is_pct ? "%" : "");
}

static void show_job(FILE *out, const struct fio_report *r, const struct fio_job *j)
{
	const struct fiostat_job *f = &j->res->fio;
	struct fio_group g;
	time_t t = (time_t)(r->realtime_usec / USEC_PER_SEC);
	char when[32] = "";
	double usr, sys;

	if (fio_job_total_ios(j) == 0 && j->res->op[PROBE_OP_FSYNC].ops == 0) {
		return;
	}
	ctime_r(&t, when);
	fio_group_stats(r, j->groupid, &g);
	if (j->res->error == 0) {
		fprintf(out, "%s: (groupid=%u, jobs=%u): err= 0: pid=%d: %s", j->pc->name, j->groupid,
			j->pc->numjobs, j->pid, when);
	} else {
		fprintf(out, "%s: (groupid=%u, jobs=%u): err=%2d (%s): pid=%d: %s", j->pc->name, j->groupid,
			j->pc->numjobs, -j->res->error, j->res->message, j->pid, when);
	}
	show_ddir(out, j, &g, FIO_DDIR_READ);
	show_ddir(out, j, &g, FIO_DDIR_WRITE);
	show_latencies(out, j);
	show_sync(out, j);
	fio_job_cpu(j, &usr, &sys);
	fprintf(out, "  cpu          : usr=%3.2f%%, sys=%3.2f%%, ctx=%llu, majf=%llu, minf=%llu\n", usr, sys,
		(unsigned long long)f->ctx, (unsigned long long)f->majf, (unsigned long long)f->minf);
	show_depths(out, j);
	if (j->res->ss.is_enabled) {
		show_ss(out, &j->res->ss);
	}
}

static void show_group(FILE *out, const struct fio_group *g)
{
	static const char *const names[_FIO_DDIR_MAX] = {"   READ", "  WRITE", "   TRIM"};
	char s[8][N2S_LEN];

	fprintf(out, "\nRun status group %u (all jobs):\n", g->groupid);
	for (size_t d = 0; d < _FIO_DDIR_MAX; d++) {
		if (g->max_run[d] == 0) {
			continue;
		}
		fprintf(out, "%s: bw=%s (%s), %s-%s (%s-%s), io=%s (%s), run=%llu-%llumsec\n", names[d],
			fio_num2str(g->agg[d], SIG_FIGS, 1, true, FIO_N2S_BYTEPERSEC, s[0], N2S_LEN),
			fio_num2str(g->agg[d], SIG_FIGS, 1, false, FIO_N2S_BYTEPERSEC, s[1], N2S_LEN),
			fio_num2str(g->min_bw[d], SIG_FIGS, 1, true, FIO_N2S_BYTEPERSEC, s[2], N2S_LEN),
			fio_num2str(g->max_bw[d], SIG_FIGS, 1, true, FIO_N2S_BYTEPERSEC, s[3], N2S_LEN),
			fio_num2str(g->min_bw[d], SIG_FIGS, 1, false, FIO_N2S_BYTEPERSEC, s[4], N2S_LEN),
			fio_num2str(g->max_bw[d], SIG_FIGS, 1, false, FIO_N2S_BYTEPERSEC, s[5], N2S_LEN),
			fio_num2str(g->iobytes[d], SIG_FIGS, 1, true, FIO_N2S_BYTE, s[6], N2S_LEN),
			fio_num2str(g->iobytes[d], SIG_FIGS, 1, false, FIO_N2S_BYTE, s[7], N2S_LEN),
			(unsigned long long)g->min_run[d], (unsigned long long)g->max_run[d]);
	}
}

static void show_disk(FILE *out, const struct fio_disk *d)
{
	fprintf(out, "%s  %s: ios=%llu/%llu, merge=%llu/%llu, ticks=%llu/%llu, in_queue=%llu, util=%3.2f%%",
		d->slavecount ? "  " : "", d->name, (unsigned long long)d->ios[0],
		(unsigned long long)d->ios[1], (unsigned long long)d->merges[0],
		(unsigned long long)d->merges[1], (unsigned long long)d->ticks[0],
		(unsigned long long)d->ticks[1], (unsigned long long)d->time_in_queue, fio_disk_util(d));
	if (d->slavecount) {
		unsigned n = d->slavecount;

		fprintf(out,
			", aggrios=%llu/%llu, aggrmerge=%llu/%llu, aggrticks=%llu/%llu, aggrin_queue=%llu, "
			"aggrutil=%3.2f%%",
			(unsigned long long)(d->agg_ios[0] / n), (unsigned long long)(d->agg_ios[1] / n),
			(unsigned long long)(d->agg_merges[0] / n),
			(unsigned long long)(d->agg_merges[1] / n), (unsigned long long)(d->agg_ticks[0] / n),
			(unsigned long long)(d->agg_ticks[1] / n),
			(unsigned long long)(d->agg_time_in_queue / n), d->agg_max_util);
	}
	fputc('\n', out);
}

void fio_normal_write(const struct fio_report *r, FILE *out)
{
	unsigned last_group = 0;
	struct fio_group g;

	for (size_t i = 0; i < r->n_jobs; i++) {
		fputc('\n', out);
		show_job(out, r, &r->jobs[i]);
		last_group = r->jobs[i].groupid;
	}
	for (unsigned gid = 0; r->n_jobs > 0 && gid <= last_group; gid++) {
		fio_group_stats(r, gid, &g);
		show_group(out, &g);
	}
	if (r->n_disks > 0) {
		fputs("\nDisk stats (read/write):\n", out);
	}
	for (size_t i = 0; i < r->n_disks; i++) {
		show_disk(out, &r->disks[i]);
	}
}

/* bs=(R) 4096B-4096B: a direction's smallest and largest I/O. */
static void bs_range(const struct probe_config *pc, size_t dir, uint64_t *ret_min, uint64_t *ret_max)
{
	const struct probe_bs *b = &pc->bsdir[dir];
	uint64_t bs = pc->bs_rw[dir] ? pc->bs_rw[dir] : pc->bs;

	*ret_min = b->min ? b->min : bs;
	*ret_max = b->max ? b->max : bs;
}

void fio_normal_header(const struct config *cfg, const char *version, FILE *out)
{
	unsigned groupid = 0, n = 0;

	for (size_t i = 0; i < cfg->n_probes; i++) {
		const struct probe_config *pc = &cfg->probes[i];
		uint64_t rmin, rmax, wmin, wmax;
		char a[N2S_LEN], b[N2S_LEN], c[N2S_LEN], d[N2S_LEN];

		if (i > 0 && pc->stonewall) {
			groupid++;
		}
		bs_range(pc, PROBE_DIR_READ, &rmin, &rmax);
		bs_range(pc, PROBE_DIR_WRITE, &wmin, &wmax);
		fprintf(out,
			"%s: (g=%u): rw=%s, bs=(R) %s-%s, (W) %s-%s, (T) %s-%s, ioengine=%s, iodepth=%u\n",
			pc->name, groupid, probe_rw_to_string(pc->rw),
			fio_num2str(rmin, SIG_FIGS, 1, true, FIO_N2S_BYTE, a, sizeof(a)),
			fio_num2str(rmax, SIG_FIGS, 1, true, FIO_N2S_BYTE, b, sizeof(b)),
			fio_num2str(wmin, SIG_FIGS, 1, true, FIO_N2S_BYTE, c, sizeof(c)),
			fio_num2str(wmax, SIG_FIGS, 1, true, FIO_N2S_BYTE, d, sizeof(d)), a, b,
			probe_engine_to_string(pc->ioengine), pc->iodepth);
		if (pc->numjobs > 1) {
			fputs("...\n", out);
		}
		n += pc->numjobs;
	}
	fprintf(out, "%s\nStarting %u thread%s\n", version, n, n == 1 ? "" : "s");
}
