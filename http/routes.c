/* The routes: /metrics from the render cache, the JSON API, /healthz and
 * the live page, each answered from one snapshot reference; basic auth,
 * methods, bodies and query parameters checked before a handler runs. */
#include "routes.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gzip.h"
#include "history.h"
#include "macro.h"
#include "negotiate.h"
#include "render_cache.h"
#include "render_json.h"
#include "render_prom.h"
#include "timeutil.h"
#include "webconfig.h"
#include "webpage.h"

/* Dynamic bodies larger than this are gzip'd when the client allows it. */
#define GZIP_MIN_SIZE	   1024
#define GZIP_DYNAMIC_LEVEL 1
#define AUTH_REALM	   "iopsd"

struct query_arg {
	const char *key;
	const char *value;
};

struct request {
	struct routes_context *ctx;
	struct web_config *web; /* a reference to the one in force when the request came */
	bool is_over_budget;	/* a body did not fit ROUTES_MAX_BODY_BYTES_IN_FLIGHT */
	struct MHD_Connection *c;
	const char *url;
	struct snapshot *snap;
	bool gzip_ok;
	struct query_arg args[HTTP_MAX_QUERY_ARGS];
	size_t n_args;
	bool too_many_args;
};

/* ---- responses ---- */

/* Take `bytes` of the budget of dynamic answers; false when that would pass
 * it while something else is in flight. */
static bool reserve_bytes(struct routes_context *ctx, uint64_t bytes)
{
	uint64_t cur = __atomic_load_n(&ctx->body_bytes_in_flight, __ATOMIC_RELAXED);

	do {
		if (cur > 0 && cur + bytes > ROUTES_MAX_BODY_BYTES_IN_FLIGHT) {
			__atomic_add_fetch(&ctx->over_budget_total, 1, __ATOMIC_RELAXED);
			return false;
		}
	} while (!__atomic_compare_exchange_n(&ctx->body_bytes_in_flight, &cur, cur + bytes, true,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return true;
}

static void release_bytes(struct routes_context *ctx, uint64_t bytes)
{
	__atomic_sub_fetch(&ctx->body_bytes_in_flight, bytes, __ATOMIC_RELAXED);
}

/* A body sent (or dropped with its connection): its bytes leave the budget. */
struct body_hold {
	struct routes_context *ctx;
	char *body;
	size_t len;
};

static void release_body(void *cls)
{
	struct body_hold *b = cls;

	release_bytes(b->ctx, b->len);
	free(b->body);
	free(b);
}

/* 503 for an answer over the budget, from a static body, and the
 * connection closed: the client may come back when the others are sent. */
static enum MHD_Result queue_over_budget(struct request *q)
{
	static const char body[] = "{\"error\":\"busy: too many large answers in flight, retry later\"}\n";
	struct MHD_Response *resp;
	enum MHD_Result r;

	resp = MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	r = MHD_queue_response(q->c, MHD_HTTP_SERVICE_UNAVAILABLE, resp);
	MHD_destroy_response(resp);
	return r;
}

static void add_common_headers(struct request *q, struct MHD_Response *resp)
{
	const struct web_header *hs;
	size_t n;

	hs = web_config_headers(q->web, &n);
	for (size_t i = 0; i < n; i++) {
		MHD_add_response_header(resp, hs[i].name, hs[i].value);
	}
}

static enum MHD_Result queue(struct request *q, unsigned status, struct MHD_Response *resp)
{
	enum MHD_Result r;

	if (!resp) {
		/* out of memory: libmicrohttpd closes the connection */
		return q->is_over_budget ? queue_over_budget(q) : MHD_NO;
	}
	add_common_headers(q, resp);
	r = MHD_queue_response(q->c, status, resp);
	MHD_destroy_response(resp);
	return r;
}

/* A malloc'd body, gzip'd when allowed and worth it; takes ownership. */
static struct MHD_Response *dynamic_response(struct request *q, char *body, size_t len,
					     const char *content_type)
{
	struct MHD_Response *resp;
	struct body_hold *hold;
	bool gz = false;

	if (q->gzip_ok && len >= GZIP_MIN_SIZE) {
		char *z;
		size_t zlen;

		if (gzip_compress(body, len, GZIP_DYNAMIC_LEVEL, &z, &zlen) == 0) {
			free(body);
			body = z;
			len = zlen;
			gz = true;
		}
	}
	hold = malloc(sizeof(*hold));
	if (!hold || !reserve_bytes(q->ctx, len)) {
		q->is_over_budget = hold != NULL;
		free(hold);
		free(body);
		return NULL;
	}
	*hold = (struct body_hold){q->ctx, body, len};
	resp = MHD_create_response_from_buffer_with_free_callback_cls(len, body, release_body, hold);
	if (!resp) {
		release_body(hold);
		return NULL;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	if (gz) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	}
	return resp;
}

/* Serialise `root` (stolen) with a trailing newline. */
static struct MHD_Response *json_response(struct request *q, json_t *root)
{
	char *text;
	size_t len;

	if (!root) {
		return NULL;
	}
	text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(15));
	json_decref(root);
	if (!text) {
		return NULL;
	}
	len = strlen(text);
	/* room for the newline: jansson allocates with malloc */
	{
		char *t = realloc(text, len + 2);

		if (!t) {
			free(text);
			return NULL;
		}
		text = t;
	}
	text[len++] = '\n';
	text[len] = '\0';
	return dynamic_response(q, text, len, "application/json");
}

static enum MHD_Result respond_json(struct request *q, unsigned status, json_t *root)
{
	return queue(q, status, json_response(q, root));
}

static enum MHD_Result respond_error(struct request *q, unsigned status, const char *fmt, ...) _printf_(3, 4);
static enum MHD_Result respond_error(struct request *q, unsigned status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* msg may quote the request's path or query, which need not be UTF-8
	 * (and "%.64s" may cut a character): json_pack("s") would refuse it
	 * and the client would get no answer at all */
	return respond_json(q, status, json_pack("{s:o}", "error", render_json_string(msg)));
}

/* ---- query arguments ---- */

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct request *q = cls;

	if (q->n_args >= HTTP_MAX_QUERY_ARGS) {
		q->too_many_args = true;
		return MHD_NO;
	}
	q->args[q->n_args++] = (struct query_arg){key, value};
	return MHD_YES;
}

/* Check the query against the parameters a route takes: unknown or
 * repeated ones are a 400 with a message in `err`. */
static bool check_args(struct request *q, const char *const *allowed, char *err, size_t errlen)
{
	if (q->too_many_args) {
		snprintf(err, errlen, "too many query parameters (at most %d)", HTTP_MAX_QUERY_ARGS);
		return false;
	}
	for (size_t i = 0; i < q->n_args; i++) {
		bool known = false;

		for (size_t j = 0; allowed && allowed[j]; j++) {
			known |= strcmp(q->args[i].key, allowed[j]) == 0;
		}
		if (!known) {
			snprintf(err, errlen, "unknown query parameter '%.64s'", q->args[i].key);
			return false;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(q->args[i].key, q->args[j].key) == 0) {
				snprintf(err, errlen, "query parameter '%.64s' given twice", q->args[i].key);
				return false;
			}
		}
	}
	return true;
}

static const char *arg(const struct request *q, const char *key)
{
	for (size_t i = 0; i < q->n_args; i++) {
		if (strcmp(q->args[i].key, key) == 0) {
			return q->args[i].value ? q->args[i].value : "";
		}
	}
	return NULL;
}

/* ---- handlers ---- */

static void release_entry(void *cls)
{
	render_cache_entry_unref(cls);
}

static enum MHD_Result handle_metrics(struct request *q)
{
	const char *accept = MHD_lookup_connection_value(q->c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	enum metrics_format fmt = http_negotiate_format(accept);
	struct render_cache_entry *e = NULL;
	struct MHD_Response *resp;
	const char *data;
	size_t len;
	bool gz;
	int r;

	render_cache_note_scrape(q->ctx->cache, fmt, q->gzip_ok);
	r = render_cache_acquire(q->ctx->cache, &e);
	if (r == -ENODATA) {
		return respond_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "starting: no snapshot published yet");
	}
	if (r < 0 || render_cache_entry_body(e, fmt, q->gzip_ok, &data, &len, &gz) < 0) {
		render_cache_entry_unref(e);
		return respond_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	}
	/* the cache entry's bytes, sent as they are; the reference is
	 * dropped when libmicrohttpd is done with them */
	resp = MHD_create_response_from_buffer_with_free_callback_cls(len, (void *)data, release_entry, e);
	if (!resp) {
		render_cache_entry_unref(e);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, metrics_format_content_type(fmt));
	MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
	if (gz) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	}
	return queue(q, MHD_HTTP_OK, resp);
}

static enum MHD_Result handle_healthz(struct request *q)
{
	char reason[256];

	if (!snapshot_check_health(q->snap, now_usec(CLOCK_MONOTONIC), reason, sizeof(reason))) {
		return respond_json(
		    q, MHD_HTTP_SERVICE_UNAVAILABLE,
		    json_pack("{s:s,s:o}", "status", "unhealthy", "error", render_json_string(reason)));
	}
	return respond_json(q, MHD_HTTP_OK, json_pack("{s:s}", "status", "ok"));
}

/* Plain text, as Prometheus answers its own /-/healthy and /-/ready. */
static enum MHD_Result respond_text(struct request *q, unsigned status, const char *text)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);

	if (resp) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	}
	return queue(q, status, resp);
}

/* Liveness: the main loop publishes snapshots (a probe stuck in a hung
 * filesystem is not a reason to restart iopsd: /healthz says that one). */
static enum MHD_Result handle_healthy(struct request *q)
{
	struct snapshot *s = registry_acquire(q->ctx->registry);
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	bool is_stuck = s && now > s->monotonic_usec && now - s->monotonic_usec > s->stale_after_usec;

	if (s) {
		snapshot_unref(s);
	}
	return respond_text(q, is_stuck ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK,
			    is_stuck ? "iopsd is not healthy: its main loop is stuck\n"
				     : "iopsd is Healthy.\n");
}

/* Readiness: a /proc/diskstats sample is published and the main loop is
 * not stuck: /metrics has the devices. */
static enum MHD_Result handle_ready(struct request *q)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	const struct snapshot *s = q->snap;

	if (!s->samples) {
		return respond_text(q, MHD_HTTP_SERVICE_UNAVAILABLE, "iopsd is not ready: no sample yet\n");
	}
	if (now > s->monotonic_usec && now - s->monotonic_usec > s->stale_after_usec) {
		return respond_text(q, MHD_HTTP_SERVICE_UNAVAILABLE,
				    "iopsd is not ready: its main loop is stuck\n");
	}
	return respond_text(q, MHD_HTTP_OK, "iopsd is Ready.\n");
}

static enum MHD_Result handle_status(struct request *q)
{
	char reason[256];
	bool healthy;

	healthy = snapshot_check_health(q->snap, now_usec(CLOCK_MONOTONIC), reason, sizeof(reason));
	return respond_json(q, MHD_HTTP_OK, render_json_status(q->snap, healthy, reason));
}

static bool snapshot_has_probe(const struct snapshot *s, const char *name)
{
	for (size_t i = 0; i < s->n_probes; i++) {
		if (strcmp(s->probes[i].name, name) == 0) {
			return true;
		}
	}
	return false;
}

/* The optional "device" or "probe" argument in *ret (NULL when absent).
 * Returns 0, or the HTTP status of a bad (400) or unknown (404) name with a
 * message in `err`. */
static unsigned name_arg(struct request *q, const char *key, const char **ret, char *err, size_t errlen)
{
	const char *v = arg(q, key);
	bool exists;

	*ret = v;
	if (!v) {
		return 0;
	}
	if (!http_valid_name(v)) {
		snprintf(err, errlen, "%s: not a %s name", key, key);
		return MHD_HTTP_BAD_REQUEST;
	}
	exists = strcmp(key, "device") == 0 ? sampler_snapshot_find(q->snap->samples, v) != NULL
					    : snapshot_has_probe(q->snap, v);
	if (!exists) {
		snprintf(err, errlen, "no %s '%s'", key, v);
		return MHD_HTTP_NOT_FOUND;
	}
	return 0;
}

static enum MHD_Result handle_devices(struct request *q)
{
	const char *device;
	char err[128];
	unsigned status;

	status = name_arg(q, "device", &device, err, sizeof(err));
	if (status) {
		return respond_error(q, status, "%s", err);
	}
	return respond_json(q, MHD_HTTP_OK, render_json_devices(q->snap, device));
}

static enum MHD_Result handle_probes(struct request *q)
{
	const char *probe;
	char err[128];
	unsigned status;

	status = name_arg(q, "probe", &probe, err, sizeof(err));
	if (status) {
		return respond_error(q, status, "%s", err);
	}
	return respond_json(q, MHD_HTTP_OK, render_json_probes(q->snap, probe));
}

/* An upper bound on the points an /api/v1/history answer would hold: every
 * series asked for (devices with history, probes) times the samples or
 * steps in the window. */
static uint64_t history_points(const struct snapshot *s, const struct history_request *hr, size_t *ret_series)
{
	uint64_t every = hr->step_usec > s->sample_interval_usec ? hr->step_usec : s->sample_interval_usec;
	uint64_t per_series = every ? (hr->window_usec + every - 1) / every : hr->window_usec;
	size_t n_devices = 0, n_probes = hr->probe ? 1 : s->n_probes;
	char **names = NULL;

	if (hr->device) {
		n_devices = 1;
	} else if (s->history && history_devices(s->history, &names, &n_devices) == 0) {
		history_names_free(names, n_devices);
	}
	*ret_series = n_devices + n_probes;
	return (uint64_t)*ret_series * per_series;
}

/* The answer, with the memory its JSON takes while it is built reserved
 * from the budget of answers in flight. */
static enum MHD_Result respond_history(struct request *q, const struct history_request *hr, uint64_t points)
{
	uint64_t building = points * ROUTES_HISTORY_BUILD_BYTES_PER_POINT;
	struct MHD_Response *resp;

	if (!reserve_bytes(q->ctx, building)) {
		return queue_over_budget(q);
	}
	resp = json_response(q, render_json_history(q->snap, hr));
	release_bytes(q->ctx, building);
	return queue(q, MHD_HTTP_OK, resp);
}

static enum MHD_Result handle_history(struct request *q)
{
	struct history_request hr = {.window_usec = 5 * 60 * USEC_PER_SEC};
	const char *window, *step;
	char err[128];
	unsigned status;
	uint64_t points, max_points;
	size_t series;
	int r;

	if (hr.window_usec > q->snap->history_usec) {
		hr.window_usec = q->snap->history_usec;
	}
	window = arg(q, "window");
	if (window) {
		r = http_parse_window(window, q->snap->history_usec, &hr.window_usec);
		if (r == -ERANGE) {
			return respond_error(q, MHD_HTTP_BAD_REQUEST,
					     "window: '%.32s' is outside 1s .. %" PRIu64
					     "s (the configured history)",
					     window, q->snap->history_usec / USEC_PER_SEC);
		}
		if (r < 0) {
			return respond_error(q, MHD_HTTP_BAD_REQUEST,
					     "window: '%.32s' is not a duration (5m, 300s, 1h)", window);
		}
	}
	step = arg(q, "step");
	if (step && http_parse_window(step, hr.window_usec, &hr.step_usec) < 0) {
		return respond_error(q, MHD_HTTP_BAD_REQUEST,
				     "step: '%.32s' is not a duration between 1s and the window", step);
	}
	status = name_arg(q, "device", &hr.device, err, sizeof(err));
	if (!status) {
		status = name_arg(q, "probe", &hr.probe, err, sizeof(err));
	}
	if (status) {
		return respond_error(q, status, "%s", err);
	}
	/* the JSON of an answer is built in memory, a point at a time: a client
	 * must not make one answer take more than max_history_points allows
	 * (bench/README.md has the cost of a point) */
	points = history_points(q->snap, &hr, &series);
	max_points = __atomic_load_n(&q->ctx->max_history_points, __ATOMIC_RELAXED);
	if (max_points && points > max_points) {
		/* a step that brings the answer under the limit */
		uint64_t step_sec = series * hr.window_usec / max_points / USEC_PER_SEC + 1;

		return respond_error(q, MHD_HTTP_BAD_REQUEST,
				     "%" PRIu64 "s of %zu series is %" PRIu64
				     " points, more than max_history_points=%" PRIu64
				     " in one answer: ask for step=%" PRIu64 "s or more, or for one device=",
				     hr.window_usec / USEC_PER_SEC, series, points, max_points, step_sec);
	}
	return respond_history(q, &hr, points);
}

/* The live page and its assets, embedded at build time (webpage.h): the
 * page revalidates, the versioned assets it references are immutable, and
 * its Content-Security-Policy allows nothing from another origin. */
static enum MHD_Result handle_page(struct request *q)
{
	const struct web_asset *a = webpage_find(q->url);
	const char *inm = MHD_lookup_connection_value(q->c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
	bool not_modified, gz;
	struct MHD_Response *resp;

	if (!a) {
		return respond_error(q, MHD_HTTP_NOT_FOUND, "no such path: %.128s", q->url);
	}
	not_modified = webpage_etag_matches(inm, a->etag);
	gz = q->gzip_ok && a->gz && !not_modified;
	resp = not_modified
		   ? MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT)
		   : MHD_create_response_from_buffer(gz ? a->gz_size : a->size,
						     (void *)(gz ? a->gz : a->data), MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, a->cache_control);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, a->etag);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	MHD_add_response_header(resp, "Content-Security-Policy", WEBPAGE_CSP);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	if (gz) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	}
	return queue(q, not_modified ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK, resp);
}

static const char *const no_params[] = {NULL};
static const char *const devices_params[] = {"device", NULL};
static const char *const probes_params[] = {"probe", NULL};
static const char *const history_params[] = {"window", "step", "device", "probe", NULL};

struct route {
	const char *path;
	enum MHD_Result (*handle)(struct request *q);
	bool needs_snapshot;
	/* the query parameters it takes: others are a 400. NULL: any query is
	 * ignored (a scraper may add its own). */
	const char *const *params;
};

static const struct route routes[] = {
    {"/metrics", handle_metrics, false, NULL}, /* from the render cache */
    {"/healthz", handle_healthz, true, NULL},
    {"/-/healthy", handle_healthy, false, NULL},
    {"/-/ready", handle_ready, true, NULL},
    {"/api/v1/status", handle_status, true, no_params},
    {"/api/v1/devices", handle_devices, true, devices_params},
    {"/api/v1/probes", handle_probes, true, probes_params},
    {"/api/v1/history", handle_history, true, history_params},
};

/* The live page and every asset in webpage.h's table. */
static const struct route page_route = {NULL, handle_page, false, NULL};

/* The client's address without its port, the key of its failed logins. */
static void client_key(struct MHD_Connection *c, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	buf[0] = '\0';
	if (sa && sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
			  (socklen_t)len);
	} else if (sa && sa->sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, buf,
			  (socklen_t)len);
	}
}

static enum web_auth authorize(struct request *q)
{
	char *password = NULL, *user, client[INET6_ADDRSTRLEN];
	enum web_auth a = WEB_AUTH_DENIED;

	if (!web_config_requires_auth(q->web)) {
		return WEB_AUTH_OK;
	}
	user = MHD_basic_auth_get_username_password(q->c, &password);
	if (user && password) {
		client_key(q->c, client, sizeof(client));
		a = web_config_check_basic_auth(q->web, client, user, password);
	}
	if (password) {
		explicit_bzero(password, strlen(password));
	}
	MHD_free(user);
	MHD_free(password);
	return a;
}

/* 401, and the connection closed after it: a client must not try one
 * password after another on one keep-alive connection. 429 with
 * Retry-After when the bcrypt checks are busy or the address failed too
 * often (web_config_check_basic_auth). */
static enum MHD_Result respond_unauthorized(struct request *q, enum web_auth a)
{
	struct MHD_Response *resp;
	enum MHD_Result r;

	if (a == WEB_AUTH_LIMITED) {
		resp = json_response(q, json_pack("{s:s}", "error", "too many failed logins: retry later"));
		if (resp) {
			MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "10");
			MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
		}
		return queue(q, MHD_HTTP_TOO_MANY_REQUESTS, resp);
	}
	resp = json_response(q, json_pack("{s:s}", "error", "authentication required"));
	if (!resp) {
		return MHD_NO;
	}
	add_common_headers(q, resp);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	r = MHD_queue_basic_auth_fail_response(q->c, AUTH_REALM, resp);
	MHD_destroy_response(resp);
	return r;
}

bool http_request_has_body(struct MHD_Connection *c)
{
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);

	return te || (cl && strcmp(cl, "0") != 0);
}

static enum MHD_Result dispatch(struct request *q, const char *url, const char *method)
{
	const struct route *route = NULL;
	enum web_auth auth;
	const char *ae;

	ae = MHD_lookup_connection_value(q->c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	q->gzip_ok = http_accepts_gzip(ae);

	auth = authorize(q);
	if (auth != WEB_AUTH_OK) {
		return respond_unauthorized(q, auth);
	}
	for (size_t i = 0; i < ELEMENTSOF(routes); i++) {
		if (strcmp(url, routes[i].path) == 0) {
			route = &routes[i];
			break;
		}
	}
	if (!route && webpage_find(url)) {
		route = &page_route;
	}
	if (!route) {
		return respond_error(q, MHD_HTTP_NOT_FOUND, "no such path: %.128s", url);
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		struct MHD_Response *resp;

		resp = json_response(q, json_pack("{s:s}", "error", "method not allowed: use GET or HEAD"));
		if (resp) {
			MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
		}
		return queue(q, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
	}
	if (http_request_has_body(q->c)) {
		return respond_error(q, MHD_HTTP_CONTENT_TOO_LARGE, "request bodies are not accepted");
	}
	if (route->params) {
		char err[128];

		MHD_get_connection_values(q->c, MHD_GET_ARGUMENT_KIND, collect_arg, q);
		if (!check_args(q, route->params, err, sizeof(err))) {
			return respond_error(q, MHD_HTTP_BAD_REQUEST, "%s", err);
		}
	}
	if (route->needs_snapshot) {
		q->snap = registry_acquire(q->ctx->registry);
		if (!q->snap) {
			return respond_error(q, MHD_HTTP_SERVICE_UNAVAILABLE,
					     "starting: no snapshot published yet");
		}
	}
	return route->handle(q);
}

void routes_context_init(struct routes_context *ctx)
{
	pthread_mutex_init(&ctx->web_lock, NULL);
}

void routes_context_done(struct routes_context *ctx)
{
	ctx->web = web_config_unref(ctx->web);
	pthread_mutex_destroy(&ctx->web_lock);
}

void routes_set_web_config(struct routes_context *ctx, struct web_config *wc)
{
	struct web_config *old;

	pthread_mutex_lock(&ctx->web_lock);
	old = ctx->web;
	ctx->web = wc;
	pthread_mutex_unlock(&ctx->web_lock);
	web_config_unref(old);
}

enum MHD_Result routes_dispatch(struct routes_context *ctx, struct MHD_Connection *c, const char *url,
				const char *method)
{
	struct request q = {.ctx = ctx, .c = c, .url = url};
	enum MHD_Result r;

	pthread_mutex_lock(&ctx->web_lock);
	q.web = web_config_ref(ctx->web);
	pthread_mutex_unlock(&ctx->web_lock);
	r = dispatch(&q, url, method);
	snapshot_unref(q.snap);
	web_config_unref(q.web);
	return r;
}
