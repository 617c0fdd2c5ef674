/* Units: sizes with fio semantics (k = 1024) and durations. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "units.h"

static void test_size_suffixes_are_powers_of_1024(void **state)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
	    {"512", 512},	    {"4k", 4096},	{"4K", 4096},
	    {"4kb", 4096},	    {"4KiB", 4096},	{"100m", 100ULL << 20},
	    {"64MiB", 64ULL << 20}, {"1g", 1ULL << 30}, {"2GiB", 2ULL << 30},
	    {"1t", 1ULL << 40},	    {"0", 0},
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(parse_size(ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].v);
	}
}

static void test_size_rejects_garbage_and_overflow(void **state)
{
	uint64_t v = 7;

	assert_int_equal(parse_size("", &v), -EINVAL);
	assert_int_equal(parse_size("k", &v), -EINVAL);
	assert_int_equal(parse_size("-4k", &v), -EINVAL);
	assert_int_equal(parse_size("4x", &v), -EINVAL);
	assert_int_equal(parse_size("4kk", &v), -EINVAL);
	assert_int_equal(parse_size("99999999999999999999", &v), -ERANGE);
	assert_int_equal(parse_size("17179869184g", &v), -ERANGE);
	assert_int_equal(v, 7);
}

static void test_duration_units(void **state)
{
	uint64_t v;

	assert_int_equal(parse_duration("250us", 1000000, &v), 0);
	assert_int_equal(v, 250);
	assert_int_equal(parse_duration("500ms", 1000000, &v), 0);
	assert_int_equal(v, 500000);
	assert_int_equal(parse_duration("10s", 1000000, &v), 0);
	assert_int_equal(v, 10000000);
	assert_int_equal(parse_duration("2m", 1000000, &v), 0);
	assert_int_equal(v, 120000000);
	assert_int_equal(parse_duration("1h", 1000000, &v), 0);
	assert_int_equal(v, 3600000000ULL);
	assert_int_equal(parse_duration("30", 1000000, &v), 0);
	assert_int_equal(v, 30000000);
	assert_int_equal(parse_duration("10 s", 1000000, &v), 0);
	assert_int_equal(v, 10000000);
}

static void test_duration_rejects_unknown_unit(void **state)
{
	uint64_t v;

	assert_int_equal(parse_duration("10y", 1000000, &v), -EINVAL);
	assert_int_equal(parse_duration("s", 1000000, &v), -EINVAL);
	assert_int_equal(parse_duration("1.5s", 1000000, &v), -EINVAL);
	assert_int_equal(parse_duration("99999999999999999h", 1000000, &v), -ERANGE);
}

static void test_format_duration_round_trips(void **state)
{
	char buf[32];
	uint64_t v;
	static const uint64_t values[] = {1, 999, 1000, 1500000, 60000000, 3600000000ULL, 7200000000ULL};

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		assert_int_equal(parse_duration(format_duration(buf, sizeof(buf), values[i]), 1, &v), 0);
		assert_int_equal(v, values[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_size_suffixes_are_powers_of_1024),
	    cmocka_unit_test(test_size_rejects_garbage_and_overflow),
	    cmocka_unit_test(test_duration_units),
	    cmocka_unit_test(test_duration_rejects_unknown_unit),
	    cmocka_unit_test(test_format_duration_round_trips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
