/* Names of probe ops and error reasons, shared by the engine and renderers. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "probe.h"

static const char *const op_names[_PROBE_OP_MAX] = {
    [PROBE_OP_READ] = "read",
    [PROBE_OP_WRITE] = "write",
    [PROBE_OP_FSYNC] = "fsync",
};

static const char *const reason_names[_PROBE_ERR_MAX] = {
    [PROBE_ERR_EIO] = "eio",	     [PROBE_ERR_ENOSPC] = "enospc", [PROBE_ERR_EROFS] = "erofs",
    [PROBE_ERR_EACCES] = "eacces",   [PROBE_ERR_ENOENT] = "enoent", [PROBE_ERR_EINVAL] = "einval",
    [PROBE_ERR_TIMEOUT] = "timeout", [PROBE_ERR_OTHER] = "other",
};

const char *probe_op_to_string(enum probe_op op)
{
	return op < _PROBE_OP_MAX ? op_names[op] : "unknown";
}

const char *probe_error_reason_to_string(enum probe_error_reason r)
{
	return r < _PROBE_ERR_MAX ? reason_names[r] : "unknown";
}

enum probe_error_reason probe_error_reason_from_errno(int err)
{
	switch (err < 0 ? -err : err) {
	case EIO:
		return PROBE_ERR_EIO;
	case ENOSPC:
	case EDQUOT:
		return PROBE_ERR_ENOSPC;
	case EROFS:
		return PROBE_ERR_EROFS;
	case EACCES:
	case EPERM:
		return PROBE_ERR_EACCES;
	case ENOENT:
	case ENODEV:
	case ENXIO:
	case EXDEV: /* the directory's filesystem went away, see probefile_open_directory() */
		return PROBE_ERR_ENOENT;
	case EINVAL:
		return PROBE_ERR_EINVAL;
	case ETIMEDOUT:
	case ECANCELED:
		return PROBE_ERR_TIMEOUT;
	default:
		return PROBE_ERR_OTHER;
	}
}

void probe_op_result_add(struct probe_op_result *dst, const struct probe_op_result *src)
{
	dst->ops += src->ops;
	dst->bytes += src->bytes;
	for (size_t i = 0; i < _PROBE_ERR_MAX; i++) {
		dst->errors[i] += src->errors[i];
	}
	histogram_merge(&dst->lat, &src->lat);
	fiostat_dir_merge(&dst->fio, &src->fio);
}

void probe_result_init(struct probe_result *res)
{
	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < _PROBE_OP_MAX; i++) {
		histogram_init(&res->op[i].lat);
	}
}

void probe_result_fail(struct probe_result *res, enum probe_rw rw, int err, bool is_counted, const char *fmt,
		       ...)
{
	va_list ap;

	res->success = false;
	res->error = err;
	if (is_counted) {
		res->op[probe_rw_reads(rw) ? PROBE_OP_READ : PROBE_OP_WRITE]
		    .errors[probe_error_reason_from_errno(err)]++;
	}
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(res->message, sizeof(res->message), fmt, ap);
		va_end(ap);
	}
}
