/* /metrics: the probes' families, a table of {name, type, help, emitter}. */
#include "prom.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "histogram.h"
#include "latency_quantiles.h"
#include "macro.h"
#include "probe.h"

/* ---- probes ---- */

struct probe_family;
typedef void (*probe_emit_fn)(struct prom_writer *w, const struct probe_family *f,
			      const struct probe_state *p);

struct probe_family {
	const char *name;
	enum family_type type;
	const char *help;
	probe_emit_fn emit;
	/* emit_probe_counter: a uint64_t of struct probe_state;
	 * emit_op_total, emit_last_op_rate: a field of struct probe_op_result */
	size_t offset;
	bool data_only; /* not for fsync, which moves no data */
};

#define PROBE_STATE(field) .offset = offsetof(struct probe_state, field)
#define OP_RESULT(field)   .offset = offsetof(struct probe_op_result, field)

/* The ops a probe performs, in order. */
#define FOREACH_PROBE_OP(op, p)                                                                              \
	for (enum probe_op op = 0; op < _PROBE_OP_MAX; op++)                                                 \
		if (probe_state_does_op((p), op))

static void emit_probe_info(struct prom_writer *w, const struct probe_family *f, const struct probe_state *p)
{
	struct prom_label l[] = {
	    {"probe", p->name},
	    {"target", p->target},
	    {"device", p->device},
	    {"rw", probe_rw_to_string(p->rw)},
	};

	prom_sample(w, f->name, l, ELEMENTSOF(l), 1);
}

static void emit_probe_counter(struct prom_writer *w, const struct probe_family *f,
			       const struct probe_state *p)
{
	struct prom_label l[] = {{"probe", p->name}, {"target", p->target}};
	uint64_t v;

	memcpy(&v, (const char *)p + f->offset, sizeof(v));
	prom_sample_u64(w, f->name, l, 2, v);
}

/* A counter of each op since start. */
static void emit_op_total(struct prom_writer *w, const struct probe_family *f, const struct probe_state *p)
{
	FOREACH_PROBE_OP(op, p)
	{
		struct prom_label l[] = {
		    {"probe", p->name}, {"target", p->target}, {"op", probe_op_to_string(op)}};
		uint64_t v;

		if (f->data_only && op == PROBE_OP_FSYNC) {
			continue;
		}
		memcpy(&v, (const char *)&p->total[op] + f->offset, sizeof(v));
		prom_sample_u64(w, f->name, l, 3, v);
	}
}

static void emit_errors(struct prom_writer *w, const struct probe_family *f, const struct probe_state *p)
{
	FOREACH_PROBE_OP(op, p)
	{
		for (enum probe_error_reason r = 0; r < _PROBE_ERR_MAX; r++) {
			struct prom_label l[] = {
			    {"probe", p->name},
			    {"target", p->target},
			    {"op", probe_op_to_string(op)},
			    {"reason", probe_error_reason_to_string(r)},
			};

			prom_sample_u64(w, f->name, l, 4, p->total[op].errors[r]);
		}
	}
}

static void emit_latency(struct prom_writer *w, const struct probe_family *f, const struct probe_state *p)
{
	FOREACH_PROBE_OP(op, p)
	{
		struct prom_label l[4] = {
		    {"probe", p->name}, {"target", p->target}, {"op", probe_op_to_string(op)}};

		prom_sample_latency_histogram(w, f->name, l, 3, &p->total[op].lat);
	}
}

/* A rate of each op in the last run. */
static void emit_last_op_rate(struct prom_writer *w, const struct probe_family *f,
			      const struct probe_state *p)
{
	if (!p->has_last) {
		return;
	}
	FOREACH_PROBE_OP(op, p)
	{
		struct prom_label l[] = {
		    {"probe", p->name}, {"target", p->target}, {"op", probe_op_to_string(op)}};
		double v;

		if (f->data_only && op == PROBE_OP_FSYNC) {
			continue;
		}
		memcpy(&v, (const char *)&p->last.op[op] + f->offset, sizeof(v));
		prom_sample(w, f->name, l, 3, v);
	}
}

/* A summary: quantiles of the last run (the window a summary's quantiles
 * cover), _sum and _count since start (cumulative, as a summary's are). */
static void emit_quantiles(struct prom_writer *w, const struct probe_family *f, const struct probe_state *p)
{
	FOREACH_PROBE_OP(op, p)
	{
		const struct histogram *last = &p->last.op[op].lat, *total = &p->total[op].lat;
		struct prom_label l[] = {
		    {"probe", p->name},
		    {"target", p->target},
		    {"op", probe_op_to_string(op)},
		    {"quantile", NULL},
		};
		char buf[64];

		for (size_t i = 0; p->has_last && last->count > 0 && i < ELEMENTSOF(latency_quantiles); i++) {
			l[3].value = latency_quantiles[i].prom_label;
			prom_sample(w, f->name, l, 4,
				    (double)histogram_percentile(last, latency_quantiles[i].percentile) /
					(double)NSEC_PER_SEC);
		}
		prom_format_value(buf, sizeof(buf), (double)total->sum_ns / (double)NSEC_PER_SEC);
		prom_sample_text(w, f->name, "_sum", l, 3, buf);
		snprintf(buf, sizeof(buf), "%" PRIu64, total->count);
		prom_sample_text(w, f->name, "_count", l, 3, buf);
	}
}

static void emit_success(struct prom_writer *w, const struct probe_family *f, const struct probe_state *p)
{
	struct prom_label l[] = {{"probe", p->name}, {"target", p->target}};

	if (p->has_last) {
		prom_sample(w, f->name, l, 2, p->last.success ? 1 : 0);
	}
}

static void emit_last_run(struct prom_writer *w, const struct probe_family *f, const struct probe_state *p)
{
	struct prom_label l[] = {{"probe", p->name}, {"target", p->target}};

	if (p->has_last) {
		prom_sample(w, f->name, l, 2, (double)p->last_run_realtime_usec / (double)USEC_PER_SEC);
	}
}

static void emit_last_duration(struct prom_writer *w, const struct probe_family *f,
			       const struct probe_state *p)
{
	struct prom_label l[] = {{"probe", p->name}, {"target", p->target}};

	if (p->has_last) {
		prom_sample(w, f->name, l, 2, (double)p->last.runtime_usec / (double)USEC_PER_SEC);
	}
}

static const struct probe_family probe_families[] = {
    {"iopsd_probe_info", FAMILY_GAUGE, "Always 1; the probe's device and fio rw mode.", emit_probe_info},
    {"iopsd_probe_runs_total", FAMILY_COUNTER, "Completed runs of the probe.", emit_probe_counter,
     PROBE_STATE(runs_total)},
    {"iopsd_probe_failures_total", FAMILY_COUNTER, "Runs of the probe that ended with an error.",
     emit_probe_counter, PROBE_STATE(failures_total)},
    {"iopsd_probe_ops_total", FAMILY_COUNTER, "I/O operations completed by the probe.", emit_op_total,
     OP_RESULT(ops)},
    {"iopsd_probe_bytes_total", FAMILY_COUNTER, "Bytes transferred by the probe.", emit_op_total,
     OP_RESULT(bytes), .data_only = true},
    {"iopsd_probe_errors_total", FAMILY_COUNTER, "I/O errors seen by the probe, by reason.", emit_errors},
    {"iopsd_probe_latency_seconds", FAMILY_HISTOGRAM,
     "Completion latency of the probe's I/O (submit to reap), O_DIRECT, since start.", emit_latency},
    {"iopsd_probe_iops", FAMILY_GAUGE, "Operations per second in the last run.", emit_last_op_rate,
     OP_RESULT(iops)},
    {"iopsd_probe_throughput_bytes_per_second", FAMILY_GAUGE, "Bytes per second in the last run.",
     emit_last_op_rate, OP_RESULT(bw_bytes), .data_only = true},
    {"iopsd_probe_latency_quantile_seconds", FAMILY_SUMMARY,
     "Completion latency quantiles of the last run; _sum and _count since start.", emit_quantiles},
    {"iopsd_probe_success", FAMILY_GAUGE, "1 when the last run completed its budget without error, else 0.",
     emit_success},
    {"iopsd_probe_last_run_timestamp_seconds", FAMILY_GAUGE,
     "When the last run started, seconds since the epoch.", emit_last_run},
    {"iopsd_probe_last_run_duration_seconds", FAMILY_GAUGE, "Wall time of the last run's I/O phase.",
     emit_last_duration},
};

void prom_render_probes(struct prom_writer *w, const struct snapshot *s)
{
	for (size_t i = 0; i < ELEMENTSOF(probe_families); i++) {
		const struct probe_family *f = &probe_families[i];

		prom_family(w, f->name, f->type, f->help);
		for (size_t j = 0; j < s->n_probes; j++) {
			f->emit(w, f, &s->probes[j]);
		}
	}
}
