/* The probe engine's internals, shared by probe.c (the public API), run.c
 * (a run and its run thread), job.c (the job threads), cpuwatch.c (a pinned
 * job's CPU watcher) and threads.c (the thread reaper). Not for use outside
 * probes/io/. */
#pragma once

#include "probe.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "engine.h"
#include "iogen.h"
#include "iogen_buf.h"
#include "macro.h"

/* After a cancel or a missed deadline, how long probe_wait() still waits
 * for the threads to report. */
#define GRACE_NS (1000 * NSEC_PER_MSEC)
/* Budget for opening the target (its directory, .iopsd and an existing
 * probe file, or the device) and creating the jobs: a filesystem that does
 * not answer an open is a timeout after this long, not after a layout's
 * budget. */
#define OPEN_BUDGET_NS (10 * NSEC_PER_SEC)
/* Budget for a run that lays out its file, and the slowest layout rate
 * iopsd waits for. */
#define PREPARE_BUDGET_NS	 (30 * NSEC_PER_SEC)
#define LAYOUT_MIN_BYTES_PER_SEC (1ULL << 20)
#define BUF_ALIGN		 4096
/* The run and job threads keep their buffers on the heap and call nothing
 * deep: a quarter of glibc's default 8 MiB stack is ample, also under
 * the sanitizers. */
#define THREAD_STACK_SIZE (256 * 1024)

enum run_phase {
	PHASE_PREPARE,
	PHASE_IO,
	PHASE_DONE,
};

struct job {
	struct run *run;
	unsigned index;
	const struct engine_ops *ops;
	struct engine *eng;
	unsigned depth;
	uint64_t run_t0_ns; /* when the job began, or latency_target's last window */
	void *bufs;
	struct slot *slots;
	struct slot **free_slots;
	unsigned n_free;
	struct slot **batch;
	unsigned n_batch;
	struct engine_event *events;
	struct iogen_job gen;
	uint64_t issued_bytes;	  /* for rate= */
	uint64_t measured_bytes;  /* issued after ramp_time, for io_size * loops */
	unsigned n_reaped;	  /* completions since the last queueing, for iodepth_batch_complete_min */
	unsigned last_write_file; /* the file fsync=N flushes */
	int setup_error;
	int error;
	char message[sizeof(((struct probe_result *)0)->message)];
	uint64_t last_ns;
	struct probe_op_result op[_PROBE_OP_MAX];
	struct fiostat_job fio;	  /* fio's side figures (fiostat.h) */
	struct iogen_buf_job buf; /* dedupe's repeats */
	uint64_t poisson_due_ns;  /* rate_process=poisson: when the next I/O may go */
	uint64_t think_ns;	  /* thinktime: when the last pause ended */
	uint64_t think_issued;	  /* ... I/Os issued and completed in all */
	uint64_t think_completed;
	uint64_t think_last;	    /* ... the count when the last pause fell due */
	uint64_t think_mark;	    /* ... and when this one did */
	uint64_t think_issued_last; /* ... I/Os issued when the last pause ended */
	bool is_think_due;
	uint64_t flow_counter;	   /* its I/Os in the flow */
	uint64_t ss_ios, ss_bytes; /* atomic: its I/Os for ss= */
	struct {
		unsigned qd, qd_low, qd_high, stable; /* latency_target's search */
		bool is_end_run, is_done;	      /* the depth found: a last window, then the end */
		uint64_t window_ns, window_ios, failed;
	} lat;
	cpu_set_t cpu;	   /* where it runs, if has_cpu (job_cpus(), job_cpu()) */
	cpu_set_t allowed; /* where it may go once let go (job_watch_cpu()) */
	bool has_cpu;
	int schedstat_fd; /* its /proc/thread-self/schedstat while pinned, or -1 */
	uint64_t watch_ns, watch_wait_ns, watch_slices;
	unsigned watch_strikes; /* windows in a row spent waiting */
};

/* A probe whose files in the directory stay (probe_options.keep), copied. */
struct run_keep {
	char *name;
	unsigned nrfiles;
};

struct run {
	unsigned refcount; /* atomic */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; broadcast on every state change */

	/* what the run needs from its probe_config, copied */
	char *name;
	char *directory;
	char *filename;
	char *sysfs;
	enum probe_rw rw;
	uint64_t bs, size, runtime_ns, number_ios, rate_iops, timeout_ns;
	uint64_t ramp_ns, rate_bytes, io_limit;
	unsigned iodepth, numjobs, rwmixread, fsync_every;
	unsigned batch_submit, complete_min, complete_max;
	bool end_fsync;
	uint64_t seed;
	dev_t directory_dev;
	struct run_keep *keep; /* probe_options': NULL, no sweep */
	size_t n_keep;
	dev_t block_size_dev; /* probe_options' */
	unsigned logical_block_size;
	struct probe_config layout_pc; /* the keys iogen and fio_layout() read (no strings) */
	struct iogen gen;
	struct iogen_buf buf;	 /* write content (buffer_pattern, dedupe, compress) */
	struct probe_flow *flow; /* flow=: the shared one, or own_flow */
	struct probe_flow own_flow;
	struct steady ss;	   /* ss=: taken by the job that ticks each second */
	uint64_t ss_next_ns;	   /* atomic: the next tick, 0 before the first */
	uint64_t ss_ios, ss_bytes; /* the jobs' totals at the last tick */
	uint64_t ss_last_ns;	   /* ... and its time */
	bool ss_stop;		   /* atomic: attained, the jobs stop issuing */
	uint64_t lat_measure_ns;   /* atomic: latency_target's last window began, 0: not yet */

	int *fds; /* the probe files (nrfiles), or the raw device */
	unsigned n_fds;
	char target[PATH_MAX];
	const struct engine_ops *ops;
	/* a timerfd every job's engine watches: it fires at the I/O phase's
	 * deadline, or at once on a cancel, and so ends waits that carry no
	 * timeout of their own */
	int wake_fd;

	/* under lock */
	enum run_phase phase;
	bool is_cancelled; /* also read without the lock, atomically */
	bool is_released;  /* jobs may leave the start line: */
	bool go;	   /* ...and run (false: a job could not set up) */
	uint64_t cancel_ns;
	uint64_t prepare_start_ns;
	/* the open's deadline, until a layout starts: then the layout's */
	uint64_t prepare_deadline_ns;
	uint64_t layout_deadline_ns;
	bool is_laying_out;
	uint64_t start_ns;
	unsigned n_ready, n_finished;
	struct probe_result result;

	struct job *jobs;

	/* under threads_lock (Threads, below) */
	unsigned n_threads; /* its run and job threads that have not said done */
	bool is_abandoned;  /* it left I/O in the kernel (run_abandon()) */
};

/* The CPU watcher's window, wait per wakeup and strikes (cpuwatch.c). */
#define WATCH_NS      (50 * NSEC_PER_MSEC)
#define WATCH_WAIT_NS (10 * NSEC_PER_USEC)
#define WATCH_STRIKES 2

/* run.c */
struct run *run_ref(struct run *p);
struct run *run_unref(struct run *p);
bool run_is_cancelled(struct run *r);
void run_cancel_locked(struct run *r);
void *run_main(void *userdata);
int run_new(const struct probe_config *pc, const struct probe_options *o, struct run **ret);

/* threads.c */
int thread_spawn(struct run *r, void *(*fn)(void *), void *arg);
void thread_done(struct run *r);
void run_abandon(struct run *r);
bool run_is_abandoned(struct run *r);

/* job.c */
void *job_main(void *userdata);

/* job_workload.c: fio's workload keys and side figures in a job's loop */
uint16_t job_cmdprio(struct job *j, int d, uint64_t len);
bool job_think_due(struct job *j, uint64_t now);
/* thinktime_spin's spin; returns when the sleep that follows ends (neither
 * past stop_at) */
uint64_t job_think_spin(struct job *j, uint64_t stop_at);
void job_think_done(struct job *j);
bool job_flow_held(const struct job *j, uint64_t now, uint64_t *ret_due);
void job_flow_issued(struct job *j);
int job_set_ioprio(struct job *j);
void job_sample(struct job *j, uint64_t now);
void job_rusage(struct job *j, int sign);
void job_fill_buffer(struct job *j, struct slot *s, uint64_t offset);
void job_ss_count(struct job *j, uint64_t bytes);
void job_ss_tick(struct job *j, uint64_t now);
void job_lat_init(struct job *j, uint64_t now);
unsigned job_lat_depth(const struct job *j);
void job_lat_io(struct job *j, uint64_t lat_ns);
void job_lat_check(struct job *j, uint64_t now);

/* cpuwatch.c */
void job_unwatch(struct job *j);
void job_watch_start(struct job *j, uint64_t now);
void job_watch_cpu(struct job *j, uint64_t now);
