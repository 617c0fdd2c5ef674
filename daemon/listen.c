/* Listen sockets: socket activation (sd_listen_fds) or bind(). */
#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "macro.h"

/* The list, parsed by the parser the config and the command line already
 * passed it through; -EINVAL (logged) should they ever disagree. */
static int parse_addresses(const char *addresses, struct netaddr_list *ret)
{
	char err[NETADDR_HOST_MAX + 64];
	int r;

	r = netaddr_parse_list_explain(addresses, ret, err, sizeof(err));
	if (r < 0) {
		return log_error_errno(-EINVAL, "Listen address: %s.", err);
	}
	return 0;
}

static int take_activated_sockets(struct listen_sockets *ls)
{
	int n = sd_listen_fds(1);

	if (n <= 0) {
		return n;
	}
	if (n > LISTEN_MAX) {
		return log_error_errno(
		    -E2BIG, "Socket activation passed %d sockets; at most %d are supported.", n, LISTEN_MAX);
	}
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;

		if (sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0) {
			return log_error_errno(
			    -EINVAL, "Socket activation: fd %d is not a listening stream socket.", fd);
		}
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		ls->fds[i] = fd;
	}
	ls->n = (size_t)n;
	ls->is_activated = true;
	return 0;
}

/* A stream socket for `a`; ":PORT" falls back to every IPv4 address on a
 * host without IPv6. */
static int open_socket(const struct netaddr *a, struct sockaddr_storage *ss, socklen_t *len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0 && a->is_any && (errno == EAFNOSUPPORT || errno == EPROTONOSUPPORT)) {
		struct sockaddr_in *sa4 = (struct sockaddr_in *)ss;

		memset(ss, 0, sizeof(*ss));
		sa4->sin_family = AF_INET;
		sa4->sin_port = htons(a->port);
		sa4->sin_addr.s_addr = htonl(INADDR_ANY);
		*len = sizeof(*sa4);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	}
	return fd;
}

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
	fd = open_socket(a, &ss, &len);
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

static int bind_all(const char *addresses, struct listen_sockets *ls)
{
	struct netaddr_list l;
	int r;

	r = parse_addresses(addresses, &l);
	if (r < 0) {
		return r;
	}
	for (; ls->n < l.n; ls->n++) {
		r = bind_address(&l.items[ls->n], &ls->fds[ls->n]);
		if (r < 0) {
			while (ls->n > 0) {
				close(ls->fds[--ls->n]);
			}
			return r;
		}
	}
	return 0;
}

int listen_open(const char *addresses, struct listen_sockets *ret)
{
	struct listen_sockets ls = {.n = 0};
	int r;

	r = take_activated_sockets(&ls);
	if (r < 0) {
		return r;
	}
	if (ls.n == 0) {
		r = bind_all(addresses, &ls);
		if (r < 0) {
			return r;
		}
	}
	*ret = ls;
	return 0;
}

int listen_check(const struct config *cfg)
{
	struct netaddr_list l;
	int r;

	r = parse_addresses(cfg->listen_address, &l);
	if (r < 0) {
		return r;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct sockaddr_storage ss;
		socklen_t len;
		char address[NETADDR_HOST_MAX + 16];

		if (netaddr_to_sockaddr(&l.items[i], &ss, &len) < 0) {
			netaddr_format(&l.items[i], address, sizeof(address));
			r = log_error_errno(-EINVAL, "%s: listen address '%s': cannot resolve the host name.",
					    cfg->path, address);
		}
	}
	return r;
}
