/* The rendered /metrics bodies, on the exposition side of the registry:
 * the publish hook pre-renders, for each new snapshot, the formats and
 * encodings scraped in the last RENDER_CACHE_DEMAND_USEC; a scrape of
 * anything else renders it once, into the same entry. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "registry.h"
#include "render_prom.h"

/* How long a scrape of one format and encoding keeps it pre-rendered at
 * every publish. */
#define RENDER_CACHE_DEMAND_USEC (300ULL * 1000000ULL)

struct render_cache;

/* The bodies of one snapshot, refcounted: a response holds a reference to
 * the entry whose bytes it sends. */
struct render_cache_entry;

/* Create a cache for `registry`'s snapshots and install it as the
 * registry's publish hook (main thread). */
int render_cache_new(struct registry *registry, struct render_cache **ret);
/* Remove the hook and free; entries still referenced live on. Main thread,
 * while the registry is still alive. */
struct render_cache *render_cache_free(struct render_cache *c);

/* A scrape asked for `fmt`, gzip'd or not: publishes pre-render it for the
 * next RENDER_CACHE_DEMAND_USEC. Any thread. */
void render_cache_note_scrape(struct render_cache *c, enum metrics_format fmt, bool gzip);

/* The entry of the newest snapshot (a reference). Any thread. Returns 0,
 * -ENODATA before the first publish, or -ENOMEM. */
int render_cache_acquire(struct render_cache *c, struct render_cache_entry **ret);

struct render_cache_entry *render_cache_entry_ref(struct render_cache_entry *e);
struct render_cache_entry *render_cache_entry_unref(struct render_cache_entry *e);

/* The /metrics body of the entry's snapshot in `fmt`, gzip'd when `gzip`
 * asks for it and compression works (*ret_is_gzip says). A body the publish
 * rendered is returned as it is; another is rendered now, once, into the
 * entry. The bytes stay valid while the caller holds its reference.
 * Thread-safe. Returns 0, or -ENOMEM. */
int render_cache_entry_body(struct render_cache_entry *e, enum metrics_format fmt, bool gzip,
			    const char **ret_data, size_t *ret_len, bool *ret_is_gzip);
