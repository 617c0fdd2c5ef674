/* The CPU watcher of a pinned job. A pinned job cannot leave its CPU when
 * other work takes it, and every completion's wakeup then waits behind that
 * work; so when, in each of WATCH_STRIKES windows of WATCH_NS in a row, it
 * spent more than a quarter of the time runnable but not running, and
 * WATCH_WAIT_NS or more per wakeup, it is let go to every CPU the process
 * may use, for the rest of the run. The threshold sits between a free CPU's
 * wakeup and one behind a busy loop, under CFS and EEVDF alike; the figures
 * are in bench/README.md (Probe engine against fio, the raw device). */
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

/* Stop watching the job's CPU (job_watch_cpu()). */
void job_unwatch(struct job *j)
{
	if (j->schedstat_fd >= 0) {
		close(j->schedstat_fd);
		j->schedstat_fd = -1;
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

void job_watch_start(struct job *j, uint64_t now)
{
	j->watch_ns = now;
	if (j->schedstat_fd >= 0 && !read_schedstat(j->schedstat_fd, &j->watch_wait_ns, &j->watch_slices)) {
		job_unwatch(j);
	}
}

void job_watch_cpu(struct job *j, uint64_t now)
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
