/* The live page at / and its assets (script, style, icon, Chart.js),
 * embedded in the binary at build time by http/web/embed.py: serving
 * them needs no file on disk and loads nothing from another origin. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct web_asset {
	const char *path; /* URL path: "/", "/assets/app.js" */
	const char *content_type;
	const char *cache_control; /* the page revalidates, versioned assets are immutable */
	const unsigned char *data; /* NUL-terminated (one byte past size) */
	size_t size;
	const unsigned char *gz; /* the same bytes gzip'd, NULL when that does not pay */
	size_t gz_size;
	const char *etag; /* W/"<content hash>", valid for both codings */
};

/* Content-Security-Policy of the page: scripts, styles, images and API
 * requests from this origin only; no inline code, no frames, no forms. */
#define WEBPAGE_CSP                                                                                          \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "                          \
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* The generated table (webpage-assets.c in the build directory). */
extern const struct web_asset webpage_assets[];
extern const size_t webpage_n_assets;

/* The asset served at URL path `path` (no query string), NULL when none. */
const struct web_asset *webpage_find(const char *path);

/* True when the If-None-Match header value `if_none_match` ("*", or a
 * comma-separated list of entity tags, weak or strong) names `etag` by the
 * weak comparison of RFC 9110. False for NULL. */
bool webpage_etag_matches(const char *if_none_match, const char *etag);
