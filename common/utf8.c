/* The one UTF-8 policy of iopsd's output (see utf8.h). */
#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t utf8_sequence_length(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n;
	uint32_t cp;

	if (s[0] < 0x80) {
		return 1;
	} else if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	/* the NUL that ends a truncated sequence is not a continuation byte,
	 * so this never reads past the string */
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			return 0;
		}
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* reject overlong forms, surrogates and values past U+10FFFF */
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
		return 0;
	}
	return n;
}

bool utf8_is_valid(const char *s)
{
	while (*s) {
		size_t n = utf8_sequence_length(s);

		if (n == 0) {
			return false;
		}
		s += n;
	}
	return true;
}

char *utf8_make_valid(const char *s)
{
	size_t len = strlen(s), n_bad = 0;
	char *out, *o;

	for (const char *p = s; *p;) {
		size_t n = utf8_sequence_length(p);

		n_bad += n == 0;
		p += n ? n : 1;
	}
	/* each bad byte grows by two */
	if (n_bad > (SIZE_MAX - len - 1) / 2) {
		return NULL;
	}
	out = malloc(len + 2 * n_bad + 1);
	if (!out) {
		return NULL;
	}
	o = out;
	for (const char *p = s; *p;) {
		size_t n = utf8_sequence_length(p);

		if (n == 0) {
			memcpy(o, UTF8_REPLACEMENT, 3);
			o += 3;
			p++;
		} else {
			memcpy(o, p, n);
			o += n;
			p += n;
		}
	}
	*o = '\0';
	return out;
}
