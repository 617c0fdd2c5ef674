/* JSON for probe results, with fio's field names where fio has the concept
 * (iops, bw_bytes, io_bytes, total_ios, clat_ns.percentile, ...), used by
 * `iopsd --once` and /api/v1/probes. */
#pragma once

#include <stdint.h>

#include <jansson.h>

#include "probe.h"

/* One run: "success", "error" (a positive errno as in fio, 0 when none),
 * "error_name", "message", "timestamp_ms", "job_runtime" (ms), "runtime_usec",
 * "layout_usec", "read", "write", "sync", and "errors" summed over the ops.
 * Returns a new reference, NULL on ENOMEM. */
json_t *probe_result_to_json(const struct probe_result *r);
/* {"EIO": n, ...}: the errors by reason. A new reference, NULL on ENOMEM. */
json_t *probe_errors_to_json(const uint64_t errors[_PROBE_ERR_MAX]);
