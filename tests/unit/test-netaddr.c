/* netaddr: the one listen address parser of the CLI, the config, the
 * server and --check-config. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "netaddr.h"

static void test_the_three_forms_parse(void **state)
{
	struct netaddr a;

	assert_int_equal(netaddr_parse("127.0.0.1:9477", &a), 0);
	assert_int_equal(a.family, AF_INET);
	assert_false(a.is_any);
	assert_int_equal(a.port, 9477);
	assert_string_equal(a.host, "127.0.0.1");

	assert_int_equal(netaddr_parse("[::1]:9477", &a), 0);
	assert_int_equal(a.family, AF_INET6);
	assert_string_equal(a.host, "::1");

	assert_int_equal(netaddr_parse(":9100", &a), 0);
	assert_true(a.is_any);
	assert_int_equal(a.port, 9100);
	assert_string_equal(a.host, "");

	/* a host name is kept for the bind to resolve */
	assert_int_equal(netaddr_parse("localhost:65535", &a), 0);
	assert_int_equal(a.family, AF_UNSPEC);
	assert_string_equal(a.host, "localhost");
	assert_int_equal(a.port, 65535);
	assert_int_equal(netaddr_parse("metrics-1.example.org:1", &a), 0);
	assert_int_equal(netaddr_parse("0.0.0.0:1", &a), 0);
	assert_int_equal(a.family, AF_INET);
}

static void test_bad_addresses_are_refused(void **state)
{
	static const char *const bad[] = {
	    "",
	    ":",
	    "127.0.0.1",
	    "127.0.0.1:",
	    "127.0.0.1:0",
	    "127.0.0.1:65536",
	    "127.0.0.1:+80",
	    "127.0.0.1:80 ",
	    " 127.0.0.1:80",
	    "127.0.0.1:0x50",
	    "::1:9477",
	    "[::1]9477",
	    "[::1:9477",
	    "[nonsense]:9477",
	    "[]:80",
	    "[127.0.0.1]:80",
	    "127.0.0.300:80",
	    "1.2.3:80",
	    "my host:80",
	    "host/x:80",
	    "9477",
	};
	struct netaddr a = {.port = 42};

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		if (netaddr_parse(bad[i], &a) != -EINVAL) {
			fail_msg("'%s' was accepted", bad[i]);
		}
	}
	assert_int_equal(a.port, 42); /* untouched on failure */
}

static void test_socket_addresses_are_what_the_server_binds(void **state)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sa4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sa6 = (struct sockaddr_in6 *)&ss;
	struct netaddr a;
	socklen_t len;
	char buf[INET6_ADDRSTRLEN];

	assert_int_equal(netaddr_parse("127.0.0.1:9477", &a), 0);
	assert_int_equal(netaddr_to_sockaddr(&a, &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(sa4->sin_port), 9477);
	assert_int_equal(sa4->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	assert_int_equal(len, sizeof(struct sockaddr_in));

	assert_int_equal(netaddr_parse("[::1]:9477", &a), 0);
	assert_int_equal(netaddr_to_sockaddr(&a, &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_string_equal(inet_ntop(AF_INET6, &sa6->sin6_addr, buf, sizeof(buf)), "::1");
	assert_int_equal(ntohs(sa6->sin6_port), 9477);
	assert_int_equal(len, sizeof(struct sockaddr_in6));

	/* ":PORT" is every address, IPv6 dual-stack */
	assert_int_equal(netaddr_parse(":9100", &a), 0);
	assert_int_equal(netaddr_to_sockaddr(&a, &ss, &len), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_memory_equal(&sa6->sin6_addr, &in6addr_any, sizeof(in6addr_any));
	assert_int_equal(ntohs(sa6->sin6_port), 9100);

	/* localhost is in /etc/hosts: no DNS needed */
	assert_int_equal(netaddr_parse("localhost:9477", &a), 0);
	assert_int_equal(netaddr_to_sockaddr(&a, &ss, &len), 0);
	assert_true(ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
}

static void test_lists_are_split_at_commas(void **state)
{
	struct netaddr_list l;
	char bad[64];

	assert_int_equal(netaddr_parse_list("127.0.0.1:9477, [::1]:9477", &l, bad, sizeof(bad)), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.items[0].host, "127.0.0.1");
	assert_string_equal(l.items[1].host, "::1");
	assert_int_equal(netaddr_parse_list("  :9100\t", &l, bad, sizeof(bad)), 0);
	assert_int_equal(l.n, 1);
	assert_true(l.items[0].is_any);

	assert_int_equal(netaddr_parse_list("", &l, bad, sizeof(bad)), -ENOENT);
	assert_int_equal(netaddr_parse_list(" \t", &l, bad, sizeof(bad)), -ENOENT);
	assert_int_equal(netaddr_parse_list("127.0.0.1:9477,nope", &l, bad, sizeof(bad)), -EINVAL);
	assert_string_equal(bad, "nope");
	assert_int_equal(netaddr_parse_list("127.0.0.1:1,,127.0.0.1:2", &l, bad, sizeof(bad)), -EINVAL);
	assert_string_equal(bad, "");
	assert_int_equal(netaddr_parse_list("127.0.0.1:1,", &l, NULL, 0), -EINVAL);
	/* the one the old config check let through: it has a colon */
	assert_int_equal(netaddr_parse_list("::1:9477", &l, bad, sizeof(bad)), -EINVAL);
	assert_string_equal(bad, "::1:9477");
}

static void test_lists_hold_at_most_netaddr_list_max(void **state)
{
	char s[512] = "";
	struct netaddr_list l;

	for (int i = 1; i <= NETADDR_LIST_MAX; i++) {
		snprintf(s + strlen(s), sizeof(s) - strlen(s), "%s127.0.0.1:%d", i > 1 ? "," : "", 9000 + i);
	}
	assert_int_equal(netaddr_parse_list(s, &l, NULL, 0), 0);
	assert_int_equal(l.n, NETADDR_LIST_MAX);
	assert_int_equal(l.items[NETADDR_LIST_MAX - 1].port, 9000 + NETADDR_LIST_MAX);
	strcat(s, ",127.0.0.1:1");
	assert_int_equal(netaddr_parse_list(s, &l, NULL, 0), -E2BIG);
}

/* The one set of messages the command line, the config and the listener
 * show after their own prefix. */
static void test_list_errors_say_what_is_wrong(void **state)
{
	struct netaddr_list l;
	char err[256];

	assert_int_equal(netaddr_parse_list_explain("127.0.0.1:1, [::1]9477", &l, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'[::1]9477' is not HOST:PORT, [IPV6]:PORT or :PORT");
	assert_int_equal(netaddr_parse_list_explain(" ", &l, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "no address given");
	assert_int_equal(netaddr_parse_list_explain("127.0.0.1:1,", &l, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "an empty address in '127.0.0.1:1,'");
	assert_int_equal(netaddr_parse_list_explain(":1,:2,:3,:4,:5,:6,:7,:8,:9", &l, err, sizeof(err)),
			 -E2BIG);
	assert_string_equal(err, "more than 8 addresses in ':1,:2,:3,:4,:5,:6,:7,:8,:9'");
	assert_int_equal(netaddr_parse_list_explain("[::1]:9477", &l, err, sizeof(err)), 0);
	assert_int_equal(l.n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_the_three_forms_parse),
	    cmocka_unit_test(test_bad_addresses_are_refused),
	    cmocka_unit_test(test_socket_addresses_are_what_the_server_binds),
	    cmocka_unit_test(test_lists_are_split_at_commas),
	    cmocka_unit_test(test_lists_hold_at_most_netaddr_list_max),
	    cmocka_unit_test(test_list_errors_say_what_is_wrong),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
