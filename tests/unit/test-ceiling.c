/* Ceiling detection on synthetic and recorded per-second series: a cap is
 * found at its level, moves with the cap, survives idleness, and a busy or
 * rate-limited device that is not capped is never called throttled; declared
 * limits, time at the limit and the burst bucket. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ceiling.h"
#include "macro.h"

/* Deterministic noise: a 64-bit LCG, uniform in [-1, 1). */
static uint64_t rng_state;

static double noise(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng_state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

static struct device_rates rates(double iops, double bs, double queue, double util)
{
	return (struct device_rates){
		.valid = true,
		.interval_sec = 1.0,
		.read_iops = iops,
		.read_bytes_per_sec = iops * bs,
		.read_await_sec = iops > 0 ? queue / iops : 0.0,
		.queue_depth = queue,
		.utilization = util,
	};
}

struct run {
	struct ceiling_state st;
	struct ceiling_params p;
	struct device_ceiling out;
	unsigned t;               /* samples fed */
	int first_throttled;      /* sample index when throttled first became 1, -1 never */
	unsigned n_throttled;
};

static void run_init(struct run *r)
{
	memset(r, 0, sizeof(*r));
	ceiling_state_init(&r->st);
	ceiling_params_default(&r->p);
	r->first_throttled = -1;
	rng_state = 42;
}

static void feed_dc(struct run *r, const struct device_config *dc, struct device_rates x)
{
	ceiling_update(&r->st, &r->p, dc, &x, &r->out);
	if (r->out.is_throttled) {
		if (r->first_throttled < 0) {
			r->first_throttled = (int)r->t;
		}
		r->n_throttled++;
	}
	r->t++;
}

static void feed(struct run *r, struct device_rates x)
{
	feed_dc(r, NULL, x);
}

static void assert_near(double v, double want, double rel)
{
	if (fabs(v - want) > rel * want) {
		fail_msg("%g is not within %g%% of %g", v, rel * 100, want);
	}
}

static void test_flat_series_with_rising_queue_is_throttled_at_its_level(void **state)
{
	struct run r;

	run_init(&r);
	for (unsigned i = 0; i < 30; i++) {
		feed(&r, rates(600 + 2 * noise(), 4096, 8 + 8.0 * i / 30, 1.0));
	}
	assert_true(r.out.is_throttled);
	assert_near(r.out.iops_ceiling_estimate, 600, 0.05);
	/* Found as soon as one window is full, not later. */
	assert_int_equal(r.first_throttled, (int)r.p.window - 1);
	assert_near(r.out.throughput_ceiling_estimate, 600 * 4096, 0.05);
}

/* Series iopsd's sampler took of the lab volume (contrib/lab/iopsd-lab),
 * one row per second (IOPS, aqu-sz, %util), from fio's start to its end. */
/* cap 100, fio QD16 4k randread for 30 s */
static const double lab_cap100[][3] = {
	{0, 0, 0}, {100.79, 13.9, 99.6}, {100.01, 16.06, 100}, {99.94, 16.06, 100}, {100.1, 15.86, 99.7},
	{100, 16.2, 100}, {100, 15.83, 100}, {107.33, 17.1, 100}, {92.06, 14.69, 99.8},
	{100.34, 16.09, 99.9}, {100, 15.69, 100}, {99.42, 16.45, 100}, {100.59, 15.5, 99.8},
	{100, 15.96, 100}, {99.96, 16.03, 100}, {100.04, 16.02, 100}, {98.6, 15.67, 100},
	{101.3, 16.2, 99.7}, {100.03, 15.99, 100}, {99.92, 15.89, 100}, {100.19, 16, 99.8},
	{100, 15.98, 100}, {100, 16.03, 100}, {100, 15.97, 100}, {69.89, 11.21, 99.8},
	{116.17, 21.13, 100}, {99.82, 16.01, 100}, {100.09, 15.94, 99.7}, {100.1, 15.97, 100},
	{100, 15.78, 100}, {99.83, 15.86, 99.8}, {16.03, 2.8, 14},
};

/* cap 500, fio QD16 4k randread --rate_iops=750 (150% of the cap) for 30 s; the machine
 * was busy (load average 6 on 2 cores) towards the end */
static const double lab_cap500_rate750[][3] = {
	{39.44, 0, 0}, {517.36, 12.01, 96.6}, {499.21, 15.92, 99.8}, {500.05, 15.94, 100},
	{500.03, 15.95, 100}, {500.72, 15.92, 100}, {498.89, 15.95, 100}, {501.1, 16.01, 99.8},
	{499.94, 15.87, 100}, {499.4, 15.93, 99.9}, {499.99, 15.94, 100}, {499.06, 15.91, 100},
	{500.71, 15.94, 100}, {500.27, 15.97, 99.7}, {500.5, 16, 100}, {499.6, 15.95, 99.9},
	{500.01, 15.97, 100}, {499.54, 15.93, 100}, {499.79, 15.89, 100}, {500.16, 15.93, 100},
	{497.44, 15.7, 99.1}, {503, 16.11, 99.8}, {500.29, 15.89, 99.7}, {499.6, 15.87, 99.5},
	{499.04, 15.9, 100}, {501.17, 15.95, 99.4}, {493.66, 15.11, 94}, {299.63, 11.88, 97.1},
	{332.84, 17.51, 100}, {498.91, 17.68, 98.9}, {449.19, 12.18, 86.6}, {15.69, 3.72, 8.6},
};

/* cap 200, fio QD16 64k sequential reads for 30 s */
static const double lab_cap200_seq64k[][3] = {
	{0, 0, 0}, {20.03, 0.03, 3.6}, {199, 15.85, 100}, {201.01, 16.05, 99.7}, {200.29, 15.99, 100},
	{200, 16.02, 100}, {200, 15.91, 100}, {200, 15.97, 100}, {200, 15.93, 99.6},
	{198.82, 15.83, 99.8}, {200.01, 15.93, 100}, {200.87, 15.98, 99.2}, {200.01, 16.16, 100},
	{199.97, 15.82, 100}, {200.33, 15.99, 100}, {200, 15.97, 100}, {200, 15.98, 100},
	{199.89, 15.97, 99.9}, {199.72, 15.95, 100}, {200.12, 15.98, 99.7}, {199.5, 15.92, 100},
	{200.15, 15.98, 100}, {200.38, 16, 99.8}, {199.08, 15.97, 100}, {200.87, 15.94, 99.6},
	{200.03, 15.98, 100}, {199.98, 15.97, 100}, {200.03, 15.95, 100}, {200.04, 15.98, 100},
	{200.22, 16.08, 100}, {199.59, 15.86, 99.8}, {196.4, 16.06, 97}, {0, 0, 0},
};

/* no cap, fio QD16 4k randread flat out for 30 s, on a busy machine */
static const double lab_uncapped_busy[][3] = {
	{0, 0, 0}, {25561.3, 7.6, 67.5}, {31822.1, 9.72, 79.8}, {31619, 6.29, 69.2},
	{22478.6, 6.22, 52.8}, {19573, 3.24, 27.6}, {13744, 7.06, 52.4}, {7975.94, 7.17, 47.6},
	{8808.07, 9.94, 64.8}, {23179, 7.18, 44}, {29401.7, 9.8, 64.3}, {15498.4, 9.64, 62.5},
	{24189.2, 9.12, 53.2}, {21124.9, 9.08, 60.4}, {20848.5, 9.14, 60.8}, {7527.13, 10.06, 62.8},
	{13155, 8.9, 59.5}, {12896.5, 8.82, 55.2}, {35909.6, 9.26, 59.2}, {45843.1, 12.06, 82.8},
	{42622, 13.03, 86.1}, {35096.3, 12.5, 84.6}, {45573.5, 13.64, 92.9}, {24852, 12.88, 85.6},
	{36975.7, 12.21, 87.6}, {18878.7, 13.9, 88}, {13899.1, 13.86, 89.9}, {11529.1, 14.31, 92.8},
	{25336.7, 12.84, 90}, {18907.2, 13.37, 90.4}, {13860.3, 14.46, 96.1}, {2423.5, 3.03, 18.8},
};

/* The same volume and fio job with the cap removed: r/s, aqu-sz, %util. */
static const double lab_unthrottled[][3] = {
	{73289, 13.31, 98.8}, {80545, 13.11, 99.2}, {79990, 13.48, 99.6}, {82446, 13.56, 99.2},
	{74514, 13.51, 98.8}, {81286, 13.43, 98.8}, {79079, 13.48, 98.8}, {79574, 12.89, 98.4},
	{76042, 13.40, 99.2}, {70766, 13.61, 99.2}, {72871, 13.61, 98.8}, {77347, 13.77, 99.2},
	{80740, 13.00, 100.0}, {72585, 13.00, 97.6}, {71398, 13.52, 99.2}, {71183, 13.47, 98.8},
	{75249, 13.30, 99.6}, {76389, 13.25, 99.2}, {74413, 13.16, 98.0},
};

/* A recorded cap is found about one window after fio started (later when
 * the window holds a few seconds that fell short), never before, at its
 * level; and it is not called throttled once fio is gone. */
static void check_recorded_cap(const double (*series)[3], size_t n, double bs, double cap)
{
	struct run r;

	run_init(&r);
	for (size_t i = 0; i < n; i++) {
		feed(&r, rates(series[i][0], bs, series[i][1], series[i][2] / 100));
	}
	assert_true(r.first_throttled >= (int)r.p.window - 1);
	assert_true(r.first_throttled <= (int)r.p.window + 3);
	assert_false(r.out.is_throttled);
	assert_near(r.out.iops_ceiling_estimate, cap, 0.05);
	assert_near(r.out.throughput_ceiling_estimate, cap * bs, 0.05);
}

static void test_recorded_lab_caps_are_found(void **state)
{
	check_recorded_cap(lab_cap100, ELEMENTSOF(lab_cap100), 4096, 100);
	check_recorded_cap(lab_cap500_rate750, ELEMENTSOF(lab_cap500_rate750), 4096, 500);
	check_recorded_cap(lab_cap200_seq64k, ELEMENTSOF(lab_cap200_seq64k), 65536, 200);
}

static void test_recorded_busy_unthrottled_device_is_not_throttled(void **state)
{
	struct run r;

	run_init(&r);
	for (size_t i = 0; i < ELEMENTSOF(lab_unthrottled); i++) {
		feed(&r, rates(lab_unthrottled[i][0], 4096, lab_unthrottled[i][1], lab_unthrottled[i][2] / 100));
	}
	assert_int_equal(r.n_throttled, 0);
	assert_true(r.out.iops_ceiling_estimate == 0);
	/* Busy it is, though. */
	assert_true(r.out.is_saturated);

	run_init(&r);
	for (size_t i = 0; i < ELEMENTSOF(lab_uncapped_busy); i++) {
		feed(&r, rates(lab_uncapped_busy[i][0], 4096, lab_uncapped_busy[i][1], lab_uncapped_busy[i][2] / 100));
	}
	assert_int_equal(r.n_throttled, 0);
	assert_true(r.out.iops_ceiling_estimate == 0);
}

static void test_noisy_load_below_the_cap_is_not_throttled(void **state)
{
	struct run r;

	run_init(&r);
	for (unsigned i = 0; i < 300; i++) {
		feed(&r, rates(300 * (1 + 0.05 * noise()), 4096, 0.1 + 0.05 * noise(), 0.3));
	}
	assert_int_equal(r.n_throttled, 0);
	assert_true(r.out.iops_ceiling_estimate == 0);
	assert_false(r.out.is_saturated);
}

static void test_rate_limited_client_without_queue_is_not_throttled(void **state)
{
	struct run r;

	/* fio --rate_iops=300 holds a perfectly flat line, but nothing waits. */
	run_init(&r);
	for (unsigned i = 0; i < 120; i++) {
		feed(&r, rates(300, 4096, 0.07, 0.07));
	}
	assert_int_equal(r.n_throttled, 0);
	assert_true(r.out.iops_ceiling_estimate == 0);
}

static void test_busy_device_with_a_few_percent_of_jitter_is_not_throttled(void **state)
{
	struct run r;

	/* A fast device at a fixed queue depth: util and queue pinned, IOPS
	 * wandering by a few percent. */
	run_init(&r);
	for (unsigned i = 0; i < 600; i++) {
		feed(&r, rates(20000 * (1 + 0.04 * noise()), 4096, 16, 1.0));
	}
	assert_int_equal(r.n_throttled, 0);
}

static void test_step_from_600_to_300_is_followed(void **state)
{
	struct run r;
	int followed = -1;

	run_init(&r);
	for (unsigned i = 0; i < 30; i++) {
		feed(&r, rates(600 + noise(), 4096, 16, 1.0));
	}
	assert_near(r.out.iops_ceiling_estimate, 600, 0.05);
	for (unsigned i = 0; i < 60; i++) {
		feed(&r, rates(300 + noise(), 4096, 16, 1.0));
		if (followed < 0 && fabs(r.out.iops_ceiling_estimate - 300) <= 15) {
			followed = (int)i + 1;
		}
	}
	assert_true(followed > 0);
	assert_true(followed <= 60);
	/* Within one window of the new level. */
	assert_true(followed <= (int)r.p.window);
	assert_true(r.out.is_throttled);
	assert_near(r.out.iops_ceiling_estimate, 300, 0.05);
}

static void test_step_up_is_followed_too(void **state)
{
	struct run r;

	run_init(&r);
	for (unsigned i = 0; i < 30; i++) {
		feed(&r, rates(300 + noise(), 4096, 16, 1.0));
	}
	for (unsigned i = 0; i < 30; i++) {
		feed(&r, rates(900 + noise(), 4096, 16, 1.0));
	}
	assert_true(r.out.is_throttled);
	assert_near(r.out.iops_ceiling_estimate, 900, 0.05);
}

static void test_estimate_is_kept_after_the_load_goes_away(void **state)
{
	struct run r;

	run_init(&r);
	for (unsigned i = 0; i < 20; i++) {
		feed(&r, rates(600, 4096, 16, 1.0));
	}
	assert_true(r.out.is_throttled);
	for (unsigned i = 0; i < 600; i++) {
		feed(&r, rates(0, 0, 0, 0));
	}
	assert_false(r.out.is_throttled);
	assert_near(r.out.iops_ceiling_estimate, 600, 0.01);
	/* Light load below the ceiling says nothing against it either. */
	for (unsigned i = 0; i < 60; i++) {
		feed(&r, rates(200 * (1 + 0.1 * noise()), 4096, 0.2, 0.3));
	}
	assert_near(r.out.iops_ceiling_estimate, 600, 0.01);
}

static void test_estimate_is_dropped_when_the_device_sustains_more(void **state)
{
	struct run r;

	run_init(&r);
	for (unsigned i = 0; i < 20; i++) {
		feed(&r, rates(600, 4096, 16, 1.0));
	}
	/* One second above is not enough (a burst, a sampling artefact). */
	feed(&r, rates(900, 4096, 16, 1.0));
	feed(&r, rates(600, 4096, 16, 1.0));
	assert_near(r.out.iops_ceiling_estimate, 600, 0.01);
	/* A few seconds above are taken for outliers of the plateau; then
	 * contradict_samples more prove the estimate wrong. */
	for (unsigned i = 0; i < r.p.max_outliers + r.p.contradict_samples; i++) {
		feed(&r, rates(900 * (1 + 0.1 * noise()), 4096, 4, 0.9));
	}
	assert_true(r.out.iops_ceiling_estimate == 0);
	assert_false(r.out.is_throttled);
}

static void test_idle_device_reports_nothing(void **state)
{
	struct run r;
	struct device_rates invalid = {.valid = false};

	run_init(&r);
	feed(&r, invalid);
	assert_true(isnan(r.out.iops_limit_ratio));
	for (unsigned i = 0; i < 120; i++) {
		feed(&r, rates(0, 0, 0, 0));
	}
	assert_int_equal(r.n_throttled, 0);
	assert_false(r.out.is_saturated);
	assert_true(r.out.iops_ceiling_estimate == 0);
	assert_true(r.out.throughput_ceiling_estimate == 0);
	assert_int_equal(r.out.iops_limit, 0);
	assert_true(isnan(r.out.iops_limit_ratio));
	assert_true(r.out.at_ceiling_iops_seconds == 0);
	assert_false(r.out.has_burst_model);
}

static void test_a_trickle_is_not_a_ceiling(void **state)
{
	struct run r;

	/* 2 IOPS, perfectly regular, always one request outstanding: below
	 * min_iops, whatever the queue says. */
	run_init(&r);
	for (unsigned i = 0; i < 60; i++) {
		feed(&r, rates(2, 4096, 1.0, 1.0));
	}
	assert_int_equal(r.n_throttled, 0);
}

static void test_queue_depth_one_at_the_cap_is_throttled(void **state)
{
	struct run r;

	run_init(&r);
	for (unsigned i = 0; i < 20; i++) {
		feed(&r, rates(600 + noise(), 4096, 0.98, 0.99));
	}
	assert_true(r.out.is_throttled);
	assert_near(r.out.iops_ceiling_estimate, 600, 0.05);
}

static void test_a_few_dips_below_the_cap_do_not_hide_it(void **state)
{
	struct run r;

	/* A database that hits its limit most of the time, and pauses now and
	 * then (queue drains during the pause). */
	run_init(&r);
	for (unsigned i = 0; i < 40; i++) {
		if (i % 10 == 3) {
			feed(&r, rates(350, 4096, 0.3, 0.6));
		} else {
			feed(&r, rates(1000 + noise(), 4096, 12, 1.0));
		}
	}
	assert_near(r.out.iops_ceiling_estimate, 1000, 0.05);
	assert_true(r.out.is_throttled);
}

static void test_a_second_that_falls_short_does_not_end_the_plateau(void **state)
{
	struct run r;

	/* Recorded by iopsd on the lab at cap 500 while the machine was busy:
	 * one second lost 80 I/Os with the queue still full. */
	run_init(&r);
	for (unsigned i = 0; i < 40; i++) {
		feed(&r, rates(i == 30 ? 418.26 : 500 + noise(), 4096, 15.9, 1.0));
		if (i >= r.p.window) {
			assert_true(r.out.is_throttled);
		}
	}
	assert_near(r.out.iops_ceiling_estimate, 500, 0.01);
}

static void test_small_cap_survives_one_io_of_jitter(void **state)
{
	struct run r;
	const double xs[] = {100, 98, 102, 100, 99, 101, 100, 98, 102, 100, 99, 101};

	run_init(&r);
	for (size_t i = 0; i < 3 * ELEMENTSOF(xs); i++) {
		feed(&r, rates(xs[i % ELEMENTSOF(xs)], 16384, 16, 1.0));
	}
	assert_true(r.out.is_throttled);
	assert_near(r.out.iops_ceiling_estimate, 100, 0.05);
}

static void test_gap_restarts_the_window(void **state)
{
	struct run r;
	struct device_rates invalid = {.valid = false};

	run_init(&r);
	for (unsigned i = 0; i + 1 < r.p.window; i++) {
		feed(&r, rates(600, 4096, 16, 1.0));
	}
	feed(&r, invalid);
	for (unsigned i = 0; i + 1 < r.p.window; i++) {
		feed(&r, rates(600, 4096, 16, 1.0));
	}
	assert_int_equal(r.n_throttled, 0);
	feed(&r, rates(600, 4096, 16, 1.0));
	assert_true(r.out.is_throttled);
}

static void test_throughput_plateau_of_large_requests(void **state)
{
	struct run r;

	run_init(&r);
	for (unsigned i = 0; i < 25; i++) {
		feed(&r, rates(200 + 0.5 * noise(), 65536, 16, 1.0));
	}
	assert_true(r.out.is_throttled);
	assert_near(r.out.throughput_ceiling_estimate, 200 * 65536.0, 0.05);
	assert_near(r.out.iops_ceiling_estimate, 200, 0.05);
}

static void test_declared_limits_ratio_and_seconds_at_the_limit(void **state)
{
	struct device_config dc = {
		.name = "loop7",
		.iops_limit = 600,
		.throughput_limit = 4 << 20,
		.ceiling_threshold = 0.95,
	};
	struct run r;

	run_init(&r);
	for (unsigned i = 0; i < 10; i++) {
		feed_dc(&r, &dc, rates(600, 4096, 16, 1.0));
	}
	assert_int_equal(r.out.iops_limit, 600);
	assert_int_equal(r.out.throughput_limit, 4 << 20);
	assert_near(r.out.iops_limit_ratio, 1.0, 1e-9);
	assert_near(r.out.throughput_limit_ratio, 600 * 4096.0 / (4 << 20), 1e-9);
	assert_near(r.out.at_ceiling_iops_seconds, 10, 1e-9);
	assert_true(r.out.at_ceiling_throughput_seconds == 0);
	for (unsigned i = 0; i < 10; i++) {
		feed_dc(&r, &dc, rates(500, 4096, 1, 0.9)); /* 0.83 */
	}
	assert_near(r.out.iops_limit_ratio, 500.0 / 600, 1e-9);
	assert_near(r.out.at_ceiling_iops_seconds, 10, 1e-9);
	for (unsigned i = 0; i < 5; i++) {
		feed_dc(&r, &dc, rates(571, 4096, 1, 0.9)); /* 0.9517 */
	}
	assert_near(r.out.at_ceiling_iops_seconds, 15, 1e-9);
	/* A tighter threshold counts less. */
	dc.ceiling_threshold = 0.99;
	feed_dc(&r, &dc, rates(571, 4096, 1, 0.9));
	assert_near(r.out.at_ceiling_iops_seconds, 15, 1e-9);
	feed_dc(&r, &dc, rates(600, 8192, 16, 1.0));
	assert_near(r.out.at_ceiling_iops_seconds, 16, 1e-9);
	assert_near(r.out.at_ceiling_throughput_seconds, 1, 1e-9);
}

static void test_at_the_limit_counts_seconds_of_interval(void **state)
{
	struct device_config dc = {.name = "x", .iops_limit = 1000, .ceiling_threshold = 0.95};
	struct run r;
	struct device_rates x = rates(1000, 4096, 8, 1.0);

	run_init(&r);
	x.interval_sec = 0.5;
	for (unsigned i = 0; i < 7; i++) {
		feed_dc(&r, &dc, x);
	}
	assert_near(r.out.at_ceiling_iops_seconds, 3.5, 1e-9);
	/* A gap counts nothing and keeps the counter. */
	x.valid = false;
	feed_dc(&r, &dc, x);
	assert_near(r.out.at_ceiling_iops_seconds, 3.5, 1e-9);
	assert_true(isnan(r.out.iops_limit_ratio));
}

static void test_at_limit_flags_each_interval_at_the_threshold_of_either_limit(void **state)
{
	struct device_config dc = {
		.name = "x",
		.iops_limit = 1000,
		.throughput_limit = 8 << 20,
		.ceiling_threshold = 0.95,
	};
	struct run r;
	struct device_rates x;

	run_init(&r);
	feed_dc(&r, &dc, rates(949, 4096, 8, 1.0));
	assert_false(r.out.is_at_limit);
	feed_dc(&r, &dc, rates(950, 4096, 8, 1.0));
	assert_true(r.out.is_at_limit);
	/* not sticky: it describes this interval only */
	feed_dc(&r, &dc, rates(100, 4096, 1, 0.2));
	assert_false(r.out.is_at_limit);
	/* 200 IOPS of 40 KiB: the throughput limit */
	feed_dc(&r, &dc, rates(200, 40960, 4, 1.0));
	assert_true(r.out.is_at_limit);
	/* no limit declared: never */
	feed(&r, rates(5000, 4096, 32, 1.0));
	assert_false(r.out.is_at_limit);
	/* a gap: not at the limit */
	x = rates(1000, 4096, 8, 1.0);
	x.valid = false;
	feed_dc(&r, &dc, x);
	assert_false(r.out.is_at_limit);
}

static void test_burst_bucket_drains_and_refills(void **state)
{
	/* gp2-like, scaled down: 100 IOPS baseline, 3000 burst, 29000 credits:
	 * at 3000 IOPS the bucket loses 2900 a second and lasts 10 s. */
	struct device_config dc = {
		.name = "xvdf",
		.burst_iops = 3000,
		.burst_credits = 29000,
		.credit_rate = 100,
		.ceiling_threshold = 0.95,
	};
	struct run r;

	run_init(&r);
	feed_dc(&r, &dc, rates(0, 0, 0, 0));
	assert_true(r.out.has_burst_model);
	assert_near(r.out.burst_balance_ratio, 1.0, 1e-9);
	assert_int_equal(r.out.iops_limit, 3000);
	for (unsigned i = 0; i < 5; i++) {
		feed_dc(&r, &dc, rates(3000, 4096, 16, 1.0));
	}
	assert_near(r.out.burst_balance_ratio, 0.5, 1e-9);
	assert_int_equal(r.out.iops_limit, 3000);
	assert_near(r.out.iops_limit_ratio, 1.0, 1e-9);
	for (unsigned i = 0; i < 5; i++) {
		feed_dc(&r, &dc, rates(3000, 4096, 16, 1.0));
	}
	assert_true(r.out.burst_balance_ratio == 0);
	/* Spent: the volume is held at its baseline and never goes negative. */
	assert_int_equal(r.out.iops_limit, 100);
	for (unsigned i = 0; i < 20; i++) {
		feed_dc(&r, &dc, rates(100, 4096, 16, 1.0));
	}
	assert_true(r.out.burst_balance_ratio == 0);
	assert_int_equal(r.out.iops_limit, 100);
	assert_near(r.out.iops_limit_ratio, 1.0, 1e-9);
	/* Idle: 100 credits a second come back, up to the bucket size. */
	for (unsigned i = 0; i < 145; i++) {
		feed_dc(&r, &dc, rates(0, 0, 0, 0));
	}
	assert_near(r.out.burst_balance_ratio, 0.5, 1e-9);
	assert_int_equal(r.out.iops_limit, 3000);
	for (unsigned i = 0; i < 1000; i++) {
		feed_dc(&r, &dc, rates(0, 0, 0, 0));
	}
	assert_near(r.out.burst_balance_ratio, 1.0, 1e-9);
}

static void test_declared_iops_limit_wins_over_the_burst_rate(void **state)
{
	struct device_config dc = {
		.name = "xvdf",
		.iops_limit = 500,
		.burst_iops = 3000,
		.burst_credits = 29000,
		.credit_rate = 100,
		.ceiling_threshold = 0.95,
	};
	struct run r;

	run_init(&r);
	feed_dc(&r, &dc, rates(500, 4096, 16, 1.0));
	assert_int_equal(r.out.iops_limit, 500);
	assert_near(r.out.burst_balance_ratio, (29000.0 - 400) / 29000, 1e-9);
}

static void test_quiet_subtracts_iopsd_own_probes(void **state)
{
	struct run r;

	run_init(&r);
	assert_false(ceiling_state_is_quiet(&r.st, 3, 5));
	for (unsigned i = 0; i < 3; i++) {
		feed(&r, rates(1, 4096, 0, 0.01));
	}
	assert_true(ceiling_state_is_quiet(&r.st, 3, 5));
	assert_false(ceiling_state_is_quiet(&r.st, 4, 5));
	/* A probe did 50 I/Os: the device is busy unless they are iopsd's. */
	feed(&r, rates(51, 4096, 0.1, 0.1));
	assert_false(ceiling_state_is_quiet(&r.st, 3, 5));
	ceiling_state_note_own_ops(&r.st, 50);
	feed(&r, rates(51, 4096, 0.1, 0.1));
	/* The previous 51 still count against it. */
	assert_false(ceiling_state_is_quiet(&r.st, 3, 5));
	for (unsigned i = 0; i < 2; i++) {
		feed(&r, rates(1, 4096, 0, 0.01));
	}
	assert_true(ceiling_state_is_quiet(&r.st, 3, 5));
}

static void test_measurement_becomes_the_estimate(void **state)
{
	struct run r;

	run_init(&r);
	ceiling_state_measured(&r.st, 1234, 5e6);
	feed(&r, rates(0, 0, 0, 0));
	assert_near(r.out.iops_ceiling_estimate, 1234, 1e-9);
	assert_near(r.out.throughput_ceiling_estimate, 5e6, 1e-9);
	assert_false(r.out.is_throttled);
	ceiling_state_measured(&r.st, 0, 0);
	feed(&r, rates(0, 0, 0, 0));
	assert_near(r.out.iops_ceiling_estimate, 1234, 1e-9);
}

static void test_set_keeps_state_by_name_and_forgets_vanished_devices(void **state)
{
	struct device_config dc = {.name = "/lab", .iops_limit = 600, .ceiling_threshold = 0.95};
	struct ceiling_set *s = NULL;
	struct device_ceiling out;
	struct device_rates capped = rates(600, 4096, 16, 1.0), busy = rates(50, 4096, 1, 0.5);
	char name[32];

	assert_int_equal(ceiling_set_new(NULL, &s), 0);
	for (unsigned t = 0; t < 20; t++) {
		/* Many devices, so that the index is exercised. */
		for (unsigned i = 0; i < 40; i++) {
			snprintf(name, sizeof(name), "sd%u", i);
			assert_int_equal(ceiling_set_update(s, name, NULL, &busy, NULL, false, &out), 0);
		}
		assert_int_equal(ceiling_set_update(s, "loop9", &dc, &capped, NULL, false, &out), 0);
		ceiling_set_end_sample(s);
	}
	assert_true(out.is_throttled);
	assert_int_equal(out.iops_limit, 600);
	assert_near(out.at_ceiling_iops_seconds, 20, 1e-9);
	assert_non_null(ceiling_set_find(s, "loop9"));
	assert_non_null(ceiling_set_find(s, "sd39"));

	/* loop9 vanishes for one sample: forgotten, then starts afresh. */
	assert_int_equal(ceiling_set_update(s, "sd0", NULL, &busy, NULL, false, &out), 0);
	ceiling_set_end_sample(s);
	assert_null(ceiling_set_find(s, "loop9"));
	assert_null(ceiling_set_find(s, "sd1"));
	assert_non_null(ceiling_set_find(s, "sd0"));
	assert_int_equal(ceiling_set_update(s, "loop9", &dc, &capped, NULL, false, &out), 0);
	assert_near(out.at_ceiling_iops_seconds, 1, 1e-9);
	assert_false(out.is_throttled);
	ceiling_set_free(s);
}

static void test_md_array_uses_its_members_queue_and_busy_time(void **state)
{
	/* RAID0 of two capped volumes: md0 itself shows flat IOPS but no busy
	 * time and no queue; its members are pinned. */
	struct ceiling_set *s = NULL;
	struct device_ceiling out, own_only;
	struct device_rates md = rates(1200, 4096, 0, 0), members = rates(600, 4096, 16, 1.0);
	struct ceiling_state bare;
	struct ceiling_params p;

	ceiling_params_default(&p);
	ceiling_state_init(&bare);
	assert_int_equal(ceiling_set_new(NULL, &s), 0);
	for (unsigned t = 0; t < 20; t++) {
		assert_int_equal(ceiling_set_update(s, "md0", NULL, &md, &members, false, &out), 0);
		ceiling_update(&bare, &p, NULL, &md, &own_only);
		ceiling_set_end_sample(s);
	}
	assert_true(out.is_throttled);
	assert_near(out.iops_ceiling_estimate, 1200, 0.01);
	assert_false(own_only.is_throttled);
	ceiling_set_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flat_series_with_rising_queue_is_throttled_at_its_level),
		cmocka_unit_test(test_recorded_lab_caps_are_found),
		cmocka_unit_test(test_recorded_busy_unthrottled_device_is_not_throttled),
		cmocka_unit_test(test_noisy_load_below_the_cap_is_not_throttled),
		cmocka_unit_test(test_rate_limited_client_without_queue_is_not_throttled),
		cmocka_unit_test(test_busy_device_with_a_few_percent_of_jitter_is_not_throttled),
		cmocka_unit_test(test_step_from_600_to_300_is_followed),
		cmocka_unit_test(test_step_up_is_followed_too),
		cmocka_unit_test(test_estimate_is_kept_after_the_load_goes_away),
		cmocka_unit_test(test_estimate_is_dropped_when_the_device_sustains_more),
		cmocka_unit_test(test_idle_device_reports_nothing),
		cmocka_unit_test(test_a_trickle_is_not_a_ceiling),
		cmocka_unit_test(test_queue_depth_one_at_the_cap_is_throttled),
		cmocka_unit_test(test_a_few_dips_below_the_cap_do_not_hide_it),
		cmocka_unit_test(test_a_second_that_falls_short_does_not_end_the_plateau),
		cmocka_unit_test(test_small_cap_survives_one_io_of_jitter),
		cmocka_unit_test(test_gap_restarts_the_window),
		cmocka_unit_test(test_throughput_plateau_of_large_requests),
		cmocka_unit_test(test_declared_limits_ratio_and_seconds_at_the_limit),
		cmocka_unit_test(test_at_the_limit_counts_seconds_of_interval),
		cmocka_unit_test(test_at_limit_flags_each_interval_at_the_threshold_of_either_limit),
		cmocka_unit_test(test_burst_bucket_drains_and_refills),
		cmocka_unit_test(test_declared_iops_limit_wins_over_the_burst_rate),
		cmocka_unit_test(test_quiet_subtracts_iopsd_own_probes),
		cmocka_unit_test(test_measurement_becomes_the_estimate),
		cmocka_unit_test(test_set_keeps_state_by_name_and_forgets_vanished_devices),
		cmocka_unit_test(test_md_array_uses_its_members_queue_and_busy_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
