/* Checks across the whole file: memory the configuration makes the daemon
 * allocate, runs that must fit their interval, [instance] and burst keys. */
#include "parser.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "units.h"

/* Checks across the whole file, after every section is known. */
static double mib(uint64_t bytes)
{
	return (double)bytes / (double)(1ULL << 20);
}

uint64_t config_probe_file_bytes(const struct probe_config *pc)
{
	uint64_t files = pc->filename ? 1 : pc->nrfiles;

	/* the run's fd, and a read and a write position per job */
	return files * (sizeof(int) + 2 * sizeof(uint64_t) * pc->numjobs);
}

/* Bounds on what a configuration makes the daemon allocate. */
static void check_memory_limits(struct parser *p)
{
	struct config *c = p->cfg;
	uint64_t interval = c->sample_interval_usec ? c->sample_interval_usec : USEC_PER_SEC;
	uint64_t ring = (c->history_usec + interval - 1) / interval * CONFIG_HISTORY_BYTES_PER_SAMPLE;
	uint64_t buffers = 0;
	char a[32], b[32];

	if (ring > c->max_history_memory) {
		parser_error(p, p->history_line,
			     "history=%s at sample_interval=%s needs %.1f MiB per device, more than "
			     "max_history_memory=%.1f MiB",
			     format_duration(a, sizeof(a), c->history_usec),
			     format_duration(b, sizeof(b), interval), mib(ring), mib(c->max_history_memory));
	}
	for (size_t i = 0; i < c->n_probes; i++) {
		const struct probe_config *pc = &c->probes[i];

		/* every job holds iodepth buffers of bs bytes while it runs, and
		 * a run a descriptor per file and each job its positions in it */
		buffers += pc->bs * pc->iodepth * pc->numjobs + config_probe_file_bytes(pc);
		if (buffers > c->max_probe_memory) {
			parser_error(
			    p, pc->line,
			    "[%s]: the probes up to here need %.1f MiB of I/O buffers and file state (bs * "
			    "iodepth * numjobs, and nrfiles * (4 + 16 * numjobs) bytes, summed), more than "
			    "max_probe_memory=%.1f MiB",
			    pc->name, mib(buffers), mib(c->max_probe_memory));
			break;
		}
	}
}

/* A probe that sets interval= itself must fit its run into it; one that
 * takes probe_interval's is fitted to it later (config_fit_schedule). */
static void check_interval(struct parser *p, const struct probe_config *pc)
{
	char a[32], b[32];

	if (pc->lines.interval == 0 || pc->runtime_usec + pc->ramp_usec <= pc->interval_usec) {
		return;
	}
	if (pc->ramp_usec) {
		char c[32];

		parser_error(p, pc->line,
			     "[%s]: ramp_time=%s plus runtime=%s is longer than interval=%s: a probe must "
			     "finish before its next run",
			     pc->name, format_duration(c, sizeof(c), pc->ramp_usec),
			     format_duration(a, sizeof(a), pc->runtime_usec),
			     format_duration(b, sizeof(b), pc->interval_usec));
		return;
	}
	parser_error(p, pc->line,
		     "[%s]: runtime=%s is longer than interval=%s: a probe must finish before its next run",
		     pc->name, format_duration(a, sizeof(a), pc->runtime_usec),
		     format_duration(b, sizeof(b), pc->interval_usec));
}

struct device_declared device_config_declared(const struct device_config *dc)
{
	return (struct device_declared){
	    .iops_limit = dc->iops_limit,
	    .throughput_limit = dc->throughput_limit,
	    .burst_iops = dc->burst_iops,
	    .burst_credits = dc->burst_credits,
	    .credit_rate = dc->credit_rate,
	    .provider = dc->provider,
	};
}

/* An explicit limit in a section with a volume_type= replaces the preset's
 * figure: a notice says so (--check-config prints the figures for the
 * volume's size). */
static void note_overrides(struct parser *p, const struct device_config *dc)
{
	static const struct {
		const char *key;
		size_t offset;
	} keys[] = {
	    {"iops_limit", offsetof(struct device_config, iops_limit)},
	    {"throughput_limit", offsetof(struct device_config, throughput_limit)},
	    {"iops_unit", offsetof(struct device_config, provider.iops_unit)},
	    {"burst_iops", offsetof(struct device_config, burst_iops)},
	};
	const char *type = volume_type_to_string((enum volume_type)dc->provider.volume_type);

	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		uint64_t v;

		memcpy(&v, (const char *)dc + keys[i].offset, sizeof(v));
		if (v) {
			(void)config_add_notice(p->cfg, dc->line,
						"[device %s]: %s= overrides the figure volume_type=%s gives",
						dc->name, keys[i].key, type);
		}
	}
}

/* Two probes in one directory must never share a file: [x] with nrfiles=2
 * writes x.0.dat and x.1.dat, which is [x.0]'s. */
static void check_probe_files(struct parser *p)
{
	const struct config *c = p->cfg;

	for (size_t j = 0; j < c->n_probes; j++) {
		const struct probe_config *b = &c->probes[j];

		for (size_t i = 0; b->directory && i < j; i++) {
			const struct probe_config *a = &c->probes[i];

			if (!a->directory || strcmp(a->directory, b->directory) != 0) {
				continue;
			}
			if ((a->nrfiles <= 1 && config_probe_owns_file(b, a->name)) ||
			    (b->nrfiles <= 1 && config_probe_owns_file(a, b->name))) {
				parser_error(
				    p, b->line,
				    "[%s]: its probe files in %s would be [%s]'s too (nrfiles= numbers "
				    "them NAME.0, NAME.1, ...): rename one",
				    b->name, b->directory, a->name);
			}
		}
	}
}

/* The preset's inputs need a volume_type=, and a type takes only its own:
 * derived for a placeholder size (the real one is known where the device
 * is), which is enough to refuse the keys that never go together. */
static void check_provider(struct parser *p, const struct device_config *dc)
{
	const struct device_provider *pv = &dc->provider;
	struct device_declared d = device_config_declared(dc);
	char notices[DEVICE_LIMITS_NOTICES_MAX][DEVICE_LIMITS_NOTICE_LEN];
	struct device_limits l;
	size_t n;
	const char *why = NULL;

	if (pv->volume_type < 0) {
		if (pv->iops || pv->throughput || pv->iops_per_gb) {
			parser_error(
			    p, dc->line,
			    "[device %s]: iops=, throughput= and iops_per_gb= are what a volume_type= was "
			    "provisioned with: give volume_type=, or iops_limit=/throughput_limit=",
			    dc->name);
		}
		return;
	}
	if (device_limits_resolve(&d, 1ULL << 40, &l, notices, &n, &why) < 0) {
		parser_error(p, dc->line, "[device %s]: volume_type=%s: %s", dc->name,
			     volume_type_to_string((enum volume_type)pv->volume_type), why);
		return;
	}
	note_overrides(p, dc);
}

/* fio numbers the jobs of a file in order (numjobs= clones after their
 * job): dedupe_global's working set is spread over all of them. */
static void number_jobs(struct config *c)
{
	unsigned n = 0;

	for (size_t i = 0; i < c->n_probes; i++) {
		c->probes[i].wl.dedupe_job_base = n;
		n += c->probes[i].numjobs;
	}
	for (size_t i = 0; i < c->n_probes; i++) {
		c->probes[i].wl.dedupe_jobs = n;
	}
}

void config_checks_run(struct parser *p)
{
	struct config *c = p->cfg;

	check_memory_limits(p);
	check_probe_files(p);
	number_jobs(c);
	for (size_t i = 0; i < c->n_probes; i++) {
		struct probe_config *pc = &c->probes[i];

		if (pc->interval_usec == 0) {
			pc->interval_usec = c->probe_interval_usec;
		}
		check_interval(p, pc);
	}
	if (c->instance.is_declared && !c->instance.iops_limit && !c->instance.throughput_limit) {
		parser_error(
		    p, c->instance.line,
		    "[instance] needs iops_limit or throughput_limit: the limits of the machine over all "
		    "its volumes");
	}
	for (size_t i = 0; i < c->n_devices; i++) {
		struct device_config *dc = &c->devices[i];
		bool any = dc->burst_iops || dc->burst_credits || dc->credit_rate > 0;
		bool all = dc->burst_iops && dc->burst_credits && dc->credit_rate > 0;

		if (any && !all) {
			parser_error(
			    p, dc->line,
			    "[device %s]: burst_iops, burst_credits and credit_rate go together: set "
			    "all three or none",
			    dc->name);
		}
		check_provider(p, dc);
		if (dc->ceiling_threshold == 0.0) {
			dc->ceiling_threshold = c->ceiling_threshold;
		}
	}
}
