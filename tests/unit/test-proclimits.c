/* The probes' threads against TasksMax: pids.max found through
 * /proc/self/cgroup in cgroup v1's pids hierarchy, a joint one, or v2's
 * (fixtures in tests/fixtures/cgroup), and the sum that passes it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "config-helpers.h"
#include "proclimits.h"

#define CG FIXTURES_DIR "/cgroup"

/* 16 for the daemon, then 1 + 2 * (1 + numjobs) a probe: 27, 38, 49 */
static const char three_probes[] = "[global]\nrw=randread\ndirectory=/var/tmp\nnumjobs=4\n"
				   "[a]\n[b]\n[c]\n";

static void test_pids_max_is_read_from_the_processs_cgroup(void **state)
{
	assert_int_equal(limits_read_pids_max(CG "/v1/cgroup", CG "/v1/sys"), 256);
	assert_int_equal(limits_read_pids_max(CG "/v2/cgroup", CG "/v2/sys"), 40);
	assert_int_equal(limits_read_pids_max(CG "/joint/cgroup", CG "/joint/sys"), 77);
	assert_int_equal(limits_read_pids_max(CG "/unlimited/cgroup", CG "/unlimited/sys"), 0);
	/* no such cgroup file, or no pids.max where it points: no limit */
	assert_int_equal(limits_read_pids_max(CG "/none", CG "/v1/sys"), 0);
	assert_int_equal(limits_read_pids_max(CG "/v1/cgroup", CG "/v2/sys"), 0);
}

static void test_pids_max_path_prefers_the_v1_pids_hierarchy(void **state)
{
	char *p;

	p = limits_pids_max_path("8:pids:/a/b\n0::/c\n", "/R");
	assert_string_equal(p, "/R/pids/a/b/pids.max");
	free(p);
	p = limits_pids_max_path("0::/c\n8:cpu,pids:/a\n", "/R");
	assert_string_equal(p, "/R/cpu,pids/a/pids.max");
	free(p);
	p = limits_pids_max_path("1:name=systemd:/x\n0::/c", "/R");
	assert_string_equal(p, "/R/c/pids.max");
	free(p);
	/* "pidsx" is not pids, and no v2 line: nothing */
	assert_null(limits_pids_max_path("3:pidsx:/a\n", "/R"));
	assert_null(limits_pids_max_path("", "/R"));
}

static void test_pids_max_text(void **state)
{
	assert_int_equal(limits_parse_pids_max("256\n"), 256);
	assert_int_equal(limits_parse_pids_max("40"), 40);
	assert_int_equal(limits_parse_pids_max("max\n"), 0);
	assert_int_equal(limits_parse_pids_max("12x\n"), 0);
	assert_int_equal(limits_parse_pids_max(""), 0);
}

static void test_numjobs_beyond_tasksmax_is_refused(void **state)
{
	struct config *cfg = config_test_load_ok(three_probes);

	assert_int_equal(limits_check_against(cfg, 0, 49), 0);
	assert_int_equal(limits_check_against(cfg, 0, 48), -EINVAL);
	assert_int_equal(limits_check_against(cfg, 0, 0), 0);
	/* the v2 fixture's TasksMax=40: the third probe is one too many */
	assert_int_equal(limits_check_against(cfg, 0, limits_read_pids_max(CG "/v2/cgroup", CG "/v2/sys")),
			 -EINVAL);
	assert_int_equal(limits_check_against(cfg, 0, limits_read_pids_max(CG "/v1/cgroup", CG "/v1/sys")),
			 0);
	config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pids_max_is_read_from_the_processs_cgroup),
	    cmocka_unit_test(test_pids_max_path_prefers_the_v1_pids_hierarchy),
	    cmocka_unit_test(test_pids_max_text),
	    cmocka_unit_test(test_numjobs_beyond_tasksmax_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
