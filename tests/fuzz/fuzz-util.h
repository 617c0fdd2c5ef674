/* Helpers shared by the libFuzzer harnesses. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The input as a NUL-terminated string (the parsers take C strings), or
 * NULL when it is longer than `max` bytes or memory runs out. */
static inline char *fuzz_text(const uint8_t *data, size_t size, size_t max)
{
	char *text;

	if (size > max) {
		return NULL;
	}
	text = malloc(size + 1);
	if (!text) {
		return NULL;
	}
	memcpy(text, data, size);
	text[size] = '\0';
	return text;
}
