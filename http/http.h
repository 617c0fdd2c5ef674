/* The HTTP server: libmicrohttpd on its own poll threads serving
 * pre-rendered snapshots (/metrics), JSON (/api/v1/...), /healthz and /,
 * with connection limits, a header deadline against slowloris, and TLS and
 * basic auth from --web.config.file. It serves on sockets it is given
 * (daemon/listen.h opens them) and logs nothing above debug. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "config.h"
#include "macro.h"
#include "negotiate.h"
#include "netaddr.h"
#include "registry.h"
#include "render_prom.h"

#define HTTP_MAX_LISTEN NETADDR_LIST_MAX
/* libmicrohttpd worker threads (each polling its own connections) on hosts with two
 * or more CPUs. max_connections is shared out among them. */
#define HTTP_THREADS 2u
/* The scrape lane: connections taken past max_connections, each from an
 * address that holds fewer than HTTP_LANE_MAX_HELD (a scraper's previous
 * connections may still be closing), for /metrics, /-/healthy, /-/ready and
 * /healthz only. */
#define HTTP_LANE_CONNECTIONS 16u
#define HTTP_LANE_MAX_HELD    4u
/* Niceness of the server threads, relative to the probe threads' 0. */
#define HTTP_NICE 10
/* Per-connection memory for headers and the URL: a larger request gets 431. */
#define HTTP_CONNECTION_MEMORY_LIMIT (32u * 1024u)

struct http_server;

/* Load the web config and get ready to serve `registry`: adds a timer to
 * `event` that enforces the header deadline. Returns -errno with the
 * message in err (errlen bytes; "FILE:LINE: ..." for a bad web config,
 * which is -EINVAL). */
int http_server_new(const struct config *cfg, struct registry *registry, sd_event *event, char *err,
		    size_t errlen, struct http_server **ret);

/* Serve on the listening sockets fds[0..n_fds-1], one libmicrohttpd daemon
 * each; takes ownership of them, also on failure. Returns -errno with the
 * message in err. */
int http_server_start(struct http_server *h, const int *fds, size_t n_fds, char *err, size_t errlen);

/* A reload: read cfg's web config file again and apply it with cfg's
 * connection_timeout, max_connections, max_connections_per_ip and
 * max_history_points. Basic auth (with a new login cache), headers and
 * max_history_points hold for every request from now on; the certificate
 * and the connection limits for new connections (a new libmicrohttpd
 * daemon on each listening socket; the old ones finish their connections).
 * On failure returns -errno with the message in err, and the running web
 * config stays. */
int http_server_reload(struct http_server *h, const struct config *cfg, char *err, size_t errlen);

/* Whether the web config asks for TLS. */
bool http_server_has_tls(const struct http_server *h);

/* Stop serving (waits for the server threads) and free; copes with a
 * half-built server. */
struct http_server *http_server_free(struct http_server *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct http_server *, http_server_free);
