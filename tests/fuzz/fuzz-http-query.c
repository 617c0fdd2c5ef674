/* libFuzzer harness: what iopsd does with a request's query string and
 * negotiation headers. The input is split like a query (&, =) and decoded
 * with libmicrohttpd's own unescaping, as a request's arguments are; every
 * value then goes through the window, name, Accept, Accept-Encoding and
 * listen-address parsers. */
#include <dlfcn.h>
#include <netdb.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-util.h"

#include <microhttpd.h>

#include "http.h"
#include "render_prom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Listen addresses may name a host: keep the resolver out of the fuzzer
 * (no DNS from a test, no waiting on it) by making every lookup numeric. */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res)
{
	static int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
	struct addrinfo h = hints ? *hints : (struct addrinfo){0};

	if (!real) {
		*(void **)&real = dlsym(RTLD_NEXT, "getaddrinfo");
		if (!real) {
			abort();
		}
	}
	h.ai_flags |= AI_NUMERICHOST | AI_NUMERICSERV;
	return real(node, service, &h, res);
}

static void check_value(const char *v)
{
	struct netaddr_list l;
	char bad[64];
	uint64_t usec;

	if (http_parse_window(v, 7ULL * 24 * 3600 * 1000000, &usec) == 0 &&
	    (usec < 1000000 || usec > 7ULL * 24 * 3600 * 1000000)) {
		abort(); /* accepted outside its range */
	}
	if (http_valid_name(v) && (strlen(v) == 0 || strlen(v) > 63)) {
		abort();
	}
	(void)http_negotiate_format(v);
	(void)http_accepts_gzip(v);
	/* syntax only: no name lookups from fuzz input */
	if (netaddr_parse_list(v, &l, bad, sizeof(bad)) == 0 && (l.n == 0 || l.n > NETADDR_LIST_MAX)) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *query, *save = NULL;

	query = fuzz_text(data, size, 8192);
	if (!query) {
		return 0;
	}
	check_value(query);
	for (char *arg = strtok_r(query, "&", &save); arg; arg = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(arg, '=');

		if (eq) {
			*eq = '\0';
			MHD_http_unescape(eq + 1);
			check_value(eq + 1);
		}
		MHD_http_unescape(arg);
		check_value(arg);
	}
	free(query);
	return 0;
}
