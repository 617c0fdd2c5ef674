/* The probe engine: one budgeted run of a probe (a small fio job) with
 * libaio and O_DIRECT, and the results it produces. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "histogram.h"

enum probe_op {
	PROBE_OP_READ,
	PROBE_OP_WRITE,
	PROBE_OP_FSYNC,
	_PROBE_OP_MAX,
};

enum probe_error_reason {
	PROBE_ERR_EIO,
	PROBE_ERR_ENOSPC,
	PROBE_ERR_EROFS,
	PROBE_ERR_EACCES,
	PROBE_ERR_ENOENT,
	PROBE_ERR_EINVAL,
	PROBE_ERR_TIMEOUT,
	PROBE_ERR_OTHER,
	_PROBE_ERR_MAX,
};

const char *probe_op_to_string(enum probe_op op);
const char *probe_error_reason_to_string(enum probe_error_reason r);
/* Map a positive or negative errno to a reason. */
enum probe_error_reason probe_error_reason_from_errno(int err);

struct probe_op_result {
	uint64_t ops;
	uint64_t bytes;
	uint64_t errors[_PROBE_ERR_MAX];
	double iops;             /* ops / run time */
	double bw_bytes;         /* bytes / run time */
	struct histogram lat;    /* completion latency, submit to reap */
};

/* The outcome of one run of one probe. */
struct probe_result {
	bool success;               /* ran to its budget with no error */
	int error;                  /* first -errno, 0 when none */
	char message[256];          /* human explanation of `error`, "" when none */
	uint64_t start_realtime_usec;
	uint64_t runtime_usec;      /* measured wall time of the I/O phase */
	uint64_t layout_usec;       /* time spent laying out the probe file, 0 if reused */
	struct probe_op_result op[_PROBE_OP_MAX];
};

/* Run `pc` once. Blocks the calling thread for at most ~2x the probe's
 * runtime (a run that takes longer is cancelled and reported as a timeout).
 * `cancel` may be NULL; when it points to true the run stops early. Always
 * fills *ret (errors are inside it); returns 0, or -errno only for failures
 * to even start (ENOMEM). */
int probe_run(const struct probe_config *pc, const volatile bool *cancel, struct probe_result *ret);
