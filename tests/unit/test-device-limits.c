/* A [device] section's effective limits: the volume type's preset, its own
 * keys over it (with a notice), and the --check-config line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "device_limits.h"

#define GIB (1024ULL * 1024 * 1024)
#define MIB (1024ULL * 1024)

static struct device_declared none(void)
{
	struct device_declared d = {0};

	d.provider.volume_type = -1;
	return d;
}

static char notes[DEVICE_LIMITS_NOTICES_MAX][DEVICE_LIMITS_NOTICE_LEN];

/* Resolve d; the number of notices, or -1 when it failed. */
static int resolve(const struct device_declared *d, uint64_t size, struct device_limits *l)
{
	size_t n = 99;
	const char *why = NULL;
	int r = device_limits_resolve(d, size, l, notes, &n, &why);

	if (r < 0) {
		assert_int_equal(r, -EINVAL);
		assert_non_null(why);
		assert_int_equal(n, 99);
		return -1;
	}
	return (int)n;
}

static void test_without_a_type_the_keys_are_the_limits(void **state)
{
	struct device_declared d = none();
	struct device_limits l;

	d.iops_limit = 1000;
	d.provider.iops_unit = 256 * 1024;
	d.provider.read_iops_limit = 600;
	d.provider.write_iops_limit = 300;
	assert_int_equal(resolve(&d, 0, &l), 0);
	assert_false(l.has_preset);
	assert_int_equal(l.iops_limit, 1000);
	assert_int_equal(l.iops_unit, 256 * 1024);
	assert_int_equal(l.read_iops_limit, 600);
	assert_int_equal(l.write_iops_limit, 300);
	assert_int_equal(l.throughput_limit, 0);
}

static void test_a_type_gives_limits_unit_and_bucket(void **state)
{
	struct device_declared d = none();
	struct device_limits l;

	d.provider.volume_type = VOLUME_TYPE_GP2;
	assert_int_equal(resolve(&d, 100 * GIB, &l), 0);
	assert_true(l.has_preset);
	assert_int_equal(l.iops_limit, 300);
	assert_int_equal(l.iops_unit, 256 * 1024);
	assert_int_equal(l.burst_iops, 3000);
	assert_int_equal(l.burst_credits, 5400000);
	assert_true(l.credit_rate == 300.0);
}

static void test_explicit_limits_override_the_preset_with_a_notice(void **state)
{
	struct device_declared d = none();
	struct device_limits l;

	d.provider.volume_type = VOLUME_TYPE_GP3;
	d.iops_limit = 5000;
	d.throughput_limit = 125 * MIB; /* the same as the preset: no notice */
	assert_int_equal(resolve(&d, 0, &l), 1);
	assert_string_equal(notes[0], "iops_limit=5000 overrides the 3000 that volume_type=gp3 gives");
	assert_int_equal(l.iops_limit, 5000);
	assert_int_equal(l.throughput_limit, 125 * MIB);
}

static void test_a_declared_bucket_replaces_the_presets(void **state)
{
	struct device_declared d = none();
	struct device_limits l;

	d.provider.volume_type = VOLUME_TYPE_GP2;
	d.burst_iops = 2000;
	d.burst_credits = 60000;
	d.credit_rate = 1000;
	assert_int_equal(resolve(&d, 100 * GIB, &l), 1);
	assert_non_null(strstr(notes[0], "bucket that volume_type=gp2 gives"));
	assert_int_equal(l.burst_iops, 2000);
	assert_int_equal(l.burst_credits, 60000);
	assert_true(l.credit_rate == 1000.0);
}

static void test_an_underivable_preset_is_an_error(void **state)
{
	struct device_declared d = none();
	struct device_limits l = {.iops_limit = 7};

	d.provider.volume_type = VOLUME_TYPE_IO1;
	assert_int_equal(resolve(&d, 100 * GIB, &l), -1);
	assert_int_equal(l.iops_limit, 7);
}

/* st1's bucket is one of throughput credits: its burst rate and its bytes,
 * no I/O credits. */
static void test_st1_derives_a_throughput_bucket(void **state)
{
	struct device_declared d = none();
	struct device_limits l;
	char buf[256];

	d.provider.volume_type = VOLUME_TYPE_ST1;
	assert_int_equal(resolve(&d, 1024 * GIB, &l), 0);
	assert_int_equal(l.burst_iops, 0);
	assert_int_equal(l.burst_throughput, 250ULL << 20);
	assert_int_equal(l.burst_throughput_credits, 1024 * GIB);
	device_limits_describe(&l, buf, sizeof(buf));
	assert_string_equal(buf, "iops_limit=500 iops_unit=1m throughput_limit=40m burst_throughput=250m "
				 "burst_throughput_credits=1t");
}

static void test_describe_for_check_config(void **state)
{
	struct device_declared d = none();
	struct device_limits l;
	char buf[256];

	d.provider.volume_type = VOLUME_TYPE_IO1;
	d.provider.iops = 1000;
	assert_int_equal(resolve(&d, GIB, &l), 0);
	device_limits_describe(&l, buf, sizeof(buf));
	assert_string_equal(buf, "iops_limit=1000 iops_unit=256k throughput_limit=250m");
	memset(&l, 0, sizeof(l));
	device_limits_describe(&l, buf, sizeof(buf));
	assert_string_equal(buf, "no limits");
	device_limits_describe(&l, buf, 4);
	assert_string_equal(buf, "no ");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_without_a_type_the_keys_are_the_limits),
	    cmocka_unit_test(test_a_type_gives_limits_unit_and_bucket),
	    cmocka_unit_test(test_explicit_limits_override_the_preset_with_a_notice),
	    cmocka_unit_test(test_a_declared_bucket_replaces_the_presets),
	    cmocka_unit_test(test_an_underivable_preset_is_an_error),
	    cmocka_unit_test(test_st1_derives_a_throughput_bucket),
	    cmocka_unit_test(test_describe_for_check_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
