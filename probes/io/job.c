/* A job thread: its engine context (libaio or io_uring, engine_*.c), slots
 * and histograms, and the loop that submits, paces and reaps its I/O. */
#include "probe-internal.h"

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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "fileio.h"
#include "iogen.h"
#include "probefile.h"
#include "errstr.h"
#include "refcount.h"
#include "splitmix.h"
#include "timeutil.h"

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
	iogen_buf_job_init(&r->buf, &j->buf, j->index);
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
		job_fill_buffer(j, s, io.offset);
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
		job_ss_count(j, (uint64_t)want);
		o->ops++;
		o->bytes += (uint64_t)want;
		histogram_record(&o->lat, t - s->submit_ns);
		if (s->op != PROBE_OP_FSYNC) {
			fiostat_record_io(&o->fio, &j->fio, s->submit_ns - s->prep_ns, t - s->submit_ns);
			job_lat_io(j, t - s->prep_ns);
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

/* The kernel refused the batch's I/O at `done` with n (-errno): the job
 * fails with its reason, and the slot goes back, out of the batch. */
static void submit_refused(struct job *j, unsigned done, int n)
{
	struct slot *s = j->batch[done];
	char e[96];

	j->op[s->op].errors[probe_error_reason_from_errno(n)]++;
	if (n == -EINVAL) {
		job_fail(j, n,
			 "%s at offset %" PRIu64 " of %s refused: %s; bs=%" PRIu64 " may not suit the device",
			 probe_op_to_string(s->op), s->offset, j->run->target,
			 probefile_strerror(n, e, sizeof(e)), s->len);
	} else {
		job_fail(j, n, "submitting a %s to %s failed: %s", probe_op_to_string(s->op), j->run->target,
			 probefile_strerror(n, e, sizeof(e)));
	}
	j->free_slots[j->n_free++] = s;
	/* drop it from the batch and go on with the rest */
	memmove(j->batch + done, j->batch + done + 1, (j->n_batch - done - 1) * sizeof(*j->batch));
	j->n_batch--;
}

/* Submit the batch (`inflight` already in the kernel); what the kernel does
 * not take stays in it (EAGAIN). Returns the number submitted. */
static unsigned job_submit(struct job *j, unsigned inflight)
{
	unsigned done = 0;
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
		submit_refused(j, done, n);
	}
	memmove(j->batch, j->batch + done, (j->n_batch - done) * sizeof(*j->batch));
	j->n_batch -= done;
	return done;
}

/* Sleep until `until` (CLOCK_MONOTONIC ns) or a cancel. */
static void job_pace_wait(struct job *j, uint64_t until)
{
	struct run *r = j->run;
	struct timespec ts = timespec_from_nsec(until);

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

/* Fill the batch as far as the queue depth, the pace and number_ios allow;
 * an fsync=N fsync runs here, once the N writes before it completed. */
static void job_fill_batch(struct job *j, struct io_loop *l)
{
	struct run *r = j->run;

	while (l->is_issuing && l->inflight + j->n_batch < job_lat_depth(j) &&
	       job_may_queue(j, l->inflight)) {
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
			job_pace_wait(j, job_think_spin(j, l->stop_at));
			job_think_done(j);
			l->now = now_nsec(CLOCK_MONOTONIC);
			continue;
		}
		if (job_budget_spent(j, l->issued) || job_flow_held(j, l->now, &l->due)) {
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
		job_flow_issued(j);
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
		/* fio reaps one completion at a time by default
		 * (iodepth_batch_complete_max) and asks about thinktime after
		 * each: a pause falls due at the first that completes its blocks */
		(void)job_think_due(j, l->now);
	}
	fiostat_mark_complete(&j->fio, reaped);
	job_sample(j, l->now);
	job_ss_tick(j, l->now);
	job_lat_check(j, l->now);
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
				     __atomic_load_n(&r->ss_stop, __ATOMIC_ACQUIRE) || j->lat.is_done ||
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

void *job_main(void *userdata)
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
		j->run_t0_ns = now_nsec(CLOCK_MONOTONIC);
		j->fio.interval_ns = r->start_ns + r->ramp_ns;
		j->poisson_due_ns = r->start_ns;
		j->think_ns = r->start_ns;
		job_lat_init(j, r->start_ns + r->ramp_ns);
		job_rusage(j, -1);
		job_loop(j);
		job_rusage(j, 1);
		j->fio.run_msec = (now_nsec(CLOCK_MONOTONIC) - j->run_t0_ns) / NSEC_PER_MSEC;
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
