/* utf8: the one UTF-8 policy of the renderers. Valid text passes byte for
 * byte; each byte that is not part of a valid sequence becomes U+FFFD. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "macro.h"
#include "utf8.h"

#define R UTF8_REPLACEMENT

static void assert_repaired(const char *in, const char *expected)
{
	_cleanup_free_ char *out = utf8_make_valid(in);

	assert_non_null(out);
	assert_string_equal(out, expected);
	assert_true(utf8_is_valid(out));
}

static void test_valid_utf8_passes_unchanged(void **state)
{
	static const char *const valid[] = {
	    "",
	    "/var/lib/mysql",
	    "/mnt/d\xc3\xa4ten",		 /* U+00E4, 2 bytes */
	    "\xe2\x82\xac",			 /* U+20AC, 3 bytes */
	    "\xf0\x9f\x92\xbe",			 /* U+1F4BE, 4 bytes */
	    "\xc2\x80 \xdf\xbf",		 /* the ends of the 2-byte range */
	    "\xe0\xa0\x80 \xef\xbf\xbf",	 /* the ends of the 3-byte range */
	    "\xed\x9f\xbf \xee\x80\x80",	 /* U+D7FF and U+E000 around the surrogates */
	    "\xf0\x90\x80\x80 \xf4\x8f\xbf\xbf", /* U+10000 and U+10FFFF */
	    "\x7f\x01",
	};

	for (size_t i = 0; i < ELEMENTSOF(valid); i++) {
		assert_true(utf8_is_valid(valid[i]));
		assert_repaired(valid[i], valid[i]);
	}
	assert_int_equal(utf8_sequence_length("a"), 1);
	assert_int_equal(utf8_sequence_length("\xc3\xa4"), 2);
	assert_int_equal(utf8_sequence_length("\xe2\x82\xac"), 3);
	assert_int_equal(utf8_sequence_length("\xf0\x9f\x92\xbe"), 4);
}

static void test_overlong_forms_are_replaced_byte_by_byte(void **state)
{
	assert_false(utf8_is_valid("\xc0\xaf"));
	assert_int_equal(utf8_sequence_length("\xc0\xaf"), 0);
	assert_repaired("a\xc0\xafz", "a" R R "z");   /* '/' in two bytes */
	assert_repaired("\xc1\xbf", R R);	      /* U+007F in two bytes */
	assert_repaired("\xe0\x80\xaf", R R R);	      /* '/' in three bytes */
	assert_repaired("\xe0\x9f\xbf", R R R);	      /* U+07FF in three bytes */
	assert_repaired("\xf0\x80\x80\xaf", R R R R); /* '/' in four bytes */
	assert_repaired("\xf0\x8f\xbf\xbf", R R R R); /* U+FFFF in four bytes */
}

static void test_surrogates_and_values_past_u10ffff_are_replaced(void **state)
{
	assert_false(utf8_is_valid("\xed\xa0\x80"));
	assert_repaired("\xed\xa0\x80", R R R);			  /* U+D800 */
	assert_repaired("x\xed\xbf\xbfy", "x" R R R "y");	  /* U+DFFF */
	assert_repaired("\xed\xa0\xbd\xed\xb2\xbe", R R R R R R); /* a CESU-8 pair */
	assert_repaired("\xf4\x90\x80\x80", R R R R);		  /* U+110000 */
	assert_repaired("\xf5\x80\x80\x80", R R R R);
	assert_repaired("\xf8\x88\x80\x80\x80", R R R R R); /* old 5-byte form */
	assert_repaired("\xfe\xff", R R);
}

static void test_truncated_sequences_and_stray_bytes_are_replaced(void **state)
{
	/* a sequence cut by the end of the string reads no further */
	assert_int_equal(utf8_sequence_length("\xe2\x82"), 0);
	assert_repaired("ab\xc3", "ab" R);
	assert_repaired("\xe2\x82", R R);
	assert_repaired("\xf0\x9f\x92", R R R);
	/* cut by the next character: that character survives */
	assert_repaired("\xe2\x82"
			"a\xf0\x9f"
			"\xc3\xa4",
			R R "a" R R "\xc3\xa4");
	/* continuation bytes with no lead */
	assert_repaired("\x80", R);
	assert_repaired("\xc3\xa4\xa4", "\xc3\xa4" R);
	assert_repaired("x\xff", "x" R);
	assert_false(utf8_is_valid("ok\xff"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_utf8_passes_unchanged),
	    cmocka_unit_test(test_overlong_forms_are_replaced_byte_by_byte),
	    cmocka_unit_test(test_surrogates_and_values_past_u10ffff_are_replaced),
	    cmocka_unit_test(test_truncated_sequences_and_stray_bytes_are_replaced),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
