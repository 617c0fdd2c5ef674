/* The HTTP server. Every request takes a reference to the current snapshot
 * (a pointer swap under a lock nobody holds for long) and answers from it:
 * /metrics sends the pre-rendered bytes without copying, JSON is built from
 * the snapshot in memory. Nothing here does I/O besides the socket, and
 * nothing logs above debug: errors go back to the caller. */
#include "http.h"

#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/resource.h>
#include <sys/socket.h>

#include "errstr.h"
#include "log.h"
#include "macro.h"
#include "render_cache.h"
#include "routes.h"
#include "timeutil.h"
#include "webconfig.h"

#define SWEEP_INTERVAL_USEC USEC_PER_SEC
/* libmicrohttpd daemons a reload replaced, still finishing their
 * connections; past this many the oldest is stopped at once. */
#define HTTP_MAX_RETIRED (2 * HTTP_MAX_LISTEN)

/* One accepted connection, for its deadlines: a request's headers must be
 * complete within connection_timeout of the connection's start or of the
 * previous response, and its answer sent within connection_timeout of the
 * headers, however slowly the client trickles bytes in or reads them out
 * (libmicrohttpd's own timeout only counts inactivity). */
/* A client's address, as connections are counted by it. */
struct peer {
	sa_family_t family;
	unsigned char addr[16];
};

struct conn_track {
	struct conn_track *prev, *next;
	int fd;
	uint64_t deadline_usec; /* monotonic; 0: none */
	struct peer peer;
	bool is_lane;	   /* taken past max_connections: the scrape lane's */
	bool is_answering; /* the deadline is the answer's (the write deadline) */
};

/* A generation of libmicrohttpd daemons, one per listening socket, with the
 * web config (TLS certificate) and limits they were started with. */
struct retired {
	struct MHD_Daemon *daemon;
	struct web_config *web; /* a reference */
	uint64_t since_usec;
};

struct http_server {
	struct routes_context routes; /* registry, render cache, web config */
	struct MHD_Daemon *daemons[HTTP_MAX_LISTEN];
	size_t n_daemons;
	struct web_config *daemons_web; /* what daemons[] were started with, a reference */
	struct retired retired[HTTP_MAX_RETIRED];
	size_t n_retired;
	uint64_t timeout_usec; /* atomic: the server threads read it */
	unsigned max_connections, max_connections_per_ip;
	sd_event_source *sweep;

	pthread_mutex_t conns_lock;
	struct conn_track *conns;
	unsigned n_conns;		 /* in conns */
	unsigned accept_max_connections; /* max_connections, under conns_lock for on_accept() */
	unsigned accept_max_per_ip;	 /* max_connections_per_ip, likewise */
	uint64_t header_timeouts_total;
};

static struct conn_track *connection_track(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void set_deadline(struct http_server *h, struct MHD_Connection *c, uint64_t deadline, bool is_answer)
{
	struct conn_track *t = connection_track(c);

	if (t) {
		pthread_mutex_lock(&h->conns_lock);
		t->deadline_usec = deadline;
		t->is_answering = is_answer;
		pthread_mutex_unlock(&h->conns_lock);
	}
}

static char request_seen;

static struct peer peer_of(const struct sockaddr *addr)
{
	struct peer p = {.family = addr ? addr->sa_family : AF_UNSPEC};

	if (p.family == AF_INET) {
		memcpy(p.addr, &((const struct sockaddr_in *)(const void *)addr)->sin_addr, 4);
	} else if (p.family == AF_INET6) {
		memcpy(p.addr, &((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr, 16);
	}
	return p;
}

/* The connections address `p` holds now. Under conns_lock. */
static unsigned held_by(const struct http_server *h, const struct peer *p)
{
	unsigned n = 0;

	for (const struct conn_track *t = h->conns; t; t = t->next) {
		n += t->peer.family == p->family && memcmp(t->peer.addr, p->addr, sizeof(p->addr)) == 0;
	}
	return n;
}

/* Who gets a connection, over all the server threads (each of
 * libmicrohttpd's would count its own): an address holds at most
 * max_connections_per_ip; past max_connections, HTTP_LANE_CONNECTIONS more
 * are taken from addresses that hold fewer than HTTP_LANE_MAX_HELD (a
 * scraper, a health check: its last connections may still be closing on a
 * busy server), and those may ask only for what a scraper asks for
 * (is_lane_path()). So
 * slow readers, a flood, or clients that keep their connections cannot
 * fill the server against a scraper: they fill max_connections and are
 * refused past it, and the scrape takes the lane. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct http_server *h = cls;
	struct peer p = peer_of(addrlen > 0 ? addr : NULL);
	enum MHD_Result r = MHD_YES;
	unsigned held;

	pthread_mutex_lock(&h->conns_lock);
	held = held_by(h, &p);
	if (held >= h->accept_max_per_ip || h->n_conns >= h->accept_max_connections + HTTP_LANE_CONNECTIONS ||
	    (h->n_conns >= h->accept_max_connections && held >= HTTP_LANE_MAX_HELD)) {
		r = MHD_NO;
	}
	pthread_mutex_unlock(&h->conns_lock);
	return r;
}

static bool is_lane_path(const char *url)
{
	return strcmp(url, "/metrics") == 0 || strcmp(url, "/-/healthy") == 0 ||
	       strcmp(url, "/-/ready") == 0 || strcmp(url, "/healthz") == 0;
}

/* A lane connection asked for something else: 503, closed. */
static enum MHD_Result queue_lane_refusal(struct MHD_Connection *c)
{
	static const char body[] = "busy: iopsd is at max_connections; a connection past it may ask only "
				   "for /metrics, /-/healthy, /-/ready or /healthz; retry later\n";
	struct MHD_Response *resp;
	enum MHD_Result r;

	resp = MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	r = MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct http_server *h = cls;
	const struct conn_track *t = connection_track(c);

	if (!*req_cls) {
		/* the headers are in */
		*req_cls = &request_seen;
		/* the answer is due within the timeout: a client that reads it
		 * a byte at a time does not keep it in memory for longer */
		set_deadline(h, c,
			     now_usec(CLOCK_MONOTONIC) + __atomic_load_n(&h->timeout_usec, __ATOMIC_RELAXED),
			     true);
		if (!http_request_has_body(c)) {
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
	if (t && t->is_lane && !is_lane_path(url)) {
		return queue_lane_refusal(c);
	}
	return routes_dispatch(&h->routes, c, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *h = cls;

	/* the next request's headers are due within the timeout */
	set_deadline(h, c, now_usec(CLOCK_MONOTONIC) + __atomic_load_n(&h->timeout_usec, __ATOMIC_RELAXED),
		     false);
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
		const union MHD_ConnectionInfo *ai =
		    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		yield_to_probes();

		t = calloc(1, sizeof(*t));
		if (!t || !ci) {
			free(t);
			return;
		}
		t->fd = ci->connect_fd;
		t->peer = peer_of(ai ? ai->client_addr : NULL);
		t->deadline_usec =
		    now_usec(CLOCK_MONOTONIC) + __atomic_load_n(&h->timeout_usec, __ATOMIC_RELAXED);
		pthread_mutex_lock(&h->conns_lock);
		t->is_lane = h->n_conns >= h->accept_max_connections;
		h->n_conns++;
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
	h->n_conns--;
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

/* Stop the retired daemons whose connections are done, or that have had
 * two timeouts to finish them (or all, with `all`). */
static void sweep_retired(struct http_server *h, uint64_t now, bool all)
{
	size_t w = 0;

	for (size_t i = 0; i < h->n_retired; i++) {
		struct retired *r = &h->retired[i];
		const union MHD_DaemonInfo *di =
		    MHD_get_daemon_info(r->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

		if (all || !di || di->num_connections == 0 || now - r->since_usec > 2 * h->timeout_usec) {
			/* quiesced: its listening socket is the new daemon's */
			MHD_stop_daemon(r->daemon);
			web_config_unref(r->web);
			continue;
		}
		h->retired[w++] = *r;
	}
	h->n_retired = w;
}

static int on_sweep(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct http_server *h = userdata;
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	unsigned n = 0;

	pthread_mutex_lock(&h->conns_lock);
	for (struct conn_track *t = h->conns; t; t = t->next) {
		if (t->deadline_usec && now > t->deadline_usec) {
			/* libmicrohttpd sees the shutdown and closes the
			 * connection. Past the write deadline, with no linger:
			 * the close resets it, so that an answer the client
			 * never read is dropped instead of kept by the kernel
			 * for the client. */
			if (t->is_answering) {
				(void)setsockopt(t->fd, SOL_SOCKET, SO_LINGER,
						 &(struct linger){.l_onoff = 1, .l_linger = 0},
						 sizeof(struct linger));
			}
			shutdown(t->fd, SHUT_RDWR);
			t->deadline_usec = 0;
			n++;
		}
	}
	h->header_timeouts_total += n;
	pthread_mutex_unlock(&h->conns_lock);
	if (n > 0) {
		log_debug("Closed %u connection(s) past their deadline (request headers or answer).", n);
	}
	sweep_retired(h, now, false);
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

/* Server threads: two where there are two CPUs, so that a slow client or a
 * bcrypt check never holds up every other request; one otherwise. */
static unsigned http_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n >= 2 ? HTTP_THREADS : 1;
}

static struct MHD_Daemon *start_daemon(struct http_server *h, int fd)
{
	/* ITC: the threads are woken to stop through a pipe, which
	 * MHD_quiesce_daemon() needs (see http_server_free()). poll(), not
	 * epoll: with a thread pool on epoll, libmicrohttpd 0.9.75 aborts
	 * ("Failed to remove listen FD from epoll set") when a worker takes
	 * the listening socket out of its epoll set while MHD_quiesce_daemon()
	 * (each reload, and the stop) does the same; on poll a quiesce only
	 * wakes the workers. A few hundred connections at most: poll's cost. */
	unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
	unsigned timeout_sec = (unsigned)((h->timeout_usec + USEC_PER_SEC - 1) / USEC_PER_SEC);
	struct MHD_OptionItem tls[4] = {{MHD_OPTION_END, 0, NULL}};
	const struct web_config *wc = h->daemons_web;

	if (web_config_has_tls(wc)) {
		size_t n = 0;

		flags |= MHD_USE_TLS;
		tls[n++] =
		    (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)web_config_cert_pem(wc)};
		tls[n++] =
		    (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)web_config_key_pem(wc)};
		if (web_config_tls_priorities(wc)) {
			tls[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
							   (void *)web_config_tls_priorities(wc)};
		}
		tls[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	}
	return MHD_start_daemon(
	    flags, 0, on_accept, h, on_request, h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE,
	    http_threads(), MHD_OPTION_CONNECTION_LIMIT, 2 * (h->max_connections + HTTP_LANE_CONNECTIONS),
	    MHD_OPTION_CONNECTION_TIMEOUT, timeout_sec, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	    (size_t)HTTP_CONNECTION_MEMORY_LIMIT, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
	    MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
}

/* Load --web.config.file, when there is one (TLS, basic auth, headers),
 * into *ret (NULL without one). */
static int load_web_config(const char *path, struct web_config **ret, char *err, size_t errlen)
{
	struct web_config *wc = NULL;
	int r;

	*ret = NULL;
	if (!path) {
		return 0;
	}
	r = web_config_load(path, &wc, err, errlen);
	if (r < 0) {
		if (!err[0]) {
			errstr_set(err, errlen, 0, "Failed to load the web config");
		}
		return -EINVAL;
	}
	if (web_config_has_tls(wc) && !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
		web_config_unref(wc);
		return errstr_set(err, errlen, -EOPNOTSUPP,
				  "%s: TLS requested, but libmicrohttpd was built without it.", path);
	}
	*ret = wc;
	return 0;
}

/* The limits of cfg, for the daemons started from now on. */
static void apply_limits(struct http_server *h, const struct config *cfg)
{
	__atomic_store_n(&h->timeout_usec, cfg->connection_timeout_usec, __ATOMIC_RELAXED);
	__atomic_store_n(&h->routes.max_history_points, cfg->max_history_points, __ATOMIC_RELAXED);
	h->max_connections = (unsigned)cfg->max_connections;
	h->max_connections_per_ip = (unsigned)cfg->max_connections_per_ip;
	pthread_mutex_lock(&h->conns_lock);
	h->accept_max_connections = h->max_connections;
	h->accept_max_per_ip = h->max_connections_per_ip;
	pthread_mutex_unlock(&h->conns_lock);
}

int http_server_new(const struct config *cfg, struct registry *registry, sd_event *event, char *err,
		    size_t errlen, struct http_server **ret)
{
	_cleanup_(http_server_freep) struct http_server *h = NULL;
	int r;

	if (errlen > 0) {
		err[0] = '\0';
	}
	if (!MHD_is_feature_supported(MHD_FEATURE_POLL)) {
		return errstr_set(err, errlen, -EOPNOTSUPP, "libmicrohttpd was built without poll support.");
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		return errstr_set(err, errlen, -ENOMEM, "Out of memory");
	}
	/* from here on http_server_free() releases whatever was set up */
	h->routes.registry = registry;
	routes_context_init(&h->routes);
	pthread_mutex_init(&h->conns_lock, NULL);
	apply_limits(h, cfg);
	r = render_cache_new(registry, &h->routes.cache);
	if (r < 0) {
		return errstr_set(err, errlen, r, "Failed to create the /metrics cache: %s", strerror(-r));
	}
	r = load_web_config(cfg->web_config_file, &h->daemons_web, err, errlen);
	if (r < 0) {
		return r;
	}
	routes_set_web_config(&h->routes, web_config_ref(h->daemons_web));
	r = sd_event_add_time_relative(event, &h->sweep, CLOCK_MONOTONIC, SWEEP_INTERVAL_USEC, 0, on_sweep,
				       h);
	if (r < 0) {
		return errstr_set(err, errlen, r, "Failed to add the HTTP sweep timer: %s", strerror(-r));
	}
	r = sd_event_source_set_enabled(h->sweep, SD_EVENT_ON);
	if (r < 0) {
		return errstr_set(err, errlen, r, "Failed to enable the HTTP sweep timer: %s", strerror(-r));
	}
	*ret = TAKE_PTR(h);
	return 0;
}

int http_server_start(struct http_server *h, const int *fds, size_t n_fds, char *err, size_t errlen)
{
	int r;

	for (size_t i = 0; i < n_fds; i++) {
		struct MHD_Daemon *d = i < HTTP_MAX_LISTEN - h->n_daemons ? start_daemon(h, fds[i]) : NULL;

		r = d ? 0 : i < HTTP_MAX_LISTEN - h->n_daemons ? -EIO : -E2BIG;
		if (d) {
			h->daemons[h->n_daemons++] = d;
		}
		if (r < 0) {
			/* the daemons already started close their sockets; so
			 * may the one that failed */
			for (size_t j = i + 1; j < n_fds; j++) {
				close(fds[j]);
			}
			return errstr_set(
			    err, errlen, r,
			    "Failed to start the HTTP server on fd %d (see the libmicrohttpd messages "
			    "at debug level).",
			    fds[i]);
		}
	}
	return 0;
}

bool http_server_has_tls(const struct http_server *h)
{
	return web_config_has_tls(h->daemons_web);
}

/* Put the daemon on `i`'s socket aside, stopped accepting, to finish its
 * connections. */
static void retire(struct http_server *h, size_t i)
{
	if (h->n_retired == HTTP_MAX_RETIRED) {
		sweep_retired(h, 0, true);
	}
	(void)MHD_quiesce_daemon(h->daemons[i]);
	h->retired[h->n_retired++] =
	    (struct retired){h->daemons[i], web_config_ref(h->daemons_web), now_usec(CLOCK_MONOTONIC)};
}

/* A new generation of daemons on the same listening sockets, started
 * before the old one stops accepting: no connection is refused meanwhile. */
static int restart_daemons(struct http_server *h, struct web_config *wc)
{
	struct MHD_Daemon *fresh[HTTP_MAX_LISTEN];
	struct web_config *old = h->daemons_web;

	h->daemons_web = wc;
	for (size_t i = 0; i < h->n_daemons; i++) {
		const union MHD_DaemonInfo *di =
		    MHD_get_daemon_info(h->daemons[i], MHD_DAEMON_INFO_LISTEN_FD);

		fresh[i] = di ? start_daemon(h, di->listen_fd) : NULL;
		if (!fresh[i]) {
			for (size_t j = 0; j < i; j++) {
				/* it shares the old daemon's socket: quiesced first, so
				 * that stopping it does not close that */
				(void)MHD_quiesce_daemon(fresh[j]);
				MHD_stop_daemon(fresh[j]);
			}
			h->daemons_web = old;
			return -EIO;
		}
	}
	h->daemons_web = old;
	for (size_t i = 0; i < h->n_daemons; i++) {
		retire(h, i);
		h->daemons[i] = fresh[i];
	}
	web_config_unref(old);
	h->daemons_web = wc;
	return 0;
}

int http_server_reload(struct http_server *h, const struct config *cfg, char *err, size_t errlen)
{
	struct web_config *wc = NULL;
	struct config limits = {
	    .connection_timeout_usec = __atomic_load_n(&h->timeout_usec, __ATOMIC_RELAXED),
	    .max_history_points = __atomic_load_n(&h->routes.max_history_points, __ATOMIC_RELAXED),
	    .max_connections = h->max_connections,
	    .max_connections_per_ip = h->max_connections_per_ip,
	};
	int r;

	if (errlen > 0) {
		err[0] = '\0';
	}
	r = load_web_config(cfg->web_config_file, &wc, err, errlen);
	if (r < 0) {
		return r;
	}
	apply_limits(h, cfg);
	routes_set_web_config(&h->routes, web_config_ref(wc));
	r = restart_daemons(h, wc);
	if (r < 0) {
		/* the running daemons keep theirs: so do the routes and limits */
		apply_limits(h, &limits);
		routes_set_web_config(&h->routes, web_config_ref(h->daemons_web));
		web_config_unref(wc);
		return errstr_set(
		    err, errlen, r,
		    "Failed to start the HTTP server with the new web config and limits (see the "
		    "libmicrohttpd messages at debug level)");
	}
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
	sweep_retired(h, 0, true);
	/* after the threads: responses in flight hold entries, not the cache */
	render_cache_free(h->routes.cache);
	pthread_mutex_destroy(&h->conns_lock);
	routes_context_done(&h->routes);
	web_config_unref(h->daemons_web);
	free(h);
	return NULL;
}
