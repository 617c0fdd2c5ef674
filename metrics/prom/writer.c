/* The Prometheus 0.0.4 / OpenMetrics 1.0.0 writer every collector uses:
 * escaping, number formats, family headers and samples. */
#include "prom.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "histogram.h"
#include "macro.h"
#include "utf8.h"

/* Escape for a label value (quote = true) or HELP text (quote only in
 * OpenMetrics); invalid UTF-8 becomes U+FFFD. */
static void write_escaped(FILE *f, const char *value, bool escape_quote)
{
	const unsigned char *p = (const unsigned char *)value;

	while (*p) {
		size_t n;

		switch (*p) {
		case '\\':
			fputs("\\\\", f);
			p++;
			continue;
		case '\n':
			fputs("\\n", f);
			p++;
			continue;
		case '"':
			fputs(escape_quote ? "\\\"" : "\"", f);
			p++;
			continue;
		default:
			break;
		}
		n = utf8_sequence_length((const char *)p);
		if (n == 0) {
			fputs(UTF8_REPLACEMENT, f);
			p++;
			continue;
		}
		fwrite(p, 1, n, f);
		p += n;
	}
}

void prom_write_label_value(FILE *f, const char *value)
{
	write_escaped(f, value, true);
}

void prom_format_value(char *buf, size_t len, double v)
{
	if (isnan(v)) {
		snprintf(buf, len, "NaN");
	} else if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	} else if (v == 0) {
		snprintf(buf, len, "0");
	} else if (v == trunc(v) && fabs(v) < 1e15) {
		snprintf(buf, len, "%.0f", v);
	} else {
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(buf, len, "%.*g", prec, v);
			if (strtod(buf, NULL) == v) {
				break;
			}
		}
	}
}

void prom_format_le(char *buf, size_t len, double bound, enum metrics_format fmt)
{
	prom_format_value(buf, len, bound);
	/* OpenMetrics' canonical form of an integral bound has a ".0" */
	if (fmt == METRICS_FORMAT_OPENMETRICS && isfinite(bound) && !strpbrk(buf, ".eE")) {
		size_t n = strlen(buf);

		if (n + 2 < len) {
			memcpy(buf + n, ".0", 3);
		}
	}
}

void prom_family(struct prom_writer *w, const char *name, enum family_type type, const char *help)
{
	static const char *const type_names[] = {
	    [FAMILY_COUNTER] = "counter",
	    [FAMILY_GAUGE] = "gauge",
	    [FAMILY_HISTOGRAM] = "histogram",
	    [FAMILY_SUMMARY] = "summary",
	};
	size_t n = strlen(name);

	/* OpenMetrics names a counter family without its _total suffix */
	if (w->fmt == METRICS_FORMAT_OPENMETRICS && type == FAMILY_COUNTER && n > 6 &&
	    strcmp(name + n - 6, "_total") == 0) {
		n -= 6;
	}
	fprintf(w->f, "# HELP %.*s ", (int)n, name);
	write_escaped(w->f, help, w->fmt == METRICS_FORMAT_OPENMETRICS);
	fprintf(w->f, "\n# TYPE %.*s %s\n", (int)n, name, type_names[type]);
}

void prom_sample_text(struct prom_writer *w, const char *name, const char *suffix,
		      const struct prom_label *labels, size_t n_labels, const char *value)
{
	fputs(name, w->f);
	fputs(suffix, w->f);
	if (n_labels > 0) {
		fputc('{', w->f);
		for (size_t i = 0; i < n_labels; i++) {
			fprintf(w->f, "%s%s=\"", i ? "," : "", labels[i].name);
			prom_write_label_value(w->f, labels[i].value);
			fputc('"', w->f);
		}
		fputc('}', w->f);
	}
	fputc(' ', w->f);
	fputs(value, w->f);
	fputc('\n', w->f);
}

void prom_sample(struct prom_writer *w, const char *name, const struct prom_label *labels, size_t n_labels,
		 double v)
{
	char buf[64];

	prom_format_value(buf, sizeof(buf), v);
	prom_sample_text(w, name, "", labels, n_labels, buf);
}

void prom_sample_u64(struct prom_writer *w, const char *name, const struct prom_label *labels,
		     size_t n_labels, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	prom_sample_text(w, name, "", labels, n_labels, buf);
}

void prom_sample_histogram(struct prom_writer *w, const char *name, struct prom_label *labels,
			   size_t n_labels, prom_bucket_fn bucket, void *userdata, size_t n, uint64_t count,
			   double sum_seconds)
{
	char le[32], buf[64];

	labels[n_labels].name = "le";
	labels[n_labels].value = le;
	for (size_t i = 0; i < n; i++) {
		double bound;
		uint64_t below;

		if (!bucket(userdata, i, &bound, &below)) {
			continue;
		}
		prom_format_le(le, sizeof(le), bound, w->fmt);
		snprintf(buf, sizeof(buf), "%" PRIu64, below);
		prom_sample_text(w, name, "_bucket", labels, n_labels + 1, buf);
	}
	snprintf(le, sizeof(le), "+Inf");
	snprintf(buf, sizeof(buf), "%" PRIu64, count);
	prom_sample_text(w, name, "_bucket", labels, n_labels + 1, buf);
	prom_format_value(buf, sizeof(buf), sum_seconds);
	prom_sample_text(w, name, "_sum", labels, n_labels, buf);
	snprintf(buf, sizeof(buf), "%" PRIu64, count);
	prom_sample_text(w, name, "_count", labels, n_labels, buf);
}

static bool latency_bucket(void *userdata, size_t i, double *ret_le_seconds, uint64_t *ret_count)
{
	const struct histogram *h = userdata;
	double bound = histogram_prom_bounds_seconds[i];

	*ret_le_seconds = bound;
	*ret_count =
	    h->count > 0 ? histogram_count_le(h, (uint64_t)llround(bound * (double)NSEC_PER_SEC)) : 0;
	return true;
}

void prom_sample_latency_histogram(struct prom_writer *w, const char *name, struct prom_label *labels,
				   size_t n_labels, const struct histogram *h)
{
	prom_sample_histogram(w, name, labels, n_labels, latency_bucket, (void *)h, histogram_n_prom_bounds,
			      h->count, (double)h->sum_ns / (double)NSEC_PER_SEC);
}
