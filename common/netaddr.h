/* Listen addresses as iopsd's server binds them, parsed one way for the
 * command line, the config file, --check-config and the server:
 *   HOST:PORT      an IPv4 address or a host name (resolved when bound)
 *   [IPV6]:PORT    an IPv6 address, IPv6 only
 *   :PORT          every address, IPv6 and IPv4
 * and a comma-separated list of those. Ports are 1..65535. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#define NETADDR_LIST_MAX 8
#define NETADDR_HOST_MAX 256

struct netaddr {
	int family;  /* AF_INET or AF_INET6 for a literal or ":PORT"; AF_UNSPEC: a host name */
	bool is_any; /* ":PORT" */
	uint16_t port;
	char host[NETADDR_HOST_MAX]; /* without brackets; "" for ":PORT" */
};

struct netaddr_list {
	size_t n;
	struct netaddr items[NETADDR_LIST_MAX];
};

/* Parse one address; no name lookup. 0, or -EINVAL when it is none of the
 * forms above. */
int netaddr_parse(const char *s, struct netaddr *ret);

/* Parse a comma-separated list (blanks around an item are allowed) of 1 to
 * NETADDR_LIST_MAX addresses. 0; -EINVAL for a bad item, whose text is then
 * copied to bad (bad_len bytes, may be NULL); -E2BIG for too many; -ENOENT
 * for an empty list. */
int netaddr_parse_list(const char *s, struct netaddr_list *ret, char *bad, size_t bad_len);

/* netaddr_parse_list() that says what is wrong: on failure `err` (err_len
 * bytes) holds the one message every caller shows after its own prefix
 * ("more than 8 addresses in '...'", "no address given", "an empty address
 * in '...'", "'...' is not HOST:PORT, [IPV6]:PORT or :PORT"). Same returns. */
int netaddr_parse_list_explain(const char *s, struct netaddr_list *ret, char *err, size_t err_len);

/* `a` as text in the form it was written ("[::1]:9477"), for messages. */
void netaddr_format(const struct netaddr *a, char *buf, size_t len);

/* The socket address to bind `a` to: a host name resolves to its first
 * address (getaddrinfo: may block). 0, or -EADDRNOTAVAIL when the name does
 * not resolve. */
int netaddr_to_sockaddr(const struct netaddr *a, struct sockaddr_storage *ret, socklen_t *ret_len);
