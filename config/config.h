/* The parsed, validated configuration: an immutable value built once by
 * config_load_*(); nothing reads the file afterwards. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device_limits.h"
#include "macro.h"

#define CONFIG_DEFAULT_PATH	       "/etc/iopsd/iopsd.conf"
#define CONFIG_DEFAULT_LISTEN	       "127.0.0.1:9477"
#define CONFIG_DEFAULT_STATE_DIRECTORY "/var/lib/iopsd"
#define CONFIG_MAX_PROBES	       64
#define CONFIG_MAX_DEVICES	       256
#define CONFIG_MAX_ERRORS	       64
/* What one sample of one device may cost in the history (a tag and its
 * floats; history.c checks that its records fit), to size it against
 * max_history_memory. */
#define CONFIG_HISTORY_BYTES_PER_SAMPLE 64
#define EX_CONFIG_STATUS		78

enum probe_rw {
	PROBE_RW_READ,	/* sequential read */
	PROBE_RW_WRITE, /* sequential write */
	PROBE_RW_RANDREAD,
	PROBE_RW_RANDWRITE,
	PROBE_RW_RW,	  /* sequential mixed, rwmixread */
	PROBE_RW_RANDRW,  /* random mixed, rwmixread */
	PROBE_RW_REWRITE, /* sequential rewrite of the laid-out file (sysbench seqrewr) */
	_PROBE_RW_MAX,
};

enum probe_engine {
	PROBE_ENGINE_LIBAIO,
	PROBE_ENGINE_SYNC,  /* run as libaio at iodepth 1 */
	PROBE_ENGINE_PSYNC, /* run as libaio at iodepth 1 */
	PROBE_ENGINE_IO_URING,
	_PROBE_ENGINE_MAX,
};

const char *probe_rw_to_string(enum probe_rw rw);
int probe_rw_from_string(const char *s);
const char *probe_engine_to_string(enum probe_engine e);
/* True when the mode issues reads / writes at all. */
bool probe_rw_reads(enum probe_rw rw);
bool probe_rw_writes(enum probe_rw rw);
bool probe_rw_is_random(enum probe_rw rw);

/* The I/O sizes of one direction: fixed (min == max), a range (fio's
 * bsrange: multiples of min up to max) or a weighted list (fio's bssplit). */
#define PROBE_BSSPLIT_MAX 16
struct probe_bs {
	uint64_t min, max; /* 0: not set, use probe_config.bs */
	unsigned n_split;
	struct {
		uint64_t bs;
		unsigned pct; /* the percentages add up to 100 */
	} split[PROBE_BSSPLIT_MAX];
};

enum {
	PROBE_DIR_READ,
	PROBE_DIR_WRITE,
	_PROBE_DIR_MAX,
};

/* fio's random_distribution: which offsets a random job picks. */
enum probe_dist_type {
	PROBE_DIST_RANDOM, /* uniform (fio's default) */
	PROBE_DIST_ZIPF,
	PROBE_DIST_PARETO,
	PROBE_DIST_NORMAL,
	PROBE_DIST_ZONED,     /* zones in percent of the region */
	PROBE_DIST_ZONED_ABS, /* zones in bytes */
	_PROBE_DIST_MAX,
};
#define PROBE_DIST_ZONES_MAX 64
struct probe_dist {
	enum probe_dist_type type;
	double param;  /* zipf's theta, pareto's h, normal's deviation in percent */
	double center; /* zipf, pareto, normal: 0..1 where the hot spot is, -1: random */
	unsigned n_zones;
	struct {
		unsigned access_pct; /* share of the I/Os, the zones' add up to 100 */
		uint64_t size;	     /* zoned: percent of the region; zoned_abs: bytes */
	} zones[PROBE_DIST_ZONES_MAX];
};

/* fio's workload keys beyond the I/O pattern: pacing, pauses, the content
 * of writes and I/O priorities (config/fio.h: fio_parse_workload()). */
#define PROBE_PATTERN_MAX 512
struct probe_workload {
	bool is_poisson;		    /* rate_process=poisson */
	uint64_t thinktime_usec;	    /* pause after each thinktime_blocks I/Os */
	uint64_t thinktime_spin_usec;	    /* of which spent spinning on the CPU */
	unsigned thinktime_blocks;	    /* 0: 1 */
	bool is_thinktime_issue;	    /* thinktime_blocks_type=issue (else complete) */
	uint64_t thinktime_iotime_usec;	    /* pause only after this much I/O time */
	uint8_t pattern[PROBE_PATTERN_MAX]; /* buffer_pattern */
	unsigned pattern_len;		    /* 0: none */
	unsigned compress_pct;		    /* buffer_compress_percentage */
	uint64_t compress_chunk;	    /* buffer_compress_chunk, 0: 512 */
	unsigned dedupe_pct;		    /* dedupe_percentage */
	bool is_dedupe_working_set;	    /* dedupe_mode=working_set (else repeat) */
	unsigned dedupe_ws_pct;		    /* dedupe_working_set_percentage, 0: 5 */
	bool is_dedupe_global;		    /* dedupe_global */
	unsigned dedupe_job_base;	    /* fio's thread number of the first job, less one */
	unsigned dedupe_jobs;		    /* the jobs of the file, all probes' */
	unsigned prioclass, prio;	    /* ioprio of the job's I/O, when has_*: */
	bool has_prioclass, has_prio;
	unsigned cmdprio_pct[_PROBE_DIR_MAX]; /* cmdprio_percentage */
	unsigned cmdprio_class[_PROBE_DIR_MAX], cmdprio[_PROBE_DIR_MAX];
	bool has_cmdprio_class[_PROBE_DIR_MAX], has_cmdprio[_PROBE_DIR_MAX];
	struct {
		uint64_t bs;
		unsigned pct;	   /* of the I/Os of this size */
		unsigned cls, lvl; /* when has_prio, else cmdprio_class/cmdprio's */
		bool has_prio;
	} cmdprio_split[_PROBE_DIR_MAX][PROBE_BSSPLIT_MAX]; /* cmdprio_bssplit */
	unsigned n_cmdprio_split[_PROBE_DIR_MAX];
	char wait_for[128]; /* --once: start after the job of this name ends, "" none */
	unsigned flow;	    /* weight in its flow_id's share of the I/Os, 0: none */
	unsigned flow_id;
	uint64_t flow_sleep_usec;		 /* a held job's pause */
	bool has_ss;				 /* steadystate= (ss=) */
	bool is_ss_iops, is_ss_slope, is_ss_pct; /* iops or bw; slope or mean deviation; a percent */
	double ss_limit;
	uint64_t ss_dur_usec, ss_ramp_usec; /* ss_dur (1 to 300 s), ss_ramp */
	uint64_t latency_target_usec;	    /* find the deepest queue that meets it, 0: none */
	uint64_t latency_window_usec;	    /* each depth's trial */
	double latency_percentile;	    /* of the window's I/Os within target, 0: 100 */
	bool is_latency_run;		    /* latency_run: keep adjusting, not stop at the depth */
};

/* Where a probe's budget keys and interval were set (0: not given; a key
 * inherited from [global] has the [global] line), for the fitting notices. */
struct probe_key_lines {
	unsigned runtime, time_based, loops, number_ios, ramp_time, startdelay, interval;
};

struct probe_config {
	char *name;
	unsigned line; /* line of the [section] header */
	enum probe_rw rw;
	enum probe_engine ioengine;
	uint64_t bs;				/* bytes, 512..16 MiB, multiple of 512: the largest I/O */
	uint64_t bs_rw[_PROBE_DIR_MAX];		/* bs= of reads and writes (fio's "4k,8k") */
	struct probe_bs bsdir[_PROBE_DIR_MAX];	/* the sizes each direction uses */
	struct probe_dist dist[_PROBE_DIR_MAX]; /* random offsets of each direction */
	int64_t rw_seq_add; /* rw=read:8k: bytes skipped after each I/O (< 0: backwards) */
	unsigned rw_seq_nr; /* rw=randread:8: I/Os per new random offset, 0: each */
	struct probe_workload wl;
	uint64_t blockalign;		     /* random offsets' alignment, 0: the smallest I/O */
	uint64_t size;			     /* region of each file, or of a raw device (0: whole device) */
	uint64_t filesize;		     /* size of each probe file, 0: from size */
	unsigned nrfiles;		     /* probe files, 1.. (max_probe_memory bounds them) */
	uint64_t offset;		     /* start of the I/O region in each file or the device */
	uint64_t offset_increment;	     /* job N starts at offset + N * this (0: see probe_job_region) */
	uint64_t io_size;		     /* --once: bytes per job and loop when not time_based, 0: size */
	char *directory;		     /* file target: DIRECTORY/.iopsd/NAME.dat */
	char *filename;			     /* raw block device target, read-only */
	unsigned iodepth;		     /* 1..256 */
	unsigned iodepth_batch;		     /* I/Os gathered before a submit, 0: all that are ready */
	unsigned iodepth_batch_complete_min; /* completions waited for, 0: 1 */
	unsigned iodepth_batch_complete_max; /* completions reaped at once, 0: iodepth */
	unsigned numjobs;		     /* 1..64 */
	unsigned rwmixread;		     /* percent of reads in rw/randrw, 0..100 */
	unsigned fsync;			     /* fsync after every N writes, 0 never */
	bool end_fsync;
	uint64_t runtime_usec;	  /* budget of one run; 0 when number_ios is set */
	uint64_t number_ios;	  /* ops per run and job; 0 when runtime is set */
	bool time_based;	  /* --once: run for runtime, not until io_size is done */
	unsigned loops;		  /* --once: passes over io_size, 1.. */
	uint64_t ramp_usec;	  /* run this long before measuring (fio's ramp_time) */
	uint64_t startdelay_usec; /* --once: start this long after the group */
	bool stonewall;		  /* --once: wait for the jobs before this one */
	uint64_t rate_iops;	  /* cap per job (fio's meaning), 0 unlimited */
	uint64_t rate_bytes;	  /* bytes per second per job (fio's rate), 0 unlimited */
	uint64_t interval_usec;	  /* time between run starts */
	bool ceiling;		  /* ceiling probe: short QD burst when the device is quiet */
	bool allow_overlap;	  /* may run concurrently with probes on the same device */
	bool is_scratch;	  /* --once: no target was named, the job runs in the working
				   * directory and its probe files go when the run ends */
	struct probe_key_lines lines;
};

/* [instance]: limits of the machine over all its volumes together, as EC2
 * publishes them per instance type (EBS IOPS and bandwidth). */
struct instance_config {
	bool is_declared; /* the file has an [instance] section */
	unsigned line;
	uint64_t iops_limit;	   /* 0 = not declared */
	uint64_t throughput_limit; /* bytes/s, 0 = not declared */
	char *devices;		   /* POSIX extended regex of the volumes that count; NULL: every
				    * whole disk (not partitions, md, dm or loop devices) */
	double ceiling_threshold;  /* ratio counted as "at the limit"; 0: [global]'s */
};

struct device_config {
	char *name; /* device name ("nvme1n1") or mount point ("/data") */
	unsigned line;
	uint64_t iops_limit;	   /* 0 = not declared */
	uint64_t throughput_limit; /* bytes/s, 0 = not declared */
	uint64_t burst_iops;	   /* gp2-style bucket: burst rate, 0 = no model */
	uint64_t burst_credits;	   /* bucket size in I/O credits */
	double credit_rate;	   /* credits earned per second (the baseline IOPS) */
	/* a bucket of throughput credits (st1, sc1: volume_type='s, no keys of
	 * its own): bytes/s while credits last, bytes in all; throughput_limit
	 * (the baseline) refills it */
	uint64_t burst_throughput, burst_throughput_credits;
	double ceiling_threshold;	 /* ratio counted as "at the limit" */
	struct device_provider provider; /* volume_type= and the cloud keys (device_limits.h) */
};

/* The section's declared keys as device_limits_resolve() takes them. */
struct device_declared device_config_declared(const struct device_config *dc);

struct config_error {
	char *file;
	unsigned line; /* 0 when the error is not tied to a line */
	char *message;
};

struct config {
	char *path; /* file it came from, or "(built-in default)" */
	bool is_builtin;

	char *listen_address; /* "host:port", "[::1]:port", ":port" */
	char *state_directory;
	char *web_config_file;
	int log_level;		      /* LOG_*, or -1 when not set */
	uint64_t probe_interval_usec; /* default interval of probes */
	uint64_t sample_interval_usec;
	uint64_t history_usec; /* length of the in-memory history */
	char *device_include;  /* POSIX extended regex on device names, or NULL */
	char *device_exclude;
	double ceiling_threshold;
	unsigned max_connections;
	unsigned max_connections_per_ip;
	uint64_t connection_timeout_usec;
	unsigned max_devices;
	uint64_t max_history_memory; /* bytes: one device's history must fit */
	uint64_t max_probe_memory;   /* bytes: I/O buffers and per-file state summed over probes */
	uint64_t max_history_points; /* points in one /api/v1/history answer */

	struct probe_config *probes;
	size_t n_probes;
	struct device_config *devices;
	size_t n_devices;
	struct instance_config instance;

	/* What loading (and fitting) did that a user should hear about: fio keys
	 * ignored, a filename= turned into a probe file, budget keys fitted.
	 * "FILE:LINE: text" lines, in file order. */
	struct config_error *notices;
	size_t n_notices;
};

struct config_errors {
	struct config_error items[CONFIG_MAX_ERRORS];
	size_t n;
	size_t n_dropped;
};

/* Load and validate `path`. On success returns 0 and a config the caller
 * owns. On failure returns -EINVAL (or -errno when the file cannot be read)
 * and fills `errs` with FILE:LINE messages; *ret is untouched. */
int config_load_file(const char *path, struct config_errors *errs, struct config **ret);

/* Same, from text in memory; `name` is used as FILE in messages. */
int config_load_string(const char *name, const char *text, struct config_errors *errs, struct config **ret);

/* --once: a job file read as fio reads it, in `job_directory` (the
 * absolute working directory): a job with no directory= or filename= runs
 * there (is_scratch, with a notice), and a relative directory= or filename=
 * is taken from there. The daemon's loads above refuse both. */
int config_load_job_file(const char *path, const char *job_directory, struct config_errors *errs,
			 struct config **ret);
int config_load_job_string(const char *name, const char *text, const char *job_directory,
			   struct config_errors *errs, struct config **ret);

/* What a probe's files cost in memory (a descriptor per file, a read and a
 * write position per file per job): counted against max_probe_memory. */
uint64_t config_probe_file_bytes(const struct probe_config *pc);

/* The embedded default: every device sampled, one gentle 4k random-read
 * probe on the state directory's filesystem. */
int config_load_builtin(struct config **ret);
extern const char config_builtin_text[];

struct config *config_free(struct config *c);

/* Append a notice "c->path:LINE: ..." to c->notices (line 0: none). Returns
 * 0 or -ENOMEM. */
int config_add_notice(struct config *c, unsigned line, const char *fmt, ...) _printf_(3, 4);
void config_errors_clear(struct config_errors *errs);

/* Find a [device NAME] section by name; NULL when none. */
const struct device_config *config_find_device(const struct config *c, const char *name);

/* Whether `stem` names one of pc's probe files in its directory's .iopsd/
 * (STEM.dat: NAME, or NAME.K for K < nrfiles). */
bool config_probe_owns_file(const struct probe_config *pc, const char *stem);

/* One-line human summary, e.g. "3 probes, 1 device limit, listen 127.0.0.1:9477". */
int config_summary(const struct config *c, char *buf, size_t len);

static inline void config_freep(struct config **c)
{
	config_free(*c);
}
#define _cleanup_config_ __attribute__((cleanup(config_freep)))
