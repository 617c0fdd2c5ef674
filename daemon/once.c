/* --once: a job file run as fio runs it, once, printing fio-shaped JSON.
 * Jobs between two stonewalls run together (startdelay after their group's
 * start), each with its own runtime, or until it has moved io_size bytes
 * `loops` times when it has no runtime. */
#include "once.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include <jansson.h>

#include "iopsd-build.h"
#include "json_probe.h"
#include "log.h"
#include "macro.h"
#include "probe.h"
#include "timeutil.h"

/* A run without runtime ends when its I/O is done, as in fio; the limit only
 * stops one on a device that never answers. */
#define ONCE_UNTIMED_LIMIT_USEC (24ULL * 3600ULL * USEC_PER_SEC)

static json_t *job_options_to_json(const struct probe_config *pc)
{
	return json_pack("{s:s, s:I, s:I, s:i, s:i, s:i, s:s, s:i, s:i, s:I, s:I, s:I, s:I, s:b, s:i, s:I}",
			 "rw", probe_rw_to_string(pc->rw), "bs", (json_int_t)pc->bs, "size",
			 (json_int_t)pc->size, "nrfiles", (int)pc->nrfiles, "iodepth", (int)pc->iodepth,
			 "numjobs", (int)pc->numjobs, "ioengine", probe_engine_to_string(pc->ioengine),
			 "rwmixread", (int)pc->rwmixread, "fsync", (int)pc->fsync, "runtime_usec",
			 (json_int_t)pc->runtime_usec, "number_ios", (json_int_t)pc->number_ios, "rate_iops",
			 (json_int_t)pc->rate_iops, "ramp_time_usec", (json_int_t)pc->ramp_usec, "time_based",
			 pc->time_based, "loops", (int)pc->loops, "rate", (json_int_t)pc->rate_bytes);
}

static json_t *job_to_json(const struct probe_config *pc, unsigned groupid, const struct probe_result *res)
{
	json_t *o = probe_result_to_json(res);

	if (!o) {
		return NULL;
	}
	/* the job's own parameters first, as fio's "job options" */
	if (json_object_set_new(o, "jobname", json_string(pc->name)) < 0 ||
	    json_object_set_new(o, "groupid", json_integer(groupid)) < 0 ||
	    json_object_set_new(o, "target", json_string(pc->directory ? pc->directory : pc->filename)) < 0 ||
	    json_object_set_new(o, "job options", job_options_to_json(pc)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The job as fio would run it: a job without runtime= (and not time based)
 * runs until its I/O is done rather than for iopsd's default second. */
static void once_job(const struct probe_config *pc, struct probe_config *ret, struct probe_options *o)
{
	*ret = *pc;
	if (!pc->lines.runtime && !pc->time_based && !pc->ceiling) {
		ret->runtime_usec = 0;
	}
	o->timeout_usec = ret->runtime_usec ? 0 : ONCE_UNTIMED_LIMIT_USEC;
}

/* Jobs [first, end) form a group: the next stonewall starts another. */
static size_t group_end(const struct config *cfg, size_t first)
{
	size_t end = first + 1;

	while (end < cfg->n_probes && !cfg->probes[end].stonewall) {
		end++;
	}
	return end;
}

static void sleep_until(uint64_t usec)
{
	struct timespec ts = timespec_from_usec(usec);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
	}
}

/* Start the group's jobs in the order of their startdelay. */
static void start_group(const struct config *cfg, size_t first, size_t end, const char *sysfs,
			struct probe_run **runs)
{
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	bool started[CONFIG_MAX_PROBES] = {false};

	for (size_t n = first; n < end; n++) {
		size_t next = end;
		struct probe_options opts = {.sysfs = sysfs};
		struct probe_config job;
		int r;

		for (size_t i = first; i < end; i++) {
			if (!started[i] && (next == end || cfg->probes[i].startdelay_usec <
							       cfg->probes[next].startdelay_usec)) {
				next = i;
			}
		}
		started[next] = true;
		sleep_until(t0 + cfg->probes[next].startdelay_usec);
		once_job(&cfg->probes[next], &job, &opts);
		r = probe_start(&job, &opts, &runs[next]);
		if (r < 0) {
			log_error_errno(r, "[%s]: cannot start the probe: %m", job.name);
			runs[next] = NULL;
		}
	}
}

/* Run one group; append its jobs to `jobs` in file order. */
static bool run_group(const struct config *cfg, size_t first, size_t end, unsigned groupid, const char *sysfs,
		      json_t *jobs, struct probe_result *res)
{
	struct probe_run *runs[CONFIG_MAX_PROBES] = {NULL};
	bool is_all_ok = true;

	start_group(cfg, first, end, sysfs, runs);
	for (size_t i = first; i < end; i++) {
		const struct probe_config *pc = &cfg->probes[i];

		if (!runs[i]) {
			is_all_ok = false;
			continue;
		}
		probe_wait(runs[i], res);
		probe_run_free(runs[i]);
		if (!res->success) {
			log_error("[%s]: %s", pc->name, res->message);
			is_all_ok = false;
		}
		if (json_array_append_new(jobs, job_to_json(pc, groupid, res)) < 0) {
			log_error_errno(-ENOMEM, "Out of memory");
			is_all_ok = false;
		}
	}
	/* as fio waits for a group's processes: the next group (or the exit)
	 * comes after this one's threads have torn down their engines */
	if (!probe_threads_wait(PROBE_THREADS_WAIT_USEC)) {
		log_warning("Group %u: I/O still pending in the kernel after %u s, going on without it.",
			    groupid, (unsigned)(PROBE_THREADS_WAIT_USEC / USEC_PER_SEC));
	}
	return is_all_ok;
}

int once_run(const struct config *cfg, const char *sysfs, FILE *out)
{
	struct probe_result *res;
	json_t *root, *jobs;
	struct timespec ts;
	bool is_all_ok = true;
	unsigned groupid = 0;
	int r;

	res = malloc(sizeof(*res));
	root = json_object();
	jobs = json_array();
	if (!res || !root || !jobs || json_object_set_new(root, "jobs", jobs) < 0) {
		free(res);
		json_decref(root);
		log_error_errno(-ENOMEM, "Out of memory");
		return EXIT_FAILURE;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	json_object_set_new(root, "iopsd version", json_string("iopsd-" IOPSD_VERSION));
	json_object_set_new(root, "timestamp", json_integer((json_int_t)ts.tv_sec));
	json_object_set_new(root, "timestamp_ms",
			    json_integer((json_int_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000));

	for (size_t first = 0, end; first < cfg->n_probes; first = end, groupid++) {
		end = group_end(cfg, first);
		is_all_ok &= run_group(cfg, first, end, groupid, sysfs, jobs, res);
	}
	free(res);
	r = json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
	fputc('\n', out);
	json_decref(root);
	if (r < 0 || fflush(out) != 0) {
		log_error("Failed to write the results.");
		return EXIT_FAILURE;
	}
	return is_all_ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
