/* I/Os weighted by their size in the provider's units, from the totals of
 * one direction over one interval (diskstats' completions and sectors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "provider_units.h"

#define KIB 1024.0

static void test_large_ios_count_their_size_in_units(void **state)
{
	/* QEMU's throttling.iops-size=262144 under 1 MiB reads: 250 I/Os, 1000 units */
	assert_float_equal(provider_units(250, 250 * 1024 * KIB, 256 * 1024), 1000, 1e-9);
	/* a 300 KiB I/O counts 300/256 units, as QEMU counts it */
	assert_float_equal(provider_units(10, 10 * 300 * KIB, 256 * 1024), 10 * 300 / 256.0, 1e-9);
}

static void test_small_ios_count_one_each(void **state)
{
	assert_float_equal(provider_units(1000, 1000 * 4 * KIB, 256 * 1024), 1000, 1e-9);
	assert_float_equal(provider_units(5, 5 * 256 * KIB, 256 * 1024), 5, 1e-9);
}

static void test_no_unit_counts_the_ios(void **state)
{
	assert_float_equal(provider_units(250, 250 * 1024 * KIB, 0), 250, 1e-9);
	assert_float_equal(provider_units(0, 0, 256 * 1024), 0, 1e-9);
	assert_float_equal(provider_units(-3, 0, 0), 0, 1e-9);
}

static void test_each_direction_is_weighted_on_its_own(void **state)
{
	/* 1000 4 KiB reads and 100 1 MiB writes: 1000 + 400 units; averaged
	 * together (~97 KiB each) they would count 1100 */
	assert_float_equal(provider_units_rw(1000, 1000 * 4 * KIB, 100, 100 * 1024 * KIB, 256 * 1024), 1400,
			   1e-9);
	/* HDD volumes: 1 MiB units */
	assert_float_equal(provider_units_rw(0, 0, 10, 10 * 4096 * KIB, 1024 * 1024), 40, 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_large_ios_count_their_size_in_units),
	    cmocka_unit_test(test_small_ios_count_one_each),
	    cmocka_unit_test(test_no_unit_counts_the_ios),
	    cmocka_unit_test(test_each_direction_is_weighted_on_its_own),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
