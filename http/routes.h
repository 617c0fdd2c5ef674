/* The routes the server answers, and the checks every request passes
 * before one runs. Internal to http/. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "registry.h"

#define HTTP_MAX_QUERY_ARGS 8

struct render_cache;
struct web_config;

/* What the handlers answer from, owned by the server. */
struct routes_context {
	struct registry *registry;
	struct render_cache *cache; /* the /metrics bodies */
	struct web_config *web;
	uint64_t max_history_points; /* cfg->max_history_points */
};

/* Answer the request on `c` whose headers are complete. */
enum MHD_Result routes_dispatch(const struct routes_context *ctx, struct MHD_Connection *c, const char *url,
				const char *method);

/* Whether the request announces a body (Content-Length > 0 or chunked). */
bool http_request_has_body(struct MHD_Connection *c);
