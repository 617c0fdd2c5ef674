/* Small string predicates. Header only. */
#pragma once

#include <stdbool.h>
#include <string.h>

/* True when name is prefix followed by a digit ("loop" matches "loop0"). */
static inline bool has_prefix_number(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(name, prefix, n) == 0 && name[n] >= '0' && name[n] <= '9';
}
