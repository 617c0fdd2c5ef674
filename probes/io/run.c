/* A probe run: its run thread opens and lays out the target, starts the
 * jobs, merges their results and reports; and the run's lifecycle
 * (created, cancelled, destroyed). */
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

bool run_is_cancelled(struct run *r)
{
	return __atomic_load_n(&r->is_cancelled, __ATOMIC_RELAXED);
}

/* Mark cancelled and wake every waiter. Caller holds r->lock. */
void run_cancel_locked(struct run *r)
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
	for (size_t i = 0; i < r->n_keep; i++) {
		free(r->keep[i].name);
	}
	free(r->keep);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

DEFINE_REFCOUNT(struct run, run, run_destroy);

/* Asked before each layout chunk: the first call ends the open, and the
 * run's deadline becomes the layout's. */
static bool layout_should_stop(void *userdata)
{
	struct run *r = userdata;
	uint64_t deadline;

	pthread_mutex_lock(&r->lock);
	if (!r->is_laying_out) {
		r->is_laying_out = true;
		r->prepare_deadline_ns = r->layout_deadline_ns;
	}
	deadline = r->prepare_deadline_ns;
	pthread_mutex_unlock(&r->lock);
	return run_is_cancelled(r) || now_nsec(CLOCK_MONOTONIC) >= deadline;
}

/* The logical block size of device dev, which the target is on: the
 * topology's when the caller passed it for that device, else sysfs's. */
static unsigned run_block_size(const struct run *r, dev_t dev)
{
	if (r->logical_block_size != 0 && r->block_size_dev == dev) {
		return r->logical_block_size;
	}
	return probe_logical_block_size(r->sysfs, dev);
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
		errstr_set(res->message, sizeof(res->message), 0,
			   "bs=%" PRIu64 " (or an offset) is not a multiple of the logical block size (%u "
			   "bytes) of the device under %s",
			   bad ? bad : r->bs, lbs, r->target);
		return -EINVAL;
	}
	return 0;
}

/* Whether a probe of probe_options.keep owns file `stem`. */
static bool run_keeps(const char *stem, void *userdata)
{
	const struct run *r = userdata;

	for (size_t i = 0; i < r->n_keep; i++) {
		const struct probe_config pc = {.name = r->keep[i].name, .nrfiles = r->keep[i].nrfiles};

		if (config_probe_owns_file(&pc, stem)) {
			return true;
		}
	}
	return false;
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
	if (r->keep) {
		/* the files of probes no longer configured, as asked */
		k = probefile_remove_strays(dfd, run_keeps, r);
		res->has_swept = true;
		res->n_strays = k > 0 ? (unsigned)k : 0;
	}
	for (unsigned i = 0; i < r->n_fds; i++) {
		snprintf(name, sizeof(name), r->n_fds > 1 ? "%s.%u" : "%s", r->name, i);
		k = probefile_open_at(dfd, r->directory, name, file_size, probe_rw_writes(r->rw), r->seed + i,
				      layout_should_stop, r, res->message, sizeof(res->message), &pf);
		if (k == -ECANCELED && !run_is_cancelled(r)) {
			k = -ETIMEDOUT;
			errstr_set(res->message, sizeof(res->message), 0,
				   "laying out %s took longer than %" PRIu64 " s", r->target,
				   (r->layout_deadline_ns - r->prepare_start_ns) / NSEC_PER_SEC);
		}
		if (k == -EMFILE) {
			errstr_set(res->message, sizeof(res->message), 0,
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
		errstr_set(res->message, sizeof(res->message), 0,
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
		errstr_set(res->message, sizeof(res->message), 0,
			   "%s has %" PRIu64 " bytes to probe, less than bs*numjobs=%" PRIu64, r->target,
			   layout.region, r->gen.bs_max * r->numjobs);
		return -EINVAL;
	}
	if (fstat(r->fds[0], &st) < 0) {
		return -errno;
	}
	res->target_dev = r->filename ? st.st_rdev : st.st_dev;
	k = run_check_block_size(r, res, run_block_size(r, r->filename ? st.st_rdev : st.st_dev));
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

		errstr_set(res->message, sizeof(res->message), 0, "cannot start job threads: %s",
			   probefile_strerror(e, b, sizeof(b)));
	}
	return e != 0 ? -e : (int)n;
}

static void run_merge(struct run *r, unsigned n_jobs, struct probe_result *res, uint64_t *ret_end_ns)
{
	uint64_t end = r->start_ns;

	res->ss = r->ss; /* the jobs have ended: no tick writes it now */
	for (unsigned i = 0; i < n_jobs; i++) {
		struct job *j = &r->jobs[i];

		for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
			probe_op_result_add(&res->op[op], &j->op[op]);
		}
		fiostat_job_merge(&res->fio, &j->fio);
		if (j->lat.qd > res->fio.latency_depth) {
			res->fio.latency_depth = j->lat.qd; /* the deepest job's */
		}
		if (j->last_ns > end) {
			end = j->last_ns;
		}
		if (res->error == 0 && j->setup_error != 0) {
			char e[96];

			res->error = j->setup_error;
			res->op[probe_rw_reads(r->rw) ? PROBE_OP_READ : PROBE_OP_WRITE]
			    .errors[probe_error_reason_from_errno(j->setup_error)]++;
			if (j->message[0] != '\0') {
				errstr_set(res->message, sizeof(res->message), 0, "cannot set up job %u: %s",
					   i, j->message);
			} else {
				errstr_set(res->message, sizeof(res->message), 0, "cannot set up job %u: %s",
					   i, probefile_strerror(j->setup_error, e, sizeof(e)));
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
			errstr_set(res->message, sizeof(res->message), 0, "end_fsync of %s failed: %s",
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
	uint64_t lat = __atomic_load_n(&r->lat_measure_ns, __ATOMIC_RELAXED);
	double secs;

	/* latency_target: the figures are the last window's, at the depth found */
	if (lat > measured) {
		measured = lat;
	}

	if (measured > 0 && end_ns > measured) {
		res->runtime_usec = (end_ns - measured) / NSEC_PER_USEC;
	}
	res->end_monotonic_usec = r->start_ns ? end_ns / NSEC_PER_USEC : 0;
	secs = (double)(end_ns > measured ? end_ns - measured : 1) / (double)NSEC_PER_SEC;
	for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
		res->op[op].iops = r->start_ns ? (double)res->op[op].ops / secs : 0;
		res->op[op].bw_bytes = r->start_ns ? (double)res->op[op].bytes / secs : 0;
	}
	if (res->error == 0 && run_is_cancelled(r)) {
		res->error = -ECANCELED;
		errstr_set(res->message, sizeof(res->message), 0, "cancelled");
	}
	if (res->error == 0 && data_ops == 0) {
		res->error = -EIO;
		errstr_set(res->message, sizeof(res->message), 0, "no I/O completed on %s", r->target);
	}
	res->success = res->error == 0;
}

/* Wait for the n_jobs jobs to be ready, let them go (all at once, the
 * clock started for all) or stop them when one could not set up, and wait
 * for them to finish. */
static void run_release_jobs(struct run *r, int n_jobs, struct probe_result *res)
{
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
		deadline = (struct itimerspec){.it_value = timespec_from_nsec(r->start_ns + r->timeout_ns)};
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
}

void *run_main(void *userdata)
{
	struct run *r = userdata;
	struct probe_result *res;
	uint64_t end_ns = 0;
	int n_jobs, k;

	/* the result is built off-lock and published at the end */
	res = malloc(sizeof(*res));
	if (!res) {
		pthread_mutex_lock(&r->lock);
		probe_result_fail(&r->result, r->rw, -ENOMEM, false, "out of memory");
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
		int err = k < 0 ? k : n_jobs;
		char e[96];

		probe_result_fail(res, r->rw, err, true, res->message[0] == '\0' ? "%s: %s" : NULL, r->target,
				  probefile_strerror(err, e, sizeof(e)));
		n_jobs = 0;
	}

	run_release_jobs(r, n_jobs, res);

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

/* Copy probe_options.keep (the names: the caller's config may go). */
static int run_copy_keep(struct run *r, const struct probe_options *o)
{
	if (!o || !o->keep) {
		return 0;
	}
	r->keep = calloc(o->n_keep ? o->n_keep : 1, sizeof(*r->keep));
	if (!r->keep) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < o->n_keep; i++) {
		r->keep[i].name = strdup(o->keep[i]->name);
		if (!r->keep[i].name) {
			return -ENOMEM;
		}
		r->keep[i].nrfiles = o->keep[i]->nrfiles;
		r->n_keep = i + 1;
	}
	return 0;
}

/* The target the run reports: the device or file given, else its probe
 * file(s) in the directory. */
static void run_format_target(struct run *r)
{
	if (r->filename) {
		snprintf(r->target, sizeof(r->target), "%s", r->filename);
	} else if (r->n_fds > 1) {
		snprintf(r->target, sizeof(r->target), "%s/" PROBEFILE_DIR "/%s.{0..%u}.dat", r->directory,
			 r->name, r->n_fds - 1);
	} else {
		snprintf(r->target, sizeof(r->target), "%s/" PROBEFILE_DIR "/%s.dat", r->directory, r->name);
	}
}

int run_new(const struct probe_config *pc, const struct probe_options *o, struct run **ret)
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
	run_format_target(r);
	run_copy_keys(r, pc, o);
	r->seed = o && o->seed ? o->seed : 0;
	r->own_flow =
	    (struct probe_flow){.id = pc->wl.flow_id, .total_weight = (uint64_t)pc->wl.flow * pc->numjobs};
	r->flow = !pc->wl.flow ? NULL : o && o->flow ? o->flow : &r->own_flow;
	steady_init(&r->ss, &pc->wl);
	if (run_copy_keep(r, o) < 0) {
		run_unref(r);
		return -ENOMEM;
	}
	r->directory_dev = o ? o->directory_dev : 0;
	r->block_size_dev = o ? o->block_size_dev : 0;
	r->logical_block_size = o ? o->logical_block_size : 0;
	if (r->seed == 0 && getrandom(&r->seed, sizeof(r->seed), GRND_NONBLOCK) != sizeof(r->seed)) {
		r->seed = now_nsec(CLOCK_MONOTONIC) ^ ((uint64_t)getpid() << 32);
	}
	probe_result_init(&r->result);
	*ret = r;
	return 0;
}
