/* The JSON API (/api/v1/status, devices, probes, history) from a snapshot.
 * Field names are a stable contract, documented in iopsd(8) "HTTP API" and
 * README.md: add fields, never rename or remove them. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "registry.h"

struct history_request {
	uint64_t window_usec; /* how far back from the snapshot's time */
	uint64_t step_usec;   /* 0: every sample; else averaged buckets */
	const char *device;   /* NULL: every device with history */
	const char *probe;    /* NULL: every probe */
};

/* A JSON string of `s` (NULL: ""): valid UTF-8 unchanged, each invalid byte
 * replaced by U+FFFD (utf8.h; a mount point, or a request's path, may hold
 * anything; jansson refuses invalid UTF-8). NULL when out of memory. */
json_t *render_json_string(const char *s);

/* Each returns a new reference, or NULL when out of memory. */
json_t *render_json_status(const struct snapshot *s, bool is_healthy, const char *health_reason);
/* `device` NULL for all; otherwise it must be in the snapshot. */
json_t *render_json_devices(const struct snapshot *s, const char *device);
json_t *render_json_probes(const struct snapshot *s, const char *probe);
json_t *render_json_history(const struct snapshot *s, const struct history_request *q);
