/* volume_size: a [device] section's volume size from a sysfs fixture tree
 * (tests/fixtures/sampler/ec2-md-raid0: xvda of 8 GiB holding xvda1). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "volume_size.h"

#define SYSFS FIXTURES_DIR "/sampler/ec2-md-raid0/sys"

static void test_a_kernel_name_is_a_whole_disk(void **state)
{
	uint64_t bytes = 0;

	(void)state;
	assert_int_equal(volume_size_bytes(SYSFS, "xvda", &bytes), 0);
	assert_int_equal(bytes, 16777216ULL * 512);
	assert_int_equal(volume_size_bytes(SYSFS, "md0", &bytes), 0);
	assert_int_equal(bytes, 419168256ULL * 512);
	/* a partition's name, or none such, has no volume size */
	bytes = 1;
	assert_int_equal(volume_size_bytes(SYSFS, "xvda1", &bytes), -ENOENT);
	assert_int_equal(volume_size_bytes(SYSFS, "xvdz", &bytes), -ENOENT);
	assert_int_equal(volume_size_bytes(SYSFS, "cciss/c0d0", &bytes), -EINVAL);
	assert_int_equal(bytes, 1);
}

/* A path's device number: a partition counts as its disk (xvda1 is
 * 16775168 sectors, xvda 16777216). */
static void test_a_device_number_of_a_partition_is_its_disk(void **state)
{
	uint64_t bytes = 0;

	(void)state;
	assert_int_equal(volume_size_bytes_devnum(SYSFS, 202, 1, &bytes), 0);
	assert_int_equal(bytes, 16777216ULL * 512);
	assert_int_equal(volume_size_bytes_devnum(SYSFS, 202, 0, &bytes), 0);
	assert_int_equal(bytes, 16777216ULL * 512);
	/* anonymous (tmpfs, btrfs) and unknown device numbers */
	assert_int_equal(volume_size_bytes_devnum(SYSFS, 0, 21, &bytes), -ENOENT);
	assert_int_equal(volume_size_bytes_devnum(SYSFS, 202, 77, &bytes), -ENOENT);
	assert_int_equal(volume_size_bytes(SYSFS, "/nonexistent/iopsd", &bytes), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_kernel_name_is_a_whole_disk),
	    cmocka_unit_test(test_a_device_number_of_a_partition_is_its_disk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
