/* The HTTP server: libmicrohttpd on its own epoll thread serving
 * pre-rendered snapshots (/metrics), JSON (/api/v1/...), /healthz and /,
 * with connection limits, a header deadline against slowloris, and TLS and
 * basic auth from --web.config.file. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <sys/socket.h>

#include <systemd/sd-event.h>

#include "config.h"
#include "macro.h"
#include "netaddr.h"
#include "registry.h"
#include "render_prom.h"

#define HTTP_MAX_LISTEN	    NETADDR_LIST_MAX
#define HTTP_MAX_QUERY_ARGS 8
/* libmicrohttpd worker threads (each with its own epoll) on hosts with two
 * or more CPUs. max_connections is shared out among them. */
#define HTTP_THREADS 2u
/* Niceness of the server threads, relative to the probe threads' 0. */
#define HTTP_NICE 10
/* Per-connection memory for headers and the URL: a larger request gets 431. */
#define HTTP_CONNECTION_MEMORY_LIMIT (32u * 1024u)

struct http_server;

/* Load the web config, take the socket-activated sockets (LISTEN_FDS) or
 * bind cfg->listen_address (a comma-separated list of HOST:PORT,
 * [IPV6]:PORT, :PORT), and start serving `registry`. Adds a timer to
 * `event` that enforces the header deadline. Logs and returns -errno
 * (-EINVAL for a bad web config or address). */
int http_server_new(const struct config *cfg, struct registry *registry, sd_event *event,
		    struct http_server **ret);

/* Stop serving (waits for the server threads) and free; copes with a
 * half-built server. */
struct http_server *http_server_free(struct http_server *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct http_server *, http_server_free);

/* Pure helpers, exposed for tests. */

/* OpenMetrics when the Accept header lists application/openmetrics-text
 * (version 1.0.0, 0.0.1 or none) with a q at least that of text/plain;
 * the text format 0.0.4 otherwise (also for NULL). */
enum metrics_format http_negotiate_format(const char *accept);

/* True when Accept-Encoding allows gzip (gzip, x-gzip or * with q > 0). */
bool http_accepts_gzip(const char *accept_encoding);

/* A history window ("5m", "300", "90s"): 1 s .. max_usec. -EINVAL for
 * syntax, -ERANGE out of range. */
int http_parse_window(const char *s, uint64_t max_usec, uint64_t *ret_usec);

/* A device or probe name in a query: 1..63 printable bytes. */
bool http_valid_name(const char *s);
