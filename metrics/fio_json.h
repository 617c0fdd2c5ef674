/* fio 3.33's JSON (--output-format=json, and json+ with the clat bins) for
 * `iopsd --once`. */
#pragma once

#include <jansson.h>

#include "config.h"
#include "fio_report.h"

/* {"iopsd version", "timestamp", "timestamp_ms", "time", "jobs": [...],
 * "disk_util": [...]}: every job with the keys fio writes for it, with
 * fio's meaning and units, and iopsd's own (success, error_name, message,
 * timestamp_ms, runtime_usec, layout_usec, errors, target). A new
 * reference, NULL on ENOMEM. */
json_t *fio_json_report(const struct fio_report *r);
/* The job's parameters as iopsd fitted them ("job options"). */
json_t *fio_job_options_to_json(const struct probe_config *pc);
