/* Prometheus text 0.0.4 and OpenMetrics 1.0.0 from a snapshot. Families are
 * tables of {name, type, help, emitter}: adding a family is one table entry
 * and, when its value is not a plain field, one small emitter. */
#include "render_prom.h"

#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>

#include "prom/prom.h"

const char *metrics_format_content_type(enum metrics_format fmt)
{
	return fmt == METRICS_FORMAT_OPENMETRICS ? OPENMETRICS_CONTENT_TYPE : PROMETHEUS_CONTENT_TYPE;
}

int render_prom(const struct snapshot *s, enum metrics_format fmt, char **ret_text, size_t *ret_len)
{
	struct prom_writer w = {.fmt = fmt};
	char *text = NULL;
	size_t len = 0;
	bool failed;

	w.f = open_memstream(&text, &len);
	if (!w.f) {
		return -ENOMEM;
	}
	/* single-threaded use: skip stdio's per-call locking */
	__fsetlocking(w.f, FSETLOCKING_BYCALLER);

	prom_render_self(&w, s);
	prom_render_sampler(&w, s->samples);
	prom_render_devices(&w, s->samples);
	prom_render_shared(&w, s->samples);
	prom_render_instance(&w, s->samples);
	prom_render_ebs(&w, s->samples);
	prom_render_probes(&w, s);
	if (fmt == METRICS_FORMAT_OPENMETRICS) {
		fputs("# EOF\n", w.f);
	}

	failed = ferror(w.f) || w.has_failed;
	if (fclose(w.f) != 0 || failed) {
		free(text);
		return -ENOMEM;
	}
	*ret_text = text;
	*ret_len = len;
	return 0;
}
