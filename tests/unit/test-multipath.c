/* NVMe native multipath: hidden paths folded into their head, whichever
 * node the kernel counts on (the lab's 6.1 guest: all on one path). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "multipath.h"

static void test_head_of_a_hidden_path(void **state)
{
	char head[DISKSTATS_NAME_MAX];

	assert_true(multipath_head_of("nvme2c1n1", head, sizeof(head)));
	assert_string_equal(head, "nvme2n1");
	assert_true(multipath_head_of("nvme12c3n10", head, sizeof(head)));
	assert_string_equal(head, "nvme12n10");
	assert_false(multipath_head_of("nvme2n1", head, sizeof(head)));
	assert_false(multipath_head_of("nvme2n1p1", head, sizeof(head)));
	assert_false(multipath_head_of("nvme2c1n1p1", head, sizeof(head)));
	assert_false(multipath_head_of("nvmec1n1", head, sizeof(head)));
	assert_false(multipath_head_of("nvme2c1n", head, sizeof(head)));
	assert_false(multipath_head_of("vdb", head, sizeof(head)));
	assert_false(multipath_head_of("nvme2c1n1", head, 5));
}

static struct diskstats_raw entry(const char *name, uint64_t reads, uint64_t sectors, uint64_t io_ms,
				  uint64_t in_flight)
{
	struct diskstats_raw e = {.major = 259,
				  .reads = reads,
				  .read_sectors = sectors,
				  .read_ms = reads * 20,
				  .io_ms = io_ms,
				  .weighted_ms = reads * 20,
				  .in_flight = in_flight,
				  .n_fields = 20};

	strcpy(e.name, name);
	return e;
}

static void test_counted_on_one_path_goes_to_the_head(void **state)
{
	/* the lab's guest after fio on /dev/nvme2n1: 16131 reads on nvme2c2n1 */
	struct diskstats_raw e[] = {
	    entry("nvme2c2n1", 16131, 130984, 20052, 16),
	    entry("nvme2n1", 0, 0, 0, 0),
	    entry("nvme2c1n1", 0, 0, 0, 0),
	    entry("nvme0n1", 30189, 10433696, 39540, 0),
	};
	size_t n = multipath_fold(e, 4);

	assert_int_equal(n, 2);
	assert_string_equal(e[0].name, "nvme2n1");
	assert_int_equal(e[0].reads, 16131);
	assert_int_equal(e[0].read_sectors, 130984);
	assert_int_equal(e[0].io_ms, 20052);
	assert_int_equal(e[0].in_flight, 16);
	assert_string_equal(e[1].name, "nvme0n1");
	assert_int_equal(e[1].reads, 30189);
}

static void test_counted_on_head_and_paths_is_counted_once(void **state)
{
	/* a kernel that accounts on the head too: 100 reads, 60 + 40 on the paths */
	struct diskstats_raw e[] = {
	    entry("nvme1n1", 100, 800, 900, 8),
	    entry("nvme1c0n1", 60, 480, 700, 5),
	    entry("nvme1c1n1", 40, 320, 600, 3),
	};
	size_t n = multipath_fold(e, 3);

	assert_int_equal(n, 1);
	assert_int_equal(e[0].reads, 100);
	assert_int_equal(e[0].read_sectors, 800);
	assert_int_equal(e[0].io_ms, 900);
	assert_int_equal(e[0].in_flight, 8);
}

static void test_two_busy_paths_are_one_busy_device(void **state)
{
	/* round-robin over both paths: reads add up, busy time does not */
	struct diskstats_raw e[] = {
	    entry("nvme1n1", 0, 0, 0, 0),
	    entry("nvme1c0n1", 500, 4000, 1000, 8),
	    entry("nvme1c1n1", 500, 4000, 990, 8),
	};
	size_t n = multipath_fold(e, 3);

	assert_int_equal(n, 1);
	assert_int_equal(e[0].reads, 1000);
	assert_int_equal(e[0].read_ms, 20000);
	assert_int_equal(e[0].weighted_ms, 20000);
	assert_int_equal(e[0].in_flight, 16);
	assert_int_equal(e[0].io_ms, 1000);
}

static void test_no_paths_leaves_the_list_alone(void **state)
{
	struct diskstats_raw e[] = {entry("nvme0n1", 5, 40, 3, 0), entry("vda", 7, 56, 4, 0)};
	struct diskstats_raw before[2];

	memcpy(before, e, sizeof(e));
	assert_int_equal(multipath_fold(e, 2), 2);
	assert_memory_equal(e, before, sizeof(e));
	assert_int_equal(multipath_fold(e, 0), 0);
}

static void test_a_path_without_its_head_stays(void **state)
{
	struct diskstats_raw e[] = {entry("nvme3c0n1", 9, 72, 5, 0), entry("vda", 7, 56, 4, 0)};

	assert_int_equal(multipath_fold(e, 2), 2);
	assert_string_equal(e[0].name, "nvme3c0n1");
	assert_int_equal(e[0].reads, 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_head_of_a_hidden_path),
	    cmocka_unit_test(test_counted_on_one_path_goes_to_the_head),
	    cmocka_unit_test(test_counted_on_head_and_paths_is_counted_once),
	    cmocka_unit_test(test_two_busy_paths_are_one_busy_device),
	    cmocka_unit_test(test_no_paths_leaves_the_list_alone),
	    cmocka_unit_test(test_a_path_without_its_head_stays),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
