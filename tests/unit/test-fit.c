/* Fitting a fio job to the probe schedule (config_fit_schedule): budget
 * keys that would make a run longer than its interval are fitted, one
 * notice each, and a run that fits is left as it is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "config-helpers.h"
#include "config.h"
#include "fit.h"

static void test_budget_keys_are_fitted_with_one_notice_each(void **state)
{
	struct config *c = config_test_load_ok("[global]\ndirectory=/data\n"
					       "[long]\nruntime=180\nramp_time=15\ntime_based\n"
					       "[loops]\nloops=5\n"
					       "[count]\nnumber_ios=1000\n"
					       "[late]\nstartdelay=30\nruntime=2s\n"
					       "[fits]\nruntime=2s\nramp_time=1s\n");
	const struct config_error *n;

	/* loaded, nothing is fitted: --once runs the job as written */
	assert_int_equal(c->probes[0].runtime_usec, 180000000);
	assert_int_equal(c->probes[1].loops, 5);
	assert_int_equal(config_fit_schedule(c), 0);

	n = config_test_find_notice(c, "[long]: runtime=180s fitted to 1s per run every 10s");
	assert_non_null(n);
	assert_int_equal(n->line, 4);
	n = config_test_find_notice(
	    c, "[long]: ramp_time=15s fitted to none: a 1s run every 10s is measured whole");
	assert_non_null(n);
	assert_int_equal(n->line, 5);
	assert_int_equal(c->probes[0].runtime_usec, 1000000);
	assert_int_equal(c->probes[0].ramp_usec, 0);

	assert_non_null(config_test_find_notice(c, "[loops]: loops=5 fitted to 1s per run every 10s"));
	assert_int_equal(c->probes[1].loops, 1);
	assert_true(c->probes[1].time_based);

	assert_non_null(config_test_find_notice(
	    c, "[count]: number_ios=1000 fitted: a run stops after 1000 I/Os per job or 1s, every 10s"));
	assert_int_equal(c->probes[2].runtime_usec, 1000000);

	assert_non_null(config_test_find_notice(c, "[late]: startdelay=30s fitted to the schedule"));
	assert_int_equal(c->probes[3].startdelay_usec, 0);
	assert_int_equal(c->probes[3].runtime_usec, 2000000);

	/* a run that fits its interval is left as it is, without a notice */
	assert_int_equal(c->probes[4].runtime_usec, 2000000);
	assert_int_equal(c->probes[4].ramp_usec, 1000000);
	assert_null(config_test_find_notice(c, "[fits]"));
	config_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_budget_keys_are_fitted_with_one_notice_each),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
