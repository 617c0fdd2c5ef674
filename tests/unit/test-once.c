/* --once: one JSON document of every probe's result, and the exit status. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "config.h"
#include "once.h"
#include "once_disks.h"

static json_t *run_once(const char *conf, int *ret_status)
{
	struct config_errors errs = {0};
	struct config *cfg = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	/* no procfs: a report without disks */
	struct once_output o = {ONCE_OUTPUT_JSON, NULL, FIXTURES_DIR "/none", FIXTURES_DIR "/none"};
	json_t *doc;

	assert_non_null(f);
	assert_int_equal(config_load_string("once.conf", conf, &errs, &cfg), 0);
	*ret_status = once_run(cfg, &o, f);
	fclose(f);
	config_free(cfg);
	doc = json_loads(buf, 0, NULL);
	assert_non_null(doc);
	free(buf);
	return doc;
}

static void test_once_prints_one_document_and_fails_on_any_failure(void **state)
{
	json_t *doc, *jobs, *job;
	int status = -1;

	/* one probe that cannot run: the document still comes, exit 1 */
	doc = run_once("[missing]\n"
		       "directory=/nonexistent-iopsd-unit-test\n"
		       "rw=randread\n"
		       "number_ios=1\n",
		       &status);
	assert_int_equal(status, 1);
	jobs = json_object_get(doc, "jobs");
	assert_int_equal(json_array_size(jobs), 1);
	job = json_array_get(jobs, 0);
	assert_string_equal(json_string_value(json_object_get(job, "jobname")), "missing");
	assert_string_equal(json_string_value(json_object_get(job, "target")),
			    "/nonexistent-iopsd-unit-test");
	assert_true(json_is_false(json_object_get(job, "success")));
	assert_int_equal(json_integer_value(json_object_get(job, "error")), ENOENT);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(job, "errors"), "enoent")), 1);
	assert_non_null(strstr(json_string_value(json_object_get(job, "message")), "cannot open directory"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(job, "job options"), "rw")),
			    "randread");
	assert_non_null(json_object_get(doc, "timestamp"));
	json_decref(doc);

	/* no probes: an empty list, success */
	doc = run_once("[global]\nlisten_address=127.0.0.1:9\n", &status);
	assert_int_equal(status, 0);
	assert_int_equal(json_array_size(json_object_get(doc, "jobs")), 0);
	json_decref(doc);
}

/* The disk stats' window ends where fio's does: at the last 250-ms tick
 * taken by the I/O's end, never at a tick of the teardown after it. */
static void test_once_disks_window_ends_at_the_last_tick_of_the_io(void **state)
{
	/* a ring, oldest not first: ticks at 10.00 .. 10.75 s */
	const uint64_t ticks[] = {10500000, 10750000, 10000000, 10250000};

	(void)state;
	assert_int_equal(once_disks_pick(ticks, 4, 10600000), 0);
	assert_int_equal(once_disks_pick(ticks, 4, 10500000), 0); /* a tick at the end itself */
	assert_int_equal(once_disks_pick(ticks, 4, 20000000), 1); /* all ticks in the I/O */
	assert_int_equal(once_disks_pick(ticks, 4, 10100000), 2);
	/* ended before any tick kept, or never started: the caller samples now */
	assert_int_equal(once_disks_pick(ticks, 4, 9000000), SIZE_MAX);
	assert_int_equal(once_disks_pick(ticks, 4, 0), SIZE_MAX);
	assert_int_equal(once_disks_pick(ticks, 0, 10600000), SIZE_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_once_prints_one_document_and_fails_on_any_failure),
	    cmocka_unit_test(test_once_disks_window_ends_at_the_last_tick_of_the_io),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
