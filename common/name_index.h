/* A small open-addressing hash index from a name to its position in an
 * array the caller owns (devices by name, history rings by device). Built
 * in O(n), looked up in O(1); it stores positions only, so the array must
 * not change while the index is in use. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Returns the name of element i of `base`. */
typedef const char *(*name_index_get_t)(const void *base, size_t i);

struct name_index {
	size_t *slots; /* positions + 1; 0 = empty */
	size_t mask;
};

/* Index the n names of `base`. Replaces any previous content of *ni.
 * Returns 0 or -ENOMEM (then *ni is empty but usable). */
int name_index_build(struct name_index *ni, const void *base, size_t n, name_index_get_t get);

/* Element n - 1 was just appended to the n elements of `base` (the first
 * n - 1 are indexed): index it too, in O(1) amortized; the table is rebuilt
 * larger only when it would be more than half full. Returns 0 or -ENOMEM
 * (then *ni is empty but usable). */
int name_index_add(struct name_index *ni, const void *base, size_t n, name_index_get_t get);

/* Position of `name` in `base`, or SIZE_MAX when absent. */
size_t name_index_find(const struct name_index *ni, const void *base, name_index_get_t get, const char *name);

void name_index_done(struct name_index *ni);
