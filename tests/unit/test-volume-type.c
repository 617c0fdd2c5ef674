/* The EBS preset table: limits, I/O unit and burst model of each volume
 * type from its size and what was provisioned, at the table's edges. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "volume_type.h"

#define KIB 1024ULL
#define MIB (1024ULL * 1024)
#define GIB (1024ULL * 1024 * 1024)

static struct volume_limits derive_ok(enum volume_type t, uint64_t gib, uint64_t iops, uint64_t throughput)
{
	struct volume_type_input in = {.size_bytes = gib * GIB, .iops = iops, .throughput = throughput};
	struct volume_limits l;
	const char *why = NULL;

	assert_int_equal(volume_type_derive(t, &in, &l, &why), 0);
	return l;
}

static const char *derive_fails(enum volume_type t, const struct volume_type_input *in)
{
	struct volume_limits l = {.iops_limit = 7};
	const char *why = NULL;

	assert_int_equal(volume_type_derive(t, in, &l, &why), -EINVAL);
	assert_non_null(why);
	assert_int_equal(l.iops_limit, 7);
	return why;
}

static void test_names_round_trip_case_insensitively(void **state)
{
	for (int t = 0; t < _VOLUME_TYPE_MAX; t++) {
		assert_int_equal(volume_type_from_string(volume_type_to_string(t)), t);
	}
	assert_int_equal(volume_type_from_string("GP3"), VOLUME_TYPE_GP3);
	assert_int_equal(volume_type_from_string("gp4"), -EINVAL);
	assert_int_equal(volume_type_from_string(""), -EINVAL);
}

static void test_gp2_33_gib_is_at_the_100_iops_floor_with_a_bucket(void **state)
{
	struct volume_limits l = derive_ok(VOLUME_TYPE_GP2, 33, 0, 0);

	assert_int_equal(l.iops_limit, 100); /* 3 x 33 = 99, below the floor */
	assert_int_equal(l.iops_unit, 256 * KIB);
	assert_int_equal(l.burst_iops, 3000);
	assert_int_equal(l.burst_credits, 5400000);
	assert_true(l.credit_rate == 100.0);
	assert_int_equal(l.throughput_limit, 128 * MIB);
}

static void test_gp2_34_gib_is_above_the_floor(void **state)
{
	assert_int_equal(derive_ok(VOLUME_TYPE_GP2, 34, 0, 0).iops_limit, 102);
}

static void test_gp2_1000_gib_has_3000_iops_and_no_bucket(void **state)
{
	struct volume_limits l = derive_ok(VOLUME_TYPE_GP2, 1000, 0, 0);
	struct volume_limits below = derive_ok(VOLUME_TYPE_GP2, 999, 0, 0);

	assert_int_equal(l.iops_limit, 3000);
	assert_int_equal(l.burst_iops, 0);
	assert_int_equal(l.burst_credits, 0);
	assert_int_equal(l.throughput_limit, 250 * MIB);
	assert_int_equal(below.iops_limit, 2997);
	assert_int_equal(below.burst_iops, 3000);
	assert_true(below.credit_rate == 2997.0);
}

static void test_gp2_5334_gib_is_at_the_16000_iops_cap(void **state)
{
	assert_int_equal(derive_ok(VOLUME_TYPE_GP2, 5333, 0, 0).iops_limit, 15999);
	assert_int_equal(derive_ok(VOLUME_TYPE_GP2, 5334, 0, 0).iops_limit, 16000);
	assert_int_equal(derive_ok(VOLUME_TYPE_GP2, 16384, 0, 0).iops_limit, 16000);
}

static void test_gp2_throughput_steps_up_above_170_gib(void **state)
{
	assert_int_equal(derive_ok(VOLUME_TYPE_GP2, 170, 0, 0).throughput_limit, 128 * MIB);
	assert_int_equal(derive_ok(VOLUME_TYPE_GP2, 171, 0, 0).throughput_limit, 250 * MIB);
}

static void test_gp2_refuses_provisioned_iops_and_an_unknown_size(void **state)
{
	struct volume_type_input with_iops = {.size_bytes = 100 * GIB, .iops = 3000};
	struct volume_type_input no_size = {0};

	derive_fails(VOLUME_TYPE_GP2, &with_iops);
	derive_fails(VOLUME_TYPE_GP2, &no_size);
}

static void test_gp3_has_3000_iops_and_125_mib_unless_provisioned(void **state)
{
	struct volume_limits l = derive_ok(VOLUME_TYPE_GP3, 0, 0, 0);
	struct volume_limits more = derive_ok(VOLUME_TYPE_GP3, 500, 6000, 250 * MIB);

	assert_int_equal(l.iops_limit, 3000);
	assert_int_equal(l.throughput_limit, 125 * MIB);
	assert_int_equal(l.iops_unit, 256 * KIB);
	assert_int_equal(l.burst_iops, 0);
	assert_int_equal(more.iops_limit, 6000);
	assert_int_equal(more.throughput_limit, 250 * MIB);
}

static void test_gp3_refuses_less_than_its_baseline(void **state)
{
	struct volume_type_input low_iops = {.iops = 2999};
	struct volume_type_input low_bw = {.throughput = 125 * MIB - 1};

	derive_fails(VOLUME_TYPE_GP3, &low_iops);
	derive_fails(VOLUME_TYPE_GP3, &low_bw);
}

static void test_gp3_iops_per_gb_times_the_size(void **state)
{
	struct volume_type_input in = {.size_bytes = 200 * GIB, .iops_per_gb = 20};
	struct volume_type_input both = {.size_bytes = 200 * GIB, .iops = 4000, .iops_per_gb = 20};
	struct volume_limits l;
	const char *why = NULL;

	assert_int_equal(volume_type_derive(VOLUME_TYPE_GP3, &in, &l, &why), 0);
	assert_int_equal(l.iops_limit, 4000);
	derive_fails(VOLUME_TYPE_GP3, &both);
}

static void test_io1_requires_iops_and_steps_its_throughput_at_32000(void **state)
{
	struct volume_type_input none = {.size_bytes = 100 * GIB};

	derive_fails(VOLUME_TYPE_IO1, &none);
	assert_int_equal(derive_ok(VOLUME_TYPE_IO1, 100, 1000, 0).throughput_limit, 250 * MIB);
	assert_int_equal(derive_ok(VOLUME_TYPE_IO1, 100, 2000, 0).throughput_limit, 500 * MIB);
	assert_int_equal(derive_ok(VOLUME_TYPE_IO1, 1000, 32000, 0).throughput_limit, 500 * MIB);
	assert_int_equal(derive_ok(VOLUME_TYPE_IO1, 1000, 48000, 0).throughput_limit, 750 * MIB);
	assert_int_equal(derive_ok(VOLUME_TYPE_IO1, 1280, 64000, 0).throughput_limit, 1000 * MIB);
	assert_int_equal(derive_ok(VOLUME_TYPE_IO1, 100, 1000, 0).iops_unit, 256 * KIB);
}

static void test_io2_requires_iops_and_takes_no_throughput(void **state)
{
	struct volume_type_input none = {.size_bytes = 100 * GIB};
	struct volume_type_input bw = {.size_bytes = 100 * GIB, .iops = 1000, .throughput = 100 * MIB};

	derive_fails(VOLUME_TYPE_IO2, &none);
	derive_fails(VOLUME_TYPE_IO2, &bw);
	assert_int_equal(derive_ok(VOLUME_TYPE_IO2, 100, 1000, 0).iops_limit, 1000);
	assert_int_equal(derive_ok(VOLUME_TYPE_IO2, 100, 1000, 0).throughput_limit, 250 * MIB);
	assert_int_equal(derive_ok(VOLUME_TYPE_IO2, 4000, 16000, 0).throughput_limit, 4000 * MIB);
	assert_int_equal(derive_ok(VOLUME_TYPE_IO2, 4000, 64000, 0).throughput_limit, 4000 * MIB);
}

static void test_st1_counts_1_mib_units_with_a_throughput_bucket(void **state)
{
	struct volume_limits tib = derive_ok(VOLUME_TYPE_ST1, 1024, 0, 0);
	struct volume_limits big = derive_ok(VOLUME_TYPE_ST1, 16384, 0, 0);

	assert_int_equal(tib.iops_unit, MIB);
	assert_int_equal(tib.iops_limit, 500);
	assert_int_equal(tib.throughput_limit, 40 * MIB);
	assert_int_equal(tib.burst_throughput, 250 * MIB);
	/* the bucket is of throughput credits: 1 TiB per TiB, no I/O credits */
	assert_int_equal(tib.burst_throughput_credits, 1024 * GIB);
	assert_int_equal(tib.burst_iops, 0);
	assert_int_equal(tib.burst_credits, 0);
	assert_true(tib.credit_rate == 0);
	assert_int_equal(big.throughput_limit, 500 * MIB);
	assert_int_equal(big.burst_throughput, 500 * MIB);
}

static void test_sc1_counts_1_mib_units_with_a_smaller_bucket(void **state)
{
	struct volume_limits tib = derive_ok(VOLUME_TYPE_SC1, 1024, 0, 0);
	struct volume_limits big = derive_ok(VOLUME_TYPE_SC1, 16384, 0, 0);
	struct volume_type_input iops = {.size_bytes = 1024 * GIB, .iops = 250};

	assert_int_equal(tib.iops_unit, MIB);
	assert_int_equal(tib.iops_limit, 250);
	assert_int_equal(tib.throughput_limit, 12 * MIB);
	assert_int_equal(tib.burst_throughput, 80 * MIB);
	assert_int_equal(tib.burst_throughput_credits, 1024 * GIB);
	assert_int_equal(tib.burst_iops, 0);
	assert_int_equal(big.throughput_limit, 192 * MIB);
	assert_int_equal(big.burst_throughput_credits, 16384 * GIB);
	assert_int_equal(big.burst_throughput, 250 * MIB);
	derive_fails(VOLUME_TYPE_SC1, &iops);
}

static void test_standard_derives_no_cap(void **state)
{
	struct volume_limits l = derive_ok(VOLUME_TYPE_STANDARD, 100, 0, 0);

	assert_true(l.is_approximate);
	assert_int_equal(l.iops_limit, 0);
	assert_int_equal(l.throughput_limit, 0);
	assert_int_equal(l.burst_iops, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names_round_trip_case_insensitively),
	    cmocka_unit_test(test_gp2_33_gib_is_at_the_100_iops_floor_with_a_bucket),
	    cmocka_unit_test(test_gp2_34_gib_is_above_the_floor),
	    cmocka_unit_test(test_gp2_1000_gib_has_3000_iops_and_no_bucket),
	    cmocka_unit_test(test_gp2_5334_gib_is_at_the_16000_iops_cap),
	    cmocka_unit_test(test_gp2_throughput_steps_up_above_170_gib),
	    cmocka_unit_test(test_gp2_refuses_provisioned_iops_and_an_unknown_size),
	    cmocka_unit_test(test_gp3_has_3000_iops_and_125_mib_unless_provisioned),
	    cmocka_unit_test(test_gp3_refuses_less_than_its_baseline),
	    cmocka_unit_test(test_gp3_iops_per_gb_times_the_size),
	    cmocka_unit_test(test_io1_requires_iops_and_steps_its_throughput_at_32000),
	    cmocka_unit_test(test_io2_requires_iops_and_takes_no_throughput),
	    cmocka_unit_test(test_st1_counts_1_mib_units_with_a_throughput_bucket),
	    cmocka_unit_test(test_sc1_counts_1_mib_units_with_a_smaller_bucket),
	    cmocka_unit_test(test_standard_derives_no_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
