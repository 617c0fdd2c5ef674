/* Loading configurations in unit tests, asserting as they go. */
#pragma once

#include <stddef.h>

#include "config.h"

/* Load `text` (as "t.fio"), which must load; errors are printed. */
struct config *config_test_load_ok(const char *text);

/* Load `text`, which must fail; returns the first error's line, its message in `msg`. */
unsigned config_test_load_fails(const char *text, char *msg, size_t len);

/* The notice whose text contains `needle`, or NULL. */
const struct config_error *config_test_find_notice(const struct config *c, const char *needle);
