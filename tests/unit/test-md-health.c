/* md_health: a member's state and the array's degraded count, as sysfs
 * spells them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "md_health.h"

static void test_member_state_is_faulty_only_with_the_faulty_flag(void **state)
{
	(void)state;
	assert_true(md_member_state_is_faulty("faulty"));
	assert_true(md_member_state_is_faulty("faulty,write_mostly"));
	assert_true(md_member_state_is_faulty("write_mostly,faulty\n"));
	assert_false(md_member_state_is_faulty("in_sync"));
	assert_false(md_member_state_is_faulty("spare"));
	assert_false(md_member_state_is_faulty("faultyish"));
	assert_false(md_member_state_is_faulty(""));
	assert_false(md_member_state_is_faulty(NULL));
}

static void test_degraded_count_from_md_or_from_the_faulty_members(void **state)
{
	(void)state;
	/* a mirror says it: md/degraded */
	assert_int_equal(md_health_degraded("clean", "1", 1), 1);
	assert_int_equal(md_health_degraded("clean", "1", 0), 1); /* failed and removed */
	assert_int_equal(md_health_degraded("active", "0", 0), 0);
	/* RAID0 has no md/degraded: the faulty members, or one when broken */
	assert_int_equal(md_health_degraded("clean", NULL, 0), 0);
	assert_int_equal(md_health_degraded("clean", NULL, 2), 2);
	assert_int_equal(md_health_degraded("broken", NULL, 0), 1);
	assert_int_equal(md_health_degraded("broken", NULL, 2), 2);
	/* garbage in md/degraded is not a number: the members decide */
	assert_int_equal(md_health_degraded("clean", "x", 1), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_member_state_is_faulty_only_with_the_faulty_flag),
	    cmocka_unit_test(test_degraded_count_from_md_or_from_the_faulty_members),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
