/* fio's random_distribution shapes: each generator against the figure its
 * fio definition gives (zoned: the zone's share of the I/Os; pareto:h: the
 * hottest h of the blocks get 1-h of them; zipf: the theta-power law;
 * normal: fio's mean of 12 draws with its deviation). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fio.h"
#include "iogen_dist.h"

#define DRAWS 400000

static struct probe_dist parse(const char *spec)
{
	struct probe_dist d[_PROBE_DIR_MAX];
	char err[512];

	assert_int_equal(fio_parse_random_distribution("random_distribution", spec, d, err, sizeof(err)), 0);
	return d[0];
}

/* The share of DRAWS that fall in blocks [0, upto). */
static double share_below(const struct iogen_dist *d, uint64_t upto)
{
	uint64_t rng = 42, hits = 0;

	for (int i = 0; i < DRAWS; i++) {
		uint64_t b = iogen_dist_next(d, &rng);

		assert_true(b < d->nranges);
		hits += b < upto;
	}
	return (double)hits / DRAWS;
}

static void test_zoned_50_5_hottest_5_percent_get_half(void **state)
{
	struct probe_dist pd = parse("zoned:50/5:50/95");
	struct iogen_dist d;

	iogen_dist_init(&d, &pd, 10000, 4096, 1);
	assert_true(fabs(share_below(&d, 500) - 0.50) <= 0.02);
	/* and the rest spread evenly over the other 95% */
	assert_true(fabs(share_below(&d, 5250) - 0.75) <= 0.02);
}

static void test_zoned_abs_zones_are_bytes(void **state)
{
	struct probe_dist pd = parse("zoned_abs:60/1m:30/2m:10/1m");
	struct iogen_dist d;

	/* 4 MiB of 4k blocks: 256 blocks hold 1 MiB */
	iogen_dist_init(&d, &pd, 1024, 4096, 1);
	assert_true(fabs(share_below(&d, 256) - 0.60) <= 0.02);
	assert_true(fabs(share_below(&d, 768) - 0.90) <= 0.02);
}

static void test_pareto_hottest_h_get_one_minus_h(void **state)
{
	struct probe_dist pd = parse("pareto:0.2:0");
	struct iogen_dist d;

	iogen_dist_init(&d, &pd, 100000, 4096, 1);
	d.is_hashed = false; /* ranks in order, to read the shape off */
	assert_true(fabs(share_below(&d, 20000) - 0.80) <= 0.02);
}

static void test_zipf_follows_the_power_law(void **state)
{
	struct probe_dist pd = parse("zipf:1.2:0");
	struct iogen_dist d;
	double zetan = 0, top = 0;

	iogen_dist_init(&d, &pd, 100000, 4096, 1);
	d.is_hashed = false;
	for (int i = 1; i <= 100000; i++) {
		zetan += pow(i, -1.2);
		top += i <= 1000 ? pow(i, -1.2) : 0;
	}
	/* the hottest 1% of the blocks get the law's share (~80%) */
	assert_true(fabs(share_below(&d, 1000) - top / zetan) <= 0.02);
}

static void test_normal_is_fios_mean_of_twelve(void **state)
{
	struct probe_dist pd = parse("normal:10");
	struct iogen_dist d;
	uint64_t rng = 7;
	double sum = 0, sq = 0, n = 100000, want_sd;

	iogen_dist_init(&d, &pd, (uint64_t)n, 4096, 1);
	d.is_hashed = false;
	for (int i = 0; i < DRAWS; i++) {
		double b = (double)iogen_dist_next(&d, &rng);

		sum += b;
		sq += b * b;
	}
	/* centred; the mean of 12 uniforms (sd n/12) plus a uniform +-5% */
	want_sd = sqrt(n * n / 144.0 + (0.1 * n) * (0.1 * n) / 12.0);
	assert_true(fabs(sum / DRAWS - n / 2) <= 0.01 * n);
	assert_true(fabs(sqrt(sq / DRAWS - (sum / DRAWS) * (sum / DRAWS)) / want_sd - 1) <= 0.05);
}

static void test_hashed_hot_blocks_are_spread(void **state)
{
	struct probe_dist pd = parse("zipf:1.2");
	struct iogen_dist d;

	iogen_dist_init(&d, &pd, 100000, 4096, 1);
	/* fio's default: the hot blocks are not the first ones */
	assert_true(share_below(&d, 1000) < 0.2);
}

static void test_parse_refuses_what_fio_refuses(void **state)
{
	static const char *const bad[] = {
	    "zoned:50/5:40/95",	 /* the I/Os add up to 90% */
	    "zoned:50/60:50/60", /* the zones are 120% of the region */
	    "zipf:1",		 /* theta 1 divides by zero */
	    "pareto:1.5",
	    "normal:200",
	    "zipf",
	    "lognormal:1",
	    "zoned_abs:50/x:50/1m",
	};
	struct probe_dist d[_PROBE_DIR_MAX];
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(
		    fio_parse_random_distribution("random_distribution", bad[i], d, err, sizeof(err)),
		    -EINVAL);
		assert_non_null(strstr(err, "random_distribution"));
	}
	assert_int_equal(
	    fio_parse_random_distribution("random_distribution", "zipf:0.8,pareto:0.3", d, err, sizeof(err)),
	    0);
	assert_int_equal(d[0].type, PROBE_DIST_ZIPF);
	assert_int_equal(d[1].type, PROBE_DIST_PARETO);
	assert_true(d[0].center < 0);
	/* fio-examples' rand-zones: a blank size is the rest of the region */
	assert_int_equal(
	    fio_parse_random_distribution("random_distribution", "zoned:50/5:30/15:20/", d, err, sizeof(err)),
	    0);
	assert_int_equal(d[0].n_zones, 3);
	assert_int_equal(d[0].zones[2].size, 80);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_zoned_50_5_hottest_5_percent_get_half),
	    cmocka_unit_test(test_zoned_abs_zones_are_bytes),
	    cmocka_unit_test(test_pareto_hottest_h_get_one_minus_h),
	    cmocka_unit_test(test_zipf_follows_the_power_law),
	    cmocka_unit_test(test_normal_is_fios_mean_of_twelve),
	    cmocka_unit_test(test_hashed_hot_blocks_are_spread),
	    cmocka_unit_test(test_parse_refuses_what_fio_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
