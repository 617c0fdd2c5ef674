/* `iopsd --once`: run the job file once as fio would (jobs between two
 * stonewalls together, each with its own runtime or loops) and print one
 * JSON document (fio's shape: {"jobs": [...]}). */
#pragma once

#include <stdio.h>

#include "config.h"

/* Returns the process exit status: 0 when every probe succeeded, 1
 * otherwise (failures are also logged to stderr). */
int once_run(const struct config *cfg, const char *sysfs, FILE *out);
