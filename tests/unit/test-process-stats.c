/* The process_* figures the daemon reads from /proc/self: its stat line
 * (whatever the command name holds) and the boot time of /proc/stat. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "process_stats.h"

static void test_process_stat_parses_odd_command_names(void **state)
{
	static const char stat[] =
	    "4242 (io (psd) x) S 1 4242 4242 0 -1 4194560 1200 0 0 0 150 75 0 0 20 0 5 0 "
	    "123456 314572800 3072 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0\n";
	struct process_stats ps = {0};
	uint64_t start;

	assert_int_equal(process_stats_parse_stat(stat, 100, 4096, &ps, &start), 0);
	assert_true(ps.cpu_seconds == 2.25);
	assert_int_equal(ps.virtual_memory_bytes, 314572800);
	assert_int_equal(ps.resident_memory_bytes, 3072 * 4096);
	assert_int_equal(start, 123456);
	assert_int_equal(process_stats_parse_stat("4242 (x) S 1 2", 100, 4096, &ps, NULL), -EINVAL);
	assert_int_equal(process_stats_parse_stat("garbage", 100, 4096, &ps, NULL), -EINVAL);
}

static void test_btime_is_found_in_proc_stat(void **state)
{
	uint64_t btime = 0;

	assert_int_equal(
	    process_stats_parse_btime("cpu  1 2 3\nintr 5\nbtime 1699990000\nprocesses 9\n", &btime), 0);
	assert_int_equal(btime, 1699990000);
	assert_int_equal(process_stats_parse_btime("cpu 1\n", &btime), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_process_stat_parses_odd_command_names),
	    cmocka_unit_test(test_btime_is_found_in_proc_stat),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
