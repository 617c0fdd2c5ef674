/* The process's listen sockets: those systemd passed (socket activation), or
 * else sockets bound to the configured listen addresses. The HTTP server
 * serves on them; the process owns where they come from. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "netaddr.h"

#define LISTEN_MAX NETADDR_LIST_MAX

struct listen_sockets {
	int fds[LISTEN_MAX]; /* listening, O_NONBLOCK, FD_CLOEXEC */
	size_t n;
	bool is_activated; /* passed by systemd (LISTEN_FDS) */
};

/* Take the socket-activated sockets, or bind every address of `addresses`
 * (a listen_address list). Logs and returns -errno: -EINVAL for a list
 * that does not parse or a passed fd that is not a listening stream
 * socket, -E2BIG for too many passed, the bind's or the resolver's error.
 * On success the caller owns ret->fds. */
int listen_open(const char *addresses, struct listen_sockets *ret);

/* What --check-config can tell of binding cfg->listen_address: every
 * address parses and resolves as listen_open() will bind it. Logs and
 * returns -EINVAL otherwise. */
int listen_check(const struct config *cfg);
