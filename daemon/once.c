/* --once: a job file run as fio runs it, once, printing fio's report.
 * Jobs between two stonewalls run together (startdelay after their group's
 * start), each with its own runtime, or until it has moved io_size bytes
 * `loops` times when it has no runtime. */
#include "once.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fio_json.h"
#include "fio_normal.h"
#include "fio_terse.h"
#include "iopsd-build.h"
#include "log.h"
#include "macro.h"
#include "once_disks.h"
#include "probe.h"
#include "probefile.h"
#include "timeutil.h"

/* A run without runtime ends when its I/O is done, as in fio; the limit only
 * stops one on a device that never answers. */
#define ONCE_UNTIMED_LIMIT_USEC (24ULL * 3600ULL * USEC_PER_SEC)

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

/* wait_for: the job of the group that job `i` waits for, or `end` when it
 * waits for none there (none asked, or its waitee ran in an earlier group:
 * it has ended, as fio's would have). */
static size_t group_waitee(const struct config *cfg, size_t first, size_t end, size_t i)
{
	const char *w = cfg->probes[i].wl.wait_for;

	for (size_t k = first; w[0] != '\0' && k < end; k++) {
		if (k != i && strcmp(cfg->probes[k].name, w) == 0) {
			return k;
		}
	}
	return end;
}

/* flow=: the group's jobs that share a flow_id share its counter, their
 * weights (each of numjobs) its total, as fio's jobs. flows[i] is job i's. */
static void group_flows(const struct config *cfg, size_t first, size_t end, struct probe_flow *flows)
{
	for (size_t i = first; i < end; i++) {
		const struct probe_workload *wl = &cfg->probes[i].wl;
		size_t k = first;

		while (k < i && !(cfg->probes[k].wl.flow && cfg->probes[k].wl.flow_id == wl->flow_id)) {
			k++;
		}
		flows[i] = (struct probe_flow){.id = wl->flow_id};
		if (wl->flow) {
			/* the first job of the flow holds it */
			flows[k].total_weight += (uint64_t)wl->flow * cfg->probes[i].numjobs;
		}
	}
}

static struct probe_flow *job_flow(const struct config *cfg, size_t first, size_t i, struct probe_flow *flows)
{
	for (size_t k = first; cfg->probes[i].wl.flow && k <= i; k++) {
		if (cfg->probes[k].wl.flow && cfg->probes[k].wl.flow_id == cfg->probes[i].wl.flow_id) {
			return &flows[k];
		}
	}
	return NULL;
}

static void start_job(const struct config *cfg, size_t i, const char *sysfs, struct probe_run **runs,
		      struct probe_flow *flow)
{
	struct probe_options opts = {.sysfs = sysfs, .flow = flow};
	struct probe_config job;
	int r;

	once_job(&cfg->probes[i], &job, &opts);
	r = probe_start(&job, &opts, &runs[i]);
	if (r < 0) {
		log_error_errno(r, "[%s]: cannot start the probe: %m", job.name);
		runs[i] = NULL;
	}
}

/* Start the group's jobs that wait for none of it, in the order of their
 * startdelay. */
static void start_group(const struct config *cfg, size_t first, size_t end, const char *sysfs,
			struct probe_run **runs, struct probe_flow *flows)
{
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	bool started[CONFIG_MAX_PROBES] = {false};

	for (;;) {
		size_t next = end;

		for (size_t i = first; i < end; i++) {
			if (!started[i] && group_waitee(cfg, first, end, i) == end &&
			    (next == end ||
			     cfg->probes[i].startdelay_usec < cfg->probes[next].startdelay_usec)) {
				next = i;
			}
		}
		if (next == end) {
			return;
		}
		started[next] = true;
		sleep_until(t0 + cfg->probes[next].startdelay_usec);
		start_job(cfg, next, sysfs, runs, job_flow(cfg, first, next, flows));
	}
}

/* Wait for job i's run and keep its result. */
static bool reap_job(const struct config *cfg, size_t i, struct probe_run **runs, struct probe_result *res)
{
	if (!runs[i]) {
		probe_result_init(&res[i]);
		res[i].error = -EAGAIN;
		snprintf(res[i].message, sizeof(res[i].message), "cannot start the probe");
		return false;
	}
	probe_wait(runs[i], &res[i]);
	probe_run_free(runs[i]);
	runs[i] = NULL;
	if (!res[i].success) {
		log_error("[%s]: %s", cfg->probes[i].name, res[i].message);
	}
	return res[i].success;
}

/* Run one group; its results into res[first, end). A job with wait_for
 * starts when its waitee's run has ended. */
static bool run_group(const struct config *cfg, size_t first, size_t end, unsigned groupid, const char *sysfs,
		      struct probe_result *res)
{
	struct probe_run *runs[CONFIG_MAX_PROBES] = {NULL};
	struct probe_flow flows[CONFIG_MAX_PROBES];
	bool done[CONFIG_MAX_PROBES] = {false}, started[CONFIG_MAX_PROBES] = {false}, is_all_ok = true;

	group_flows(cfg, first, end, flows);
	start_group(cfg, first, end, sysfs, runs, flows);
	for (size_t i = first; i < end; i++) {
		started[i] = group_waitee(cfg, first, end, i) == end;
	}
	for (size_t i = first; i < end;) {
		if (done[i] || !started[i]) {
			i++;
			continue;
		}
		is_all_ok &= reap_job(cfg, i, runs, res);
		done[i] = true;
		for (size_t k = first; k < end; k++) {
			if (!started[k] && group_waitee(cfg, first, end, k) == i) {
				start_job(cfg, k, sysfs, runs, job_flow(cfg, first, k, flows));
				started[k] = true;
			}
		}
		i = first; /* a waiter may come before it in the file */
	}
	for (size_t i = first; i < end; i++) {
		if (!done[i]) {
			/* its waitee waits for it, in a ring */
			probe_result_init(&res[i]);
			res[i].error = -EDEADLK;
			snprintf(res[i].message, sizeof(res[i].message),
				 "wait_for=%s never ends: it waits for this job", cfg->probes[i].wl.wait_for);
			log_error("[%s]: %s", cfg->probes[i].name, res[i].message);
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

int once_output_formats_parse(const char *list, unsigned *ret)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {
	    {"normal", ONCE_OUTPUT_NORMAL},
	    {"terse", ONCE_OUTPUT_TERSE},
	    {"json", ONCE_OUTPUT_JSON},
	    {"json+", ONCE_OUTPUT_JSON_PLUS},
	};
	unsigned formats = 0;

	while (*list != '\0') {
		size_t n = strcspn(list, ","), i = 0;

		while (i < ELEMENTSOF(names) &&
		       (strlen(names[i].name) != n || strncmp(list, names[i].name, n) != 0)) {
			i++;
		}
		if (i == ELEMENTSOF(names)) {
			return -EINVAL;
		}
		formats |= names[i].bit;
		list += n + (list[n] == ',');
	}
	if (formats == 0) {
		return -EINVAL;
	}
	*ret = formats;
	return 0;
}

/* The report over the jobs' results, in each format asked for: terse,
 * then JSON (json+ when both are asked, as fio), then normal, as fio. */
static int write_report(const struct config *cfg, const struct probe_result *res,
			const struct fio_disk *disks, size_t n_disks, uint64_t start_usec,
			const struct once_output *o, FILE *out)
{
	struct fio_job jobs[CONFIG_MAX_PROBES];
	struct fio_report rep = {
	    .version = "iopsd-" IOPSD_VERSION,
	    .realtime_usec = now_usec(CLOCK_REALTIME),
	    .elapsed_sec = (now_usec(CLOCK_MONOTONIC) - start_usec + USEC_PER_SEC - 1) / USEC_PER_SEC,
	    .is_json_plus = o->formats & ONCE_OUTPUT_JSON_PLUS,
	    .jobs = jobs,
	    .n_jobs = cfg->n_probes,
	    .disks = disks,
	    .n_disks = n_disks,
	};
	unsigned groupid = 0;

	for (size_t i = 0; i < cfg->n_probes; i++) {
		const struct probe_config *pc = &cfg->probes[i];

		groupid += i > 0 && pc->stonewall;
		jobs[i] = (struct fio_job){pc, &res[i], pc->directory ? pc->directory : pc->filename, groupid,
					   (int)getpid()};
	}
	if (o->formats & ONCE_OUTPUT_TERSE) {
		fio_terse_write(&rep, out);
	}
	if (o->formats & (ONCE_OUTPUT_JSON | ONCE_OUTPUT_JSON_PLUS)) {
		json_auto_t *root = fio_json_report(&rep);

		if (!root || json_dumpf(root, out,
					JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) < 0) {
			return -ENOMEM;
		}
		fputc('\n', out);
	}
	if (o->formats & ONCE_OUTPUT_NORMAL) {
		fio_normal_write(&rep, out);
	}
	return fflush(out) == 0 ? 0 : -errno;
}

static bool is_not_owned(const char *stem, void *userdata)
{
	return !config_probe_owns_file(userdata, stem);
}

/* Whether each job that runs in the working directory (is_scratch) found
 * DIR/.iopsd there before the run: the run removes only what it made. */
static void note_scratch_dirs(const struct config *cfg, bool *had_dir)
{
	for (size_t i = 0; i < cfg->n_probes; i++) {
		const struct probe_config *pc = &cfg->probes[i];
		_cleanup_close_ int dfd = -1;

		if (!pc->is_scratch || !pc->directory) {
			continue;
		}
		dfd = open(pc->directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		had_dir[i] = dfd >= 0 && faccessat(dfd, PROBEFILE_DIR, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	}
}

/* The scratch jobs' probe files, and DIR/.iopsd when the run made it and
 * nothing else is in it: the working directory is left as it was. */
static void remove_scratch_files(const struct config *cfg, const bool *had_dir)
{
	for (size_t i = 0; i < cfg->n_probes; i++) {
		const struct probe_config *pc = &cfg->probes[i];
		_cleanup_close_ int dfd = -1;
		int r;

		if (!pc->is_scratch || !pc->directory) {
			continue;
		}
		dfd = open(pc->directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			log_warning_errno(-errno, "[%s]: cannot remove the probe files in %s: %m", pc->name,
					  pc->directory);
			continue;
		}
		if (faccessat(dfd, PROBEFILE_DIR, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
			continue; /* never made (a directory it could not write to, say) */
		}
		r = probefile_remove_strays(dfd, is_not_owned, (void *)pc);
		if (r < 0) {
			log_warning_errno(r,
					  "[%s]: cannot remove the probe files in %s/" PROBEFILE_DIR ": %m",
					  pc->name, pc->directory);
		}
		if (!had_dir[i] && unlinkat(dfd, PROBEFILE_DIR, AT_REMOVEDIR) < 0 && errno != ENOENT &&
		    errno != ENOTEMPTY) {
			log_warning_errno(-errno, "[%s]: cannot remove %s/" PROBEFILE_DIR ": %m", pc->name,
					  pc->directory);
		}
	}
}

/* Every group in turn, the disks sampled around them all. */
static bool run_all(const struct config *cfg, const struct once_output *o, FILE *out,
		    struct probe_result *res)
{
	uint64_t start = now_usec(CLOCK_MONOTONIC);
	struct once_disks *disks = once_disks_start(cfg, o->procfs, o->sysfs);
	_cleanup_free_ struct fio_disk *d = NULL;
	bool is_all_ok = true;
	unsigned groupid = 0;
	uint64_t io_end = 0;
	size_t n_disks;

	if (o->formats & ONCE_OUTPUT_NORMAL) {
		fio_normal_header(cfg, "iopsd-" IOPSD_VERSION, out);
		fflush(out);
	}
	for (size_t first = 0, end; first < cfg->n_probes; first = end, groupid++) {
		end = group_end(cfg, first);
		is_all_ok &= run_group(cfg, first, end, groupid, o->sysfs, res);
	}
	for (size_t i = 0; i < cfg->n_probes; i++) {
		io_end = res[i].end_monotonic_usec > io_end ? res[i].end_monotonic_usec : io_end;
	}
	/* as fio's: the disks up to the I/O's end, not the threads' teardown */
	n_disks = once_disks_finish(disks, cfg, io_end, &d);
	if (write_report(cfg, res, d, n_disks, start, o, out) < 0) {
		log_error("Failed to write the results.");
		return false;
	}
	return is_all_ok;
}

int once_run(const struct config *cfg, const struct once_output *o, FILE *out)
{
	_cleanup_free_ struct probe_result *res = calloc(cfg->n_probes ? cfg->n_probes : 1, sizeof(*res));
	_cleanup_fclose_ FILE *file = NULL;
	bool had_dir[CONFIG_MAX_PROBES] = {false};
	bool is_ok;

	if (!res) {
		log_error_errno(-ENOMEM, "Out of memory");
		return EXIT_FAILURE;
	}
	if (o->path) {
		file = fopen(o->path, "we");
		if (!file) {
			log_error_errno(-errno, "--output: cannot open '%s': %m", o->path);
			return EXIT_FAILURE;
		}
		out = file;
	}
	note_scratch_dirs(cfg, had_dir);
	is_ok = run_all(cfg, o, out, res);
	remove_scratch_files(cfg, had_dir);
	return is_ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
