/* JSON for probe results, with fio's field names where fio has the concept
 * (iops, bw_bytes, io_bytes, total_ios, clat_ns.percentile, ...), used by
 * `iopsd --once` and /api/v1/probes. */
#pragma once

#include <stdint.h>

#include <jansson.h>

#include "probe.h"

/* One op of a run, or cumulative totals: read/write as fio's "read" and
 * "write" objects (latency in "clat_ns"), fsync as fio's "sync" object
 * (latency in "lat_ns"), plus iopsd's "errors" by reason. `runtime_usec`
 * is fio's "runtime" (ms in the output); 0 when not meaningful (totals).
 * Returns a new reference, NULL on ENOMEM. */
json_t *probe_op_result_to_json(const struct probe_op_result *o, enum probe_op op, uint64_t runtime_usec);

/* One run: "success", "error" (a positive errno as in fio, 0 when none),
 * "error_name", "message", "timestamp_ms", "job_runtime" (ms), "runtime_usec",
 * "layout_usec", "read", "write", "sync", and "errors" summed over the ops.
 * Returns a new reference, NULL on ENOMEM. */
json_t *probe_result_to_json(const struct probe_result *r);

/* {"1.000000": ns, ...} with fio's default percentile list. */
json_t *probe_percentiles_to_json(const struct histogram *h);
