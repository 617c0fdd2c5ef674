/* Latency histogram: resolution (<= 1% from 1 us to 60 s), merging,
 * percentiles against exact percentiles of known distributions, and the
 * cumulative counts behind the Prometheus buckets. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "histogram.h"
#include "splitmix.h"

static uint64_t rng_state = 42;

static uint64_t rng(void)
{
	return splitmix64_next(&rng_state);
}

static double rng_unit(void)
{
	return (double)(rng() >> 11) / (double)(1ULL << 53);
}

static struct histogram *histogram_new(void)
{
	struct histogram *h = malloc(sizeof(*h));

	assert_non_null(h);
	histogram_init(h);
	return h;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void assert_within(double got, double want, double rel)
{
	if (fabs(got - want) > rel * want) {
		fail_msg("%.0f is not within %.2f%% of %.0f", got, rel * 100, want);
	}
}

static void test_resolution_is_within_one_percent_from_1us_to_60s(void **state)
{
	struct histogram *h = histogram_new();

	/* a geometric sweep, 0.1% apart; the value under test sits between a
	 * tiny and a huge one so that the median is its bucket's value, not
	 * clamped to an exact min or max */
	for (double v = 1000; v <= 60e9; v *= 1.001) {
		uint64_t x = (uint64_t)v;

		histogram_init(h);
		histogram_record(h, 1);
		histogram_record(h, x);
		histogram_record(h, 1ULL << 40);
		assert_within((double)histogram_percentile(h, 50), (double)x, 0.01);
	}
	free(h);
}

static void test_small_values_are_exact(void **state)
{
	struct histogram *h = histogram_new();

	for (uint64_t v = 0; v < 64; v++) {
		histogram_init(h);
		histogram_record(h, 0);
		histogram_record(h, v);
		histogram_record(h, 1000);
		assert_int_equal(histogram_percentile(h, 50), v);
	}
	free(h);
}

static void test_min_max_mean_are_exact(void **state)
{
	struct histogram *h = histogram_new();

	histogram_record(h, 1234567);
	histogram_record(h, 89);
	histogram_record(h, 5000000000ULL);
	assert_int_equal(h->count, 3);
	assert_int_equal(h->min_ns, 89);
	assert_int_equal(h->max_ns, 5000000000ULL);
	assert_true(fabs(histogram_mean(h) - (1234567.0 + 89 + 5e9) / 3) < 1e-3);
	assert_int_equal(histogram_percentile(h, 0), 89);
	assert_int_equal(histogram_percentile(h, 100), 5000000000ULL);
	free(h);
}

static void test_empty_histogram_reports_zeros(void **state)
{
	struct histogram *h = histogram_new();

	assert_int_equal(histogram_percentile(h, 50), 0);
	assert_true(histogram_mean(h) == 0.0);
	assert_true(histogram_stddev(h) == 0.0);
	assert_int_equal(histogram_count_le(h, 1000000), 0);
	free(h);
}

static void test_merge_equals_recording_everything_in_one(void **state)
{
	struct histogram *a = histogram_new(), *b = histogram_new(), *all = histogram_new();

	for (int i = 0; i < 50000; i++) {
		uint64_t v = rng() % 2000000000ULL;

		histogram_record(i % 3 ? a : b, v);
		histogram_record(all, v);
	}
	histogram_merge(a, b);
	assert_int_equal(a->count, all->count);
	assert_int_equal(a->sum_ns, all->sum_ns);
	assert_int_equal(a->min_ns, all->min_ns);
	assert_int_equal(a->max_ns, all->max_ns);
	assert_memory_equal(a->buckets, all->buckets, sizeof(a->buckets));
	/* merging an empty histogram changes nothing, min included */
	histogram_init(b);
	histogram_merge(a, b);
	assert_int_equal(a->min_ns, all->min_ns);
	assert_int_equal(a->count, all->count);
	free(a);
	free(b);
	free(all);
}

/* Compare every fio percentile with the exact one of the same data (the
 * smallest value with at least p% of the values at or below it). */
static void assert_percentiles_match(const uint64_t *values, size_t n, double rel)
{
	struct histogram *h = histogram_new();
	uint64_t *sorted = malloc(n * sizeof(*sorted));

	assert_non_null(sorted);
	for (size_t i = 0; i < n; i++) {
		histogram_record(h, values[i]);
	}
	memcpy(sorted, values, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_u64);
	for (size_t i = 0; i < HISTOGRAM_N_FIO_PERCENTILES; i++) {
		double p = histogram_fio_percentiles[i];
		size_t rank = (size_t)ceil(p / 100.0 * (double)n - 1e-9);

		assert_within((double)histogram_percentile(h, p), (double)sorted[rank - 1], rel);
	}
	free(sorted);
	free(h);
}

static void test_percentiles_of_a_uniform_distribution(void **state)
{
	size_t n = 100000;
	uint64_t *v = malloc(n * sizeof(*v));

	assert_non_null(v);
	/* 1 us .. 100 ms, uniformly */
	for (size_t i = 0; i < n; i++) {
		v[i] = 1000 + (uint64_t)(rng_unit() * 99999000.0);
	}
	assert_percentiles_match(v, n, 0.01);
	/* and the analytic answer: p% of the range */
	{
		struct histogram *h = histogram_new();

		for (size_t i = 0; i < n; i++) {
			histogram_record(h, v[i]);
		}
		assert_within((double)histogram_percentile(h, 50), 50e6, 0.02);
		assert_within((double)histogram_percentile(h, 99), 99e6, 0.02);
		assert_within(histogram_mean(h), 50e6, 0.01);
		/* stddev of U(a,b) is (b-a)/sqrt(12) */
		assert_within(histogram_stddev(h), 99999000.0 / sqrt(12.0), 0.02);
		free(h);
	}
	free(v);
}

static void test_percentiles_of_an_exponential_distribution(void **state)
{
	size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));
	struct histogram *h = histogram_new();

	assert_non_null(v);
	/* disk-like latencies: exponential, mean 100 us, plus a 20 us floor */
	for (size_t i = 0; i < n; i++) {
		v[i] = 20000 + (uint64_t)(-log(1.0 - rng_unit()) * 100000.0);
		histogram_record(h, v[i]);
	}
	assert_percentiles_match(v, n, 0.01);
	/* the median of Exp(mean m) is m*ln 2 */
	assert_within((double)histogram_percentile(h, 50), 20000 + 100000 * log(2.0), 0.02);
	assert_within((double)histogram_percentile(h, 99), 20000 + 100000 * log(100.0), 0.03);
	free(h);
	free(v);
}

static void test_percentiles_of_a_bimodal_distribution(void **state)
{
	size_t n = 100000;
	uint64_t *v = malloc(n * sizeof(*v));

	assert_non_null(v);
	/* 90% cache-like 50 us hits, 10% 20 ms misses: p90 and p95 straddle */
	for (size_t i = 0; i < n; i++) {
		v[i] = i % 10 == 9 ? 20000000 + rng() % 1000000 : 50000 + rng() % 5000;
	}
	assert_percentiles_match(v, n, 0.01);
	free(v);
}

static void test_fio_percentile_list(void **state)
{
	static const double want[] = {1,  5,  10, 20, 30,   40,	  50,	 60,   70,
				      80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};

	assert_int_equal(HISTOGRAM_N_FIO_PERCENTILES, sizeof(want) / sizeof(want[0]));
	assert_memory_equal(histogram_fio_percentiles, want, sizeof(want));
}

static void test_count_le_is_cumulative_and_exact_at_bounds(void **state)
{
	struct histogram *h = histogram_new();
	uint64_t prev = 0;

	/* one value exactly on every bound, one just above it */
	for (size_t i = 0; i < histogram_n_prom_bounds; i++) {
		uint64_t ns = (uint64_t)llround(histogram_prom_bounds_seconds[i] * 1e9);

		histogram_record(h, ns);
		histogram_record(h, ns + ns / 50 + 1);
	}
	for (size_t i = 0; i < histogram_n_prom_bounds; i++) {
		uint64_t ns = (uint64_t)llround(histogram_prom_bounds_seconds[i] * 1e9);
		uint64_t c = histogram_count_le(h, ns);

		assert_true(c >= prev);
		/* bound i holds its own value and both values of every bound below */
		assert_int_equal(c, 2 * i + 1);
		prev = c;
	}
	assert_int_equal(histogram_count_le(h, UINT64_MAX / 2), h->count);
	free(h);
}

static void test_prometheus_bounds_are_fine_below_one_millisecond(void **state)
{
	size_t below = 0;

	for (size_t i = 0; i < histogram_n_prom_bounds; i++) {
		if (i > 0) {
			assert_true(histogram_prom_bounds_seconds[i] > histogram_prom_bounds_seconds[i - 1]);
		}
		if (histogram_prom_bounds_seconds[i] < 0.001) {
			below++;
		}
	}
	assert_true(below >= 10);
	assert_true(histogram_prom_bounds_seconds[0] <= 0.000005);
	assert_true(histogram_prom_bounds_seconds[histogram_n_prom_bounds - 1] >= 60);
}

static void test_values_beyond_the_range_keep_exact_max(void **state)
{
	struct histogram *h = histogram_new();

	histogram_record(h, 1000);
	histogram_record(h, 300ULL * 1000000000ULL);
	assert_int_equal(h->max_ns, 300ULL * 1000000000ULL);
	assert_int_equal(histogram_percentile(h, 100), 300ULL * 1000000000ULL);
	/* beyond 2^38 ns it lands in the last bucket (whose low end is
	 * 127 << 31 ns), not wrapped into a lower one */
	assert_true(histogram_percentile(h, 99) >= (127ULL << 31));
	free(h);
}

static void test_sum_saturates_instead_of_wrapping(void **state)
{
	struct histogram *h = histogram_new();

	histogram_record(h, UINT64_MAX - 5);
	histogram_record(h, 100);
	assert_int_equal(h->sum_ns, UINT64_MAX);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_resolution_is_within_one_percent_from_1us_to_60s),
	    cmocka_unit_test(test_small_values_are_exact),
	    cmocka_unit_test(test_min_max_mean_are_exact),
	    cmocka_unit_test(test_empty_histogram_reports_zeros),
	    cmocka_unit_test(test_merge_equals_recording_everything_in_one),
	    cmocka_unit_test(test_percentiles_of_a_uniform_distribution),
	    cmocka_unit_test(test_percentiles_of_an_exponential_distribution),
	    cmocka_unit_test(test_percentiles_of_a_bimodal_distribution),
	    cmocka_unit_test(test_fio_percentile_list),
	    cmocka_unit_test(test_count_le_is_cumulative_and_exact_at_bounds),
	    cmocka_unit_test(test_prometheus_bounds_are_fine_below_one_millisecond),
	    cmocka_unit_test(test_values_beyond_the_range_keep_exact_max),
	    cmocka_unit_test(test_sum_saturates_instead_of_wrapping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
