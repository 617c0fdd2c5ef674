/* The HTTP server. Every request takes a reference to the current snapshot
 * (a pointer swap under a lock nobody holds for long) and answers from it:
 * /metrics sends the pre-rendered bytes without copying, JSON is built from
 * the snapshot in memory. Nothing here does I/O besides the socket, and
 * nothing logs above debug: errors go back to the caller. */
#include "http.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/resource.h>

#include "errstr.h"
#include "log.h"
#include "macro.h"
#include "render_cache.h"
#include "routes.h"
#include "timeutil.h"
#include "webconfig.h"

#define SWEEP_INTERVAL_USEC USEC_PER_SEC

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
	struct routes_context routes; /* registry, render cache, web config */
	struct MHD_Daemon *daemons[HTTP_MAX_LISTEN];
	size_t n_daemons;
	uint64_t timeout_usec;
	unsigned max_connections, max_connections_per_ip;
	sd_event_source *sweep;

	pthread_mutex_t conns_lock;
	struct conn_track *conns;
	uint64_t header_timeouts_total;
};

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

static char request_seen;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct http_server *h = cls;

	if (!*req_cls) {
		/* the headers are in */
		*req_cls = &request_seen;
		set_deadline(h, c, 0);
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

	return routes_dispatch(&h->routes, c, url, method);
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

/* Server threads: two where there are two CPUs, so that a slow client or a
 * bcrypt check never holds up every other request; one otherwise. */
static unsigned http_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n >= 2 ? HTTP_THREADS : 1;
}

static int start_daemon(struct http_server *h, int fd)
{
	/* ITC: the threads are woken to stop through a pipe, which
	 * MHD_quiesce_daemon() needs (see http_server_free()) */
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
	unsigned timeout_sec = (unsigned)((h->timeout_usec + USEC_PER_SEC - 1) / USEC_PER_SEC);
	struct MHD_OptionItem tls[4] = {{MHD_OPTION_END, 0, NULL}};
	struct MHD_Daemon *d;

	if (web_config_has_tls(h->routes.web)) {
		size_t n = 0;

		flags |= MHD_USE_TLS;
		tls[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0,
						   (void *)web_config_cert_pem(h->routes.web)};
		tls[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0,
						   (void *)web_config_key_pem(h->routes.web)};
		if (web_config_tls_priorities(h->routes.web)) {
			tls[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
							   (void *)web_config_tls_priorities(h->routes.web)};
		}
		tls[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	}
	d = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE,
	    http_threads(), MHD_OPTION_CONNECTION_LIMIT, h->max_connections,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, h->max_connections_per_ip, MHD_OPTION_CONNECTION_TIMEOUT,
	    timeout_sec, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY_LIMIT,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
	if (!d) {
		return -EIO;
	}
	h->daemons[h->n_daemons++] = d;
	return 0;
}

/* Load --web.config.file, when there is one (TLS, basic auth, headers). */
static int load_web_config(struct http_server *h, const char *path, char *err, size_t errlen)
{
	int r;

	if (!path) {
		return 0;
	}
	r = web_config_load(path, &h->routes.web, err, errlen);
	if (r < 0) {
		if (!err[0]) {
			errstr_set(err, errlen, 0, "Failed to load the web config");
		}
		return -EINVAL;
	}
	if (web_config_has_tls(h->routes.web) && !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
		return errstr_set(err, errlen, -EOPNOTSUPP,
				  "%s: TLS requested, but libmicrohttpd was built without it.", path);
	}
	return 0;
}

int http_server_new(const struct config *cfg, struct registry *registry, sd_event *event, char *err,
		    size_t errlen, struct http_server **ret)
{
	_cleanup_(http_server_freep) struct http_server *h = NULL;
	int r;

	if (errlen > 0) {
		err[0] = '\0';
	}
	if (!MHD_is_feature_supported(MHD_FEATURE_EPOLL)) {
		return errstr_set(err, errlen, -EOPNOTSUPP, "libmicrohttpd was built without epoll support.");
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		return errstr_set(err, errlen, -ENOMEM, "Out of memory");
	}
	/* from here on http_server_free() releases whatever was set up */
	h->routes.registry = registry;
	h->routes.max_history_points = cfg->max_history_points;
	h->timeout_usec = cfg->connection_timeout_usec;
	h->max_connections = (unsigned)cfg->max_connections;
	h->max_connections_per_ip = (unsigned)cfg->max_connections_per_ip;
	pthread_mutex_init(&h->conns_lock, NULL);
	r = render_cache_new(registry, &h->routes.cache);
	if (r < 0) {
		return errstr_set(err, errlen, r, "Failed to create the /metrics cache: %s", strerror(-r));
	}
	r = load_web_config(h, cfg->web_config_file, err, errlen);
	if (r < 0) {
		return r;
	}
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
		r = i < HTTP_MAX_LISTEN - h->n_daemons ? start_daemon(h, fds[i]) : -E2BIG;
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
	return web_config_has_tls(h->routes.web);
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
	render_cache_free(h->routes.cache);
	pthread_mutex_destroy(&h->conns_lock);
	web_config_free(h->routes.web);
	free(h);
	return NULL;
}
