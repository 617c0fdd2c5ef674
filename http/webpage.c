/* Lookup of the embedded live page's assets and conditional requests. */
#include "webpage.h"

#include <string.h>

const struct web_asset *webpage_find(const char *path)
{
	for (size_t i = 0; path && i < webpage_n_assets; i++) {
		if (strcmp(webpage_assets[i].path, path) == 0) {
			return &webpage_assets[i];
		}
	}
	return NULL;
}

/* The opaque part of an entity tag: without the weakness prefix W/. */
static const char *opaque_tag(const char *p, size_t *len)
{
	if (*len >= 2 && p[0] == 'W' && p[1] == '/') {
		*len -= 2;
		return p + 2;
	}
	return p;
}

bool webpage_etag_matches(const char *if_none_match, const char *etag)
{
	size_t want_len = strlen(etag);
	const char *want = opaque_tag(etag, &want_len);

	for (const char *p = if_none_match; p && *p;) {
		size_t n;
		const char *tag;

		p += strspn(p, " \t,");
		n = strcspn(p, ",");
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t')) {
			n--;
		}
		if (n == 1 && p[0] == '*') {
			return true;
		}
		tag = opaque_tag(p, &n);
		if (n == want_len && memcmp(tag, want, n) == 0) {
			return true;
		}
		p += strcspn(p, ",");
	}
	return false;
}
