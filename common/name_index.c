/* Open-addressing name index (linear probing, FNV-1a, load factor <= 1/2). */
#include "name_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

void name_index_done(struct name_index *ni)
{
	free(ni->slots);
	ni->slots = NULL;
	ni->mask = 0;
}

int name_index_build(struct name_index *ni, const void *base, size_t n, name_index_get_t get)
{
	size_t size = 8;

	name_index_done(ni);
	while (size < n * 2) {
		size *= 2;
	}
	ni->slots = calloc(size, sizeof(*ni->slots));
	if (!ni->slots) {
		return -ENOMEM;
	}
	ni->mask = size - 1;
	for (size_t i = 0; i < n; i++) {
		size_t h = (size_t)hash_name(get(base, i)) & ni->mask;

		while (ni->slots[h] != 0) {
			h = (h + 1) & ni->mask;
		}
		ni->slots[h] = i + 1;
	}
	return 0;
}

int name_index_add(struct name_index *ni, const void *base, size_t n, name_index_get_t get)
{
	size_t h;

	if (!ni->slots || n * 2 > ni->mask + 1) {
		return name_index_build(ni, base, n, get);
	}
	h = (size_t)hash_name(get(base, n - 1)) & ni->mask;
	while (ni->slots[h] != 0) {
		h = (h + 1) & ni->mask;
	}
	ni->slots[h] = n;
	return 0;
}

size_t name_index_find(const struct name_index *ni, const void *base, name_index_get_t get, const char *name)
{
	size_t h;

	if (!ni->slots) {
		return SIZE_MAX;
	}
	h = (size_t)hash_name(name) & ni->mask;
	while (ni->slots[h] != 0) {
		size_t i = ni->slots[h] - 1;

		if (strcmp(get(base, i), name) == 0) {
			return i;
		}
		h = (h + 1) & ni->mask;
	}
	return SIZE_MAX;
}
