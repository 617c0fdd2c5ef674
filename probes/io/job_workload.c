/* fio's workload keys in a job's loop (cmdprio, thinktime, flow, prio,
 * write content) and the side figures fio reports (interval samples, CPU
 * usage), kept out of job.c's submit and reap loop. */
#include "probe-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "timeutil.h"

/* ioprio_set(2)'s value of a class and level (linux/ioprio.h's
 * IOPRIO_PRIO_VALUE). */
#define PROBE_IOPRIO(cls, lvl) ((uint16_t)(((cls) << 13) | (lvl)))

/* cmdprio_bssplit: the shares of the entries of this I/O's size. */
static uint16_t cmdprio_split(struct job *j, int d, uint64_t len, unsigned cls, unsigned lvl)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;
	uint64_t x = probe_rng_below(&j->gen.rng, 100);

	for (unsigned i = 0; i < wl->n_cmdprio_split[d]; i++) {
		if (wl->cmdprio_split[d][i].bs != len) {
			continue;
		}
		if (x < wl->cmdprio_split[d][i].pct) {
			return wl->cmdprio_split[d][i].has_prio
				   ? PROBE_IOPRIO(wl->cmdprio_split[d][i].cls, wl->cmdprio_split[d][i].lvl)
				   : PROBE_IOPRIO(cls, lvl);
		}
		x -= wl->cmdprio_split[d][i].pct;
	}
	return 0;
}

/* cmdprio_percentage/cmdprio_bssplit: this I/O's own priority, 0 for the
 * thread's. Class and level default to the highest, as in fio. */
uint16_t job_cmdprio(struct job *j, int d, uint64_t len)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;
	unsigned cls = wl->has_cmdprio_class[d] ? wl->cmdprio_class[d] : 1;
	unsigned lvl = wl->has_cmdprio[d] ? wl->cmdprio[d] : 0;

	if (wl->n_cmdprio_split[d] > 0) {
		return cmdprio_split(j, d, len, cls, lvl);
	}
	if (wl->cmdprio_pct[d] == 0 || probe_rng_below(&j->gen.rng, 100) >= wl->cmdprio_pct[d]) {
		return 0;
	}
	return PROBE_IOPRIO(cls, lvl);
}

/* Whether fio's handle_thinktime() would pause now. As in fio,
 * thinktime_iotime without thinktime_blocks counts no blocks (the default
 * of 1 would pause after every I/O). */
static bool think_stalls(const struct job *j, uint64_t now, uint64_t count)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;
	uint64_t blocks = wl->thinktime_blocks ? wl->thinktime_blocks : 1;

	/* fio asks after it has queued an I/O: one at least between pauses */
	if (j->think_issued == j->think_issued_last) {
		return false;
	}
	if (wl->thinktime_iotime_usec) {
		if (now - j->think_ns >= wl->thinktime_iotime_usec * NSEC_PER_USEC) {
			return true;
		}
		if (wl->thinktime_blocks == 0) {
			return false;
		}
	}
	return count >= j->think_last + blocks;
}

/* thinktime: after thinktime_blocks I/Os (issued or completed, as
 * thinktime_blocks_type says) or thinktime_iotime of I/O. The count is
 * taken when the pause falls due, before the I/Os in flight complete, as
 * fio takes it: those count towards the next pause. */
bool job_think_due(struct job *j, uint64_t now)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;
	uint64_t count = wl->is_thinktime_issue ? j->think_issued : j->think_completed;

	if (wl->thinktime_usec == 0) {
		return false;
	}
	if (!j->is_think_due) {
		if (!think_stalls(j, now, count)) {
			return false;
		}
		j->is_think_due = true;
		j->think_mark = count;
	}
	return true;
}

/* As fio, neither the spin nor the sleep goes past the runtime. */
uint64_t job_think_spin(struct job *j, uint64_t stop_at)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;
	uint64_t t0 = now_nsec(CLOCK_MONOTONIC), end = t0 + wl->thinktime_usec * NSEC_PER_USEC;
	uint64_t spin =
	    wl->thinktime_spin_usec < wl->thinktime_usec ? wl->thinktime_spin_usec : wl->thinktime_usec;
	uint64_t spin_end = t0 + spin * NSEC_PER_USEC;

	if (spin_end > stop_at) {
		spin_end = stop_at;
	}
	while (now_nsec(CLOCK_MONOTONIC) < spin_end && !run_is_cancelled(j->run)) {
	}
	return end < stop_at ? end : stop_at;
}

void job_think_done(struct job *j)
{
	j->think_ns = now_nsec(CLOCK_MONOTONIC);
	j->think_last = j->think_mark;
	j->think_issued_last = j->think_issued;
	j->is_think_due = false;
}

/* flow: whether the job is ahead of its weight's share of its flow's I/Os
 * (fio's flow_threshold_exceeded()); it then waits flow_sleep, or a little
 * while its I/Os complete. */
bool job_flow_held(const struct job *j, uint64_t now, uint64_t *ret_due)
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
	*ret_due = now + (r->layout_pc.wl.flow_sleep_usec ? r->layout_pc.wl.flow_sleep_usec * NSEC_PER_USEC
							  : 50 * NSEC_PER_USEC);
	return true;
}

/* An I/O issued: thinktime's, flow's and rate_process=poisson's counts. */
void job_flow_issued(struct job *j)
{
	struct run *r = j->run;

	j->think_issued++;
	if (r->flow) {
		__atomic_fetch_add(&r->flow->counter, 1, __ATOMIC_RELAXED);
		j->flow_counter++;
	}
	if (r->layout_pc.wl.is_poisson) {
		j->poisson_due_ns += iogen_poisson_gap_ns(&j->gen.rng, r->rate_iops);
	}
}

/* prio and prioclass: the job thread's I/O priority, as fio 3.33 sets its
 * job's: the class best effort and the level 0 where one is not given
 * (prioclass=3 alone is idle level 0, as ioprio_get(2) shows on fio's). */
int job_set_ioprio(struct job *j)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;
	unsigned cls = wl->has_prioclass ? wl->prioclass : 2, lvl = wl->has_prio ? wl->prio : 0;

	if (!wl->has_prio && !wl->has_prioclass) {
		return 0;
	}
	/* IOPRIO_WHO_PROCESS (1) with 0: the calling thread */
	if (syscall(SYS_ioprio_set, 1, 0, (int)PROBE_IOPRIO(cls, lvl)) < 0) {
		int k = -errno;

		snprintf(j->message, sizeof(j->message), "prioclass=%u prio=%u: ioprio_set: %s%s", cls, lvl,
			 strerror(-k), k == -EPERM ? " (the realtime class needs CAP_SYS_ADMIN)" : "");
		return k;
	}
	return 0;
}

/* fio's bw and iops samples: one per direction per FIOSTAT_AVG_MSEC. */
void job_sample(struct job *j, uint64_t now)
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
void job_rusage(struct job *j, int sign)
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

/* A write's content: iopsd's own (every sector stamped: incompressible and
 * unique over the random buffer), or what fio's content keys ask. */
void job_fill_buffer(struct job *j, struct slot *s, uint64_t offset)
{
	struct run *r = j->run;
	uint64_t stamp = probe_rng_next(&j->gen.rng);

	if (iogen_buf_is_default(&r->buf)) {
		for (uint64_t i = 0; i < s->len; i += 512) {
			*(uint64_t *)((char *)s->buf + i) = (stamp ^ offset) + i;
		}
		return;
	}
	iogen_buf_fill(&r->buf, s->buf, s->len, iogen_buf_seed(&r->buf, &j->buf, &j->gen.rng, stamp));
}

/* ss=: a completed I/O, counted where the ticking job can read it. */
void job_ss_count(struct job *j, uint64_t bytes)
{
	if (j->run->ss.is_enabled) {
		__atomic_fetch_add(&j->ss_ios, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&j->ss_bytes, bytes, __ATOMIC_RELAXED);
	}
}

/* ss=: once a second (after ramp_time and ss_ramp) one job, whichever
 * gets there first, adds the run's second to the window; attained, the
 * jobs stop issuing, as fio's end. */
void job_ss_tick(struct job *j, uint64_t now)
{
	struct run *r = j->run;
	uint64_t next = __atomic_load_n(&r->ss_next_ns, __ATOMIC_ACQUIRE), ios = 0, bytes = 0;
	bool is_first = next == 0;

	if (!r->ss.is_enabled) {
		return;
	}
	if (is_first) {
		next = r->start_ns + r->ramp_ns + r->layout_pc.wl.ss_ramp_usec * NSEC_PER_USEC;
	}
	if (now < next ||
	    !__atomic_compare_exchange_n(&r->ss_next_ns, &(uint64_t){is_first ? 0 : next},
					 next + NSEC_PER_SEC, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		return;
	}
	for (unsigned i = 0; i < r->numjobs; i++) {
		ios += __atomic_load_n(&r->jobs[i].ss_ios, __ATOMIC_RELAXED);
		bytes += __atomic_load_n(&r->jobs[i].ss_bytes, __ATOMIC_RELAXED);
	}
	/* per second of the time since the last tick, as fio's rate_time */
	if (!is_first && now > r->ss_last_ns &&
	    steady_add(&r->ss, (ios - r->ss_ios) * NSEC_PER_SEC / (now - r->ss_last_ns),
		       (bytes - r->ss_bytes) * NSEC_PER_SEC / (now - r->ss_last_ns))) {
		__atomic_store_n(&r->ss_stop, true, __ATOMIC_RELEASE);
	}
	r->ss_ios = ios;
	r->ss_bytes = bytes;
	r->ss_last_ns = now;
}

/* latency_target: fio's search for the deepest queue (up to iodepth)
 * whose I/Os meet the target: from depth 1, doubling while a window
 * succeeds, bisecting once one fails; the same depth twice ends it with a
 * last window at it, whose figures are the report's. */
void job_lat_init(struct job *j, uint64_t now)
{
	j->lat.qd = j->run->layout_pc.wl.latency_target_usec ? 1 : j->depth;
	j->lat.qd_low = 1;
	j->lat.qd_high = j->depth;
	j->lat.window_ns = now;
}

unsigned job_lat_depth(const struct job *j)
{
	return j->lat.qd ? j->lat.qd : j->depth;
}

static void lat_new_cycle(struct job *j, uint64_t now)
{
	j->lat.window_ns = now;
	j->lat.window_ios = j->op[PROBE_OP_READ].ops + j->op[PROBE_OP_WRITE].ops;
	j->lat.failed = 0;
}

/* A window failed: back down between the last good depth and this one.
 * At depth 1 an I/O over the target (latency_percentile=100) fails the
 * job, as fio's; a window short of the percentile stays at 1. */
static void lat_failed(struct job *j, uint64_t now, bool is_fatal)
{
	if (j->lat.qd == 1 && !is_fatal) {
		lat_new_cycle(j, now);
		return;
	}
	if (j->lat.qd == 1) {
		j->lat.is_done = true;
		if (j->error == 0) {
			j->error = -ETIMEDOUT;
			snprintf(j->message, sizeof(j->message),
				 "latency_target=%" PRIu64 "us is not met even at queue depth 1 on %.128s",
				 j->run->layout_pc.wl.latency_target_usec, j->run->target);
		}
		return;
	}
	j->lat.qd_high = j->lat.qd;
	if (j->lat.qd == j->lat.qd_low) {
		j->lat.qd_low--;
	}
	j->lat.qd = (j->lat.qd + j->lat.qd_low) / 2;
	j->lat.stable = 0;
	lat_new_cycle(j, now);
}

/* The last window starts: its figures only are reported. */
static void lat_end_run(struct job *j, uint64_t now)
{
	uint64_t prev = __atomic_load_n(&j->run->lat_measure_ns, __ATOMIC_RELAXED);

	for (size_t op = PROBE_OP_READ; op <= PROBE_OP_WRITE; op++) {
		struct probe_op_result *o = &j->op[op];

		o->ops = o->bytes = 0;
		histogram_init(&o->lat);
		o->fio = (struct fiostat_dir){0};
	}
	j->fio = (struct fiostat_job){.interval_ns = now};
	/* fio's reset_all_stats(): job_runtime and the CPU figures are the
	 * last window's */
	j->run_t0_ns = now;
	job_rusage(j, -1);
	j->lat.is_end_run = true;
	while (prev < now && !__atomic_compare_exchange_n(&j->run->lat_measure_ns, &prev, now, false,
							  __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
	}
}

static void lat_success(struct job *j, uint64_t now)
{
	unsigned qd = j->lat.qd;

	j->lat.qd_low = qd;
	if (qd + 1 == j->lat.qd_high && ++j->lat.stable >= 3) {
		j->lat.qd_high++;
		j->lat.stable = 0;
	}
	j->lat.qd = j->lat.qd_high != j->depth ? (qd + j->lat.qd_high) / 2 : qd * 2;
	if (j->lat.qd > j->depth) {
		j->lat.qd = j->depth;
	}
	if (!j->run->layout_pc.wl.is_latency_run && j->lat.qd == qd) {
		if (j->lat.is_end_run) {
			j->lat.is_done = true;
		} else {
			lat_end_run(j, now);
		}
	}
	lat_new_cycle(j, now);
}

/* A completed I/O's latency (slat + clat) against the target. */
void job_lat_io(struct job *j, uint64_t lat_ns)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;

	if (!wl->latency_target_usec || lat_ns <= wl->latency_target_usec * NSEC_PER_USEC) {
		return;
	}
	if (wl->latency_percentile == 0 || wl->latency_percentile >= 100) {
		lat_failed(j, now_nsec(CLOCK_MONOTONIC), true);
	} else {
		j->lat.failed++;
	}
}

/* At the end of each latency_window: its share of I/Os within the target. */
void job_lat_check(struct job *j, uint64_t now)
{
	const struct probe_workload *wl = &j->run->layout_pc.wl;
	double pct = wl->latency_percentile > 0 ? wl->latency_percentile : 100;
	uint64_t ios;

	if (!wl->latency_target_usec || j->lat.is_done ||
	    now - j->lat.window_ns < wl->latency_window_usec * NSEC_PER_USEC) {
		return;
	}
	ios = j->op[PROBE_OP_READ].ops + j->op[PROBE_OP_WRITE].ops - j->lat.window_ios;
	if (ios == 0) {
		return;
	}
	if (100.0 * (double)(ios - j->lat.failed) / (double)ios >= pct) {
		lat_success(j, now);
	} else {
		lat_failed(j, now, false);
	}
}
