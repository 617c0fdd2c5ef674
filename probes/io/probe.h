/* The probe engine: one budgeted run of a probe (a small fio job) with
 * libaio or io_uring and O_DIRECT, and the results it produces. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "fiostat.h"
#include "steady.h"
#include "histogram.h"
#include "macro.h"

enum probe_op {
	PROBE_OP_READ,
	PROBE_OP_WRITE,
	PROBE_OP_FSYNC,
	_PROBE_OP_MAX,
};

enum probe_error_reason {
	PROBE_ERR_EIO,
	PROBE_ERR_ENOSPC,
	PROBE_ERR_EROFS,
	PROBE_ERR_EACCES,
	PROBE_ERR_ENOENT,
	PROBE_ERR_EINVAL,
	PROBE_ERR_TIMEOUT,
	PROBE_ERR_OTHER,
	_PROBE_ERR_MAX,
};

const char *probe_op_to_string(enum probe_op op);
const char *probe_error_reason_to_string(enum probe_error_reason r);
/* Map a positive or negative errno to a reason. */
enum probe_error_reason probe_error_reason_from_errno(int err);

struct probe_op_result {
	uint64_t ops;
	uint64_t bytes;
	uint64_t errors[_PROBE_ERR_MAX];
	double iops;		/* ops / run time */
	double bw_bytes;	/* bytes / run time */
	struct histogram lat;	/* completion latency, submit to reap */
	struct fiostat_dir fio; /* slat, lat, interval samples (read and write) */
};

/* The outcome of one run of one probe. */
struct probe_result {
	bool success;	   /* ran to its budget with no error */
	int error;	   /* first -errno, 0 when none */
	char message[256]; /* human explanation of `error`, "" when none */
	uint64_t start_realtime_usec;
	uint64_t runtime_usec;	     /* measured wall time of the I/O phase */
	uint64_t end_monotonic_usec; /* CLOCK_MONOTONIC at its last completion, 0 if it never started */
	uint64_t layout_usec;	     /* time spent laying out the probe file, 0 if reused */
	dev_t directory_dev;	     /* the filesystem DIRECTORY was on, 0 when not opened */
	dev_t target_dev;	     /* where the target is: its filesystem (st_dev), or the raw
				      * device (st_rdev); 0 when not opened */
	struct probe_op_result op[_PROBE_OP_MAX];
	struct fiostat_job fio; /* depths, latency buckets, CPU: the jobs' sum */
	struct steady ss;	/* ss=: the window and whether it was attained */
	bool has_swept;		/* probe_options.keep: the stray files were looked for */
	unsigned n_strays;	/* ... and this many removed */
};

/* Zero *res, with empty histograms. */
void probe_result_init(struct probe_result *res);

/* The result of a run that failed with `err` (-errno) before or without its
 * I/O, built in one place: res->error, and, when `is_counted`, one error of
 * err's reason on the main op of `rw` (reads for a read or mixed probe);
 * the message from fmt unless fmt is NULL (then res->message stays). The
 * rest of *res is left as it is (probe_result_init() it first). */
void probe_result_fail(struct probe_result *res, enum probe_rw rw, int err, bool is_counted, const char *fmt,
		       ...) _printf_(5, 6);

/* Add the counts of `src` (ops, bytes, errors, latency histogram) to `dst`:
 * one job's into a run's, or a run's into a probe's totals. The rates
 * (iops, bw_bytes) are the caller's to set. */
void probe_op_result_add(struct probe_op_result *dst, const struct probe_op_result *src);

/* Run `pc` once. Blocks the calling thread for at most ~2x the probe's
 * runtime (a run that takes longer is cancelled and reported as a timeout);
 * to stop a run early, use probe_start() and probe_cancel(). Always fills
 * *ret (errors are inside it); returns 0, or -errno only for failures to
 * even start (ENOMEM). */
int probe_run(const struct probe_config *pc, struct probe_result *ret);

/* Whether this host lets `engine` run (io_uring: kernel.io_uring_disabled,
 * a seccomp filter, an old kernel): 0, or -errno with the reason in msg.
 * A probe never falls back to another engine: this says in advance what
 * its runs would report. */
int probe_engine_check(enum probe_engine engine, char *msg, size_t len);

/* fio's flow: the jobs sharing a flow_id keep their I/Os in proportion to
 * their weights. A run without one given (the daemon) makes its own for its
 * jobs. */
struct probe_flow {
	unsigned id;
	uint64_t total_weight; /* the weights of every job in it */
	uint64_t counter;      /* atomic: the I/Os its jobs have issued */
};

/* What a run needs beyond its configuration. */
struct probe_options {
	struct probe_flow *flow; /* the probe's flow_id's, shared with other runs; NULL: its own */
	const char *sysfs;	 /* sysfs mount point; NULL: "/sys" */
	uint64_t seed;		 /* offsets and data; 0: from getrandom() */
	dev_t directory_dev;	 /* not 0: DIRECTORY must still be on this filesystem
				  * (-EXDEV otherwise), see probefile_open_directory() */
	uint64_t timeout_usec;	 /* not 0: the I/O phase's limit instead of probe_timeout_usec() */
	/* the logical block size the topology read for device block_size_dev:
	 * taken when the target is on that device; otherwise (0, another
	 * device, an anonymous filesystem) the run reads sysfs itself */
	dev_t block_size_dev;
	unsigned logical_block_size;
	/* not NULL: first, the run removes from DIRECTORY/.iopsd the probe
	 * files that none of these n_keep probes owns (config_probe_owns_file():
	 * those of probes removed or renamed since the last start), on its own
	 * thread and within the open's budget, as the directory's own open: a
	 * hung filesystem holds the run, never its caller. Names copied. */
	const struct probe_config *const *keep;
	size_t n_keep;
};

/* A run in progress. Its I/O happens on threads of its own; the handle only
 * waits for them, so a stuck device never blocks the caller past the run's
 * deadline (the threads finish and free themselves when the kernel lets
 * them). */
struct probe_run;

/* Start running `pc` (copied: the config may be freed at once). `o` may be
 * NULL. Returns 0 and a handle, or -errno (ENOMEM, EAGAIN: no threads). */
int probe_start(const struct probe_config *pc, const struct probe_options *o, struct probe_run **ret);
/* Ask the run to stop now. Thread-safe; may be called any number of times
 * while the handle is alive. */
void probe_cancel(struct probe_run *run);
/* Wait until the run ends, is cancelled, or exceeds its deadline (2x runtime
 * for the I/O, a size-based budget for the probe file's layout), and fill
 * *ret. A cancelled run reports -ECANCELED. */
void probe_wait(struct probe_run *run, struct probe_result *ret);
/* Whether threads of the run are still alive (a run that timed out on a
 * stuck device keeps them until the kernel completes its I/O). */
bool probe_run_has_threads(struct probe_run *run);
/* Whether probe_wait() reported the run without its threads (a timeout, or
 * a cancel they did not answer within the grace) and some of them are still
 * in the kernel: a stuck run, whatever its error. */
bool probe_run_is_stuck(struct probe_run *run);
/* Release the handle (the run's threads keep what they still use). */
struct probe_run *probe_run_free(struct probe_run *run);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct probe_run *, probe_run_free);

/* Wait up to timeout_usec for the threads of every run to finish, and join
 * them: before the process exits (or --once's next group starts), so that
 * none is still tearing down its engine or freeing its buffers. Not for
 * those of a run that left I/O in the kernel (a timeout with I/O in flight):
 * the device decides when they end. False when some others are still
 * running at the timeout. */
bool probe_threads_wait(uint64_t timeout_usec);
/* What the daemon's exit and --once give them: I/O on a healthy device is
 * in flight for milliseconds. */
#define PROBE_THREADS_WAIT_USEC (3 * USEC_PER_SEC)

/* The logical block size of the device `dev` that a run opened its target
 * on (O_DIRECT alignment): its own queue's, or the whole disk's for a
 * partition (which has no queue); 512 when sysfs does not know the device
 * (tmpfs, btrfs, overlayfs have anonymous devices). Which device a probe is
 * on is the topology's question (registry.h: struct probe_identity). */
unsigned probe_logical_block_size(const char *sysfs, dev_t dev);

/* Pure pieces of the engine, exported for unit tests. ------------------- */

/* splitmix64: the engine's PRNG (offsets, rwmix, data). */
uint64_t probe_rng_next(uint64_t *state);
/* A uniform integer in [0, n) without a division (Lemire's multiply-shift;
 * the bias is below n / 2^64). */
uint64_t probe_rng_below(uint64_t *rng, uint64_t n);
/* fio's rwmixread: true (a read) with probability rwmixread/100. */
bool probe_rwmix_is_read(uint64_t *rng, unsigned rwmixread);
/* A uniformly random offset in [start, start + len), aligned to bs from
 * `start` (len >= bs; start is aligned by the caller). */
uint64_t probe_random_offset(uint64_t *rng, uint64_t start, uint64_t len, uint64_t bs);
/* The next sequential offset from *cursor (relative to start), wrapping at
 * the end of the region; advances *cursor by bs. */
uint64_t probe_sequential_offset(uint64_t *cursor, uint64_t start, uint64_t len, uint64_t bs);
/* The part of a `size`-byte target that job `job` of `numjobs` uses:
 * sequential modes give each job its own contiguous region (fio's
 * offset_increment), random and rewrite modes share the whole target. Both
 * are multiples of bs; *ret_len is 0 when size < bs * numjobs. */
void probe_job_region(enum probe_rw rw, uint64_t size, uint64_t bs, unsigned numjobs, unsigned job,
		      uint64_t *ret_start, uint64_t *ret_len);
/* Absolute time (ns) at which op number `n` of job `job` may be submitted
 * so that all `numjobs` jobs together issue `rate_iops` ops per second,
 * paced from `start_ns` without drift; jobs are interleaved evenly. */
uint64_t probe_rate_due_ns(uint64_t start_ns, uint64_t n, unsigned job, unsigned numjobs, uint64_t rate_iops);
/* How long a run's I/O phase may take before it is cancelled as a timeout:
 * 2x runtime plus ramp_time, or the interval for number_ios probes. */
uint64_t probe_timeout_usec(const struct probe_config *pc);
/* Parse a sysfs queue/logical_block_size value (a power of two, 512..64k). */
int probe_parse_block_size(const char *s, unsigned *ret);
