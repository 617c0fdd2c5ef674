/* latency_target's depth search (job_workload.c), window by window, on a
 * modelled device: a window at depth d meets the target when d is at most
 * the device's knee. The depths visited, the depth found and the end of
 * the run are fio's (io_u.c: lat_target_success, lat_target_failed). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "probe-internal.h"

#define WINDOW_NS 200000000ull /* latency_window=200ms */
#define TARGET_US 200ull

struct search {
	struct run run;
	struct job job;
	uint64_t now;
};

static struct search *search_new(unsigned iodepth, double percentile)
{
	struct search *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->run.layout_pc.wl.latency_target_usec = TARGET_US;
	s->run.layout_pc.wl.latency_window_usec = WINDOW_NS / 1000;
	s->run.layout_pc.wl.latency_percentile = percentile;
	s->job.run = &s->run;
	s->job.depth = iodepth;
	s->now = 1000000000ull;
	job_lat_init(&s->job, s->now);
	return s;
}

/* One window of 1000 reads at the current depth, `over` of them over the
 * target; returns the depth the window ran at. */
static unsigned window(struct search *s, unsigned over)
{
	unsigned qd = job_lat_depth(&s->job);

	s->job.op[PROBE_OP_READ].ops += 1000;
	for (unsigned i = 0; i < over; i++) {
		job_lat_io(&s->job, (TARGET_US + 50) * 1000);
	}
	s->now += WINDOW_NS;
	job_lat_check(&s->job, s->now);
	return qd;
}

/* Runs windows until the search is done (or max windows), at 5% over the
 * target above the knee and none at or below it; the depths it ran at go
 * into seen[]. Returns the number of windows. */
static size_t run_knee(struct search *s, unsigned knee, unsigned *seen, size_t max)
{
	size_t n = 0;

	while (!s->job.lat.is_done && n < max) {
		unsigned qd = job_lat_depth(&s->job);

		seen[n++] = window(s, qd > knee ? 50 : 0);
	}
	return n;
}

static void assert_depths(const unsigned *seen, size_t n, const unsigned *want, size_t n_want)
{
	assert_int_equal(n, n_want);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(seen[i], want[i]);
	}
}

static void test_doubles_then_bisects_to_the_knee(void **state)
{
	struct search *s = search_new(64, 99);
	unsigned seen[64];
	/* 16 and 12 fail, 10 and 11 meet it, 11 twice: the last window */
	const unsigned want[] = {1, 2, 4, 8, 16, 12, 10, 11, 11};
	size_t n = run_knee(s, 11, seen, 64);

	assert_depths(seen, n, want, sizeof(want) / sizeof(want[0]));
	assert_true(s->job.lat.is_done);
	assert_int_equal(s->job.lat.qd, 11);
	assert_int_equal(s->job.error, 0);
	free(s);
}

static void test_a_device_that_always_meets_it_ends_at_iodepth(void **state)
{
	struct search *s = search_new(64, 99);
	unsigned seen[64];
	const unsigned want[] = {1, 2, 4, 8, 16, 32, 64, 64};
	size_t n = run_knee(s, 1000, seen, 64);

	assert_depths(seen, n, want, sizeof(want) / sizeof(want[0]));
	assert_int_equal(s->job.lat.qd, 64);
	free(s);
}

/* The last window's figures only are reported: the counters start again
 * when it begins, and the run's lat_measure_ns says when. */
static void test_the_last_window_starts_the_figures_again(void **state)
{
	struct search *s = search_new(8, 99);

	for (unsigned i = 0; i < 3; i++) { /* 1, 2, 4 */
		window(s, 0);
	}
	assert_false(s->job.lat.is_end_run);
	assert_int_equal(window(s, 0), 8); /* 8, then 8 again: the last window begins */
	assert_true(s->job.lat.is_end_run);
	assert_false(s->job.lat.is_done);
	assert_int_equal(s->job.op[PROBE_OP_READ].ops, 0);
	assert_int_equal(s->run.lat_measure_ns, s->now);
	window(s, 0);
	assert_true(s->job.lat.is_done);
	assert_int_equal(s->job.op[PROBE_OP_READ].ops, 1000);
	free(s);
}

/* A last window that fails (a noisy machine) backs down one and ends
 * there: the search still ends the run. */
static void test_a_failed_last_window_backs_down_and_ends(void **state)
{
	struct search *s = search_new(64, 99);
	unsigned seen[64];
	size_t n = run_knee(s, 11, seen, 8); /* up to the last window at 11 */

	assert_int_equal(n, 8);
	assert_true(s->job.lat.is_end_run);
	assert_int_equal(window(s, 50), 11); /* it fails */
	assert_false(s->job.lat.is_done);
	assert_int_equal(window(s, 0), 10);
	assert_true(s->job.lat.is_done);
	assert_int_equal(s->job.lat.qd, 10);
	free(s);
}

/* Short of the percentile at depth 1, the search stays at 1 (fio's) and
 * runs on; one I/O over the target at latency_percentile=100 fails the
 * job with ETIMEDOUT, as fio's "max latency exceeded". */
static void test_depth_one_short_of_the_percentile(void **state)
{
	struct search *s = search_new(64, 99);

	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(window(s, 50), 1);
	}
	assert_false(s->job.lat.is_done);
	assert_int_equal(window(s, 0), 1); /* then it meets it: 2 next */
	assert_int_equal(job_lat_depth(&s->job), 2);
	free(s);

	s = search_new(64, 100);
	window(s, 1);
	assert_true(s->job.lat.is_done);
	assert_int_equal(s->job.error, -ETIMEDOUT);
	assert_non_null(strstr(s->job.message, "not met even at queue depth 1"));
	free(s);
}

/* latency_run=1: the search keeps adjusting, it never ends the run. */
static void test_latency_run_never_ends(void **state)
{
	struct search *s = search_new(64, 99);
	unsigned seen[64];

	s->run.layout_pc.wl.is_latency_run = true;
	assert_int_equal(run_knee(s, 11, seen, 40), 40);
	assert_false(s->job.lat.is_done);
	assert_false(s->job.lat.is_end_run);
	free(s);
}

/* No latency_target: the job runs at its iodepth throughout. */
static void test_no_target_runs_at_iodepth(void **state)
{
	struct search *s = search_new(16, 0);

	s->run.layout_pc.wl.latency_target_usec = 0;
	job_lat_init(&s->job, s->now);
	assert_int_equal(job_lat_depth(&s->job), 16);
	window(s, 0);
	assert_int_equal(job_lat_depth(&s->job), 16);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_doubles_then_bisects_to_the_knee),
	    cmocka_unit_test(test_a_device_that_always_meets_it_ends_at_iodepth),
	    cmocka_unit_test(test_the_last_window_starts_the_figures_again),
	    cmocka_unit_test(test_a_failed_last_window_backs_down_and_ends),
	    cmocka_unit_test(test_depth_one_short_of_the_percentile),
	    cmocka_unit_test(test_latency_run_never_ends),
	    cmocka_unit_test(test_no_target_runs_at_iodepth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
