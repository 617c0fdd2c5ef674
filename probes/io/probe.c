/* The probe's public API (probe.h): start, cancel, wait for and free a
 * run, the one-shot probe_run(), and the pure I/O maths the engine and the
 * tests share. A run has a run thread (run.c) and one thread per job
 * (job.c); the caller of probe_wait() only waits on a condition variable
 * with a deadline, so it never blocks longer than the run's budget,
 * whatever the device does. */
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
#include "sysfs.h"
#include "timeutil.h"

uint64_t probe_rng_next(uint64_t *state)
{
	return splitmix64_next(state);
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

unsigned probe_logical_block_size(const char *sysfs, dev_t dev)
{
	char dir[PATH_MAX], buf[32];
	unsigned v;

	/* a partition's queue/ is its disk's */
	if (sysfs_devnum_dir(sysfs, major(dev), minor(dev), dir, sizeof(dir)) == 0 &&
	    (sysfs_attr_read(dir, "queue/logical_block_size", buf, sizeof(buf)) >= 0 ||
	     sysfs_attr_read(dir, "../queue/logical_block_size", buf, sizeof(buf)) >= 0) &&
	    probe_parse_block_size(buf, &v) == 0) {
		return v;
	}
	return 512;
}

int probe_engine_check(enum probe_engine engine, char *msg, size_t len)
{
	return engine == PROBE_ENGINE_IO_URING ? engine_uring_check(msg, len) : engine_libaio_check(msg, len);
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
	r->prepare_start_ns = now_nsec(CLOCK_MONOTONIC);
	r->layout_deadline_ns = r->prepare_start_ns + PREPARE_BUDGET_NS;
	if (pc->directory) {
		r->layout_deadline_ns += pc->size / LAYOUT_MIN_BYTES_PER_SEC * NSEC_PER_SEC;
	}
	r->prepare_deadline_ns = r->prepare_start_ns + OPEN_BUDGET_NS;
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

/* The result of a run whose threads did not report in time: where it hung.
 * Caller holds the lock. */
static void wait_fail_locked(const struct run *r, struct probe_result *ret, bool was_cancelled)
{
	if (was_cancelled) {
		probe_result_fail(ret, r->rw, -ECANCELED, false, "cancelled; %s did not stop its I/O in time",
				  r->target);
	} else if (r->phase == PHASE_PREPARE && !r->is_laying_out) {
		probe_result_fail(ret, r->rw, -ETIMEDOUT, true,
				  "timed out: opening %s did not answer within %" PRIu64 " s", r->target,
				  (uint64_t)(OPEN_BUDGET_NS / NSEC_PER_SEC));
	} else if (r->phase == PHASE_PREPARE) {
		probe_result_fail(ret, r->rw, -ETIMEDOUT, true,
				  "timed out: laying out %s did not answer within %" PRIu64 " s", r->target,
				  (r->layout_deadline_ns - r->prepare_start_ns) / NSEC_PER_SEC);
	} else {
		probe_result_fail(ret, r->rw, -ETIMEDOUT, true,
				  "timed out: %s did not answer within the run's budget", r->target);
	}
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
			wait_fail_locked(r, ret, was_cancelled);
			run_cancel_locked(r);
			run_abandon(r);
			break;
		}
		ts = timespec_from_nsec(deadline);
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

bool probe_run_is_stuck(struct probe_run *run)
{
	return run_is_abandoned((struct run *)run) && probe_run_has_threads(run);
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
