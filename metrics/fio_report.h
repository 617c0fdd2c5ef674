/* What `iopsd --once` reports, in fio's terms: the jobs' results with the
 * group and disk figures fio derives from them, and the helpers fio's
 * three formats share (num2str, percentiles, the histogram's bins). The
 * renderers are fio_normal.h, fio_terse.h and fio_json.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "diskstats.h"
#include "histogram.h"
#include "probe.h"

/* fio's directions: read, write, trim (iopsd never trims). */
enum fio_ddir {
	FIO_DDIR_READ,
	FIO_DDIR_WRITE,
	FIO_DDIR_TRIM,
	_FIO_DDIR_MAX,
};
const char *fio_ddir_name(enum fio_ddir d);

/* One job as fio prints it: an iopsd probe, its numjobs reported together
 * as fio's group_reporting does. */
struct fio_job {
	const struct probe_config *pc;
	const struct probe_result *res;
	const char *target; /* DIRECTORY or FILENAME */
	unsigned groupid;
	int pid;
};

/* One device of fio's "Disk stats": the /proc/diskstats deltas over the
 * run, and for md/dm its members' aggregate (slavecount 0 otherwise). */
struct fio_disk {
	char name[DISKSTATS_NAME_MAX];
	uint64_t ios[2], merges[2], ticks[2], io_ticks, time_in_queue;
	uint64_t msec; /* the window */
	unsigned slavecount;
	uint64_t agg_ios[2], agg_merges[2], agg_ticks[2], agg_time_in_queue;
	double agg_max_util;
};

struct fio_report {
	const char *version;	/* "iopsd-X.Y" */
	uint64_t realtime_usec; /* the report's time */
	uint64_t elapsed_sec;	/* since the run began */
	bool is_json_plus;	/* json+: with the clat bins */
	const struct fio_job *jobs;
	size_t n_jobs;
	const struct fio_disk *disks;
	size_t n_disks;
};

/* fio's per-group figures (struct group_run_stats), bytes and ms. */
struct fio_group {
	unsigned groupid;
	uint64_t iobytes[_FIO_DDIR_MAX], agg[_FIO_DDIR_MAX];
	uint64_t min_bw[_FIO_DDIR_MAX], max_bw[_FIO_DDIR_MAX];
	uint64_t min_run[_FIO_DDIR_MAX], max_run[_FIO_DDIR_MAX];
};
void fio_group_stats(const struct fio_report *r, unsigned groupid, struct fio_group *ret);

/* The op result behind a direction, NULL for trim. */
const struct probe_op_result *fio_job_dir(const struct fio_job *j, enum fio_ddir d);
/* fio's runtime[ddir] in ms: the run's, when the direction did I/O. */
uint64_t fio_job_runtime_msec(const struct fio_job *j, enum fio_ddir d);
/* fio's usr_cpu and sys_cpu, percent of the jobs' run time. */
void fio_job_cpu(const struct fio_job *j, double *ret_usr, double *ret_sys);
/* latency_target's depth found (else iodepth) and percentile (else 100). */
unsigned fio_job_latency_depth(const struct fio_job *j);
double fio_job_latency_percentile(const struct fio_job *j);
/* Number of data I/Os (fio's ddir_rw_sum(total_io_u)). */
uint64_t fio_job_total_ios(const struct fio_job *j);

/* The value fio gives a bin of its latency histogram (the same layout as
 * iopsd's: 64 buckets per power of two), the bin's mean. */
uint64_t fio_plat_idx_to_val(size_t idx);
/* fio's calc_clat_percentiles() over iopsd's histogram with fio's default
 * list: the value of the first bin at which each percentile is reached.
 * Fills ret (HISTOGRAM_N_FIO_PERCENTILES) and returns the count, 0 when
 * the histogram is empty. */
size_t fio_percentiles(const struct histogram *h, uint64_t ret[HISTOGRAM_N_FIO_PERCENTILES]);

enum fio_n2s_unit {
	FIO_N2S_NONE,
	FIO_N2S_BYTE,
	FIO_N2S_BYTEPERSEC,
};
/* fio's num2str(): `num` (in units of `base`) shortened to at most
 * `maxlen` digits with a k/M/G (pow2: Ki/Mi/Gi) prefix, rounded as fio
 * rounds. Writes into buf (at least 32 bytes) and returns it. */
char *fio_num2str(uint64_t num, int maxlen, int base, bool pow2, enum fio_n2s_unit unit, char *buf,
		  size_t len);

/* fio's util figures: 100 * busy / window, capped at 100. */
double fio_disk_util(const struct fio_disk *d);
/* Fill a disk from two diskstats samples `msec` apart. */
void fio_disk_from_raw(const struct diskstats_raw *a, const struct diskstats_raw *b, uint64_t msec,
		       struct fio_disk *ret);
/* Add a member's figures to an md/dm disk's aggregate (fio's
 * aggregate_slaves_stats()). */
void fio_disk_add_member(struct fio_disk *master, const struct fio_disk *member);
