/* Listen address parsing shared by the CLI, the config and the server. */
#include "netaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "units.h"

static int parse_port(const char *s, uint16_t *ret)
{
	size_t n = strspn(s, "0123456789");
	uint64_t port;

	/* digits only: no sign, no blanks (parse_uint64 would allow those) */
	if (n == 0 || n > 5 || s[n] != '\0' || parse_uint64(s, &port) < 0 || port == 0 || port > 65535) {
		return -EINVAL;
	}
	*ret = (uint16_t)port;
	return 0;
}

/* A host name getaddrinfo may look up: letters, digits, '-', '_' and dots,
 * and not all digits and dots (that is a bad IPv4 address, not a name). */
static bool is_host_name(const char *s)
{
	bool has_letter = false;

	for (const char *p = s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '-' || *p == '_') {
			has_letter = true;
		} else if (!((*p >= '0' && *p <= '9') || *p == '.')) {
			return false;
		}
	}
	return has_letter;
}

int netaddr_parse(const char *s, struct netaddr *ret)
{
	struct netaddr a = {0};
	const char *port;
	size_t n;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		struct in6_addr in6;

		if (!close || close[1] != ':') {
			return -EINVAL;
		}
		n = (size_t)(close - s - 1);
		port = close + 2;
		if (n >= sizeof(a.host)) {
			return -EINVAL;
		}
		memcpy(a.host, s + 1, n);
		if (inet_pton(AF_INET6, a.host, &in6) != 1) {
			return -EINVAL;
		}
		a.family = AF_INET6;
	} else {
		const char *colon = strrchr(s, ':');
		struct in_addr in4;

		if (!colon) {
			return -EINVAL;
		}
		n = (size_t)(colon - s);
		port = colon + 1;
		if (n >= sizeof(a.host)) {
			return -EINVAL;
		}
		memcpy(a.host, s, n);
		if (n == 0) {
			a.family = AF_INET6;
			a.is_any = true;
		} else if (inet_pton(AF_INET, a.host, &in4) == 1) {
			a.family = AF_INET;
		} else if (is_host_name(a.host)) {
			a.family = AF_UNSPEC; /* a bare IPv6 address (needs brackets) is not one */
		} else {
			return -EINVAL;
		}
	}
	if (parse_port(port, &a.port) < 0) {
		return -EINVAL;
	}
	*ret = a;
	return 0;
}

int netaddr_parse_list(const char *s, struct netaddr_list *ret, char *bad, size_t bad_len)
{
	struct netaddr_list l = {0};

	if (s[strspn(s, " \t")] == '\0') {
		return -ENOENT;
	}
	for (const char *p = s;;) {
		const char *next = p + strcspn(p, ",");
		const char *e = next;
		char item[NETADDR_HOST_MAX + 16];
		size_t n;

		if (l.n == NETADDR_LIST_MAX) {
			return -E2BIG;
		}
		p += strspn(p, " \t");
		while (e > p && (e[-1] == ' ' || e[-1] == '\t')) {
			e--;
		}
		n = (size_t)(e - p);
		/* an empty item ("a,,b", a trailing comma) is an error too */
		if (n < sizeof(item)) {
			memcpy(item, p, n);
			item[n] = '\0';
		}
		if (n >= sizeof(item) || netaddr_parse(item, &l.items[l.n]) < 0) {
			if (bad && bad_len > 0) {
				snprintf(bad, bad_len, "%.*s", (int)n, p);
			}
			return -EINVAL;
		}
		l.n++;
		if (*next == '\0') {
			break;
		}
		p = next + 1;
	}
	*ret = l;
	return 0;
}

int netaddr_parse_list_explain(const char *s, struct netaddr_list *ret, char *err, size_t err_len)
{
	char bad[128];
	int r;

	r = netaddr_parse_list(s, ret, bad, sizeof(bad));
	if (r == -E2BIG) {
		snprintf(err, err_len, "more than %d addresses in '%s'", NETADDR_LIST_MAX, s);
	} else if (r == -ENOENT) {
		snprintf(err, err_len, "no address given");
	} else if (r < 0 && bad[0] == '\0') {
		snprintf(err, err_len, "an empty address in '%s'", s);
	} else if (r < 0) {
		snprintf(err, err_len, "'%s' is not HOST:PORT, [IPV6]:PORT or :PORT", bad);
	}
	return r;
}

void netaddr_format(const struct netaddr *a, char *buf, size_t len)
{
	if (a->family == AF_INET6 && !a->is_any) {
		snprintf(buf, len, "[%s]:%u", a->host, a->port);
	} else {
		snprintf(buf, len, "%s:%u", a->host, a->port);
	}
}

int netaddr_to_sockaddr(const struct netaddr *a, struct sockaddr_storage *ret, socklen_t *ret_len)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *sa4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sa6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;

	if (a->is_any) {
		sa6->sin6_family = AF_INET6;
		sa6->sin6_addr = in6addr_any;
		sa6->sin6_port = htons(a->port);
		len = sizeof(*sa6);
	} else if (a->family == AF_INET6) {
		sa6->sin6_family = AF_INET6;
		sa6->sin6_port = htons(a->port);
		if (inet_pton(AF_INET6, a->host, &sa6->sin6_addr) != 1) {
			return -EINVAL;
		}
		len = sizeof(*sa6);
	} else if (a->family == AF_INET) {
		sa4->sin_family = AF_INET;
		sa4->sin_port = htons(a->port);
		if (inet_pton(AF_INET, a->host, &sa4->sin_addr) != 1) {
			return -EINVAL;
		}
		len = sizeof(*sa4);
	} else {
		struct addrinfo hints = {.ai_family = AF_UNSPEC,
					 .ai_socktype = SOCK_STREAM,
					 .ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG};
		struct addrinfo *ai = NULL;
		char portstr[8];

		snprintf(portstr, sizeof(portstr), "%u", a->port);
		if (getaddrinfo(a->host, portstr, &hints, &ai) != 0 || !ai) {
			return -EADDRNOTAVAIL;
		}
		if (ai->ai_addrlen > sizeof(ss)) {
			freeaddrinfo(ai);
			return -EADDRNOTAVAIL;
		}
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		len = ai->ai_addrlen;
		freeaddrinfo(ai);
	}
	*ret = ss;
	*ret_len = len;
	return 0;
}
