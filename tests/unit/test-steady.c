/* fio's steady state: a window of per-second figures against the limit,
 * as mean deviation or slope, absolute or in percent of the mean. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fio.h"
#include "steady.h"

static struct steady setup(const char *ss, const char *dur)
{
	struct probe_workload wl = {0};
	struct steady s;
	char err[256];

	assert_int_equal(fio_parse_workload("steadystate", "ss", ss, &wl, err, sizeof(err)), 0);
	assert_int_equal(fio_parse_workload("steadystate_duration", "ss_dur", dur, &wl, err, sizeof(err)), 0);
	steady_init(&s, &wl);
	assert_true(s.is_enabled);
	return s;
}

static void test_mean_deviation_in_percent(void **state)
{
	struct steady s = setup("iops:10%", "3");

	/* not before the window is full */
	assert_false(steady_add(&s, 1000, 0));
	assert_false(steady_add(&s, 2000, 0));
	assert_false(steady_add(&s, 1000, 0)); /* mean 1333, off by 667: 50% */
	assert_true(fabs(s.criterion - 50.0) < 0.01);
	assert_false(steady_add(&s, 1050, 0)); /* 2000, 1000, 1050 */
	assert_true(steady_add(&s, 1000, 0));  /* 1000, 1050, 1000: 3.3% */
	assert_true(fabs(s.criterion - 100.0 * (1050 - 3050.0 / 3) / (3050.0 / 3)) < 1e-9);
}

static void test_slope_absolute(void **state)
{
	struct steady s = setup("bw_slope:5", "4s");
	uint64_t v[] = {100, 110, 120, 130};

	for (size_t i = 0; i < 4; i++) {
		steady_add(&s, 0, v[i]);
	}
	assert_true(fabs(s.slope - 10.0) < 1e-9); /* 10 a second: above 5 */
	assert_false(s.is_attained);
	for (size_t i = 0; i < 4; i++) {
		steady_add(&s, 0, 130 + i); /* 1 a second */
	}
	assert_true(s.is_attained);
	assert_int_equal(steady_value(&s, false, 0), 130);
	assert_int_equal(steady_value(&s, false, 3), 133);
}

static void test_parse_refuses_what_fio_refuses(void **state)
{
	struct probe_workload wl = {0};
	char err[256];

	assert_int_equal(fio_parse_workload("steadystate", "ss", "latency:5%", &wl, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "iops:LIMIT"));
	assert_int_equal(fio_parse_workload("steadystate", "ss", "iops:x", &wl, err, sizeof(err)), -EINVAL);
	assert_int_equal(fio_parse_workload("steadystate_duration", "ss_dur", "301", &wl, err, sizeof(err)),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mean_deviation_in_percent),
	    cmocka_unit_test(test_slope_absolute),
	    cmocka_unit_test(test_parse_refuses_what_fio_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
