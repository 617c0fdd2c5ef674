/* /proc/pressure/io (PSI): the totals parsed, and a kernel without PSI is
 * not an error. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "pressure.h"

static void test_pressure_totals_are_parsed(void **state)
{
	struct pressure_io p;

	assert_int_equal(pressure_parse("some avg10=1.52 avg60=0.88 avg300=0.31 total=123456789\n"
					"full avg10=1.10 avg60=0.61 avg300=0.20 total=98765432\n",
					&p),
			 0);
	assert_true(p.available);
	assert_int_equal(p.some_total_usec, 123456789);
	assert_int_equal(p.full_total_usec, 98765432);

	assert_int_equal(pressure_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", &p), 0);
	assert_int_equal(p.some_total_usec, 5);
	assert_int_equal(p.full_total_usec, 0);

	assert_int_equal(pressure_parse("", &p), -EINVAL);
	assert_int_equal(pressure_parse("some avg10=0.00 total=x\n", &p), -EINVAL);
}

static void test_absent_psi_is_not_an_error(void **state)
{
	struct pressure_io p = {.available = true};
	char proc[1024];
	int fd = -1;

	snprintf(proc, sizeof(proc), "%s/sampler/kernel-4.14/proc", FIXTURES_DIR);
	assert_int_equal(pressure_read(proc, &fd, &p), 0);
	assert_false(p.available);
	assert_int_equal(fd, -1);

	snprintf(proc, sizeof(proc), "%s/sampler/ec2-md-raid0/proc", FIXTURES_DIR);
	assert_int_equal(pressure_read(proc, &fd, &p), 0);
	assert_true(p.available);
	assert_int_equal(p.some_total_usec, 123456789);
	assert_true(fd >= 0);
	/* the kept fd reads again from the start */
	assert_int_equal(pressure_read(proc, &fd, &p), 0);
	assert_int_equal(p.full_total_usec, 98765432);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pressure_totals_are_parsed),
	    cmocka_unit_test(test_absent_psi_is_not_an_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
