/* The /metrics bodies of the newest snapshot: one entry per snapshot,
 * swapped in by the registry's publish hook on the main thread, read by the
 * HTTP threads. A body's pointers are stored once, with release semantics,
 * so that a scrape of a pre-rendered body takes no lock but the one that
 * hands out the entry. */
#include "render_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "gzip.h"
#include "log.h"
#include "refcount.h"
#include "timeutil.h"

/* zlib level of the pre-compressed /metrics, paid on every publish while
 * gzip'd scrapes come: on 64 devices' 180 KB, level 1 takes 1 ms for 11% of
 * the size, level 6 3 ms for 9.5%. */
#define METRICS_GZIP_LEVEL 1

/* One /metrics body. text and gz are set once, at publish or by the first
 * scrape that needs them, and never change after. */
struct rendered_body {
	char *text;
	size_t len;
	char *gz; /* the same bytes, gzip-compressed */
	size_t gz_len;
};

struct render_cache_entry {
	unsigned refcount; /* atomic */
	struct snapshot *snap;
	pthread_mutex_t render_lock; /* serialises rendering bodies[] late */
	struct rendered_body bodies[_METRICS_FORMAT_MAX];
};

struct render_cache {
	struct registry *registry;
	uint64_t demand_usec[_METRICS_FORMAT_MAX][2]; /* last scrape, monotonic, [gzip] */
	pthread_mutex_t lock;			      /* guards current only */
	struct render_cache_entry *current;	      /* NULL before the first publish */
};

static void entry_destroy(struct render_cache_entry *e)
{
	for (size_t i = 0; i < _METRICS_FORMAT_MAX; i++) {
		free(e->bodies[i].text);
		free(e->bodies[i].gz);
	}
	pthread_mutex_destroy(&e->render_lock);
	snapshot_unref(e->snap);
	free(e);
}

DEFINE_REFCOUNT(struct render_cache_entry, render_cache_entry, entry_destroy);

static struct render_cache_entry *entry_new(struct snapshot *s)
{
	struct render_cache_entry *e = calloc(1, sizeof(*e));

	if (!e) {
		return NULL;
	}
	e->refcount = 1;
	e->snap = snapshot_ref(s);
	pthread_mutex_init(&e->render_lock, NULL);
	return e;
}

/* Render the text of `b` in `fmt`, and its gzip when asked; the pointers
 * are stored last, with release semantics, for render_cache_entry_body()'s
 * lock-free fast path. Under e->render_lock, or before e is shared. */
static int render_body(struct render_cache_entry *e, enum metrics_format fmt, bool gzip)
{
	struct rendered_body *b = &e->bodies[fmt];
	char *text = b->text, *gz = NULL;
	size_t len = b->len, gz_len = 0;
	int k;

	if (!text) {
		k = render_prom(e->snap, fmt, &text, &len);
		if (k < 0) {
			return k;
		}
		b->len = len;
		__atomic_store_n(&b->text, text, __ATOMIC_RELEASE);
	}
	if (gzip && !b->gz) {
		k = gzip_compress(text, len, METRICS_GZIP_LEVEL, &gz, &gz_len);
		if (k < 0) {
			return k;
		}
		b->gz_len = gz_len;
		__atomic_store_n(&b->gz, gz, __ATOMIC_RELEASE);
	}
	return 0;
}

int render_cache_entry_body(struct render_cache_entry *e, enum metrics_format fmt, bool gzip,
			    const char **ret_data, size_t *ret_len, bool *ret_is_gzip)
{
	struct rendered_body *b = &e->bodies[fmt];
	const char *text = __atomic_load_n(&b->text, __ATOMIC_ACQUIRE);
	const char *gz = __atomic_load_n(&b->gz, __ATOMIC_ACQUIRE);
	int k = 0;

	if (!text || (gzip && !gz)) {
		/* nobody asked for this body lately: the first scrape renders it */
		pthread_mutex_lock(&e->render_lock);
		k = render_body(e, fmt, gzip);
		pthread_mutex_unlock(&e->render_lock);
		text = __atomic_load_n(&b->text, __ATOMIC_ACQUIRE);
		gz = __atomic_load_n(&b->gz, __ATOMIC_ACQUIRE);
		if (!text) {
			return k < 0 ? k : -ENOMEM;
		}
		/* a failed compression still leaves the plain text to send */
	}
	if (gzip && gz) {
		*ret_data = gz;
		*ret_len = b->gz_len;
		*ret_is_gzip = true;
	} else {
		*ret_data = text;
		*ret_len = b->len;
		*ret_is_gzip = false;
	}
	return 0;
}

/* Pre-render what was scraped in the last RENDER_CACHE_DEMAND_USEC. */
static void render_wanted(struct render_cache *c, struct render_cache_entry *e)
{
	for (size_t f = 0; f < _METRICS_FORMAT_MAX; f++) {
		bool wanted[2];
		int k;

		for (size_t z = 0; z < 2; z++) {
			uint64_t t = __atomic_load_n(&c->demand_usec[f][z], __ATOMIC_RELAXED);

			wanted[z] = t && e->snap->monotonic_usec - t < RENDER_CACHE_DEMAND_USEC;
		}
		if (!wanted[0] && !wanted[1]) {
			continue;
		}
		k = render_body(e, (enum metrics_format)f, wanted[1]);
		if (k < 0) {
			log_debug_errno(k, "Failed to pre-render /metrics: %m, a scrape will try again.");
		}
	}
}

/* Make `e` (may be NULL) the current entry. */
static void swap_current(struct render_cache *c, struct render_cache_entry *e)
{
	struct render_cache_entry *old;

	pthread_mutex_lock(&c->lock);
	old = c->current;
	c->current = e;
	pthread_mutex_unlock(&c->lock);
	render_cache_entry_unref(old);
}

/* The registry's publish hook: an entry for the new snapshot, with what
 * was scraped lately already rendered. Out of memory leaves no current
 * entry, so that a scrape does not serve the previous snapshot's. */
static void on_publish(void *userdata, struct snapshot *s)
{
	struct render_cache *c = userdata;
	struct render_cache_entry *e = entry_new(s);

	if (e) {
		render_wanted(c, e);
	}
	swap_current(c, e);
}

int render_cache_new(struct registry *registry, struct render_cache **ret)
{
	struct render_cache *c = calloc(1, sizeof(*c));

	if (!c) {
		return -ENOMEM;
	}
	c->registry = registry;
	pthread_mutex_init(&c->lock, NULL);
	registry_set_publish_hook(registry, on_publish, c);
	*ret = c;
	return 0;
}

struct render_cache *render_cache_free(struct render_cache *c)
{
	if (!c) {
		return NULL;
	}
	registry_set_publish_hook(c->registry, NULL, NULL);
	render_cache_entry_unref(c->current);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return NULL;
}

void render_cache_note_scrape(struct render_cache *c, enum metrics_format fmt, bool gzip)
{
	__atomic_store_n(&c->demand_usec[fmt][gzip], now_usec(CLOCK_MONOTONIC), __ATOMIC_RELAXED);
}

int render_cache_acquire(struct render_cache *c, struct render_cache_entry **ret)
{
	struct render_cache_entry *e;
	struct snapshot *s;

	pthread_mutex_lock(&c->lock);
	e = render_cache_entry_ref(c->current);
	pthread_mutex_unlock(&c->lock);
	if (e) {
		*ret = e;
		return 0;
	}
	/* no publish since the cache was created (or its entry failed): an
	 * entry for the registry's current snapshot, kept for the scrapes
	 * after this one unless a publish came in between */
	s = registry_acquire(c->registry);
	if (!s) {
		return -ENODATA;
	}
	e = entry_new(s);
	snapshot_unref(s);
	if (!e) {
		return -ENOMEM;
	}
	pthread_mutex_lock(&c->lock);
	if (!c->current) {
		c->current = render_cache_entry_ref(e);
	}
	pthread_mutex_unlock(&c->lock);
	*ret = e;
	return 0;
}
