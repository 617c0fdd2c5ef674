/* `iopsd --once`: run the job file once as fio would (jobs between two
 * stonewalls together, each with its own runtime or loops) and print fio's
 * report: normal, terse, json or json+. */
#pragma once

#include <stdio.h>

#include "config.h"

/* fio's --output-format names, any of them: "normal,json+" */
enum {
	ONCE_OUTPUT_NORMAL = 1 << 0,
	ONCE_OUTPUT_TERSE = 1 << 1,
	ONCE_OUTPUT_JSON = 1 << 2,
	ONCE_OUTPUT_JSON_PLUS = 1 << 3,
};
/* Parse a comma-separated list of them into a mask: 0, or -EINVAL. */
int once_output_formats_parse(const char *list, unsigned *ret);

struct once_output {
	unsigned formats;   /* ONCE_OUTPUT_*; normal when not given, as fio */
	const char *path;   /* --output=FILE, NULL: stdout */
	const char *procfs; /* for the disk stats */
	const char *sysfs;
};

/* Write the report to o->path, or to `out` when there is none. Returns the
 * process exit status: 0 when every probe succeeded, 1 otherwise (failures
 * are also logged to stderr). */
int once_run(const struct config *cfg, const struct once_output *o, FILE *out);
