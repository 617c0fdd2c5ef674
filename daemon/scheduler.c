/* Probe scheduling: a thread per probe sleeping on a CLOCK_MONOTONIC
 * condition variable until its next run, so that stop wakes everything at
 * once; a per-disk busy flag under the same lock serialises runs. */
#include "scheduler.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/sysmacros.h>

#include "log.h"
#include "macro.h"
#include "pins.h"
#include "probe.h"
#include "targets.h"
#include "timeutil.h"

struct disk_group {
	dev_t disk;
	bool is_busy;
};

struct sched_probe {
	struct scheduler *s;
	size_t index; /* its place in the stagger of first runs */
	const struct probe_config *pc;
	struct probe_identity *id; /* a reference */
	pthread_t thread;
	bool has_thread;
	struct probe_run *run; /* under s->lock: the run in progress */
	/* set and cleared under s->lock (its siblings look at it): a run
	 * reported without its threads (timed out, or cancelled by a reload)
	 * while they are still in the kernel */
	struct probe_run *stuck;
	dev_t fs_dev; /* under s->lock: the filesystem (or device) its runs last reached */
	bool was_failing;
	int last_error;	     /* the error of the last failure logged */
	dev_t directory_dev; /* the filesystem of its directory at the first success */
	uint64_t n_failed;   /* failed runs since the last success */
	bool sweeps_strays;  /* the first generation: its first run removes removed probes' files */
};

/* How a probe stood when the scheduler stopped for a reload, handed to the
 * next generation's probe of the same name and target: its failure (so
 * that the same fault is not logged again), the filesystem its directory
 * is pinned to, and a stuck run (so that a reload does not start another
 * run on a device that has not answered the last one). */
struct failure_carry {
	char *name;
	char *target;
	bool was_failing;
	int last_error;
	uint64_t n_failed;
	dev_t directory_dev;
	dev_t fs_dev;
	struct probe_run *stuck;
};

struct scheduler {
	scheduler_done_fn done;
	void *done_userdata;
	int wake_fd;
	const char *sysfs;
	scheduler_gate_fn gate;
	void *gate_userdata;
	struct pin_store *pins; /* not owned */

	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; stop and disk release broadcast it */
	bool is_stopping;
	uint64_t start_usec;
	struct sched_probe *probes;
	size_t n_probes;
	struct disk_group *groups; /* at most one per probe */
	size_t n_groups;
	struct failure_carry *carried; /* from the last stop, by probe name */
	size_t n_carried;
	bool has_started; /* a generation ran already: this start is a reload */
};

static void carry_free(struct scheduler *s)
{
	for (size_t i = 0; i < s->n_carried; i++) {
		free(s->carried[i].name);
		free(s->carried[i].target);
		/* a probe the new configuration does not have: let its run go */
		probe_run_free(s->carried[i].stuck);
	}
	free(s->carried);
	s->carried = NULL;
	s->n_carried = 0;
}

/* Remember how the probes stand (their config is still alive); takes
 * their stuck runs. */
static void carry_save(struct scheduler *s)
{
	carry_free(s);
	s->carried = calloc(s->n_probes ? s->n_probes : 1, sizeof(*s->carried));
	for (size_t i = 0; s->carried && i < s->n_probes; i++) {
		struct sched_probe *p = &s->probes[i];
		struct failure_carry *c = &s->carried[s->n_carried];

		if (!p->was_failing && !p->stuck && !p->directory_dev && !p->fs_dev) {
			continue;
		}
		c->name = strdup(p->pc->name);
		c->target = strdup(p->id->target);
		if (!c->name || !c->target) {
			free(c->name);
			free(c->target);
			c->name = c->target = NULL;
			continue;
		}
		c->was_failing = p->was_failing;
		c->last_error = p->last_error;
		c->n_failed = p->n_failed;
		c->directory_dev = p->directory_dev;
		c->fs_dev = p->fs_dev;
		c->stuck = TAKE_PTR(p->stuck);
		s->n_carried++;
	}
}

static void carry_restore(struct scheduler *s, struct sched_probe *p)
{
	for (size_t i = 0; i < s->n_carried; i++) {
		struct failure_carry *c = &s->carried[i];

		if (strcmp(c->name, p->pc->name) == 0 && strcmp(c->target, p->id->target) == 0) {
			p->was_failing = c->was_failing;
			p->last_error = c->last_error;
			p->n_failed = c->n_failed;
			p->directory_dev = c->directory_dev;
			p->fs_dev = c->fs_dev;
			p->stuck = TAKE_PTR(c->stuck);
			return;
		}
	}
}

/* Sleep until `until` (monotonic usec). Caller holds the lock. Returns
 * false when the scheduler is stopping. */
static bool wait_until_locked(struct scheduler *s, uint64_t until)
{
	struct timespec ts = timespec_from_usec(until);

	while (!s->is_stopping && now_usec(CLOCK_MONOTONIC) < until) {
		if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) == ETIMEDOUT) {
			break;
		}
	}
	return !s->is_stopping;
}

/* The group of `disk`, created on first use. Caller holds the lock. */
static struct disk_group *group_of_locked(struct scheduler *s, dev_t disk)
{
	for (size_t i = 0; i < s->n_groups; i++) {
		if (s->groups[i].disk == disk) {
			return &s->groups[i];
		}
	}
	if (s->n_groups >= s->n_probes) {
		return NULL;
	}
	s->groups[s->n_groups] = (struct disk_group){.disk = disk};
	return &s->groups[s->n_groups++];
}

/* Wait until no other probe runs on the disk of `p`, then claim it.
 * Returns the claimed group (NULL when the probe may overlap or its disk is
 * unknown), or sets *ret_stopping. */
static struct disk_group *claim_disk(struct sched_probe *p, bool *ret_stopping)
{
	struct scheduler *s = p->s;
	struct disk_group *g;
	dev_t disk = 0;

	*ret_stopping = false;
	if (!probe_identity_device(p->id, NULL, NULL)) {
		/* not placed by the mount table: by a stat() here, on this
		 * probe's thread (the main loop makes no filesystem call) */
		targets_resolve_identity(p->id);
	}
	if (p->pc->allow_overlap || !probe_identity_device(p->id, NULL, &disk) || disk == 0) {
		return NULL;
	}
	pthread_mutex_lock(&s->lock);
	g = group_of_locked(s, disk);
	while (g && g->is_busy && !s->is_stopping) {
		pthread_cond_wait(&s->cond, &s->lock);
	}
	if (s->is_stopping) {
		*ret_stopping = true;
		g = NULL;
	} else if (g) {
		g->is_busy = true;
	}
	pthread_mutex_unlock(&s->lock);
	return g;
}

static void release_disk(struct scheduler *s, struct disk_group *g)
{
	if (!g) {
		return;
	}
	pthread_mutex_lock(&s->lock);
	g->is_busy = false;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* A sibling of p whose timed-out run is still in the kernel on the
 * filesystem (or device) p's runs reach: its name, or NULL. Caller holds
 * the lock, under which every probe's stuck run is set and cleared. */
static const char *hung_sibling_locked(const struct sched_probe *p)
{
	const struct scheduler *s = p->s;

	for (size_t i = 0; p->fs_dev != 0 && i < s->n_probes; i++) {
		const struct sched_probe *q = &s->probes[i];

		if (q != p && q->stuck && q->fs_dev == p->fs_dev && probe_run_has_threads(q->stuck)) {
			return q->pc->name;
		}
	}
	return NULL;
}

/* Whether p must not start a run: its own last run, or a sibling's on the
 * same filesystem, is still stuck in the kernel (new I/O would only pile
 * up behind it, and the run would hang for its whole budget while the
 * probe still showed its last success). Then *res says so, a timeout. */
static bool refuse_when_hung(struct sched_probe *p, struct probe_result *res)
{
	struct scheduler *s = p->s;
	struct probe_run *ended = NULL;
	const char *sibling = NULL;
	bool is_own_stuck = false;
	dev_t dev;

	pthread_mutex_lock(&s->lock);
	is_own_stuck = p->stuck && probe_run_has_threads(p->stuck);
	if (!is_own_stuck) {
		ended = TAKE_PTR(p->stuck);
		sibling = hung_sibling_locked(p);
	}
	dev = p->fs_dev;
	pthread_mutex_unlock(&s->lock);
	probe_run_free(ended);
	if (!is_own_stuck && !sibling) {
		return false;
	}
	probe_result_init(res);
	res->start_realtime_usec = now_usec(CLOCK_REALTIME);
	if (is_own_stuck) {
		probe_result_fail(
		    res, p->pc->rw, -ETIMEDOUT, true,
		    "timed out: the I/O of an earlier run is still pending, not starting another");
	} else {
		probe_result_fail(res, p->pc->rw, -ETIMEDOUT, true,
				  "timed out: the I/O of probe [%s] on the same filesystem (%u:%u) is still "
				  "pending, not starting another",
				  sibling, major(dev), minor(dev));
	}
	return true;
}

/* Keep p's new filesystem pin in the state directory, so that a restart
 * keeps it (local, and off the main loop: on the probe's thread). */
static void save_pin(const struct sched_probe *p)
{
	int r;

	if (!p->pc->directory || p->directory_dev == 0) {
		return;
	}
	r = pin_store_set(p->s->pins, p->pc->name, p->pc->directory, p->directory_dev);
	if (r < 0) {
		log_warning_errno(r,
				  "Probe [%s]: cannot keep its directory's filesystem in the state "
				  "directory: %m, ignoring.",
				  p->pc->name);
	}
}

/* The first run of the first generation, in p's directory, removes the
 * files of probes removed or renamed since the last start: on the run's
 * thread, within its open's budget (DIR may not answer; a reload then
 * does not wait for it). The probes of this generation in p's directory,
 * into opts (NULL: out of memory, no sweep this time). */
static const struct probe_config **strays_keep(const struct sched_probe *p, struct probe_options *opts)
{
	const struct probe_config **keep = calloc(p->s->n_probes, sizeof(*keep));

	for (size_t i = 0; keep && i < p->s->n_probes; i++) {
		const struct probe_config *pc = p->s->probes[i].pc;

		if (pc->directory && strcmp(pc->directory, p->pc->directory) == 0) {
			keep[opts->n_keep++] = pc;
		}
	}
	opts->keep = keep;
	return keep;
}

/* After a run that was asked to sweep: done, when it got to it. */
static void strays_swept(struct sched_probe *p, const struct probe_result *res)
{
	if (!p->sweeps_strays || !res->has_swept) {
		return;
	}
	p->sweeps_strays = false;
	if (res->n_strays > 0) {
		log_info("Probe [%s]: removed %u file(s) of probes no longer configured from %s/.iopsd.",
			 p->pc->name, res->n_strays, p->pc->directory);
	}
}

/* Run the probe once into *res. Returns false when the run was cancelled
 * by stop (its partial result is not reported). */
static bool run_once(struct sched_probe *p, struct probe_result *res)
{
	struct scheduler *s = p->s;
	/* a directory stays pinned to the filesystem it was first probed on:
	 * when its mount goes away the path names the filesystem underneath */
	struct probe_options opts = {.sysfs = s->sysfs, .directory_dev = p->directory_dev};
	_cleanup_free_ const struct probe_config **keep = NULL;
	struct probe_run *run = NULL;
	bool is_stopping;
	int r;

	/* the block size the topology read for the target's device */
	(void)probe_identity_block_size(p->id, &opts.block_size_dev, &opts.logical_block_size);
	if (refuse_when_hung(p, res)) {
		return true;
	}
	if (p->sweeps_strays) {
		keep = strays_keep(p, &opts);
	}
	r = probe_start(p->pc, &opts, &run);
	if (r < 0) {
		probe_result_init(res);
		probe_result_fail(res, p->pc->rw, r, false, "cannot start the probe: %s",
				  strerrordesc_np(-r) ? strerrordesc_np(-r) : "unknown error");
		return true;
	}
	pthread_mutex_lock(&s->lock);
	p->run = run;
	if (s->is_stopping) {
		probe_cancel(run);
	}
	pthread_mutex_unlock(&s->lock);

	probe_wait(run, res);

	pthread_mutex_lock(&s->lock);
	p->run = NULL;
	is_stopping = s->is_stopping;
	if (res->directory_dev != 0 || res->target_dev != 0) {
		p->fs_dev = res->directory_dev != 0 ? res->directory_dev : res->target_dev;
	}
	/* a run reported without its threads, timed out or cancelled by a
	 * reload, whose I/O is still in the kernel: kept (and carried to the
	 * next generation), so that no other run starts behind it */
	if (probe_run_is_stuck(run)) {
		p->stuck = TAKE_PTR(run);
	}
	pthread_mutex_unlock(&s->lock);
	probe_run_free(run);
	strays_swept(p, res);
	if (res->success && p->directory_dev == 0) {
		p->directory_dev = res->directory_dev;
		save_pin(p);
	}
	/* where the target is, found on this thread: the main loop places the
	 * probe from it without a filesystem call of its own */
	probe_identity_set_target_dev(p->id, res->target_dev);
	return !(is_stopping && res->error == -ECANCELED);
}

static void log_result(struct sched_probe *p, const struct probe_result *res)
{
	const char *name = p->pc->name;

	if (res->success) {
		if (p->was_failing) {
			log_info("Probe [%s] succeeds again after %" PRIu64 " failed run%s.", name,
				 p->n_failed, p->n_failed == 1 ? "" : "s");
		}
		log_debug("Probe [%s]: %.0f read IOPS, %.0f write IOPS, %.0f fsync/s in %" PRIu64 " ms", name,
			  res->op[PROBE_OP_READ].iops, res->op[PROBE_OP_WRITE].iops,
			  res->op[PROBE_OP_FSYNC].iops, res->runtime_usec / USEC_PER_MSEC);
		p->was_failing = false;
		p->n_failed = 0;
		return;
	}
	/* once per fault, not once per interval: keyed on the error, not on
	 * the message, which carries figures (offsets, free bytes) that change
	 * from run to run while the fault stays the same */
	if (!p->was_failing || p->last_error != res->error) {
		log_warning("Probe [%s] failed: %s", name, res->message);
	}
	p->was_failing = true;
	p->last_error = res->error;
	p->n_failed++;
}

/* The first slot of the plan after `now`: the one after `planned`, or a
 * later one when `now` has passed it. */
static uint64_t next_slot(uint64_t planned, uint64_t interval, uint64_t now)
{
	planned += interval;
	while (planned <= now) {
		planned += interval;
	}
	return planned;
}

/* Run once and hand the result on: the done callback, the main loop's
 * wakeup, the log. */
static void run_and_report(struct sched_probe *p, struct probe_result *res)
{
	struct scheduler *s = p->s;

	if (!run_once(p, res)) {
		return;
	}
	s->done(s->done_userdata, p->id, res);
	if (write(s->wake_fd, &(uint64_t){1}, sizeof(uint64_t)) < 0 && errno != EAGAIN) {
		log_debug_errno(errno, "Failed to wake the main loop: %m");
	}
	log_result(p, res);
}

static void *probe_thread(void *userdata)
{
	struct sched_probe *p = userdata;
	struct scheduler *s = p->s;
	const uint64_t interval = p->pc->interval_usec > 0 ? p->pc->interval_usec : USEC_PER_SEC;
	struct probe_result *res;
	uint64_t planned, when;

	res = malloc(sizeof(*res));
	if (!res) {
		log_error("Probe [%s]: out of memory, not scheduling it.", p->pc->name);
		return NULL;
	}
	/* stagger first runs over the interval so that probes do not start
	 * together (and queue up on a shared disk) */
	planned = s->start_usec + interval * p->index / (s->n_probes ? s->n_probes : 1);
	when = planned;
	pthread_mutex_lock(&s->lock);
	while (wait_until_locked(s, when)) {
		struct disk_group *g;
		bool is_stopping;
		uint64_t now;

		pthread_mutex_unlock(&s->lock);
		if (s->gate) {
			uint64_t delay = s->gate(s->gate_userdata, p->id, p->pc);

			if (delay > 0) {
				now = now_usec(CLOCK_MONOTONIC);
				when = now + delay;
				if (when >= planned + interval) {
					/* still gated at the next slot: skip this one */
					planned = next_slot(planned, interval, now);
					when = planned;
				}
				pthread_mutex_lock(&s->lock);
				continue;
			}
		}
		g = claim_disk(p, &is_stopping);
		if (is_stopping) {
			pthread_mutex_lock(&s->lock);
			break;
		}
		run_and_report(p, res);
		release_disk(s, g);

		/* keep the cadence of the plan; skip slots a long run missed */
		now = now_usec(CLOCK_MONOTONIC);
		planned = next_slot(planned, interval, now);
		when = planned;
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	free(res);
	return NULL;
}

int scheduler_new(scheduler_done_fn done, void *userdata, int wake_fd, const char *sysfs,
		  struct scheduler **ret)
{
	struct scheduler *s;

	s = calloc(1, sizeof(*s));
	if (!s) {
		return -ENOMEM;
	}
	s->done = done;
	s->done_userdata = userdata;
	s->wake_fd = wake_fd;
	s->sysfs = sysfs ? sysfs : "/sys";
	pthread_mutex_init(&s->lock, NULL);
	cond_init_monotonic(&s->cond);
	*ret = s;
	return 0;
}

void scheduler_set_pins(struct scheduler *s, struct pin_store *pins)
{
	s->pins = pins;
}

/* Whether a probe of this generation has pin p's name and directory. */
static bool is_configured_pin(const struct pin *pin, void *userdata)
{
	const struct scheduler *s = userdata;

	for (size_t i = 0; i < s->n_probes; i++) {
		const struct probe_config *pc = s->probes[i].pc;

		if (pc->directory && strcmp(pc->name, pin->name) == 0 &&
		    strcmp(pc->directory, pin->directory) == 0) {
			return true;
		}
	}
	return false;
}

/* A probe the last generation did not hand over: its directory's pin from
 * the state directory (an earlier start on this boot). */
static void restore_pin(struct sched_probe *p)
{
	dev_t dev;

	if (p->directory_dev == 0 && p->pc->directory &&
	    pin_store_get(p->s->pins, p->pc->name, p->pc->directory, &dev)) {
		p->directory_dev = dev;
		if (p->fs_dev == 0) {
			p->fs_dev = dev;
		}
	}
}

void scheduler_set_gate(struct scheduler *s, scheduler_gate_fn fn, void *userdata)
{
	s->gate = fn;
	s->gate_userdata = userdata;
}

int scheduler_start(struct scheduler *s, const struct config *cfg, struct probe_identity *const *ids)
{
	size_t n = cfg->n_probes;
	bool is_first = !s->has_started;
	int e;

	scheduler_stop(s);
	s->has_started = true;
	if (n == 0) {
		carry_free(s);
		return 0;
	}
	s->probes = calloc(n, sizeof(*s->probes));
	s->groups = calloc(n, sizeof(*s->groups));
	if (!s->probes || !s->groups) {
		free(s->probes);
		free(s->groups);
		s->probes = NULL;
		s->groups = NULL;
		return -ENOMEM;
	}
	s->n_probes = n;
	s->n_groups = 0;
	s->is_stopping = false;
	s->start_usec = now_usec(CLOCK_MONOTONIC);
	/* every probe is in place before any thread starts: a thread reads
	 * its siblings' configs (is_configured_file) */
	for (size_t i = 0; i < n; i++) {
		struct sched_probe *p = &s->probes[i];

		p->s = s;
		p->index = i;
		p->pc = &cfg->probes[i];
		p->id = probe_identity_ref(ids[i]);
		p->sweeps_strays = is_first && p->pc->directory;
		carry_restore(s, p);
		restore_pin(p);
	}
	pin_store_retain(s->pins, is_configured_pin, s);
	for (size_t i = 0; i < n; i++) {
		struct sched_probe *p = &s->probes[i];

		e = pthread_create(&p->thread, NULL, probe_thread, p);
		if (e != 0) {
			scheduler_stop(s);
			return -e;
		}
		p->has_thread = true;
	}
	carry_free(s);
	return 0;
}

void scheduler_stop(struct scheduler *s)
{
	if (!s || !s->probes) {
		return;
	}
	pthread_mutex_lock(&s->lock);
	s->is_stopping = true;
	for (size_t i = 0; i < s->n_probes; i++) {
		if (s->probes[i].run) {
			probe_cancel(s->probes[i].run);
		}
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);

	for (size_t i = 0; i < s->n_probes; i++) {
		struct sched_probe *p = &s->probes[i];

		if (p->has_thread) {
			pthread_join(p->thread, NULL);
		}
	}
	carry_save(s);
	for (size_t i = 0; i < s->n_probes; i++) {
		/* a stuck run that could not be carried (out of memory) */
		probe_run_free(s->probes[i].stuck);
		probe_identity_unref(s->probes[i].id);
	}
	free(s->probes);
	free(s->groups);
	s->probes = NULL;
	s->groups = NULL;
	s->n_probes = 0;
	s->n_groups = 0;
}

struct scheduler *scheduler_free(struct scheduler *s)
{
	if (!s) {
		return NULL;
	}
	scheduler_stop(s);
	carry_free(s);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}
