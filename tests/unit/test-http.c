/* HTTP helpers: content negotiation, gzip acceptance, listen addresses,
 * query values. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "http.h"

static void test_openmetrics_only_when_asked_for(void **state)
{
	/* what Prometheus 2.x sends */
	assert_int_equal(
	    http_negotiate_format("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
				  "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
	    METRICS_FORMAT_OPENMETRICS);
	assert_int_equal(http_negotiate_format("application/openmetrics-text"), METRICS_FORMAT_OPENMETRICS);
	assert_int_equal(http_negotiate_format("Application/OpenMetrics-Text; version=1.0.0; charset=utf-8"),
			 METRICS_FORMAT_OPENMETRICS);
	/* everything else gets the text format */
	assert_int_equal(http_negotiate_format(NULL), METRICS_FORMAT_PROMETHEUS);
	assert_int_equal(http_negotiate_format(""), METRICS_FORMAT_PROMETHEUS);
	assert_int_equal(http_negotiate_format("*/*"), METRICS_FORMAT_PROMETHEUS);
	assert_int_equal(http_negotiate_format("text/plain;version=0.0.4"), METRICS_FORMAT_PROMETHEUS);
	assert_int_equal(http_negotiate_format("text/html,application/xhtml+xml"), METRICS_FORMAT_PROMETHEUS);
	/* preferences and refusals */
	assert_int_equal(http_negotiate_format("application/openmetrics-text;q=0.2,text/plain;q=0.9"),
			 METRICS_FORMAT_PROMETHEUS);
	assert_int_equal(http_negotiate_format("application/openmetrics-text;q=0"),
			 METRICS_FORMAT_PROMETHEUS);
	assert_int_equal(http_negotiate_format("application/openmetrics-text;q=bogus"),
			 METRICS_FORMAT_PROMETHEUS);
	assert_int_equal(http_negotiate_format("application/openmetrics-text;version=2.0.0"),
			 METRICS_FORMAT_PROMETHEUS);
	/* garbage does not crash and falls back */
	assert_int_equal(http_negotiate_format(";;;,,,;q=;version="), METRICS_FORMAT_PROMETHEUS);
}

static void test_gzip_only_when_accepted(void **state)
{
	assert_true(http_accepts_gzip("gzip"));
	assert_true(http_accepts_gzip("gzip, deflate, br"));
	assert_true(http_accepts_gzip("deflate;q=1.0, GZIP;q=0.5"));
	assert_true(http_accepts_gzip("x-gzip"));
	assert_true(http_accepts_gzip("*"));
	assert_false(http_accepts_gzip(NULL));
	assert_false(http_accepts_gzip(""));
	assert_false(http_accepts_gzip("identity"));
	assert_false(http_accepts_gzip("gzip;q=0"));
	assert_false(http_accepts_gzip("*, gzip;q=0"));
	assert_false(http_accepts_gzip("*;q=0"));
	assert_false(http_accepts_gzip("br, deflate"));
}

static void test_window_values_and_bad_values(void **state)
{
	uint64_t usec;

	assert_int_equal(http_parse_window("5m", 3600 * USEC_PER_SEC, &usec), 0);
	assert_int_equal(usec, 300 * USEC_PER_SEC);
	assert_int_equal(http_parse_window("300", 3600 * USEC_PER_SEC, &usec), 0);
	assert_int_equal(usec, 300 * USEC_PER_SEC);
	assert_int_equal(http_parse_window("1h", 3600 * USEC_PER_SEC, &usec), 0);
	assert_int_equal(http_parse_window("1s", 3600 * USEC_PER_SEC, &usec), 0);

	assert_int_equal(http_parse_window("2h", 3600 * USEC_PER_SEC, &usec), -ERANGE);
	assert_int_equal(http_parse_window("500ms", 3600 * USEC_PER_SEC, &usec), -ERANGE);
	assert_true(http_parse_window("0", 3600 * USEC_PER_SEC, &usec) < 0);
	assert_int_equal(http_parse_window("", 3600 * USEC_PER_SEC, &usec), -EINVAL);
	assert_int_equal(http_parse_window(NULL, 3600 * USEC_PER_SEC, &usec), -EINVAL);
	assert_int_equal(http_parse_window("-5m", 3600 * USEC_PER_SEC, &usec), -EINVAL);
	assert_int_equal(http_parse_window("m5", 3600 * USEC_PER_SEC, &usec), -EINVAL);
	assert_int_equal(http_parse_window("5parsecs", 3600 * USEC_PER_SEC, &usec), -EINVAL);
	assert_int_equal(http_parse_window("99999999999999999999999", 3600 * USEC_PER_SEC, &usec), -EINVAL);
}

static void test_names_in_queries(void **state)
{
	assert_true(http_valid_name("nvme0n1"));
	assert_true(http_valid_name("dm-0"));
	assert_true(http_valid_name("randread4k"));
	assert_false(http_valid_name(NULL));
	assert_false(http_valid_name(""));
	assert_false(http_valid_name("a b"));
	assert_false(http_valid_name("a\nb"));
	assert_false(http_valid_name("0123456789012345678901234567890123456789012345678901234567890123"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_openmetrics_only_when_asked_for),
	    cmocka_unit_test(test_gzip_only_when_accepted),
	    cmocka_unit_test(test_window_values_and_bad_values),
	    cmocka_unit_test(test_names_in_queries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
