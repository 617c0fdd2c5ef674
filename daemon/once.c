/* --once: the probes as a one-shot fio-like benchmark. */
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
#include "render_json.h"

static json_t *job_to_json(const struct probe_config *pc, const struct probe_result *res)
{
	json_t *o = probe_result_to_json(res);

	if (!o) {
		return NULL;
	}
	/* the job's own parameters first, as fio's "job options" */
	if (json_object_set_new(o, "jobname", render_json_string(pc->name)) < 0 ||
	    json_object_set_new(o, "target",
				render_json_string(pc->directory ? pc->directory : pc->filename)) < 0 ||
	    json_object_set_new(
		o, "job options",
		json_pack("{s:s, s:I, s:I, s:i, s:i, s:s, s:i, s:i, s:I, s:I, s:I}", "rw",
			  probe_rw_to_string(pc->rw), "bs", (json_int_t)pc->bs, "size", (json_int_t)pc->size,
			  "iodepth", (int)pc->iodepth, "numjobs", (int)pc->numjobs, "ioengine",
			  probe_engine_to_string(pc->ioengine), "rwmixread", (int)pc->rwmixread, "fsync",
			  (int)pc->fsync, "runtime_usec", (json_int_t)pc->runtime_usec, "number_ios",
			  (json_int_t)pc->number_ios, "rate_iops", (json_int_t)pc->rate_iops)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int once_run(const struct config *cfg, const char *sysfs, FILE *out)
{
	struct probe_options opts = {.sysfs = sysfs};
	struct probe_result *res;
	json_t *root, *jobs;
	struct timespec ts;
	bool is_all_ok = true;
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

	for (size_t i = 0; i < cfg->n_probes; i++) {
		const struct probe_config *pc = &cfg->probes[i];
		struct probe_run *run = NULL;

		r = probe_start(pc, &opts, &run);
		if (r < 0) {
			log_error_errno(r, "[%s]: cannot start the probe: %m", pc->name);
			is_all_ok = false;
			continue;
		}
		probe_wait(run, res);
		probe_run_free(run);
		if (!res->success) {
			log_error("[%s]: %s", pc->name, res->message);
			is_all_ok = false;
		}
		if (json_array_append_new(jobs, job_to_json(pc, res)) < 0) {
			log_error_errno(-ENOMEM, "Out of memory");
			is_all_ok = false;
		}
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
