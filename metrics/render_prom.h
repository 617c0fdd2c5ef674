/* /metrics: the Prometheus text format 0.0.4 and OpenMetrics 1.0.0, rendered
 * from an immutable snapshot (render_cache.h keeps the bodies). */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include "registry.h"

/* The /metrics exposition formats. */
enum metrics_format {
	METRICS_FORMAT_PROMETHEUS,  /* text 0.0.4 */
	METRICS_FORMAT_OPENMETRICS, /* OpenMetrics 1.0.0 */
	_METRICS_FORMAT_MAX,
};

#define PROMETHEUS_CONTENT_TYPE	 "text/plain; version=0.0.4; charset=utf-8"
#define OPENMETRICS_CONTENT_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"

const char *metrics_format_content_type(enum metrics_format fmt);

/* Render every family of `s` in `fmt`. Pure: reads only `s`. On success
 * returns 0 and a NUL-terminated text the caller frees (*ret_len excludes
 * the NUL); -ENOMEM otherwise. */
int render_prom(const struct snapshot *s, enum metrics_format fmt, char **ret_text, size_t *ret_len);

/* Write `value` as the inside of a quoted label value: backslash, double
 * quote and newline escaped, invalid UTF-8 replaced by U+FFFD. */
void prom_write_label_value(FILE *f, const char *value);

/* Format a sample value: integers without a fraction, otherwise the
 * shortest text that reads back as the same double; NaN, +Inf, -Inf. */
void prom_format_value(char *buf, size_t len, double v);

/* Format a histogram bound for the le label: "0.001", "1" (0.0.4) or the
 * OpenMetrics canonical "1.0"; "+Inf". */
void prom_format_le(char *buf, size_t len, double bound, enum metrics_format fmt);
