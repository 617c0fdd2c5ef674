/* UTF-8 as the renderers write it: valid UTF-8 passes unchanged, and every
 * byte that is not part of a valid sequence is replaced by U+FFFD. Mount
 * points, device names and request paths may hold any bytes; JSON strings
 * and Prometheus label values must be UTF-8. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define UTF8_REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

/* Length (1 to 4) of the valid UTF-8 sequence that starts at s[0] (not NUL;
 * s is NUL-terminated), 0 when none does: a stray continuation byte, a
 * truncated sequence, an overlong form, a surrogate, or past U+10FFFF. */
size_t utf8_sequence_length(const char *s);

/* Whether all of the NUL-terminated s is valid UTF-8. */
bool utf8_is_valid(const char *s);

/* A new copy of s with each invalid byte replaced by U+FFFD (the caller
 * frees it); NULL when out of memory. */
char *utf8_make_valid(const char *s);
