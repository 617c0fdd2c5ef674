/* The process-wide reaper of the run and job threads. */
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

int thread_spawn(struct run *r, void *(*fn)(void *), void *arg)
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
void thread_done(struct run *r)
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
void run_abandon(struct run *r)
{
	pthread_mutex_lock(&threads_lock);
	if (!r->is_abandoned) {
		r->is_abandoned = true;
		threads_live -= r->n_threads;
		pthread_cond_broadcast(&threads_cond);
	}
	pthread_mutex_unlock(&threads_lock);
}

bool run_is_abandoned(struct run *r)
{
	bool is_abandoned;

	pthread_mutex_lock(&threads_lock);
	is_abandoned = r->is_abandoned;
	pthread_mutex_unlock(&threads_lock);
	return is_abandoned;
}

bool probe_threads_wait(uint64_t timeout_usec)
{
	uint64_t deadline = now_nsec(CLOCK_MONOTONIC) + timeout_usec * NSEC_PER_USEC;
	struct timespec ts = timespec_from_nsec(deadline);
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
