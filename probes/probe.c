/* The probe engine. A run has a run thread (opens and lays out the target,
 * starts the jobs, merges their results) and one thread per job, each with
 * its own engine context (libaio or io_uring, engine_*.c), slots and
 * histograms; the caller of probe_wait() only waits on a condition variable
 * with a deadline, so it never blocks longer than the run's budget,
 * whatever the device does. */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "fileio.h"
#include "iogen.h"
#include "iogen_buf.h"
#include "probefile.h"
#include "refcount.h"
#include "timeutil.h"

/* After a cancel or a missed deadline, how long probe_wait() still waits
 * for the threads to report. */
#define GRACE_NS (1000 * NSEC_PER_MSEC)
/* Budget for opening the target and creating the jobs, and the slowest
 * layout rate iopsd waits for. */
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
	struct fiostat_job fio;
	struct iogen_buf_job buf; /* dedupe's repeats */
	uint64_t poisson_due_ns;  /* rate_process=poisson: when the next I/O may go */
	uint64_t think_ns;	  /* thinktime: when the last pause ended */
	uint64_t think_issued;	  /* ... I/Os issued and completed since */
	uint64_t think_completed;
	uint64_t flow_counter; /* its I/Os in the flow */
	cpu_set_t cpu;	       /* where it runs, if has_cpu (job_cpus(), job_cpu()) */
	cpu_set_t allowed;     /* where it may go once let go (job_watch_cpu()) */
	bool has_cpu;
	int schedstat_fd; /* its /proc/thread-self/schedstat while pinned, or -1 */
	uint64_t watch_ns, watch_wait_ns, watch_slices;
	unsigned watch_strikes; /* windows in a row spent waiting */
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
	struct probe_config layout_pc; /* the keys iogen and fio_layout() read (no strings) */
	struct iogen gen;
	struct iogen_buf buf;	 /* write content (buffer_pattern, dedupe, compress) */
	struct probe_flow *flow; /* flow=: the shared one, or own_flow */
	struct probe_flow own_flow;

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
	uint64_t prepare_deadline_ns;
	uint64_t start_ns;
	unsigned n_ready, n_finished;
	struct probe_result result;

	struct job *jobs;

	/* under threads_lock (Threads, below) */
	unsigned n_threads; /* its run and job threads that have not said done */
	bool is_abandoned;  /* it left I/O in the kernel (run_abandon()) */
};

/* Pure pieces ----------------------------------------------------------- */

uint64_t probe_rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t probe_rng_below(uint64_t *rng, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)probe_rng_next(rng) * n) >> 64);
}

bool probe_rwmix_is_read(uint64_t *rng, unsigned rwmixread)
{
	if (rwmixread >= 100) {
		return true;
	}
	return probe_rng_below(rng, 100) < rwmixread;
}

uint64_t probe_random_offset(uint64_t *rng, uint64_t start, uint64_t len, uint64_t bs)
{
	return start + probe_rng_below(rng, len / bs) * bs;
}

uint64_t probe_sequential_offset(uint64_t *cursor, uint64_t start, uint64_t len, uint64_t bs)
{
	uint64_t off;

	if (*cursor + bs > len) {
		*cursor = 0;
	}
	off = start + *cursor;
	*cursor += bs;
	return off;
}

void probe_job_region(enum probe_rw rw, uint64_t size, uint64_t bs, unsigned numjobs, unsigned job,
		      uint64_t *ret_start, uint64_t *ret_len)
{
	uint64_t blocks = size / bs, per;

	if (numjobs == 0 || blocks < numjobs) {
		*ret_start = 0;
		*ret_len = 0;
		return;
	}
	if (rw == PROBE_RW_READ || rw == PROBE_RW_WRITE || rw == PROBE_RW_RW) {
		per = blocks / numjobs;
		*ret_start = (uint64_t)job * per * bs;
		*ret_len = per * bs;
		return;
	}
	*ret_start = 0;
	*ret_len = blocks * bs;
}

uint64_t probe_rate_due_ns(uint64_t start_ns, uint64_t n, unsigned job, unsigned numjobs, uint64_t rate_iops)
{
	/* op n of job j is op n*numjobs+j of the whole run, due at that many
	 * 1/rate_iops steps after the start: absolute, so no drift piles up */
	unsigned __int128 k = (unsigned __int128)n * numjobs + job;

	if (rate_iops == 0) {
		return start_ns;
	}
	return start_ns + (uint64_t)(k * NSEC_PER_SEC / rate_iops);
}

uint64_t probe_timeout_usec(const struct probe_config *pc)
{
	if (pc->runtime_usec > 0) {
		return 2 * pc->runtime_usec + pc->ramp_usec;
	}
	return pc->interval_usec > 0 ? pc->interval_usec : 60 * USEC_PER_SEC;
}

int probe_parse_block_size(const char *s, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	while (*end == '\n' || *end == ' ') {
		end++;
	}
	if (errno != 0 || end == s || *end != '\0' || v < 512 || v > 65536 || (v & (v - 1)) != 0) {
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

/* Helpers ---------------------------------------------------------------- */

static struct timespec ns_to_timespec(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / NSEC_PER_SEC), .tv_nsec = (long)(ns % NSEC_PER_SEC)};
}

static void set_message(char *msg, size_t len, const char *fmt, ...) _printf_(3, 4);
static void set_message(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
}

static bool run_is_cancelled(struct run *r)
{
	return __atomic_load_n(&r->is_cancelled, __ATOMIC_RELAXED);
}

/* Mark cancelled and wake every waiter. Caller holds r->lock. */
static void run_cancel_locked(struct run *r)
{
	if (!r->is_cancelled) {
		struct itimerspec at_once = {.it_value = {.tv_nsec = 1}};

		__atomic_store_n(&r->is_cancelled, true, __ATOMIC_RELAXED);
		r->cancel_ns = now_nsec(CLOCK_MONOTONIC);
		timerfd_settime(r->wake_fd, 0, &at_once, NULL);
	}
	pthread_cond_broadcast(&r->cond);
}

static void run_destroy(struct run *r)
{
	for (unsigned i = 0; r->fds && i < r->n_fds; i++) {
		if (r->fds[i] >= 0) {
			close(r->fds[i]);
		}
	}
	free(r->fds);
	if (r->wake_fd >= 0) {
		close(r->wake_fd);
	}
	free(r->jobs);
	free(r->name);
	free(r->directory);
	free(r->filename);
	free(r->sysfs);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

DEFINE_PRIVATE_REFCOUNT(struct run, run, run_destroy);

/* Block size of the target's device -------------------------------------- */

static int sysfs_dev_attr(const char *sysfs, dev_t dev, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];

	if (major(dev) == 0) {
		return -ENOENT; /* anonymous device: tmpfs, btrfs, overlayfs */
	}
	snprintf(path, sizeof(path), "%s/dev/block/%u:%u/%s", sysfs, major(dev), minor(dev), attr);
	return read_one_line(path, buf, len);
}

unsigned probe_logical_block_size(const char *sysfs, dev_t dev)
{
	char buf[32];
	unsigned v;

	if ((sysfs_dev_attr(sysfs, dev, "queue/logical_block_size", buf, sizeof(buf)) >= 0 ||
	     sysfs_dev_attr(sysfs, dev, "../queue/logical_block_size", buf, sizeof(buf)) >= 0) &&
	    probe_parse_block_size(buf, &v) == 0) {
		return v;
	}
	return 512;
}

/* Threads ----------------------------------------------------------------
 *
 * Run and job threads are not joined by whoever started them: a run is
 * reported without its threads when the device holds them in the kernel.
 * They are joined here instead, once they have said they are done, so that
 * the process can wait for them before it exits (probe_threads_wait()),
 * rather than exit while they are still freeing their buffers or tearing
 * down their engines. The threads of a run that left I/O in the kernel
 * (run_abandon()) are not waited for: the device decides when they end. */

static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t threads_cond;
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
/* under threads_lock: */
static unsigned threads_live;	/* of runs not abandoned */
static pthread_t *threads_done; /* finished, not yet joined */
static size_t n_threads_done, threads_done_cap;

static void threads_init(void)
{
	cond_init_monotonic(&threads_cond);
}

/* Join the threads that have finished. */
static void threads_reap(void)
{
	pthread_t *done;
	size_t n;

	pthread_mutex_lock(&threads_lock);
	done = threads_done;
	n = n_threads_done;
	threads_done = NULL;
	n_threads_done = threads_done_cap = 0;
	pthread_mutex_unlock(&threads_lock);
	/* each has only its return left to do */
	for (size_t i = 0; i < n; i++) {
		pthread_join(done[i], NULL);
	}
	free(done);
}

/* One more (+1) or one fewer (-1) thread of r. Caller holds threads_lock. */
static void threads_count_locked(struct run *r, int delta)
{
	r->n_threads += (unsigned)delta;
	if (!r->is_abandoned) {
		threads_live += (unsigned)delta;
	}
	pthread_cond_broadcast(&threads_cond);
}

static int thread_spawn(struct run *r, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t t;
	int e;

	pthread_once(&threads_once, threads_init);
	threads_reap();
	pthread_mutex_lock(&threads_lock);
	threads_count_locked(r, +1);
	pthread_mutex_unlock(&threads_lock);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK_SIZE);
	e = pthread_create(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	if (e != 0) {
		pthread_mutex_lock(&threads_lock);
		threads_count_locked(r, -1);
		pthread_mutex_unlock(&threads_lock);
	}
	return e;
}

/* A thread of r is done with r; called before its last run_unref(), which
 * the join then waits for. */
static void thread_done(struct run *r)
{
	pthread_mutex_lock(&threads_lock);
	if (n_threads_done == threads_done_cap) {
		size_t cap = threads_done_cap ? threads_done_cap * 2 : 16;
		pthread_t *p = reallocarray(threads_done, cap, sizeof(*p));

		if (p) {
			threads_done = p;
			threads_done_cap = cap;
		}
	}
	if (n_threads_done < threads_done_cap) {
		threads_done[n_threads_done++] = pthread_self();
	} else {
		pthread_detach(pthread_self()); /* out of memory: nobody joins it */
	}
	threads_count_locked(r, -1);
	pthread_mutex_unlock(&threads_lock);
}

/* r left I/O in the kernel: its threads end when the device lets them. */
static void run_abandon(struct run *r)
{
	pthread_mutex_lock(&threads_lock);
	if (!r->is_abandoned) {
		r->is_abandoned = true;
		threads_live -= r->n_threads;
		pthread_cond_broadcast(&threads_cond);
	}
	pthread_mutex_unlock(&threads_lock);
}

bool probe_threads_wait(uint64_t timeout_usec)
{
	uint64_t deadline = now_nsec(CLOCK_MONOTONIC) + timeout_usec * NSEC_PER_USEC;
	struct timespec ts = ns_to_timespec(deadline);
	bool is_idle;

	pthread_once(&threads_once, threads_init);
	pthread_mutex_lock(&threads_lock);
	while (threads_live > 0 && now_nsec(CLOCK_MONOTONIC) < deadline) {
		pthread_cond_timedwait(&threads_cond, &threads_lock, &ts);
	}
	is_idle = threads_live == 0;
	pthread_mutex_unlock(&threads_lock);
	threads_reap();
	return is_idle;
}

/* Jobs -------------------------------------------------------------------- */

/* Stop watching the job's CPU (job_watch_cpu()). */
static void job_unwatch(struct job *j)
{
	if (j->schedstat_fd >= 0) {
		close(j->schedstat_fd);
		j->schedstat_fd = -1;
	}
}

static void job_teardown(struct job *j)
{
	job_unwatch(j);
	/* waits for whatever the kernel still holds, then frees: only then
	 * may the buffers go */
	j->ops->free(j->eng);
	j->eng = NULL;
	free(j->bufs);
	free(j->slots);
	free(j->free_slots);
	free(j->batch);
	free(j->events);
	iogen_job_done(&j->gen);
	j->bufs = NULL;
	j->slots = NULL;
	j->free_slots = NULL;
	j->batch = NULL;
	j->events = NULL;
}

static int job_setup(struct job *j)
{
	struct run *r = j->run;
	struct engine_setup es;
	int e;

	j->ops = r->ops;
	for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
		histogram_init(&j->op[op].lat);
	}
	j->depth = r->iodepth;
	e = posix_memalign(&j->bufs, BUF_ALIGN, (size_t)j->depth * r->bs);
	if (e != 0) {
		j->bufs = NULL;
		return -e;
	}
	j->slots = calloc(j->depth, sizeof(*j->slots));
	j->free_slots = calloc(j->depth, sizeof(*j->free_slots));
	j->batch = calloc(j->depth, sizeof(*j->batch));
	j->events = calloc(j->depth + 1, sizeof(*j->events));
	if (!j->slots || !j->free_slots || !j->batch || !j->events) {
		return -ENOMEM;
	}
	/* write buffers start as non-repeating data; every write then stamps
	 * its offset into each sector (fio's scramble_buffers) */
	probefile_fill(j->bufs, (size_t)j->depth * r->bs, r->seed ^ (0xa5a5ULL + j->index), 0);
	for (unsigned i = 0; i < j->depth; i++) {
		j->slots[i].index = i;
		j->slots[i].buf = (char *)j->bufs + (size_t)i * r->bs;
		j->free_slots[j->n_free++] = &j->slots[i];
	}
	es = (struct engine_setup){
	    .depth = j->depth,
	    .fds = r->fds,
	    .n_fds = r->n_fds,
	    .bufs = j->bufs,
	    .buf_size = r->bs,
	    .wake_fd = r->wake_fd,
	};
	e = j->ops->setup(&es, j->message, sizeof(j->message), &j->eng);
	if (e < 0) {
		return e;
	}
	return iogen_job_init(&r->gen, j->index, r->seed, &j->gen);
}

static void job_fail(struct job *j, int err, const char *fmt, ...) _printf_(3, 4);
static void job_fail(struct job *j, int err, const char *fmt, ...)
{
	va_list ap;

	if (j->error != 0) {
		return;
	}
	j->error = err;
	va_start(ap, fmt);
	vsnprintf(j->message, sizeof(j->message), fmt, ap);
	va_end(ap);
}

static void scramble(void *buf, uint64_t bs, uint64_t stamp)
{
	for (uint64_t i = 0; i < bs; i += 512) {
		*(uint64_t *)((char *)buf + i) = stamp + i;
	}
}

/* ioprio_set(2)'s value of a class and level (linux/ioprio.h's
 * IOPRIO_PRIO_VALUE). */
#define PROBE_IOPRIO(cls, lvl) ((uint16_t)(((cls) << 13) | (lvl)))

/* cmdprio_percentage: this I/O's own priority, 0 for the thread's. Class
 * and level default to the highest, as in fio. */
static uint16_t job_cmdprio(struct job *j, int d, uint64_t len)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;
	unsigned cls = wl->has_cmdprio_class[d] ? wl->cmdprio_class[d] : 1,
		 lvl = wl->has_cmdprio[d] ? wl->cmdprio[d] : 0;

	if (wl->n_cmdprio_split[d] > 0) {
		/* cmdprio_bssplit: the shares of the entries of this I/O's size */
		uint64_t x = probe_rng_below(&j->gen.rng, 100);

		for (unsigned i = 0; i < wl->n_cmdprio_split[d]; i++) {
			if (wl->cmdprio_split[d][i].bs != len) {
				continue;
			}
			if (x < wl->cmdprio_split[d][i].pct) {
				return wl->cmdprio_split[d][i].has_prio
					   ? PROBE_IOPRIO(wl->cmdprio_split[d][i].cls,
							  wl->cmdprio_split[d][i].lvl)
					   : PROBE_IOPRIO(cls, lvl);
			}
			x -= wl->cmdprio_split[d][i].pct;
		}
		return 0;
	}

	if (wl->cmdprio_pct[d] == 0 || probe_rng_below(&j->gen.rng, 100) >= wl->cmdprio_pct[d]) {
		return 0;
	}
	return PROBE_IOPRIO(cls, lvl);
}

/* Take the next data op from iogen and fill the slot. Returns the op. */
static enum probe_op job_prep_io(struct job *j, struct slot *s)
{
	struct run *r = j->run;
	struct iogen_io io;

	iogen_next(&r->gen, &j->gen, &io);
	s->prep_ns = now_nsec(CLOCK_MONOTONIC);
	s->offset = io.offset;
	s->len = io.len;
	s->file = io.file;
	j->issued_bytes += io.len;
	/* as in fio, a ramp does not count towards io_size */
	if (r->ramp_ns == 0 || s->prep_ns >= r->start_ns + r->ramp_ns) {
		j->measured_bytes += io.len;
	}
	if (io.is_read) {
		s->op = PROBE_OP_READ;
	} else {
		s->op = PROBE_OP_WRITE;
		j->last_write_file = io.file;
		if (iogen_buf_is_default(&r->buf)) {
			scramble(s->buf, io.len, probe_rng_next(&j->gen.rng) ^ io.offset);
		} else {
			iogen_buf_fill(
			    &r->buf, s->buf, io.len,
			    iogen_buf_seed(&r->buf, &j->buf, &j->gen.rng, probe_rng_next(&j->gen.rng)));
		}
	}
	s->ioprio = job_cmdprio(j, io.is_read ? PROBE_DIR_READ : PROBE_DIR_WRITE, io.len);
	return s->op;
}

static void job_complete(struct job *j, struct slot *s, long res, uint64_t t)
{
	struct run *r = j->run;
	struct probe_op_result *o = &j->op[s->op];
	long want = s->op == PROBE_OP_FSYNC ? 0 : (long)s->len;
	char e[96];

	if (res == want && t < r->start_ns + r->ramp_ns) {
		/* ramp_time: run, but kept out of the figures (as in fio) */
	} else if (res == want) {
		j->think_completed++;
		o->ops++;
		o->bytes += (uint64_t)want;
		histogram_record(&o->lat, t - s->submit_ns);
		if (s->op != PROBE_OP_FSYNC) {
			fiostat_record_io(&o->fio, &j->fio, s->submit_ns - s->prep_ns, t - s->submit_ns);
		} else {
			fiostat_stat_add(&o->fio.clat, t - s->submit_ns);
		}
	} else if (res < 0) {
		o->errors[probe_error_reason_from_errno((int)-res)]++;
		if (s->op == PROBE_OP_FSYNC) {
			job_fail(j, (int)res, "fsync of %s failed: %s", r->target,
				 probefile_strerror((int)res, e, sizeof(e)));
		} else {
			job_fail(j, (int)res, "%s failed at offset %" PRIu64 " of %s: %s",
				 probe_op_to_string(s->op), s->offset, r->target,
				 probefile_strerror((int)res, e, sizeof(e)));
		}
	} else {
		o->errors[PROBE_ERR_OTHER]++;
		job_fail(j, -EIO, "short %s at offset %" PRIu64 " of %s: %ld of %ld bytes",
			 probe_op_to_string(s->op), s->offset, r->target, res, want);
	}
	s->is_inflight = false;
	j->free_slots[j->n_free++] = s;
	j->last_ns = t;
}

/* fsync(2) on the job's thread, timed as one fsync op. Not aio fsync: that
 * runs in a kernel worker, outside the job's cgroup (its flush would escape
 * an I/O cap), and costs a context switch; with nothing in flight (fsync=N
 * drains first) the synchronous call measures the same thing, as in fio. */
static void job_sync_fsync(struct job *j, struct slot *s)
{
	uint64_t t0 = now_nsec(CLOCK_MONOTONIC);
	long res = fsync(j->run->fds[j->last_write_file]) < 0 ? -errno : 0;

	s->prep_ns = t0;
	s->submit_ns = t0;
	job_complete(j, s, res, now_nsec(CLOCK_MONOTONIC));
}

/* Submit the batch (`inflight` already in the kernel); what the kernel does
 * not take stays in it (EAGAIN). Returns the number submitted. */
static unsigned job_submit(struct job *j, unsigned inflight)
{
	unsigned done = 0;
	char e[96];
	uint64_t t0, t;
	int n;

	while (done < j->n_batch) {
		unsigned chunk = j->n_batch - done;

		/* iodepth_batch (fio's default 1): each I/O goes to the kernel as
		 * soon as it is ready, so the device starts on the first while
		 * the others are prepared; one call for all of them left a
		 * loop device's worker idle until the last was in */
		if (chunk > j->run->batch_submit) {
			chunk = j->run->batch_submit;
		}
		t0 = now_nsec(CLOCK_MONOTONIC);
		n = j->ops->submit(j->eng, j->batch + done, chunk);
		if (n > 0) {
			/* fio's clat starts when the kernel has the I/O: io_submit()
			 * takes a batch's iocbs one after the other, so each one's
			 * clock starts at its share of the call (the last one's at
			 * its return, like a one-iocb call) */
			t = now_nsec(CLOCK_MONOTONIC);
			for (int i = 0; i < n; i++) {
				struct slot *s = j->batch[done + i];

				s->submit_ns = t0 + (t - t0) * (uint64_t)(i + 1) / (uint64_t)n;
				s->is_inflight = true;
			}
			done += (unsigned)n;
			fiostat_mark_submit(&j->fio, (unsigned)n, inflight + done);
			continue;
		}
		if (n == 0) {
			break;
		}
		if (n == -EINTR) {
			continue;
		}
		{
			struct slot *s = j->batch[done];

			j->op[s->op].errors[probe_error_reason_from_errno(n)]++;
			if (n == -EINVAL) {
				job_fail(j, n,
					 "%s at offset %" PRIu64 " of %s refused: %s; bs=%" PRIu64
					 " may not suit the device",
					 probe_op_to_string(s->op), s->offset, j->run->target,
					 probefile_strerror(n, e, sizeof(e)), s->len);
			} else {
				job_fail(j, n, "submitting a %s to %s failed: %s", probe_op_to_string(s->op),
					 j->run->target, probefile_strerror(n, e, sizeof(e)));
			}
			j->free_slots[j->n_free++] = s;
			/* drop it from the batch and go on with the rest */
			memmove(j->batch + done, j->batch + done + 1,
				(j->n_batch - done - 1) * sizeof(*j->batch));
			j->n_batch--;
		}
	}
	memmove(j->batch, j->batch + done, (j->n_batch - done) * sizeof(*j->batch));
	j->n_batch -= done;
	return done;
}

/* Sleep until `until` (CLOCK_MONOTONIC ns) or a cancel. */
static void job_pace_wait(struct job *j, uint64_t until)
{
	struct run *r = j->run;
	struct timespec ts = ns_to_timespec(until);

	pthread_mutex_lock(&r->lock);
	while (!r->is_cancelled && now_nsec(CLOCK_MONOTONIC) < until) {
		if (pthread_cond_timedwait(&r->cond, &r->lock, &ts) == ETIMEDOUT) {
			break;
		}
	}
	pthread_mutex_unlock(&r->lock);
}

static void job_timeout(struct job *j, unsigned inflight, bool is_issuing)
{
	struct run *r = j->run;
	unsigned per_op[_PROBE_OP_MAX] = {0};

	for (unsigned i = 0; i < j->depth; i++) {
		if (j->slots[i].is_inflight) {
			per_op[j->slots[i].op]++;
			/* block I/O can rarely be cancelled; teardown waits for it */
			j->ops->cancel(j->eng, &j->slots[i]);
		}
	}
	for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
		j->op[op].errors[PROBE_ERR_TIMEOUT] += per_op[op];
	}
	if (inflight > 0) {
		run_abandon(r); /* its teardown waits for the device */
	}
	if (inflight == 0 && is_issuing) {
		j->op[probe_rw_reads(r->rw) ? PROBE_OP_READ : PROBE_OP_WRITE].errors[PROBE_ERR_TIMEOUT]++;
	}
	job_fail(j, -ETIMEDOUT,
		 "timed out: %u I/O%s still in flight on %s %" PRIu64 " ms after the start (the limit is %s)",
		 inflight, inflight == 1 ? "" : "s", r->target, r->timeout_ns / NSEC_PER_MSEC,
		 r->runtime_ns ? "2x runtime" : "the interval");
}

/* The end of a run that is not (only) time based: number_ios, or fio's
 * io_size * loops without time_based. */
static bool job_budget_spent(const struct job *j, uint64_t issued)
{
	const struct run *r = j->run;

	return (r->number_ios && issued >= r->number_ios) ||
	       (r->io_limit && j->measured_bytes >= r->io_limit);
}

/* When the next I/O may go: rate_iops (per job, interleaved across the jobs)
 * and rate (bytes per second per job), whichever is later. */
static uint64_t job_rate_due_ns(const struct job *j, uint64_t issued)
{
	const struct run *r = j->run;
	uint64_t due = r->start_ns, b;

	if (r->rate_iops && r->layout_pc.wl.is_poisson) {
		due = j->poisson_due_ns;
	} else if (r->rate_iops) {
		due = probe_rate_due_ns(r->start_ns, issued, j->index, r->numjobs, r->rate_iops * r->numjobs);
	}
	if (r->rate_bytes) {
		b = iogen_rate_bytes_due_ns(r->start_ns, j->issued_bytes, r->rate_bytes);
		due = b > due ? b : due;
	}
	return due;
}

/* iodepth_batch: start a batch only once that many slots are free;
 * iodepth_batch_complete_min: and that many completions came back (or
 * nothing is in flight). */
static bool job_may_queue(const struct job *j, unsigned inflight)
{
	const struct run *r = j->run;
	unsigned want = r->batch_submit < j->depth ? r->batch_submit : j->depth;
	unsigned reaped = r->complete_min < inflight ? r->complete_min : inflight;

	if (j->n_batch > 0 || inflight == 0) {
		return true;
	}
	return j->n_reaped >= reaped && (want <= 1 || j->depth - inflight >= want);
}

/* iodepth_batch_complete_max: completions reaped at once (the wake fd's
 * event counts too). */
static unsigned job_reap_max(const struct job *j)
{
	unsigned m = j->run->complete_max;

	return (m == 0 || m > j->depth ? j->depth : m) + 1;
}

/* Where a job's I/O loop stands. */
struct io_loop {
	uint64_t start, stop_at, hard; /* CLOCK_MONOTONIC ns: the run's start, end, deadline */
	uint64_t now;
	uint64_t due; /* when the pace lets the next op go, 0 when it does not hold one back */
	uint64_t issued, writes;
	unsigned inflight;
	bool is_issuing, want_fsync;
};

/* thinktime: after thinktime_blocks I/Os (issued or completed, as
 * thinktime_blocks_type says) or thinktime_iotime of I/O. */
static bool job_think_due(const struct job *j, uint64_t now)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;
	uint64_t blocks = wl->thinktime_blocks ? wl->thinktime_blocks : 1;

	if (wl->thinktime_usec == 0) {
		return false;
	}
	if (wl->thinktime_iotime_usec && now - j->think_ns >= wl->thinktime_iotime_usec * NSEC_PER_USEC) {
		return true;
	}
	return (wl->is_thinktime_issue ? j->think_issued : j->think_completed) >= blocks;
}

/* flow: whether the job is ahead of its weight's share of its flow's I/Os
 * (fio's flow_threshold_exceeded()); it then waits flow_sleep, or a little
 * while its I/Os complete. */
static bool job_flow_held(const struct job *j, struct io_loop *l)
{
	const struct run *r = j->run;
	uint64_t total;

	if (!r->flow) {
		return false;
	}
	total = __atomic_load_n(&r->flow->counter, __ATOMIC_RELAXED);
	if (total == 0 || (double)j->flow_counter / (double)total <=
			      (double)r->layout_pc.wl.flow / (double)r->flow->total_weight) {
		return false;
	}
	l->due = l->now + (r->layout_pc.wl.flow_sleep_usec ? r->layout_pc.wl.flow_sleep_usec * NSEC_PER_USEC
							   : 50 * NSEC_PER_USEC);
	return true;
}

/* The pause: thinktime_spin on the CPU, the rest asleep (a cancel ends it). */
static void job_think(struct job *j)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;
	uint64_t t0 = now_nsec(CLOCK_MONOTONIC);
	uint64_t spin =
	    wl->thinktime_spin_usec < wl->thinktime_usec ? wl->thinktime_spin_usec : wl->thinktime_usec;

	while (now_nsec(CLOCK_MONOTONIC) - t0 < spin * NSEC_PER_USEC && !run_is_cancelled(j->run)) {
	}
	job_pace_wait(j, t0 + wl->thinktime_usec * NSEC_PER_USEC);
	j->think_ns = now_nsec(CLOCK_MONOTONIC);
	j->think_issued = j->think_completed = 0;
}

/* Fill the batch as far as the queue depth, the pace and number_ios allow;
 * an fsync=N fsync runs here, once the N writes before it completed. */
static void job_fill_batch(struct job *j, struct io_loop *l)
{
	struct run *r = j->run;

	while (l->is_issuing && l->inflight + j->n_batch < j->depth && job_may_queue(j, l->inflight)) {
		struct slot *s;

		if (l->want_fsync) {
			/* fsync=N covers the N writes before it: let them complete */
			if (l->inflight + j->n_batch > 0) {
				break;
			}
			s = j->free_slots[--j->n_free];
			s->op = PROBE_OP_FSYNC;
			s->offset = 0;
			job_sync_fsync(j, s);
			l->want_fsync = false;
			l->now = now_nsec(CLOCK_MONOTONIC);
			if (j->error != 0) {
				l->is_issuing = false;
			}
			continue;
		}
		if (job_think_due(j, l->now)) {
			/* as fio: the I/Os in flight complete, then the pause */
			if (l->inflight + j->n_batch > 0) {
				break;
			}
			job_think(j);
			l->now = now_nsec(CLOCK_MONOTONIC);
			continue;
		}
		if (job_budget_spent(j, l->issued)) {
			break;
		}
		if (job_flow_held(j, l)) {
			break;
		}
		l->due = job_rate_due_ns(j, l->issued);
		if (l->due > l->now) {
			break;
		}
		l->due = 0;
		s = j->free_slots[--j->n_free];
		if (job_prep_io(j, s) == PROBE_OP_WRITE && r->fsync_every > 0 &&
		    ++l->writes % r->fsync_every == 0) {
			l->want_fsync = true;
		}
		j->batch[j->n_batch++] = s;
		j->n_reaped = 0;
		l->issued++;
		j->think_issued++;
		if (r->flow) {
			__atomic_fetch_add(&r->flow->counter, 1, __ATOMIC_RELAXED);
			j->flow_counter++;
		}
		if (r->layout_pc.wl.is_poisson) {
			j->poisson_due_ns += iogen_poisson_gap_ns(&j->gen.rng, r->rate_iops);
		}
	}
}

/* Submit the batch. */
static void job_flush_batch(struct job *j, struct io_loop *l)
{
	if (j->n_batch == 0) {
		return;
	}
	l->inflight += job_submit(j, l->inflight);
	if (l->inflight == 0 && j->n_batch > 0) {
		/* EAGAIN with nothing to wait for: it will not get better */
		job_fail(j, -EAGAIN, "the kernel refused to queue I/O to %s (EAGAIN)", j->run->target);
		j->op[j->batch[0]->op].errors[PROBE_ERR_OTHER]++;
		while (j->n_batch > 0) {
			j->free_slots[j->n_free++] = j->batch[--j->n_batch];
		}
	}
	l->now = now_nsec(CLOCK_MONOTONIC);
	if (j->error != 0) {
		l->is_issuing = false;
	}
}

/* The thread's time waiting to run and its count of runs so far
 * (sched_info: the 2nd and 3rd fields of schedstat, in ns and runs). */
static bool read_schedstat(int fd, uint64_t *ret_wait_ns, uint64_t *ret_slices)
{
	char b[96];
	ssize_t n = pread(fd, b, sizeof(b) - 1, 0);
	unsigned long long run_ns, wait_ns, slices;

	if (n <= 0) {
		return false;
	}
	b[n] = '\0';
	if (sscanf(b, "%llu %llu %llu", &run_ns, &wait_ns, &slices) != 3) {
		return false;
	}
	*ret_wait_ns = wait_ns;
	*ret_slices = slices;
	return true;
}

/* A pinned job cannot leave its CPU when other work takes it: every
 * completion's wakeup then waits behind that work (a CPU-bound process on
 * it cut a QD1 run from 100k to 4k IOPS while the other CPU stood idle).
 * So it is watched: when, in each of WATCH_STRIKES windows of WATCH_NS in
 * a row, it spent more than a quarter of the time runnable but not
 * running, and WATCH_WAIT_NS or more per wakeup, it is let go to every CPU
 * the process may use, for the rest of the run. (Measured at QD1 on a
 * loop device in memory: 3-8 µs per wakeup on a free CPU, whose exit from
 * idle counts as waiting, and up to 60% of the time. Behind a busy loop,
 * 33 µs per wakeup under CFS (Linux 6.1) but 13-18 µs under EEVDF (6.18),
 * which lets a waking task in sooner, while the job still woke only
 * 37-59% as often as its free sibling: the bar sits between.) */
#define WATCH_NS      (50 * NSEC_PER_MSEC)
#define WATCH_WAIT_NS (10 * NSEC_PER_USEC)
#define WATCH_STRIKES 2

static void job_watch_start(struct job *j, uint64_t now)
{
	j->watch_ns = now;
	if (j->schedstat_fd >= 0 && !read_schedstat(j->schedstat_fd, &j->watch_wait_ns, &j->watch_slices)) {
		job_unwatch(j);
	}
}

static void job_watch_cpu(struct job *j, uint64_t now)
{
	uint64_t wait_ns, slices, waited, runs;

	if (!read_schedstat(j->schedstat_fd, &wait_ns, &slices)) {
		job_unwatch(j); /* not again on every loop */
		return;
	}
	waited = wait_ns - j->watch_wait_ns;
	runs = slices - j->watch_slices;
	if (waited * 4 > now - j->watch_ns && waited >= WATCH_WAIT_NS * (runs ? runs : 1)) {
		j->watch_strikes++;
	} else {
		j->watch_strikes = 0;
	}
	if (j->watch_strikes >= WATCH_STRIKES) {
		(void)pthread_setaffinity_np(pthread_self(), sizeof(j->allowed), &j->allowed);
		job_unwatch(j);
		return;
	}
	j->watch_ns = now;
	j->watch_wait_ns = wait_ns;
	j->watch_slices = slices;
}

/* fio's bw and iops samples: one per direction per FIOSTAT_AVG_MSEC. */
static void job_sample(struct job *j, uint64_t now)
{
	uint64_t msec;

	if (!fiostat_interval_end(&j->fio, now, &msec)) {
		return;
	}
	for (size_t op = PROBE_OP_READ; op <= PROBE_OP_WRITE; op++) {
		fiostat_dir_sample(&j->op[op].fio, j->op[op].bytes, j->op[op].ops, msec);
	}
}

/* The job thread's CPU time, context switches and faults (fio's usr_cpu,
 * sys_cpu, ctx, majf, minf): `sign` -1 at the start, +1 at the end. */
static void job_rusage(struct job *j, int sign)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) < 0) {
		return;
	}
	j->fio.usr_usec += (uint64_t)sign * (uint64_t)(ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec);
	j->fio.sys_usec += (uint64_t)sign * (uint64_t)(ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec);
	j->fio.ctx += (uint64_t)sign * (uint64_t)(ru.ru_nvcsw + ru.ru_nivcsw);
	j->fio.majf += (uint64_t)sign * (uint64_t)ru.ru_majflt;
	j->fio.minf += (uint64_t)sign * (uint64_t)ru.ru_minflt;
}

/* Wait for completions, or until the next paced submission, and account
 * them. False when the job ends: the wait failed. */
static bool job_reap(struct job *j, struct io_loop *l)
{
	uint64_t timeout = ENGINE_WAIT_FOREVER;
	unsigned reaped = 0;
	char e[96];
	int n;

	/* an unpaced wait needs no timeout (the engine also wakes on the run's
	 * wake fd), and so costs the kernel no timer per call */
	if (l->due > l->now) {
		timeout = (l->due < l->hard ? l->due : l->hard) - l->now;
	}
	n = j->ops->reap(j->eng, j->events, job_reap_max(j), timeout);
	l->now = now_nsec(CLOCK_MONOTONIC);
	if (n == -EINTR) {
		return true;
	}
	if (n < 0) {
		job_fail(j, n, "waiting for I/O on %s failed: %s", j->run->target,
			 probefile_strerror(n, e, sizeof(e)));
		job_timeout(j, l->inflight, false);
		return false;
	}
	for (int i = 0; i < n; i++) {
		if (!j->events[i].slot) {
			continue; /* the wake fd: the deadline or a cancel, seen by the loop */
		}
		job_complete(j, j->events[i].slot, j->events[i].res, l->now);
		j->n_reaped++;
		l->inflight--;
		reaped++;
	}
	fiostat_mark_complete(&j->fio, reaped);
	job_sample(j, l->now);
	return true;
}

/* A job's I/O until its runtime, number_ios, an error, a cancel or the
 * deadline: fill the batch, submit it, wait for completions. */
static void job_loop(struct job *j)
{
	struct run *r = j->run;
	struct io_loop l = {
	    .start = r->start_ns,
	    .stop_at = r->runtime_ns ? r->start_ns + r->ramp_ns + r->runtime_ns : UINT64_MAX,
	    .hard = r->start_ns + r->timeout_ns,
	    .now = r->start_ns,
	    .is_issuing = true,
	};

	j->last_ns = l.start;
	job_watch_start(j, l.now);
	for (;;) {
		if (j->schedstat_fd >= 0 && l.now - j->watch_ns >= WATCH_NS) {
			job_watch_cpu(j, l.now);
		}
		l.due = 0;
		if (l.is_issuing && (j->error != 0 || l.now >= l.stop_at || run_is_cancelled(r) ||
				     (job_budget_spent(j, l.issued) && !l.want_fsync))) {
			l.is_issuing = false;
		}
		job_fill_batch(j, &l);
		job_flush_batch(j, &l);
		if (l.inflight == 0) {
			if (j->n_batch == 0 && (!l.is_issuing || l.now >= l.hard)) {
				if (l.is_issuing) {
					job_timeout(j, 0, true);
				}
				break;
			}
			if (l.now >= l.hard) {
				job_timeout(j, 0, true);
				break;
			}
			if (l.due > l.now) {
				job_pace_wait(j, l.due < l.hard ? l.due : l.hard);
				l.now = now_nsec(CLOCK_MONOTONIC);
			}
			continue;
		}
		if (l.now >= l.hard) {
			job_timeout(j, l.inflight, l.is_issuing);
			break;
		}
		if (!job_reap(j, &l)) {
			break;
		}
	}
}

/* prio and prioclass: the job thread's I/O priority, as fio sets its
 * job's (best effort level 4 where one of them is not given). */
static int job_set_ioprio(struct job *j)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;
	unsigned cls = wl->has_prioclass ? wl->prioclass : 2, lvl = wl->has_prio ? wl->prio : 4;

	if (!wl->has_prio && !wl->has_prioclass) {
		return 0;
	}
	/* IOPRIO_WHO_PROCESS (1) with 0: the calling thread */
	if (syscall(SYS_ioprio_set, 1, 0, (int)PROBE_IOPRIO(cls, lvl)) < 0) {
		int k = -errno;

		set_message(j->message, sizeof(j->message), "prioclass=%u prio=%u: ioprio_set: %s%s", cls,
			    lvl, strerror(-k),
			    k == -EPERM ? " (the realtime class needs CAP_SYS_ADMIN)" : "");
		return k;
	}
	return 0;
}

static void *job_main(void *userdata)
{
	struct job *j = userdata;
	struct run *r = j->run;
	char name[16]; /* the kernel's limit, with the NUL */
	bool go;

	/* in top -H and ps -L: the probe, then the job's index */
	snprintf(name, sizeof(name), "%.10s/%u", r->name, j->index % 1000);
	(void)pthread_setname_np(pthread_self(), name);
	/* by the thread itself, not with pthread_create's attribute: where
	 * sched_setaffinity() is refused (a seccomp filter) that would fail
	 * the thread's creation and the run; here the job runs unpinned */
	if (j->has_cpu && pthread_setaffinity_np(pthread_self(), sizeof(j->cpu), &j->cpu) == 0) {
		j->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	}
	j->setup_error = job_setup(j);
	if (j->setup_error == 0) {
		j->setup_error = job_set_ioprio(j);
	}
	pthread_mutex_lock(&r->lock);
	r->n_ready++;
	pthread_cond_broadcast(&r->cond);
	while (!r->is_released && !r->is_cancelled) {
		pthread_cond_wait(&r->cond, &r->lock);
	}
	go = r->go && !r->is_cancelled && j->setup_error == 0;
	pthread_mutex_unlock(&r->lock);

	if (go) {
		uint64_t t0 = now_nsec(CLOCK_MONOTONIC);

		j->fio.interval_ns = r->start_ns + r->ramp_ns;
		j->poisson_due_ns = r->start_ns;
		j->think_ns = r->start_ns;
		job_rusage(j, -1);
		job_loop(j);
		job_rusage(j, 1);
		j->fio.run_msec = (now_nsec(CLOCK_MONOTONIC) - t0) / NSEC_PER_MSEC;
	}
	pthread_mutex_lock(&r->lock);
	r->n_finished++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);

	/* after reporting: io_destroy() may wait for a stuck device */
	job_teardown(j);
	thread_done(r);
	run_unref(r);
	return NULL;
}

/* The run thread ---------------------------------------------------------- */

static bool layout_should_stop(void *userdata)
{
	struct run *r = userdata;

	return run_is_cancelled(r) || now_nsec(CLOCK_MONOTONIC) >= r->prepare_deadline_ns;
}

/* Every I/O size and offset must suit the device's logical block size. */
static int run_check_block_size(struct run *r, struct probe_result *res, unsigned lbs)
{
	uint64_t bad = r->gen.align % lbs ? r->gen.align : 0;

	for (int d = 0; d < _PROBE_DIR_MAX && !bad; d++) {
		const struct probe_bs *b = &r->gen.bs[d];

		bad = b->min % lbs ? b->min : b->max % lbs ? b->max : 0;
		for (unsigned i = 0; i < b->n_split && !bad; i++) {
			bad = b->split[i].bs % lbs ? b->split[i].bs : 0;
		}
	}
	if (bad || r->layout_pc.offset % lbs || r->layout_pc.offset_increment % lbs) {
		set_message(res->message, sizeof(res->message),
			    "bs=%" PRIu64 " (or an offset) is not a multiple of the logical block size (%u "
			    "bytes) of the device under %s",
			    bad ? bad : r->bs, lbs, r->target);
		return -EINVAL;
	}
	return 0;
}

/* Open (laying them out where needed) the probe files NAME.dat, or
 * NAME.0.dat ... for nrfiles > 1, into r->fds. */
static int run_open_files(struct run *r, struct probe_result *res, uint64_t file_size)
{
	_cleanup_close_ int dfd = -1;
	char name[PATH_MAX];
	struct probefile pf;
	int k;

	dfd = probefile_open_directory(r->directory, r->directory_dev, &res->directory_dev, res->message,
				       sizeof(res->message));
	if (dfd < 0) {
		return dfd;
	}
	for (unsigned i = 0; i < r->n_fds; i++) {
		snprintf(name, sizeof(name), r->n_fds > 1 ? "%s.%u" : "%s", r->name, i);
		k = probefile_open_at(dfd, r->directory, name, file_size, probe_rw_writes(r->rw), r->seed + i,
				      layout_should_stop, r, res->message, sizeof(res->message), &pf);
		if (k == -ECANCELED && !run_is_cancelled(r)) {
			k = -ETIMEDOUT;
			set_message(res->message, sizeof(res->message),
				    "laying out %s took longer than %" PRIu64 " s", r->target,
				    (r->prepare_deadline_ns - r->start_ns) / NSEC_PER_SEC);
		}
		if (k == -EMFILE) {
			set_message(
			    res->message, sizeof(res->message),
			    "%s: nrfiles=%u needs as many open files, more than this process may have "
			    "(ulimit -n, LimitNOFILE= in the unit)",
			    r->target, r->n_fds);
		}
		if (k < 0) {
			return k;
		}
		r->fds[i] = pf.fd;
		res->layout_usec += pf.layout_usec;
	}
	return 0;
}

static int run_prepare(struct run *r, struct probe_result *res)
{
	struct fio_layout layout;
	struct probefile pf = {.fd = -1};
	struct stat st;
	int k;

	if (r->filename && probe_rw_writes(r->rw)) {
		set_message(res->message, sizeof(res->message),
			    "refusing rw=%s on the raw block device %s: iopsd only ever reads a block device",
			    probe_rw_to_string(r->rw), r->filename);
		return -EINVAL;
	}
	if (r->filename) {
		k = probefile_open_device(r->filename, 0, res->message, sizeof(res->message), &pf);
		if (k < 0) {
			return k;
		}
		r->fds[0] = pf.fd;
	}
	k = fio_layout(&r->layout_pc, r->filename ? pf.size : 0, &layout, res->message, sizeof(res->message));
	if (k == 0 && !r->filename) {
		k = run_open_files(r, res, layout.file_size);
	}
	if (k < 0) {
		return k;
	}
	iogen_init(&r->gen, &r->layout_pc, &layout, r->seed);
	iogen_buf_init(&r->buf, &r->layout_pc.wl, layout.region, r->gen.bs_max,
		       r->seed ^ 0x9e3779b97f4a7c15ULL);
	if (layout.increment == 0 && layout.region < r->gen.bs_max * r->numjobs) {
		set_message(res->message, sizeof(res->message),
			    "%s has %" PRIu64 " bytes to probe, less than bs*numjobs=%" PRIu64, r->target,
			    layout.region, r->gen.bs_max * r->numjobs);
		return -EINVAL;
	}
	if (fstat(r->fds[0], &st) < 0) {
		return -errno;
	}
	k = run_check_block_size(r, res,
				 probe_logical_block_size(r->sysfs, r->filename ? st.st_rdev : st.st_dev));
	if (k < 0) {
		return k;
	}
	if (r->io_limit == UINT64_MAX) {
		/* not time based: each job moves size (or io_size) bytes per loop, as in fio */
		r->io_limit = (r->layout_pc.io_size ? r->layout_pc.io_size
			       : r->layout_pc.size  ? r->layout_pc.size
						    : layout.region) *
			      (r->layout_pc.loops ? r->layout_pc.loops : 1);
	}
	return 0;
}

/* Where job n runs: one CPU of those the process may use, job 0 on the
 * run thread's, the next jobs on the next ones in turn. A job that the
 * scheduler moves between CPUs pays a cross-CPU wakeup on every completion
 * (its previous CPU is idle, so the wakeup goes there): at depth 1 on a
 * fast device that doubled the time per I/O, and changed from run to run
 * with where the thread and the device's completion work happened to
 * land. Kept on one CPU, both settle on it (unless other work takes that
 * CPU: job_watch_cpu() lets the job go then). Here: the CPUs allowed and
 * the run thread's; false: run anywhere (no affinity to be had). */
static bool job_cpus(cpu_set_t *allowed, int *first)
{
	*first = sched_getcpu();
	return *first >= 0 && sched_getaffinity(0, sizeof(*allowed), allowed) == 0 &&
	       CPU_ISSET(*first, allowed) && CPU_COUNT(allowed) > 1;
}

/* The (n mod count)-th CPU of `allowed` from `first` on, wrapping. */
static void job_cpu(const cpu_set_t *allowed, int first, unsigned n, cpu_set_t *ret)
{
	unsigned k = n % (unsigned)CPU_COUNT(allowed);
	int cpu = first;

	for (;; cpu = (cpu + 1) % CPU_SETSIZE) {
		if (CPU_ISSET(cpu, allowed) && k-- == 0) {
			break;
		}
	}
	CPU_ZERO(ret);
	CPU_SET(cpu, ret);
}

/* Start the job threads; returns how many started, or -errno with none. */
static int run_start_jobs(struct run *r, struct probe_result *res)
{
	cpu_set_t allowed;
	unsigned n = 0;
	int e = 0, first;
	/* read once: the run thread may move while it starts the jobs */
	bool place = job_cpus(&allowed, &first);

	r->jobs = calloc(r->numjobs, sizeof(*r->jobs));
	if (!r->jobs) {
		return -ENOMEM;
	}
	for (; n < r->numjobs; n++) {
		r->jobs[n].run = run_ref(r);
		r->jobs[n].index = n;
		r->jobs[n].has_cpu = place;
		r->jobs[n].schedstat_fd = -1;
		if (place) {
			job_cpu(&allowed, first, n, &r->jobs[n].cpu);
			r->jobs[n].allowed = allowed;
		}
		e = thread_spawn(r, job_main, &r->jobs[n]);
		if (e != 0) {
			run_unref(r);
			break;
		}
	}
	if (e != 0) {
		char b[96];

		set_message(res->message, sizeof(res->message), "cannot start job threads: %s",
			    probefile_strerror(e, b, sizeof(b)));
	}
	return e != 0 ? -e : (int)n;
}

static void run_merge(struct run *r, unsigned n_jobs, struct probe_result *res, uint64_t *ret_end_ns)
{
	uint64_t end = r->start_ns;

	for (unsigned i = 0; i < n_jobs; i++) {
		struct job *j = &r->jobs[i];

		for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
			probe_op_result_add(&res->op[op], &j->op[op]);
		}
		fiostat_job_merge(&res->fio, &j->fio);
		if (j->last_ns > end) {
			end = j->last_ns;
		}
		if (res->error == 0 && j->setup_error != 0) {
			char e[96];

			res->error = j->setup_error;
			res->op[probe_rw_reads(r->rw) ? PROBE_OP_READ : PROBE_OP_WRITE]
			    .errors[probe_error_reason_from_errno(j->setup_error)]++;
			if (j->message[0] != '\0') {
				set_message(res->message, sizeof(res->message), "cannot set up job %u: %s", i,
					    j->message);
			} else {
				set_message(res->message, sizeof(res->message), "cannot set up job %u: %s", i,
					    probefile_strerror(j->setup_error, e, sizeof(e)));
			}
		}
		if (res->error == 0 && j->error != 0) {
			res->error = j->error;
			snprintf(res->message, sizeof(res->message), "%s", j->message);
		}
	}
	*ret_end_ns = end;
}

static void run_end_fsync(struct run *r, struct probe_result *res, uint64_t *end_ns)
{
	struct probe_op_result *o = &res->op[PROBE_OP_FSYNC];
	uint64_t t0 = now_nsec(CLOCK_MONOTONIC);
	unsigned i = 0;
	char e[96];

	while (i < r->n_fds && fsync(r->fds[i]) == 0) {
		i++;
	}
	if (i < r->n_fds) {
		int k = -errno;

		o->errors[probe_error_reason_from_errno(k)]++;
		if (res->error == 0) {
			res->error = k;
			set_message(res->message, sizeof(res->message), "end_fsync of %s failed: %s",
				    r->target, probefile_strerror(k, e, sizeof(e)));
		}
		return;
	}
	*end_ns = now_nsec(CLOCK_MONOTONIC);
	o->ops++;
	histogram_record(&o->lat, *end_ns - t0);
	fiostat_stat_add(&o->fio.clat, *end_ns - t0);
}

static void run_finish(struct run *r, struct probe_result *res, uint64_t end_ns)
{
	uint64_t data_ops = res->op[PROBE_OP_READ].ops + res->op[PROBE_OP_WRITE].ops;
	/* the figures start after ramp_time, as fio's */
	uint64_t measured = r->start_ns ? r->start_ns + r->ramp_ns : 0;
	double secs;

	if (measured > 0 && end_ns > measured) {
		res->runtime_usec = (end_ns - measured) / NSEC_PER_USEC;
	}
	secs = (double)(end_ns > measured ? end_ns - measured : 1) / (double)NSEC_PER_SEC;
	for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
		res->op[op].iops = r->start_ns ? (double)res->op[op].ops / secs : 0;
		res->op[op].bw_bytes = r->start_ns ? (double)res->op[op].bytes / secs : 0;
	}
	if (res->error == 0 && run_is_cancelled(r)) {
		res->error = -ECANCELED;
		set_message(res->message, sizeof(res->message), "cancelled");
	}
	if (res->error == 0 && data_ops == 0) {
		res->error = -EIO;
		set_message(res->message, sizeof(res->message), "no I/O completed on %s", r->target);
	}
	res->success = res->error == 0;
}

static void *run_main(void *userdata)
{
	struct run *r = userdata;
	struct probe_result *res;
	uint64_t end_ns = 0;
	int n_jobs, k;

	/* the result is built off-lock and published at the end */
	res = malloc(sizeof(*res));
	if (!res) {
		pthread_mutex_lock(&r->lock);
		r->result.error = -ENOMEM;
		set_message(r->result.message, sizeof(r->result.message), "out of memory");
		r->phase = PHASE_DONE;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
		thread_done(r);
		run_unref(r);
		return NULL;
	}
	probe_result_init(res);
	res->start_realtime_usec = now_usec(CLOCK_REALTIME);

	k = run_prepare(r, res);
	n_jobs = k < 0 ? k : run_start_jobs(r, res);
	if (k < 0 || n_jobs < 0) {
		res->error = k < 0 ? k : n_jobs;
		if (res->message[0] == '\0') {
			char e[96];

			set_message(res->message, sizeof(res->message), "%s: %s", r->target,
				    probefile_strerror(res->error, e, sizeof(e)));
		}
		res->op[probe_rw_reads(r->rw) ? PROBE_OP_READ : PROBE_OP_WRITE]
		    .errors[probe_error_reason_from_errno(res->error)]++;
		n_jobs = 0;
	}

	pthread_mutex_lock(&r->lock);
	while (r->n_ready < (unsigned)n_jobs && !r->is_cancelled) {
		pthread_cond_wait(&r->cond, &r->lock);
	}
	r->go = n_jobs > 0 && !r->is_cancelled;
	for (int i = 0; i < n_jobs; i++) {
		if (r->jobs[i].setup_error != 0) {
			r->go = false;
		}
	}
	if (r->go) {
		/* all contexts and buffers are ready: start the clock for all */
		struct itimerspec deadline;

		r->start_ns = now_nsec(CLOCK_MONOTONIC);
		deadline = (struct itimerspec){.it_value = ns_to_timespec(r->start_ns + r->timeout_ns)};
		timerfd_settime(r->wake_fd, TFD_TIMER_ABSTIME, &deadline, NULL);
		res->start_realtime_usec = now_usec(CLOCK_REALTIME);
		r->phase = PHASE_IO;
	}
	r->is_released = true;
	pthread_cond_broadcast(&r->cond);
	while (r->n_finished < (unsigned)n_jobs) {
		pthread_cond_wait(&r->cond, &r->lock);
	}
	pthread_mutex_unlock(&r->lock);

	if (n_jobs > 0) {
		run_merge(r, (unsigned)n_jobs, res, &end_ns);
		if (r->end_fsync && probe_rw_writes(r->rw) && res->error == 0 && !run_is_cancelled(r)) {
			run_end_fsync(r, res, &end_ns);
		}
	}
	run_finish(r, res, end_ns);

	pthread_mutex_lock(&r->lock);
	r->result = *res;
	r->phase = PHASE_DONE;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	free(res);
	thread_done(r);
	run_unref(r);
	return NULL;
}

/* Public API ------------------------------------------------------------- */

int probe_engine_check(enum probe_engine engine, char *msg, size_t len)
{
	return engine == PROBE_ENGINE_IO_URING ? engine_uring_check(msg, len) : engine_libaio_check(msg, len);
}

/* The keys a run reads, copied (the config may be freed while it runs). */
static void run_copy_keys(struct run *r, const struct probe_config *pc, const struct probe_options *o)
{
	r->rw = pc->rw;
	r->bs = pc->bs;
	r->size = pc->size;
	r->runtime_ns = pc->runtime_usec * NSEC_PER_USEC;
	r->ramp_ns = pc->ramp_usec * NSEC_PER_USEC;
	r->number_ios = pc->number_ios;
	r->rate_iops = pc->rate_iops;
	r->rate_bytes = pc->rate_bytes;
	/* not time based: stop after io_size (or size) * loops, known once the
	 * target is open */
	r->io_limit = pc->time_based ? 0 : UINT64_MAX;
	r->timeout_ns = (o && o->timeout_usec ? o->timeout_usec : probe_timeout_usec(pc)) * NSEC_PER_USEC;
	/* sync and psync measure one I/O at a time: libaio at depth 1 */
	r->ops = pc->ioengine == PROBE_ENGINE_IO_URING ? &engine_uring_ops : &engine_libaio_ops;
	r->iodepth =
	    pc->iodepth > 0 && pc->ioengine != PROBE_ENGINE_SYNC && pc->ioengine != PROBE_ENGINE_PSYNC
		? pc->iodepth
		: 1;
	r->numjobs = pc->numjobs > 0 ? pc->numjobs : 1;
	r->rwmixread = pc->rwmixread;
	r->fsync_every = pc->fsync;
	r->end_fsync = pc->end_fsync;
	/* 0 and unset: fio's default, one at a time */
	r->batch_submit = pc->iodepth_batch > 0 ? pc->iodepth_batch : 1;
	r->complete_min = pc->iodepth_batch_complete_min;
	r->complete_max = pc->iodepth_batch_complete_max;
	r->layout_pc = *pc;
	r->layout_pc.name = r->layout_pc.directory = r->layout_pc.filename = NULL;
}

static int run_new(const struct probe_config *pc, const struct probe_options *o, struct run **ret)
{
	struct run *r;

	r = calloc(1, sizeof(*r));
	if (!r) {
		return -ENOMEM;
	}
	r->refcount = 1;
	r->wake_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (r->wake_fd < 0) {
		int k = -errno;

		free(r);
		return k;
	}
	pthread_mutex_init(&r->lock, NULL);
	cond_init_monotonic(&r->cond);

	r->name = strdup(pc->name ? pc->name : "probe");
	r->directory = pc->directory ? strdup(pc->directory) : NULL;
	r->filename = pc->filename ? strdup(pc->filename) : NULL;
	r->sysfs = strdup(o && o->sysfs ? o->sysfs : "/sys");
	r->n_fds = pc->filename || pc->nrfiles == 0 ? 1 : pc->nrfiles;
	r->fds = malloc(r->n_fds * sizeof(*r->fds));
	if (!r->name || !r->sysfs || !r->fds || (pc->directory && !r->directory) ||
	    (pc->filename && !r->filename)) {
		run_unref(r);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < r->n_fds; i++) {
		r->fds[i] = -1;
	}
	if (r->filename) {
		snprintf(r->target, sizeof(r->target), "%s", r->filename);
	} else if (r->n_fds > 1) {
		snprintf(r->target, sizeof(r->target), "%s/" PROBEFILE_DIR "/%s.{0..%u}.dat", r->directory,
			 r->name, r->n_fds - 1);
	} else {
		snprintf(r->target, sizeof(r->target), "%s/" PROBEFILE_DIR "/%s.dat", r->directory, r->name);
	}
	run_copy_keys(r, pc, o);
	r->seed = o && o->seed ? o->seed : 0;
	r->own_flow =
	    (struct probe_flow){.id = pc->wl.flow_id, .total_weight = (uint64_t)pc->wl.flow * pc->numjobs};
	r->flow = !pc->wl.flow ? NULL : o && o->flow ? o->flow : &r->own_flow;
	r->directory_dev = o ? o->directory_dev : 0;
	if (r->seed == 0 && getrandom(&r->seed, sizeof(r->seed), GRND_NONBLOCK) != sizeof(r->seed)) {
		r->seed = now_nsec(CLOCK_MONOTONIC) ^ ((uint64_t)getpid() << 32);
	}
	probe_result_init(&r->result);
	*ret = r;
	return 0;
}

int probe_start(const struct probe_config *pc, const struct probe_options *o, struct probe_run **ret)
{
	struct run *r = NULL;
	int k, e;

	if (!pc->directory && !pc->filename) {
		return -EINVAL;
	}
	if (pc->bs == 0 || (!pc->directory && pc->size > 0 && pc->size < pc->bs) ||
	    (pc->directory && pc->size < pc->bs)) {
		return -EINVAL;
	}
	k = run_new(pc, o, &r);
	if (k < 0) {
		return k;
	}
	r->prepare_deadline_ns = now_nsec(CLOCK_MONOTONIC) + PREPARE_BUDGET_NS;
	if (pc->directory) {
		r->prepare_deadline_ns += pc->size / LAYOUT_MIN_BYTES_PER_SEC * NSEC_PER_SEC;
	}
	run_ref(r);
	e = thread_spawn(r, run_main, r);
	if (e != 0) {
		run_unref(r);
		run_unref(r);
		return -e;
	}
	*ret = (struct probe_run *)r;
	return 0;
}

void probe_cancel(struct probe_run *run)
{
	struct run *r = (struct run *)run;

	if (!r) {
		return;
	}
	pthread_mutex_lock(&r->lock);
	run_cancel_locked(r);
	pthread_mutex_unlock(&r->lock);
}

void probe_wait(struct probe_run *run, struct probe_result *ret)
{
	struct run *r = (struct run *)run;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		uint64_t now = now_nsec(CLOCK_MONOTONIC), deadline;
		struct timespec ts;

		if (r->phase == PHASE_DONE) {
			*ret = r->result;
			break;
		}
		deadline = r->phase == PHASE_PREPARE ? r->prepare_deadline_ns + GRACE_NS
						     : r->start_ns + r->timeout_ns + GRACE_NS;
		if (r->is_cancelled && r->cancel_ns + GRACE_NS < deadline) {
			deadline = r->cancel_ns + GRACE_NS;
		}
		if (now >= deadline) {
			/* the threads are stuck in the kernel: report without them;
			 * they finish and free themselves when it lets go */
			bool was_cancelled = r->is_cancelled;

			probe_result_init(ret);
			ret->start_realtime_usec = now_usec(CLOCK_REALTIME);
			ret->error = was_cancelled ? -ECANCELED : -ETIMEDOUT;
			ret->op[probe_rw_reads(r->rw) ? PROBE_OP_READ : PROBE_OP_WRITE]
			    .errors[PROBE_ERR_TIMEOUT] = was_cancelled ? 0 : 1;
			set_message(ret->message, sizeof(ret->message),
				    was_cancelled ? "cancelled; %s did not stop its I/O in time"
						  : "timed out: %s did not answer within the run's budget",
				    r->target);
			run_cancel_locked(r);
			run_abandon(r);
			break;
		}
		ts = ns_to_timespec(deadline);
		pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	}
	pthread_mutex_unlock(&r->lock);
}

bool probe_run_has_threads(struct probe_run *run)
{
	struct run *r = (struct run *)run;

	/* every thread holds a reference; the handle holds the last one */
	return __atomic_load_n(&r->refcount, __ATOMIC_ACQUIRE) > 1;
}

struct probe_run *probe_run_free(struct probe_run *run)
{
	struct run *r = (struct run *)run;

	if (!r) {
		return NULL;
	}
	pthread_mutex_lock(&r->lock);
	if (r->phase != PHASE_DONE) {
		/* nobody waits for it any more: stop it */
		run_cancel_locked(r);
	}
	pthread_mutex_unlock(&r->lock);
	run_unref(r);
	return NULL;
}

int probe_run(const struct probe_config *pc, struct probe_result *ret)
{
	struct probe_run *run = NULL;
	int k;

	k = probe_start(pc, NULL, &run);
	if (k < 0) {
		return k;
	}
	probe_wait(run, ret);
	probe_run_free(run);
	return 0;
}
