/* fio's side figures as fio keeps them (stat.c, io_u.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fiostat.h"
#include "macro.h"

static void test_stat_mean_and_stddev_as_fio(void **state)
{
	struct fiostat_stat s = {0}, a = {0}, b = {0};
	uint64_t min, max;
	double mean, dev;

	assert_false(fiostat_stat_calc(&s, &min, &max, &mean, &dev));
	for (uint64_t v = 1; v <= 10; v++) {
		fiostat_stat_add(&s, v * 100);
		fiostat_stat_add(v <= 4 ? &a : &b, v * 100);
	}
	assert_true(fiostat_stat_calc(&s, &min, &max, &mean, &dev));
	assert_int_equal(min, 100);
	assert_int_equal(max, 1000);
	assert_true(fabs(mean - 550) < 1e-9);
	assert_true(fabs(dev - 302.7650354) < 1e-6); /* the sample stddev, n - 1 */
	/* merged halves: the same figures (fio's parallel algorithm) */
	fiostat_stat_merge(&a, &b);
	assert_true(fiostat_stat_calc(&a, &min, &max, &mean, &dev));
	assert_int_equal(a.samples, 10);
	assert_true(fabs(mean - 550) < 1e-9 && fabs(dev - 302.7650354) < 1e-6);
}

static void test_rate_stats_of_jobs_add_up_as_group_reporting(void **state)
{
	struct fiostat_stat a = {0}, b = {0};

	fiostat_stat_add(&a, 1000);
	fiostat_stat_add(&a, 3000);
	fiostat_stat_add(&b, 500);
	fiostat_stat_add(&b, 700);
	fiostat_stat_sum(&a, &b);
	assert_int_equal(a.min, 1500);
	assert_int_equal(a.max, 3700);
	assert_int_equal(a.samples, 4);
	assert_true(fabs(a.mean - 2600) < 1e-9);
}

static void test_map_and_depth_buckets_are_fios(void **state)
{
	static const unsigned n[] = {0, 1, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 1000};
	static const unsigned want_map[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6};
	static const unsigned d[] = {1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 256};
	static const unsigned want_depth[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6};

	for (size_t i = 0; i < ELEMENTSOF(n); i++) {
		assert_int_equal(fiostat_map_index(n[i]), want_map[i]);
		assert_int_equal(fiostat_depth_index(d[i]), want_depth[i]);
	}
}

static void test_latency_buckets_are_fios_from_clat(void **state)
{
	struct fiostat_dir d = {0};
	struct fiostat_job j = {0};

	fiostat_record_io(&d, &j, 5000, 999);		/* 750..999 ns */
	fiostat_record_io(&d, &j, 5000, 19999);		/* 10..19 us */
	fiostat_record_io(&d, &j, 5000, 20000);		/* 20..49 us */
	fiostat_record_io(&d, &j, 5000, 1999999);	/* 1 ms: the "2" bucket */
	fiostat_record_io(&d, &j, 5000, 2500000000ULL); /* >= 2000 ms */
	assert_int_equal(j.lat_n[9], 1);
	assert_int_equal(j.lat_u[3], 1);
	assert_int_equal(j.lat_u[4], 1);
	assert_int_equal(j.lat_m[0], 1);
	assert_int_equal(j.lat_m[11], 1);
	assert_int_equal(d.slat.samples, 5);
	assert_int_equal(d.lat.min, 5999);
}

static void test_interval_samples_every_500_ms_as_fio(void **state)
{
	struct fiostat_job j = {.interval_ns = 1000 * NSEC_PER_MSEC};
	struct fiostat_dir d = {0};
	uint64_t ms;

	assert_false(fiostat_interval_end(&j, 900 * NSEC_PER_MSEC, &ms));  /* before the start */
	assert_false(fiostat_interval_end(&j, 1400 * NSEC_PER_MSEC, &ms)); /* 400 ms */
	assert_true(fiostat_interval_end(&j, 1491 * NSEC_PER_MSEC, &ms));  /* within fio's 10 ms slack */
	assert_int_equal(ms, 491);
	fiostat_dir_sample(&d, 491 * 1024 * 10, 491 * 10, ms); /* 10 KiB and 10 I/Os per ms */
	assert_int_equal(d.bw.min, 10000);
	assert_int_equal(d.iops.min, 10000);
	/* a direction idle for an interval gets no sample */
	assert_true(fiostat_interval_end(&j, 2000 * NSEC_PER_MSEC, &ms));
	fiostat_dir_sample(&d, 491 * 1024 * 10, 491 * 10, ms);
	assert_int_equal(d.bw.samples, 1);
}

static void test_dist_shows_a_rare_bucket_as_fio(void **state)
{
	uint64_t map[FIOSTAT_MAP_NR] = {1, 0, 9999};
	double pct[FIOSTAT_MAP_NR];

	fiostat_calc_dist(map, 10000, pct);
	assert_true(pct[0] == 0.1); /* 0.01% shows as 0.1% */
	assert_true(fabs(pct[2] - 99.99) < 1e-9);
	assert_true(pct[1] == 0.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stat_mean_and_stddev_as_fio),
	    cmocka_unit_test(test_rate_stats_of_jobs_add_up_as_group_reporting),
	    cmocka_unit_test(test_map_and_depth_buckets_are_fios),
	    cmocka_unit_test(test_latency_buckets_are_fios_from_clat),
	    cmocka_unit_test(test_interval_samples_every_500_ms_as_fio),
	    cmocka_unit_test(test_dist_shows_a_rare_bucket_as_fio),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
