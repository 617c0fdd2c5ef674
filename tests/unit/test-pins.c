/* The probe directories' filesystem pins in the state directory: the file's
 * text for one boot, another boot's pins dropped, and a store that a second
 * start on the same boot reads back. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cmocka.h>

#include "pins.h"

static void test_pins_text_round_trips(void **state)
{
	const struct pin in[] = {
	    {.name = "data", .directory = "/srv/data", .dev = makedev(259, 3)},
	    {.name = "x.1", .directory = "/mnt/with space/p", .dev = makedev(0, 52)},
	};
	struct pin *out = NULL;
	size_t n = 0;
	char *text = pins_format(in, 2, "boot-a");

	assert_non_null(text);
	assert_int_equal(pins_parse(text, "boot-a", &out, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].name, "data");
	assert_string_equal(out[0].directory, "/srv/data");
	assert_true(out[0].dev == makedev(259, 3));
	assert_string_equal(out[1].name, "x.1");
	assert_string_equal(out[1].directory, "/mnt/with space/p");
	assert_true(out[1].dev == makedev(0, 52));
	pins_free(out, n);
	free(text);
}

static void test_pins_of_another_boot_are_dropped(void **state)
{
	struct pin *out = NULL;
	size_t n = 0;

	assert_int_equal(pins_parse("boot boot-a\npin 8:1 a /a\npin 8:2 b /b\n", "boot-b", &out, &n),
			 -ESTALE);
	assert_int_equal(n, 2);
	assert_null(out);
	/* not a pins file; lines that are not pins are skipped */
	assert_int_equal(pins_parse("pin 8:1 a /a\n", "boot-a", &out, &n), -EINVAL);
	assert_int_equal(pins_parse("boot x\npin 8:1 a relative\npin 8 a /a\npin 8:1 a /a", "x", &out, &n),
			 0);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].directory, "/a");
	pins_free(out, n);
}

static void test_a_restart_on_the_same_boot_keeps_the_pins(void **state)
{
	char dir[] = "/tmp/iopsd-test-pins-XXXXXX", path[64];
	struct pin_store *ps = NULL;
	size_t dropped = 1;
	dev_t dev = 0;
	struct stat st;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(pin_store_new(dir, &ps, &dropped), 0);
	assert_int_equal(dropped, 0);
	assert_false(pin_store_get(ps, "a", "/a", &dev));
	assert_int_equal(pin_store_set(ps, "a", "/a", makedev(8, 1)), 0);
	assert_int_equal(pin_store_set(ps, "b", "/b", makedev(0, 40)), 0);
	assert_int_equal(pin_store_set(ps, "a", "/a", makedev(8, 2)), 0);
	ps = pin_store_free(ps);

	/* the next start reads them back; nothing is left beside the file */
	assert_int_equal(pin_store_new(dir, &ps, &dropped), 0);
	assert_true(pin_store_get(ps, "a", "/a", &dev));
	assert_true(dev == makedev(8, 2));
	assert_true(pin_store_get(ps, "b", "/b", &dev));
	assert_true(dev == makedev(0, 40));
	/* a probe's pin is its directory's: another directory has none */
	assert_false(pin_store_get(ps, "a", "/elsewhere", &dev));
	ps = pin_store_free(ps);
	snprintf(path, sizeof(path), "%s/.pins.tmp", dir);
	assert_int_equal(stat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/pins", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pins_text_round_trips),
	    cmocka_unit_test(test_pins_of_another_boot_are_dropped),
	    cmocka_unit_test(test_a_restart_on_the_same_boot_keeps_the_pins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
