/* The routes the server answers, and the checks every request passes
 * before one runs. Internal to http/. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "registry.h"

#define HTTP_MAX_QUERY_ARGS 8
/* One cap on the bytes of dynamic answers (JSON) in flight: built, or
 * queued on a connection that reads them slowly. Beyond it the answer is
 * 503 with Retry-After (one answer is always let through when nothing else
 * is in flight). */
#define ROUTES_MAX_BODY_BYTES_IN_FLIGHT (24u << 20)
/* What one point of /api/v1/history costs while its JSON is built. */
#define ROUTES_HISTORY_BUILD_BYTES_PER_POINT 1700u

struct render_cache;
struct web_config;

/* What the handlers answer from, owned by the server. */
struct routes_context {
	struct registry *registry;
	struct render_cache *cache; /* the /metrics bodies */
	pthread_mutex_t web_lock;
	struct web_config *web;	       /* under web_lock; each request takes a reference */
	uint64_t max_history_points;   /* cfg->max_history_points; atomic */
	uint64_t body_bytes_in_flight; /* atomic, against ROUTES_MAX_BODY_BYTES_IN_FLIGHT */
	uint64_t over_budget_total;    /* 503s for the cap; atomic */
};

/* Set up and tear down the context's lock and web config reference. */
void routes_context_init(struct routes_context *ctx);
void routes_context_done(struct routes_context *ctx);

/* Swap in `wc` (the context takes the caller's reference; NULL: no web
 * config): requests from now on check against it, each with a login cache
 * of its own. Requests in flight finish with the one they took. */
void routes_set_web_config(struct routes_context *ctx, struct web_config *wc);

/* Answer the request on `c` whose headers are complete. */
enum MHD_Result routes_dispatch(struct routes_context *ctx, struct MHD_Connection *c, const char *url,
				const char *method);

/* Whether the request announces a body (Content-Length > 0 or chunked). */
bool http_request_has_body(struct MHD_Connection *c);
