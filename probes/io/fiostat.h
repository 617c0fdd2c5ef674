/* The figures fio reports beside its latency histogram, kept as fio keeps
 * them, so that `iopsd --once` can print what fio prints: running
 * mean/variance stats (slat, lat, per-interval bandwidth and IOPS), the I/O
 * depth, submit and complete distributions, latency buckets, CPU usage. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* fio's default bw_avg_msec and iops_avg_msec, and the slack it allows an
 * interval before taking its sample. */
#define FIOSTAT_AVG_MSEC   500
#define FIOSTAT_SLACK_MSEC 10

/* Depth maps: 7 buckets (fio's io_u_map, io_u_submit, io_u_complete);
 * latency buckets: 10 for ns, 10 for us, 12 for ms (fio's io_u_lat_*). */
#define FIOSTAT_MAP_NR	 7
#define FIOSTAT_LAT_N_NR 10
#define FIOSTAT_LAT_U_NR 10
#define FIOSTAT_LAT_M_NR 12

/* fio's io_stat: min, max, and Welford's mean and sum of squared deltas. */
struct fiostat_stat {
	uint64_t samples;
	uint64_t min, max; /* valid when samples > 0 */
	double mean, S;
};

/* One direction (read or write) of one job or of a merged run. */
struct fiostat_dir {
	struct fiostat_stat slat;	     /* ns: taken from the queue to the kernel */
	struct fiostat_stat clat;	     /* ns: submit to reap, exact (fsync: its time) */
	struct fiostat_stat lat;	     /* ns: slat + clat */
	struct fiostat_stat bw;		     /* KiB/s per FIOSTAT_AVG_MSEC interval */
	struct fiostat_stat iops;	     /* I/Os per second per interval */
	uint64_t sampled_bytes, sampled_ios; /* counted at the last interval */
};

/* What a job (or the jobs of a run together) did besides its I/O. */
struct fiostat_job {
	uint64_t io_u_map[FIOSTAT_MAP_NR];
	uint64_t io_u_submit[FIOSTAT_MAP_NR];
	uint64_t io_u_complete[FIOSTAT_MAP_NR];
	uint64_t total_submit, total_complete;
	uint64_t lat_n[FIOSTAT_LAT_N_NR], lat_u[FIOSTAT_LAT_U_NR], lat_m[FIOSTAT_LAT_M_NR];
	uint64_t usr_usec, sys_usec, ctx, majf, minf; /* getrusage(RUSAGE_THREAD) over the I/O */
	uint64_t run_msec;			      /* the jobs' I/O time, summed (fio's total_run_time) */
	unsigned members;			      /* jobs merged in */
	unsigned latency_depth;			      /* latency_target: the depth found, 0: none */
	uint64_t interval_ns;			      /* CLOCK_MONOTONIC start of the current interval */
};

void fiostat_stat_add(struct fiostat_stat *s, uint64_t v);
/* fio's merge of time-based stats (the parallel variance algorithm). */
void fiostat_stat_merge(struct fiostat_stat *dst, const struct fiostat_stat *src);
/* fio's merge of rate stats under group_reporting: min, max, mean and S
 * are summed, as are the samples. */
void fiostat_stat_sum(struct fiostat_stat *dst, const struct fiostat_stat *src);
/* fio's calc_lat(): false when there are no samples. */
bool fiostat_stat_calc(const struct fiostat_stat *s, uint64_t *ret_min, uint64_t *ret_max, double *ret_mean,
		       double *ret_dev);

/* A completed I/O: its slat and clat (ns), and the latency bucket fio
 * counts it in (from clat, as fio's io_u_mark_latency()). */
void fiostat_record_io(struct fiostat_dir *d, struct fiostat_job *j, uint64_t slat_ns, uint64_t clat_ns);
/* One submit call that gave the kernel `n` I/Os, leaving `depth` in flight. */
void fiostat_mark_submit(struct fiostat_job *j, unsigned n, unsigned depth);
/* One reap call that returned `n` completions. */
void fiostat_mark_complete(struct fiostat_job *j, unsigned n);
/* fio's 7-bucket index for `n` I/Os in one call (0, 1-4, 5-8, ..., >64)
 * and for a depth (1, 2-3, 4-7, ..., >=64). */
unsigned fiostat_map_index(unsigned n);
unsigned fiostat_depth_index(unsigned depth);

/* Whether the current interval has ended at `now_ns` (fio's slack
 * allowed): sets *ret_msec to its length and starts the next one. False
 * before the first interval began (interval_ns in the future). */
bool fiostat_interval_end(struct fiostat_job *j, uint64_t now_ns, uint64_t *ret_msec);
/* The interval's sample of one direction that did `bytes`/`ios` so far: a
 * direction that did nothing in it gets none, as in fio. */
void fiostat_dir_sample(struct fiostat_dir *d, uint64_t bytes, uint64_t ios, uint64_t msec);

/* Merge one job into a run's totals as fio's group_reporting does:
 * slat/clat/lat merged, bw/iops summed, counts added. */
void fiostat_dir_merge(struct fiostat_dir *dst, const struct fiostat_dir *src);
void fiostat_job_merge(struct fiostat_job *dst, const struct fiostat_job *src);

/* fio's stat_calc_dist(): a map as percentages of `total` (a non-empty
 * bucket below 0.1% shows as 0.1%). */
void fiostat_calc_dist(const uint64_t *map, uint64_t total, double ret[FIOSTAT_MAP_NR]);
/* fio's stat_calc_lat(): `nr` buckets as percentages of `total` I/Os (a
 * non-empty one below 0.01% shows as 0.01%). */
void fiostat_calc_lat(const uint64_t *src, unsigned nr, uint64_t total, double *ret);
