/* The HTTP server. Every request takes a reference to the current snapshot
 * (a pointer swap under a lock nobody holds for long) and answers from it:
 * /metrics sends the pre-rendered bytes without copying, JSON is built from
 * the snapshot in memory. Nothing here does I/O besides the socket. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <sys/resource.h>

#include <jansson.h>
#include <systemd/sd-daemon.h>

#include "gzip.h"
#include "history.h"
#include "log.h"
#include "macro.h"
#include "netaddr.h"
#include "render_cache.h"
#include "render_json.h"
#include "render_prom.h"
#include "timeutil.h"
#include "units.h"
#include "webconfig.h"
#include "webpage.h"

/* Dynamic bodies larger than this are gzip'd when the client allows it. */
#define GZIP_MIN_SIZE	    1024
#define GZIP_DYNAMIC_LEVEL  1
#define SWEEP_INTERVAL_USEC USEC_PER_SEC
#define AUTH_REALM	    "iopsd"

/* One accepted connection, for the header deadline: a request's headers
 * must be complete within connection_timeout of the connection's start or
 * of the previous response, however slowly the client trickles bytes
 * (libmicrohttpd's own timeout only counts inactivity). */
struct conn_track {
	struct conn_track *prev, *next;
	int fd;
	uint64_t deadline_usec; /* monotonic; 0 while a request is being answered */
};

struct http_server {
	struct registry *registry;
	struct render_cache *cache; /* the /metrics bodies */
	struct web_config *web;
	struct MHD_Daemon *daemons[HTTP_MAX_LISTEN];
	size_t n_daemons;
	uint64_t timeout_usec;
	uint64_t max_history_points; /* cfg->max_history_points */
	sd_event_source *sweep;

	pthread_mutex_t conns_lock;
	struct conn_track *conns;
	uint64_t header_timeouts_total;
};

struct query_arg {
	const char *key;
	const char *value;
};

struct request {
	struct http_server *h;
	struct MHD_Connection *c;
	const char *url;
	struct snapshot *snap;
	bool gzip_ok;
	struct query_arg args[HTTP_MAX_QUERY_ARGS];
	size_t n_args;
	bool too_many_args;
};

/* ---- pure helpers ---- */

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t') {
		p++;
	}
	return p;
}

/* Split one element of a comma-separated header at `p` into its token
 * (lowercase-compared by the caller) and q value; returns the element end. */
static const char *next_element(const char *p, char *token, size_t token_len, double *ret_q, char *version,
				size_t version_len)
{
	const char *end = p + strcspn(p, ",");
	const char *semi;
	size_t n;

	p = skip_space(p);
	semi = memchr(p, ';', (size_t)(end - p));
	n = (size_t)((semi ? semi : end) - p);
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t')) {
		n--;
	}
	if (n >= token_len) {
		n = 0; /* too long to be anything we know */
	}
	memcpy(token, p, n);
	token[n] = '\0';
	*ret_q = 1.0;
	if (version_len > 0) {
		version[0] = '\0';
	}
	for (const char *param = semi; param && param < end;) {
		const char *pend = memchr(param + 1, ';', (size_t)(end - param - 1));
		const char *name = skip_space(param + 1);
		const char *stop = pend ? pend : end;
		char value[32];
		size_t vn;

		if (strncasecmp(name, "q=", 2) == 0 || strncasecmp(name, "version=", 8) == 0) {
			bool is_q = (name[0] | 0x20) == 'q';
			const char *v = name + (is_q ? 2 : 8);

			vn = (size_t)(stop - v);
			while (vn > 0 && (v[vn - 1] == ' ' || v[vn - 1] == '\t')) {
				vn--;
			}
			if (vn < sizeof(value)) {
				memcpy(value, v, vn);
				value[vn] = '\0';
				if (is_q) {
					double q;

					/* a malformed q disqualifies the element */
					*ret_q = parse_double(value, &q) == 0 && q >= 0 && q <= 1 ? q : 0;
				} else if (version_len > vn) {
					memcpy(version, value, vn + 1);
				}
			}
		}
		param = pend;
	}
	return *end ? end + 1 : end;
}

enum metrics_format http_negotiate_format(const char *accept)
{
	double om_q = 0, text_q = 0;

	for (const char *p = accept; p && *p;) {
		char token[64], version[16];
		double q;

		p = next_element(p, token, sizeof(token), &q, version, sizeof(version));
		if (strcasecmp(token, "application/openmetrics-text") == 0 &&
		    (!version[0] || strcmp(version, "1.0.0") == 0 || strcmp(version, "0.0.1") == 0)) {
			if (q > om_q) {
				om_q = q;
			}
		} else if (strcasecmp(token, "text/plain") == 0) {
			if (q > text_q) {
				text_q = q;
			}
		}
	}
	return om_q > 0 && om_q >= text_q ? METRICS_FORMAT_OPENMETRICS : METRICS_FORMAT_PROMETHEUS;
}

bool http_accepts_gzip(const char *accept_encoding)
{
	double gzip_q = -1, star_q = -1;

	for (const char *p = accept_encoding; p && *p;) {
		char token[32];
		double q;

		p = next_element(p, token, sizeof(token), &q, NULL, 0);
		if (strcasecmp(token, "gzip") == 0 || strcasecmp(token, "x-gzip") == 0) {
			gzip_q = q > gzip_q ? q : gzip_q;
		} else if (strcmp(token, "*") == 0) {
			star_q = q;
		}
	}
	return gzip_q >= 0 ? gzip_q > 0 : star_q > 0;
}

int http_parse_window(const char *s, uint64_t max_usec, uint64_t *ret_usec)
{
	uint64_t usec;

	if (!s || parse_duration(s, USEC_PER_SEC, &usec) < 0) {
		return -EINVAL;
	}
	if (usec < USEC_PER_SEC || usec > max_usec) {
		return -ERANGE;
	}
	*ret_usec = usec;
	return 0;
}

bool http_valid_name(const char *s)
{
	size_t n = 0;

	if (!s) {
		return false;
	}
	for (; s[n]; n++) {
		if ((unsigned char)s[n] < 0x21 || s[n] == 0x7f || n >= 63) {
			return false;
		}
	}
	return n > 0;
}

/* ---- responses ---- */

static void add_common_headers(struct request *q, struct MHD_Response *resp)
{
	const struct web_header *hs;
	size_t n;

	hs = web_config_headers(q->h->web, &n);
	for (size_t i = 0; i < n; i++) {
		MHD_add_response_header(resp, hs[i].name, hs[i].value);
	}
}

static enum MHD_Result queue(struct request *q, unsigned status, struct MHD_Response *resp)
{
	enum MHD_Result r;

	if (!resp) {
		return MHD_NO; /* out of memory: libmicrohttpd closes the connection */
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
	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
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

	render_cache_note_scrape(q->h->cache, fmt, q->gzip_ok);
	r = render_cache_acquire(q->h->cache, &e);
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

static enum MHD_Result handle_history(struct request *q)
{
	struct history_request hr = {.window_usec = 5 * 60 * USEC_PER_SEC};
	const char *window, *step;
	char err[128];
	unsigned status;
	uint64_t points;
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
	/* each point costs ~1.7 KiB while the JSON is built: a client must not
	 * make one answer take more memory than max_history_points allows */
	points = history_points(q->snap, &hr, &series);
	if (q->h->max_history_points && points > q->h->max_history_points) {
		/* a step that brings the answer under the limit */
		uint64_t step_sec = series * hr.window_usec / q->h->max_history_points / USEC_PER_SEC + 1;

		return respond_error(
		    q, MHD_HTTP_BAD_REQUEST,
		    "%" PRIu64 "s of %zu series is %" PRIu64 " points, more than max_history_points=%" PRIu64
		    " in one answer: ask for step=%" PRIu64 "s or more, or for one device=",
		    hr.window_usec / USEC_PER_SEC, series, points, q->h->max_history_points, step_sec);
	}
	return respond_json(q, MHD_HTTP_OK, render_json_history(q->snap, &hr));
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
    {"/api/v1/status", handle_status, true, no_params},
    {"/api/v1/devices", handle_devices, true, devices_params},
    {"/api/v1/probes", handle_probes, true, probes_params},
    {"/api/v1/history", handle_history, true, history_params},
};

/* The live page and every asset in webpage.h's table. */
static const struct route page_route = {NULL, handle_page, false, NULL};

/* ---- libmicrohttpd callbacks ---- */

static struct conn_track *connection_track(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void set_deadline(struct http_server *h, struct MHD_Connection *c, uint64_t deadline)
{
	struct conn_track *t = connection_track(c);

	if (t) {
		pthread_mutex_lock(&h->conns_lock);
		t->deadline_usec = deadline;
		pthread_mutex_unlock(&h->conns_lock);
	}
}

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

	if (!web_config_requires_auth(q->h->web)) {
		return WEB_AUTH_OK;
	}
	user = MHD_basic_auth_get_username_password(q->c, &password);
	if (user && password) {
		client_key(q->c, client, sizeof(client));
		a = web_config_check_basic_auth(q->h->web, client, user, password);
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

static bool has_body(struct MHD_Connection *c)
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
	if (has_body(q->c)) {
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
		q->snap = registry_acquire(q->h->registry);
		if (!q->snap) {
			return respond_error(q, MHD_HTTP_SERVICE_UNAVAILABLE,
					     "starting: no snapshot published yet");
		}
	}
	return route->handle(q);
}

static char request_seen;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct http_server *h = cls;
	struct request q = {.h = h, .c = c, .url = url};
	enum MHD_Result r;

	if (!*req_cls) {
		/* the headers are in */
		*req_cls = &request_seen;
		set_deadline(h, c, 0);
		if (!has_body(c)) {
			/* answer on the next call: a response queued now would
			 * cost the connection its keep-alive */
			return MHD_YES;
		}
		/* a body: answer (405, 413, ...) without reading it */
	} else if (*upload_data_size > 0) {
		/* body bytes of a request already answered: drop them */
		*upload_data_size = 0;
		return MHD_YES;
	}

	r = dispatch(&q, url, method);
	snapshot_unref(q.snap);
	return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *h = cls;

	/* the next request's headers are due within the timeout */
	set_deadline(h, c, now_usec(CLOCK_MONOTONIC) + h->timeout_usec);
}

/* Serving can wait, measuring cannot: the first time a server thread sees a
 * connection it lowers its own priority (setpriority() on a thread id
 * applies to that thread only), so that a probe thread woken by a
 * completion gets the CPU ahead of a busy scrape. */
static void yield_to_probes(void)
{
	static __thread bool done;

	if (!done) {
		done = true;
		if (setpriority(PRIO_PROCESS, (id_t)gettid(), HTTP_NICE) < 0) {
			log_debug_errno(errno, "Failed to lower the HTTP thread's priority: %m, ignoring.");
		}
	}
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *h = cls;
	struct conn_track *t;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		yield_to_probes();

		t = calloc(1, sizeof(*t));
		if (!t || !ci) {
			free(t);
			return;
		}
		t->fd = ci->connect_fd;
		t->deadline_usec = now_usec(CLOCK_MONOTONIC) + h->timeout_usec;
		pthread_mutex_lock(&h->conns_lock);
		t->next = h->conns;
		if (h->conns) {
			h->conns->prev = t;
		}
		h->conns = t;
		pthread_mutex_unlock(&h->conns_lock);
		*socket_context = t;
		return;
	}
	/* MHD_CONNECTION_NOTIFY_CLOSED comes before the socket is closed, so
	 * the sweep never shuts down a recycled descriptor */
	t = *socket_context;
	if (!t) {
		return;
	}
	pthread_mutex_lock(&h->conns_lock);
	if (t->prev) {
		t->prev->next = t->next;
	} else {
		h->conns = t->next;
	}
	if (t->next) {
		t->next->prev = t->prev;
	}
	pthread_mutex_unlock(&h->conns_lock);
	free(t);
	*socket_context = NULL;
}

static int on_sweep(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct http_server *h = userdata;
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	unsigned n = 0;

	pthread_mutex_lock(&h->conns_lock);
	for (struct conn_track *t = h->conns; t; t = t->next) {
		if (t->deadline_usec && now > t->deadline_usec) {
			/* libmicrohttpd sees the shutdown and closes the connection */
			shutdown(t->fd, SHUT_RDWR);
			t->deadline_usec = 0;
			n++;
		}
	}
	h->header_timeouts_total += n;
	pthread_mutex_unlock(&h->conns_lock);
	if (n > 0) {
		log_debug("Closed %u connection(s) whose request headers did not arrive in time.", n);
	}
	return sd_event_source_set_time(s, usec + SWEEP_INTERVAL_USEC);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) _printf_(2, 0);
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '\n') {
		buf[--n] = '\0';
	}
	/* client mistakes (plain HTTP on a TLS port, resets) are not our errors */
	log_debug("libmicrohttpd: %s", buf);
}

/* ---- setup ---- */

static int bind_address(const struct netaddr *a, int *ret_fd)
{
	struct sockaddr_storage ss;
	socklen_t len;
	_cleanup_close_ int fd = -1;
	int one = 1, zero = 0, r;
	char address[NETADDR_HOST_MAX + 16];

	netaddr_format(a, address, sizeof(address));
	r = netaddr_to_sockaddr(a, &ss, &len);
	if (r < 0) {
		return log_error_errno(r, "Listen address '%s': cannot resolve the host name.", address);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 && a->is_any && (errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT)) {
		/* no IPv6 on this host: ":PORT" means every IPv4 address */
		struct sockaddr_in *sa4 = (struct sockaddr_in *)&ss;

		memset(&ss, 0, sizeof(ss));
		sa4->sin_family = AF_INET;
		sa4->sin_port = htons(a->port);
		sa4->sin_addr.s_addr = htonl(INADDR_ANY);
		len = sizeof(*sa4);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	}
	if (fd < 0) {
		return log_error_errno(errno, "Failed to create a socket for '%s': %m", address);
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6) {
		/* ":PORT" serves IPv4 too; "[::1]:PORT" only IPv6 */
		int v6only = a->is_any ? 0 : 1;

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, v6only ? &one : &zero, sizeof(int));
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
		return log_error_errno(errno, "Failed to bind %s: %m", address);
	}
	if (listen(fd, SOMAXCONN) < 0) {
		return log_error_errno(errno, "Failed to listen on %s: %m", address);
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* Server threads: two where there are two CPUs, so that a slow client or a
 * bcrypt check never holds up every other request; one otherwise. */
static unsigned http_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n >= 2 ? HTTP_THREADS : 1;
}

static int start_daemon(struct http_server *h, const struct config *cfg, int fd)
{
	/* ITC: the threads are woken to stop through a pipe, which
	 * MHD_quiesce_daemon() needs (see http_server_free()) */
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
	unsigned timeout_sec = (unsigned)((h->timeout_usec + USEC_PER_SEC - 1) / USEC_PER_SEC);
	struct MHD_OptionItem tls[4] = {{MHD_OPTION_END, 0, NULL}};
	struct MHD_Daemon *d;

	if (web_config_has_tls(h->web)) {
		size_t n = 0;

		flags |= MHD_USE_TLS;
		tls[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0,
						   (void *)web_config_cert_pem(h->web)};
		tls[n++] =
		    (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)web_config_key_pem(h->web)};
		if (web_config_tls_priorities(h->web)) {
			tls[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
							   (void *)web_config_tls_priorities(h->web)};
		}
		tls[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	}
	d = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE,
	    http_threads(), MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_connections_per_ip,
	    MHD_OPTION_CONNECTION_TIMEOUT, timeout_sec, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	    (size_t)HTTP_CONNECTION_MEMORY_LIMIT, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
	    MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
	if (!d) {
		return -EIO;
	}
	h->daemons[h->n_daemons++] = d;
	return 0;
}

static int take_activated_sockets(int *fds, size_t *ret_n)
{
	int n = sd_listen_fds(1);

	if (n <= 0) {
		*ret_n = 0;
		return n;
	}
	if (n > HTTP_MAX_LISTEN) {
		return log_error_errno(-E2BIG,
				       "Socket activation passed %d sockets; at most %d are supported.", n,
				       HTTP_MAX_LISTEN);
	}
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;

		if (sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0) {
			return log_error_errno(
			    -EINVAL, "Socket activation: fd %d is not a listening stream socket.", fd);
		}
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		fds[i] = fd;
	}
	*ret_n = (size_t)n;
	return 0;
}

static int bind_all(const char *addresses, int *fds, size_t *ret_n)
{
	struct netaddr_list l;
	char bad[128];
	size_t n = 0;
	int r;

	r = netaddr_parse_list(addresses, &l, bad, sizeof(bad));
	if (r == -E2BIG) {
		return log_error_errno(r, "More than %d listen addresses.", HTTP_MAX_LISTEN);
	}
	if (r == -ENOENT) {
		return log_error_errno(-EINVAL, "No listen address.");
	}
	if (r < 0) {
		return log_error_errno(r, "Listen address '%s' is not HOST:PORT, [IPV6]:PORT or :PORT.", bad);
	}
	for (; n < l.n; n++) {
		r = bind_address(&l.items[n], &fds[n]);
		if (r < 0) {
			goto fail;
		}
	}
	*ret_n = n;
	return 0;
fail:
	while (n > 0) {
		close(fds[--n]);
	}
	return r;
}

/* Load --web.config.file, when there is one (TLS, basic auth, headers). */
static int load_web_config(struct http_server *h, const char *path)
{
	char err[512];
	int r;

	if (!path) {
		return 0;
	}
	r = web_config_load(path, &h->web, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err[0] ? err : "Failed to load the web config");
		return -EINVAL;
	}
	if (web_config_has_tls(h->web) && !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
		return log_error_errno(-EOPNOTSUPP,
				       "%s: TLS requested, but libmicrohttpd was built without it.", path);
	}
	return 0;
}

/* Serve on the socket-activated sockets, or else on sockets bound to
 * cfg->listen_address: one libmicrohttpd daemon each, which owns (and
 * closes) its socket. */
static int listen_all(struct http_server *h, const struct config *cfg, bool *ret_activated)
{
	int fds[HTTP_MAX_LISTEN];
	size_t n_fds = 0;
	int r;

	r = take_activated_sockets(fds, &n_fds);
	if (r < 0) {
		return r;
	}
	*ret_activated = n_fds > 0;
	if (n_fds == 0) {
		r = bind_all(cfg->listen_address, fds, &n_fds);
		if (r < 0) {
			return r;
		}
	}
	for (size_t i = 0; i < n_fds; i++) {
		r = start_daemon(h, cfg, fds[i]);
		if (r < 0) {
			log_error("Failed to start the HTTP server on fd %d (see the libmicrohttpd messages "
				  "at debug level).",
				  fds[i]);
			/* the daemons already started close their sockets; so
			 * may the one that failed */
			for (size_t j = i + 1; j < n_fds; j++) {
				close(fds[j]);
			}
			return r;
		}
	}
	return 0;
}

int http_server_new(const struct config *cfg, struct registry *registry, sd_event *event,
		    struct http_server **ret)
{
	_cleanup_(http_server_freep) struct http_server *h = NULL;
	bool activated = false;
	int r;

	if (!MHD_is_feature_supported(MHD_FEATURE_EPOLL)) {
		return log_error_errno(-EOPNOTSUPP, "libmicrohttpd was built without epoll support.");
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		return log_error_errno(-ENOMEM, "Out of memory");
	}
	/* from here on http_server_free() releases whatever was set up */
	h->registry = registry;
	h->timeout_usec = cfg->connection_timeout_usec;
	h->max_history_points = cfg->max_history_points;
	pthread_mutex_init(&h->conns_lock, NULL);
	r = render_cache_new(registry, &h->cache);
	if (r < 0) {
		return log_error_errno(r, "Failed to create the /metrics cache: %m");
	}

	r = load_web_config(h, cfg->web_config_file);
	if (r < 0) {
		return r;
	}
	r = listen_all(h, cfg, &activated);
	if (r < 0) {
		return r;
	}
	r = sd_event_add_time_relative(event, &h->sweep, CLOCK_MONOTONIC, SWEEP_INTERVAL_USEC, 0, on_sweep,
				       h);
	if (r < 0) {
		return log_error_errno(r, "Failed to add the HTTP sweep timer: %m");
	}
	r = sd_event_source_set_enabled(h->sweep, SD_EVENT_ON);
	if (r < 0) {
		return log_error_errno(r, "Failed to enable the HTTP sweep timer: %m");
	}
	if (activated) {
		log_info("Serving HTTP%s on %zu socket-activated socket(s).",
			 web_config_has_tls(h->web) ? "S" : "", h->n_daemons);
	} else {
		log_info("Serving HTTP%s on %s.", web_config_has_tls(h->web) ? "S" : "", cfg->listen_address);
	}
	*ret = TAKE_PTR(h);
	return 0;
}

struct http_server *http_server_free(struct http_server *h)
{
	if (!h) {
		return NULL;
	}
	sd_event_source_disable_unref(h->sweep);
	for (size_t i = 0; i < h->n_daemons; i++) {
		/* Take the listen socket back first and only close it: left to
		 * MHD_stop_daemon() it is shut down, and a socket-activated one is
		 * shared with systemd, which hands it to the next iopsd after a
		 * restart, dead ("fd 3 is not a listening stream socket"). */
		MHD_socket fd = MHD_quiesce_daemon(h->daemons[i]);

		/* joins the server threads */
		MHD_stop_daemon(h->daemons[i]);
		if (fd != MHD_INVALID_SOCKET) {
			close(fd);
		}
	}
	/* after the threads: responses in flight hold entries, not the cache */
	render_cache_free(h->cache);
	pthread_mutex_destroy(&h->conns_lock);
	web_config_free(h->web);
	free(h);
	return NULL;
}
