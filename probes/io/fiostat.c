/* fio's side figures (slat, lat, interval samples, depth maps, latency
 * buckets), kept the way fio's stat.c and io_u.c keep them. */
#include "fiostat.h"

#include <math.h>

#include "macro.h"

void fiostat_stat_add(struct fiostat_stat *s, uint64_t v)
{
	double delta = (double)v - s->mean;

	if (s->samples == 0 || v > s->max) {
		s->max = v;
	}
	if (s->samples == 0 || v < s->min) {
		s->min = v;
	}
	if (delta != 0) {
		s->mean += delta / ((double)s->samples + 1.0);
		s->S += delta * ((double)v - s->mean);
	}
	s->samples++;
}

void fiostat_stat_merge(struct fiostat_stat *dst, const struct fiostat_stat *src)
{
	double n1 = (double)dst->samples, n2 = (double)src->samples, delta;

	if (src->samples == 0) {
		return;
	}
	if (dst->samples == 0) {
		*dst = *src;
		return;
	}
	delta = src->mean - dst->mean;
	dst->min = src->min < dst->min ? src->min : dst->min;
	dst->max = src->max > dst->max ? src->max : dst->max;
	dst->S = src->S + dst->S + delta * delta * n1 * n2 / (n1 + n2);
	dst->mean = (src->mean * n2 + dst->mean * n1) / (n1 + n2);
	dst->samples += src->samples;
}

void fiostat_stat_sum(struct fiostat_stat *dst, const struct fiostat_stat *src)
{
	if (src->samples == 0) {
		return;
	}
	if (dst->samples == 0) {
		*dst = *src;
		return;
	}
	dst->min += src->min;
	dst->max += src->max;
	dst->samples += src->samples;
	dst->mean += src->mean;
	dst->S += src->S;
}

bool fiostat_stat_calc(const struct fiostat_stat *s, uint64_t *ret_min, uint64_t *ret_max, double *ret_mean,
		       double *ret_dev)
{
	double n = (double)s->samples;

	if (s->samples == 0) {
		return false;
	}
	*ret_min = s->min;
	*ret_max = s->max;
	*ret_mean = s->mean;
	*ret_dev = n > 1.0 ? sqrt(s->S / (n - 1.0)) : 0;
	return true;
}

/* The bucket of a value below 1000 in fio's 2,4,10,20,50,100,250,500,750,1000
 * scale (ns or us), and of milliseconds in its ...,1000,2000,>=2000. */
static unsigned lat_bucket(uint64_t v)
{
	static const uint64_t upper[] = {2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000};
	unsigned i = 0;

	while (i < sizeof(upper) / sizeof(upper[0]) && v >= upper[i]) {
		i++;
	}
	return i;
}

void fiostat_record_io(struct fiostat_dir *d, struct fiostat_job *j, uint64_t slat_ns, uint64_t clat_ns)
{
	fiostat_stat_add(&d->slat, slat_ns);
	fiostat_stat_add(&d->clat, clat_ns);
	fiostat_stat_add(&d->lat, slat_ns + clat_ns);
	if (clat_ns < 1000) {
		j->lat_n[lat_bucket(clat_ns)]++;
	} else if (clat_ns < 1000000) {
		j->lat_u[lat_bucket(clat_ns / 1000)]++;
	} else {
		j->lat_m[lat_bucket(clat_ns / 1000000)]++;
	}
}

unsigned fiostat_map_index(unsigned n)
{
	unsigned i = 0;

	if (n == 0) {
		return 0;
	}
	/* 1-4, 5-8, 9-16, 17-32, 33-64, more */
	for (unsigned top = 4; i < 5 && n > top; top *= 2) {
		i++;
	}
	return i + 1;
}

unsigned fiostat_depth_index(unsigned depth)
{
	unsigned i = 0;

	/* 1, 2-3, 4-7, 8-15, 16-31, 32-63, 64 and more */
	while (i < FIOSTAT_MAP_NR - 1 && depth >= (2u << i)) {
		i++;
	}
	return i;
}

void fiostat_mark_submit(struct fiostat_job *j, unsigned n, unsigned depth)
{
	j->io_u_submit[fiostat_map_index(n)]++;
	j->total_submit++;
	j->io_u_map[fiostat_depth_index(depth)] += n;
}

void fiostat_mark_complete(struct fiostat_job *j, unsigned n)
{
	j->io_u_complete[fiostat_map_index(n)]++;
	j->total_complete++;
}

bool fiostat_interval_end(struct fiostat_job *j, uint64_t now_ns, uint64_t *ret_msec)
{
	uint64_t msec;

	if (now_ns < j->interval_ns) {
		return false;
	}
	msec = (now_ns - j->interval_ns) / NSEC_PER_MSEC;
	if (msec < FIOSTAT_AVG_MSEC && FIOSTAT_AVG_MSEC - msec > FIOSTAT_SLACK_MSEC) {
		return false;
	}
	j->interval_ns = now_ns;
	*ret_msec = msec;
	return true;
}

void fiostat_dir_sample(struct fiostat_dir *d, uint64_t bytes, uint64_t ios, uint64_t msec)
{
	uint64_t db = bytes - d->sampled_bytes, di = ios - d->sampled_ios;

	if (db == 0) {
		return;
	}
	fiostat_stat_add(&d->bw, msec ? db * 1000 / msec / 1024 : 0);
	fiostat_stat_add(&d->iops, msec ? di * 1000 / msec : 0);
	d->sampled_bytes = bytes;
	d->sampled_ios = ios;
}

void fiostat_dir_merge(struct fiostat_dir *dst, const struct fiostat_dir *src)
{
	fiostat_stat_merge(&dst->slat, &src->slat);
	fiostat_stat_merge(&dst->clat, &src->clat);
	fiostat_stat_merge(&dst->lat, &src->lat);
	fiostat_stat_sum(&dst->bw, &src->bw);
	fiostat_stat_sum(&dst->iops, &src->iops);
}

static void add_map(uint64_t *dst, const uint64_t *src, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		dst[i] += src[i];
	}
}

void fiostat_job_merge(struct fiostat_job *dst, const struct fiostat_job *src)
{
	add_map(dst->io_u_map, src->io_u_map, FIOSTAT_MAP_NR);
	add_map(dst->io_u_submit, src->io_u_submit, FIOSTAT_MAP_NR);
	add_map(dst->io_u_complete, src->io_u_complete, FIOSTAT_MAP_NR);
	add_map(dst->lat_n, src->lat_n, FIOSTAT_LAT_N_NR);
	add_map(dst->lat_u, src->lat_u, FIOSTAT_LAT_U_NR);
	add_map(dst->lat_m, src->lat_m, FIOSTAT_LAT_M_NR);
	dst->total_submit += src->total_submit;
	dst->total_complete += src->total_complete;
	dst->usr_usec += src->usr_usec;
	dst->sys_usec += src->sys_usec;
	dst->ctx += src->ctx;
	dst->majf += src->majf;
	dst->minf += src->minf;
	dst->run_msec += src->run_msec;
	dst->members += src->members ? src->members : 1;
}

void fiostat_calc_dist(const uint64_t *map, uint64_t total, double ret[FIOSTAT_MAP_NR])
{
	for (unsigned i = 0; i < FIOSTAT_MAP_NR; i++) {
		ret[i] = total ? (double)map[i] / (double)total * 100.0 : 0.0;
		if (total && map[i] && ret[i] < 0.1) {
			ret[i] = 0.1;
		}
	}
}

void fiostat_calc_lat(const uint64_t *src, unsigned nr, uint64_t total, double *ret)
{
	for (unsigned i = 0; i < nr; i++) {
		ret[i] = total ? (double)src[i] / (double)total * 100.0 : 0.0;
		if (total && src[i] && ret[i] < 0.01) {
			ret[i] = 0.01;
		}
	}
}
