/* Budget keys fitted to the probe schedule, one notice per fitted key. */
#include "fit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "macro.h"
#include "units.h"

/* "180s" rather than "3m": the notice repeats what the job file says. */
static const char *secs(char *buf, size_t len, uint64_t usec)
{
	if (usec % USEC_PER_SEC == 0) {
		snprintf(buf, len, "%" PRIu64 "s", usec / USEC_PER_SEC);
		return buf;
	}
	return format_duration(buf, len, usec);
}

/* The run the daemon gives a job whose own does not fit its interval. */
static uint64_t default_run_usec(const struct probe_config *pc)
{
	uint64_t run = pc->ceiling ? 5 * USEC_PER_SEC : USEC_PER_SEC;

	return run < pc->interval_usec ? run : pc->interval_usec / 2;
}

static int fit_length(struct config *c, struct probe_config *pc, const char *every)
{
	char a[32], b[32];
	uint64_t run = default_run_usec(pc);
	int r = 0;

	if (pc->runtime_usec + pc->ramp_usec <= pc->interval_usec) {
		return 0;
	}
	if (pc->lines.runtime && pc->runtime_usec > run) {
		r = config_add_notice(c, pc->lines.runtime, "[%s]: runtime=%s fitted to %s per run every %s",
				      pc->name, secs(a, sizeof(a), pc->runtime_usec), secs(b, sizeof(b), run),
				      every);
		pc->runtime_usec = run;
	}
	if (r == 0 && pc->ramp_usec > 0) {
		r = config_add_notice(
		    c, pc->lines.ramp_time,
		    "[%s]: ramp_time=%s fitted to none: a %s run every %s is measured whole", pc->name,
		    secs(a, sizeof(a), pc->ramp_usec), secs(b, sizeof(b), pc->runtime_usec), every);
		pc->ramp_usec = 0;
	}
	return r;
}

static int fit_probe(struct config *c, struct probe_config *pc)
{
	char every[32], a[32];
	int r;

	secs(every, sizeof(every), pc->interval_usec);
	r = fit_length(c, pc, every);
	if (r == 0 && pc->number_ios && !pc->lines.runtime) {
		pc->runtime_usec = default_run_usec(pc);
		r = config_add_notice(c, pc->lines.number_ios,
				      "[%s]: number_ios=%" PRIu64 " fitted: a run stops after %" PRIu64
				      " I/Os per job or %s, every %s",
				      pc->name, pc->number_ios, pc->number_ios,
				      secs(a, sizeof(a), pc->runtime_usec), every);
	}
	if (r == 0 && pc->lines.loops && pc->loops != 1) {
		r = config_add_notice(c, pc->lines.loops, "[%s]: loops=%u fitted to %s per run every %s",
				      pc->name, pc->loops, secs(a, sizeof(a), pc->runtime_usec), every);
	}
	if (r == 0 && pc->lines.time_based && !pc->time_based) {
		r = config_add_notice(
		    c, pc->lines.time_based,
		    "[%s]: time_based=0 fitted: every run lasts %s, not until io_size is done", pc->name,
		    secs(a, sizeof(a), pc->runtime_usec));
	}
	if (r == 0 && pc->startdelay_usec > 0) {
		r = config_add_notice(c, pc->lines.startdelay,
				      "[%s]: startdelay=%s fitted to the schedule: runs start every %s, "
				      "staggered with the other probes",
				      pc->name, secs(a, sizeof(a), pc->startdelay_usec), every);
	}
	pc->loops = 1;
	pc->time_based = true;
	pc->startdelay_usec = 0;
	return r;
}

int config_fit_schedule(struct config *c)
{
	for (size_t i = 0; i < c->n_probes; i++) {
		int r = fit_probe(c, &c->probes[i]);

		if (r < 0) {
			return r;
		}
	}
	return 0;
}
