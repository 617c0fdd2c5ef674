/* fio's terse version 3: "3;fio-version;name;groupid;error", then read
 * and write (each: KiB, bw, iops, runtime, slat, clat, 20 percentile
 * fields, lat, bw samples), CPU, depths, latency buckets, disks. */
#include "fio_terse.h"

#include "macro.h"

#define TERSE_PERCENTILES 20

/* min;max;mean;dev in us, or zeros. */
static void terse_lat(FILE *out, const struct fiostat_stat *st)
{
	uint64_t min = 0, max = 0;
	double mean = 0, dev = 0;

	if (!fiostat_stat_calc(st, &min, &max, &mean, &dev)) {
		min = max = 0, mean = dev = 0;
	}
	fprintf(out, ";%llu;%llu;%f;%f", (unsigned long long)(min / 1000), (unsigned long long)(max / 1000),
		mean / 1000, dev / 1000);
}

/* fio's list over an empty histogram gives bin 0 for every percentile. */
static void terse_percentiles(FILE *out, const struct histogram *h)
{
	uint64_t v[HISTOGRAM_N_FIO_PERCENTILES] = {0};

	fio_percentiles(h, v);
	for (size_t i = 0; i < TERSE_PERCENTILES; i++) {
		if (i < HISTOGRAM_N_FIO_PERCENTILES) {
			fprintf(out, ";%f%%=%llu", histogram_fio_percentiles[i],
				(unsigned long long)(v[i] / 1000));
		} else {
			fputs(";0%=0", out);
		}
	}
}

static void terse_bw(FILE *out, const struct fio_group *g, enum fio_ddir d, const struct fiostat_stat *bw)
{
	uint64_t min, max;
	double mean, dev, per = 100.0;

	if (!fiostat_stat_calc(bw, &min, &max, &mean, &dev)) {
		fprintf(out, ";%llu;%llu;%f%%;%f;%f", 0ULL, 0ULL, 0.0, 0.0, 0.0);
		return;
	}
	if (g->agg[d]) {
		per = mean * 100 / (double)(g->agg[d] / 1024);
		per = per > 100.0 ? 100.0 : per;
	}
	fprintf(out, ";%llu;%llu;%f%%;%f;%f", (unsigned long long)min, (unsigned long long)max, per, mean,
		dev);
}

static void terse_ddir(FILE *out, const struct fio_job *j, const struct fio_group *g, enum fio_ddir d)
{
	static const struct probe_op_result none;
	const struct probe_op_result *o = fio_job_dir(j, d);
	uint64_t runt = fio_job_runtime_msec(j, d);

	o = o ? o : &none;
	fprintf(out, ";%llu;%llu;%llu;%llu", (unsigned long long)(o->bytes >> 10),
		(unsigned long long)(runt ? 1000 * o->bytes / runt / 1024 : 0),
		(unsigned long long)(runt ? 1000 * o->ops / runt : 0), (unsigned long long)runt);
	terse_lat(out, &o->fio.slat);
	terse_lat(out, &o->fio.clat);
	terse_percentiles(out, &o->lat);
	terse_lat(out, &o->fio.lat);
	terse_bw(out, g, d, &o->fio.bw);
}

static void terse_tail(FILE *out, const struct fio_job *j)
{
	const struct fiostat_job *f = &j->res->fio;
	uint64_t total = fio_job_total_ios(j), ns = 0;
	double usr, sys, dist[FIOSTAT_MAP_NR], u[FIOSTAT_LAT_U_NR], m[FIOSTAT_LAT_M_NR];

	fio_job_cpu(j, &usr, &sys);
	fprintf(out, ";%f%%;%f%%;%llu;%llu;%llu", usr, sys, (unsigned long long)f->ctx,
		(unsigned long long)f->majf, (unsigned long long)f->minf);
	fiostat_calc_dist(f->io_u_map, total, dist);
	for (size_t i = 0; i < FIOSTAT_MAP_NR; i++) {
		fprintf(out, ";%3.1f%%", dist[i]);
	}
	/* fio folds the ns buckets into the first us one to keep the format */
	fiostat_calc_lat(f->lat_u, FIOSTAT_LAT_U_NR, total, u);
	for (size_t i = 0; i < FIOSTAT_LAT_N_NR; i++) {
		ns += f->lat_n[i];
	}
	u[0] += total ? 100.0 * (double)ns / (double)total : 0;
	for (size_t i = 0; i < FIOSTAT_LAT_U_NR; i++) {
		fprintf(out, ";%3.2f%%", u[i]);
	}
	fiostat_calc_lat(f->lat_m, FIOSTAT_LAT_M_NR, total, m);
	for (size_t i = 0; i < FIOSTAT_LAT_M_NR; i++) {
		fprintf(out, ";%3.2f%%", m[i]);
	}
}

static void terse_disk(FILE *out, const struct fio_disk *d)
{
	unsigned n = d->slavecount;

	fprintf(out, ";%s;%llu;%llu;%llu;%llu;%llu;%llu;%llu;%3.2f%%", d->name, (unsigned long long)d->ios[0],
		(unsigned long long)d->ios[1], (unsigned long long)d->merges[0],
		(unsigned long long)d->merges[1], (unsigned long long)d->ticks[0],
		(unsigned long long)d->ticks[1], (unsigned long long)d->time_in_queue, fio_disk_util(d));
	if (n) {
		fprintf(out, ";slaves;%llu;%llu;%llu;%llu;%llu;%llu;%llu;%3.2f%%",
			(unsigned long long)(d->agg_ios[0] / n), (unsigned long long)(d->agg_ios[1] / n),
			(unsigned long long)(d->agg_merges[0] / n),
			(unsigned long long)(d->agg_merges[1] / n), (unsigned long long)(d->agg_ticks[0] / n),
			(unsigned long long)(d->agg_ticks[1] / n),
			(unsigned long long)(d->agg_time_in_queue / n), d->agg_max_util);
	}
}

void fio_terse_write(const struct fio_report *r, FILE *out)
{
	for (size_t i = 0; i < r->n_jobs; i++) {
		const struct fio_job *j = &r->jobs[i];
		struct fio_group g;

		fio_group_stats(r, j->groupid, &g);
		fprintf(out, "3;%s;%s;%u;%d", r->version, j->pc->name, j->groupid,
			j->res->error < 0 ? -j->res->error : j->res->error);
		terse_ddir(out, j, &g, FIO_DDIR_READ);
		terse_ddir(out, j, &g, FIO_DDIR_WRITE);
		terse_tail(out, j);
		for (size_t k = 0; k < r->n_disks; k++) {
			terse_disk(out, &r->disks[k]);
		}
		fputc('\n', out);
	}
}
