/* The instance type from SMBIOS (sysfs fixtures in fixtures/dmi). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dmi.h"

static void test_ec2_vendor_and_instance_type(void **state)
{
	struct dmi_info d;

	assert_int_equal(dmi_read(FIXTURES_DIR "/dmi/ec2/sys", &d), 0);
	assert_string_equal(d.vendor, "Amazon EC2");
	assert_string_equal(d.product, "m5.large");
}

static void test_no_dmi_is_empty_not_an_error(void **state)
{
	struct dmi_info d;

	memset(&d, 'x', sizeof(d));
	assert_int_equal(dmi_read(FIXTURES_DIR "/dmi/none/sys", &d), 0);
	assert_string_equal(d.vendor, "");
	assert_string_equal(d.product, "");
}

static void test_firmware_strings_are_trimmed_and_made_printable(void **state)
{
	struct dmi_info d;
	char s[] = "\t a\x01"
		   "b\x7f ";

	assert_int_equal(dmi_read(FIXTURES_DIR "/dmi/odd/sys", &d), 0);
	assert_string_equal(d.vendor, "QEMU");
	assert_string_equal(d.product, "Standard PC (i440FX + PIIX, 1996)?");
	dmi_clean(s);
	assert_string_equal(s, "a?b?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ec2_vendor_and_instance_type),
	    cmocka_unit_test(test_no_dmi_is_empty_not_an_error),
	    cmocka_unit_test(test_firmware_strings_are_trimmed_and_made_printable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
