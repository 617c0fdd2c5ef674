/* What the /metrics collectors share: the writer (a stream and its format),
 * family headers and samples, and one entry point per collector. Each
 * collector writes its families from the snapshot alone. Internal to
 * metrics/. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "registry.h"
#include "render_prom.h"

struct histogram;

enum family_type {
	FAMILY_COUNTER,
	FAMILY_GAUGE,
	FAMILY_HISTOGRAM,
	FAMILY_SUMMARY,
};

struct prom_writer {
	FILE *f;
	enum metrics_format fmt;
	bool has_failed; /* a collector ran out of memory: the text is incomplete */
};

struct prom_label {
	const char *name;
	const char *value;
};

/* # HELP and # TYPE of a family (OpenMetrics names a counter without its
 * _total). */
void prom_family(struct prom_writer *w, const char *name, enum family_type type, const char *help);

/* One sample line: name, suffix, {labels} and the value's text. */
void prom_sample_text(struct prom_writer *w, const char *name, const char *suffix,
		      const struct prom_label *labels, size_t n_labels, const char *value);
void prom_sample(struct prom_writer *w, const char *name, const struct prom_label *labels, size_t n_labels,
		 double v);
void prom_sample_u64(struct prom_writer *w, const char *name, const struct prom_label *labels,
		     size_t n_labels, uint64_t v);

/* Bucket i of a histogram being written: its upper bound in seconds and
 * the observations at or below it; false leaves bound i out. */
typedef bool (*prom_bucket_fn)(void *userdata, size_t i, double *ret_le_seconds, uint64_t *ret_count);

/* A cumulative histogram: the buckets 0..n-1 that `bucket` gives, then +Inf
 * and _count holding `count`, and _sum. `labels` must have room for one
 * more entry (le). */
void prom_sample_histogram(struct prom_writer *w, const char *name, struct prom_label *labels,
			   size_t n_labels, prom_bucket_fn bucket, void *userdata, size_t n, uint64_t count,
			   double sum_seconds);

/* iopsd's latency histogram (struct histogram) with its exported bounds. */
void prom_sample_latency_histogram(struct prom_writer *w, const char *name, struct prom_label *labels,
				   size_t n_labels, const struct histogram *h);

/* The collectors, in the order /metrics lists them. Those given a sampler
 * snapshot write nothing when it is NULL. */
void prom_render_self(struct prom_writer *w, const struct snapshot *s);		     /* self.c */
void prom_render_sampler(struct prom_writer *w, const struct sampler_snapshot *ss);  /* self.c */
void prom_render_devices(struct prom_writer *w, const struct sampler_snapshot *ss);  /* devices.c */
void prom_render_shared(struct prom_writer *w, const struct sampler_snapshot *ss);   /* shared.c */
void prom_render_instance(struct prom_writer *w, const struct sampler_snapshot *ss); /* instance.c */
void prom_render_ebs(struct prom_writer *w, const struct sampler_snapshot *ss);	     /* ebs.c */
void prom_render_probes(struct prom_writer *w, const struct snapshot *s);	     /* probes.c */
