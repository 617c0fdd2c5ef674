/* Loading configurations in unit tests: see config-helpers.h. */
#include "config-helpers.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

struct config *config_test_load_ok(const char *text)
{
	struct config_errors errs = {0};
	struct config *c = NULL;
	int r = config_load_string("t.fio", text, &errs, &c);

	for (size_t i = 0; i < errs.n; i++) {
		fprintf(stderr, "%s:%u: %s\n", errs.items[i].file, errs.items[i].line, errs.items[i].message);
	}
	assert_int_equal(r, 0);
	config_errors_clear(&errs);
	return c;
}

/* Load `text`, which must fail; returns the first error's line, its message in `msg`. */
unsigned config_test_load_fails(const char *text, char *msg, size_t len)
{
	struct config_errors errs = {0};
	struct config *c = NULL;
	unsigned line;

	assert_int_equal(config_load_string("t.fio", text, &errs, &c), -EINVAL);
	assert_null(c);
	assert_true(errs.n > 0);
	line = errs.items[0].line;
	snprintf(msg, len, "%s", errs.items[0].message);
	config_errors_clear(&errs);
	return line;
}

/* The notice whose text contains `needle`, or NULL. */
const struct config_error *config_test_find_notice(const struct config *c, const char *needle)
{
	for (size_t i = 0; i < c->n_notices; i++) {
		if (strstr(c->notices[i].message, needle)) {
			return &c->notices[i];
		}
	}
	return NULL;
}
