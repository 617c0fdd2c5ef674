/* History rings. All rings share one slot numbering: sample number `seq`
 * (counting from 1) lives in slot (seq - 1) % n_slots, stamped in
 * timestamps[]; a device record is live when its tag equals the low 32 bits
 * of the sample number, so stale records from an earlier lap, gaps and
 * never-written (zeroed) records need no clearing. */
#include "history.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "macro.h"
#include "name_index.h"

struct history_record {
	uint32_t tag;
	struct history_rates rates;
};

_Static_assert(sizeof(struct history_record) <= CONFIG_HISTORY_BYTES_PER_SAMPLE,
	       "the configuration sizes the history with CONFIG_HISTORY_BYTES_PER_SAMPLE");

struct device_ring {
	char name[DISKSTATS_NAME_MAX];
	struct history_record *records; /* n_slots, zero_alloc()'ed */
	uint64_t last_seq;
};

struct probe_ring {
	char *name;
	struct history_probe_point *points; /* probe_slots */
	size_t head;			    /* next write position */
	size_t n;
	uint64_t last_update_usec;
};

struct history {
	pthread_mutex_t lock;
	size_t n_slots;
	unsigned max_devices;
	uint64_t *timestamps;
	uint64_t seq;
	struct device_ring *rings;
	size_t n_rings;
	struct name_index index;
	struct probe_ring *probes; /* max_probes */
	size_t n_probes;
	size_t max_probes;
	size_t probe_slots;
};

/* Zeroed memory straight from mmap: a page becomes resident only when the
 * ring first writes into it, so an hour-long ring costs RSS as it fills, not
 * up front (calloc() may serve a large block from the heap and memset it). */
static void *zero_alloc(size_t n, size_t size)
{
	void *p;

	if (n == 0 || size > SIZE_MAX / n) {
		return NULL;
	}
	p = mmap(NULL, n * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void zero_free(void *p, size_t n, size_t size)
{
	if (p) {
		munmap(p, n * size);
	}
}

static size_t slots_for(const struct config *cfg)
{
	uint64_t interval = cfg->sample_interval_usec ? cfg->sample_interval_usec : USEC_PER_SEC;
	uint64_t n = (cfg->history_usec + interval - 1) / interval;

	return n < 2 ? 2 : (size_t)n;
}

/* A probe ring per configured probe (HISTORY_MAX_PROBES at most; a
 * renamed probe takes over the ring updated longest ago). */
static size_t probe_rings_for(const struct config *cfg)
{
	size_t n = cfg->n_probes;

	return n < 1 ? 1 : n > HISTORY_MAX_PROBES ? HISTORY_MAX_PROBES : n;
}

/* The points of a probe ring: a run per interval of the most frequent
 * probe over the history, all rings together within a quarter of
 * max_history_memory, so that a long history of a frequent probe cannot
 * outgrow it (bench/README.md has the size per probe). */
static size_t probe_slots_for(const struct config *cfg)
{
	uint64_t every = cfg->probe_interval_usec ? cfg->probe_interval_usec : USEC_PER_SEC, n, fit;
	size_t rings = probe_rings_for(cfg);

	for (size_t i = 0; i < cfg->n_probes; i++) {
		if (cfg->probes[i].interval_usec && cfg->probes[i].interval_usec < every) {
			every = cfg->probes[i].interval_usec;
		}
	}
	n = cfg->history_usec / every + 1;
	if (cfg->max_history_memory) {
		fit = cfg->max_history_memory / 4 / (rings * sizeof(struct history_probe_point));
		n = n < fit ? n : fit;
	}
	return n < 2 ? 2 : (size_t)n;
}

/* The device rings that fit: max_devices, fewer when what
 * max_history_memory leaves beside the probe rings does not hold that many
 * (at least one: the configuration refuses a history where one device does
 * not fit). */
static unsigned rings_for(const struct config *cfg, size_t n_slots)
{
	uint64_t want = cfg->max_devices ? cfg->max_devices : 1;
	uint64_t probes =
	    (uint64_t)probe_rings_for(cfg) * probe_slots_for(cfg) * sizeof(struct history_probe_point);
	uint64_t avail = cfg->max_history_memory > probes ? cfg->max_history_memory - probes : 0;
	uint64_t fit = avail / ((uint64_t)n_slots * sizeof(struct history_record));

	if (cfg->max_history_memory == 0 || fit >= want) {
		return (unsigned)want;
	}
	return fit > 0 ? (unsigned)fit : 1;
}

static const char *ring_name_get(const void *base, size_t i)
{
	return ((const struct device_ring *)base)[i].name;
}

static void clear_locked(struct history *h)
{
	for (size_t i = 0; h->rings && i < h->n_rings; i++) {
		zero_free(h->rings[i].records, h->n_slots, sizeof(struct history_record));
	}
	zero_free(h->rings, h->max_devices, sizeof(*h->rings));
	h->rings = NULL;
	h->n_rings = 0;
	for (size_t i = 0; h->probes && i < h->n_probes; i++) {
		free(h->probes[i].name);
		zero_free(h->probes[i].points, h->probe_slots, sizeof(struct history_probe_point));
	}
	free(h->probes);
	h->probes = NULL;
	h->n_probes = 0;
	zero_free(h->timestamps, h->n_slots, sizeof(*h->timestamps));
	h->timestamps = NULL;
	name_index_done(&h->index);
	h->seq = 0;
}

static int setup_locked(struct history *h, const struct config *cfg)
{
	h->n_slots = slots_for(cfg);
	h->max_devices = rings_for(cfg, h->n_slots);
	h->timestamps = zero_alloc(h->n_slots, sizeof(*h->timestamps));
	h->rings = zero_alloc(h->max_devices, sizeof(*h->rings));
	h->max_probes = probe_rings_for(cfg);
	h->probe_slots = probe_slots_for(cfg);
	h->probes = calloc(h->max_probes, sizeof(*h->probes));
	if (!h->timestamps || !h->rings || !h->probes) {
		return -ENOMEM;
	}
	return 0;
}

int history_new(const struct config *cfg, struct history **ret)
{
	struct history *h = calloc(1, sizeof(*h));
	int r;

	if (!h) {
		return -ENOMEM;
	}
	pthread_mutex_init(&h->lock, NULL);
	r = setup_locked(h, cfg);
	if (r < 0) {
		history_free(h);
		return r;
	}
	*ret = h;
	return 0;
}

struct history *history_free(struct history *h)
{
	if (!h) {
		return NULL;
	}
	clear_locked(h);
	pthread_mutex_destroy(&h->lock);
	free(h);
	return NULL;
}

/* Exchange the stores of a and b (everything but the lock). */
static void swap_stores(struct history *a, struct history *b)
{
	struct history t = *a;

	a->n_slots = b->n_slots;
	a->max_devices = b->max_devices;
	a->timestamps = b->timestamps;
	a->seq = b->seq;
	a->rings = b->rings;
	a->n_rings = b->n_rings;
	a->index = b->index;
	a->probes = b->probes;
	a->n_probes = b->n_probes;
	a->max_probes = b->max_probes;
	a->probe_slots = b->probe_slots;
	b->n_slots = t.n_slots;
	b->max_devices = t.max_devices;
	b->timestamps = t.timestamps;
	b->seq = t.seq;
	b->rings = t.rings;
	b->n_rings = t.n_rings;
	b->index = t.index;
	b->probes = t.probes;
	b->n_probes = t.n_probes;
	b->max_probes = t.max_probes;
	b->probe_slots = t.probe_slots;
}

int history_set_config(struct history *h, const struct config *cfg)
{
	struct history fresh = {0};
	bool is_same;
	int r;

	pthread_mutex_lock(&h->lock);
	is_same = slots_for(cfg) == h->n_slots && rings_for(cfg, slots_for(cfg)) == h->max_devices &&
		  probe_rings_for(cfg) == h->max_probes && probe_slots_for(cfg) == h->probe_slots;
	pthread_mutex_unlock(&h->lock);
	if (is_same) {
		return 0;
	}
	/* the new store first, outside the lock: when it cannot be had, the
	 * old one stays, whole */
	r = setup_locked(&fresh, cfg);
	if (r >= 0) {
		pthread_mutex_lock(&h->lock);
		swap_stores(h, &fresh);
		pthread_mutex_unlock(&h->lock);
	}
	clear_locked(&fresh);
	return r;
}

static bool ring_is_expired(const struct history *h, const struct device_ring *ring)
{
	return ring->last_seq + h->n_slots <= h->seq;
}

/* Drop rings whose every record has aged out, and re-index. */
static int sweep_locked(struct history *h)
{
	size_t w = 0;

	for (size_t i = 0; i < h->n_rings; i++) {
		if (ring_is_expired(h, &h->rings[i])) {
			zero_free(h->rings[i].records, h->n_slots, sizeof(struct history_record));
			continue;
		}
		h->rings[w++] = h->rings[i];
	}
	h->n_rings = w;
	return name_index_build(&h->index, h->rings, h->n_rings, ring_name_get);
}

static struct device_ring *ring_get_locked(struct history *h, const char *name)
{
	struct device_ring *ring;
	size_t i;

	i = name_index_find(&h->index, h->rings, ring_name_get, name);
	if (i != SIZE_MAX) {
		return &h->rings[i];
	}
	if (h->n_rings == h->max_devices && sweep_locked(h) < 0) {
		return NULL;
	}
	if (h->n_rings == h->max_devices) {
		return NULL;
	}
	ring = &h->rings[h->n_rings];
	*ring = (struct device_ring){0};
	ring->records = zero_alloc(h->n_slots, sizeof(*ring->records));
	if (!ring->records) {
		return NULL;
	}
	snprintf(ring->name, sizeof(ring->name), "%s", name);
	h->n_rings++;
	if (name_index_add(&h->index, h->rings, h->n_rings, ring_name_get) < 0) {
		h->n_rings--;
		zero_free(ring->records, h->n_slots, sizeof(*ring->records));
		return NULL;
	}
	return ring;
}

static void rates_to_history(const struct device_state *d, struct history_rates *r)
{
	const struct device_rates *x = &d->rates;

	r->read_iops = (float)x->read_iops;
	r->write_iops = (float)x->write_iops;
	r->discard_iops = (float)x->discard_iops;
	r->flush_iops = (float)x->flush_iops;
	r->read_bytes_per_sec = (float)x->read_bytes_per_sec;
	r->write_bytes_per_sec = (float)x->write_bytes_per_sec;
	r->read_await_sec = (float)x->read_await_sec;
	r->write_await_sec = (float)x->write_await_sec;
	r->queue_depth = (float)x->queue_depth;
	r->utilization = (float)x->utilization;
	r->at_limit = d->ceiling.is_at_limit ? 1.0f : 0.0f;
	r->throttled = d->ceiling.is_throttled ? 1.0f : 0.0f;
	r->saturated = d->ceiling.is_saturated ? 1.0f : 0.0f;
	r->member_utilization =
	    d->has_member_rates && d->member_rates.valid ? (float)d->member_rates.utilization : NAN;
}

int history_append(struct history *h, const struct sampler_snapshot *s)
{
	size_t slot;
	int r = 0;

	pthread_mutex_lock(&h->lock);
	h->seq++;
	slot = (size_t)((h->seq - 1) % h->n_slots);
	h->timestamps[slot] = s->realtime_usec;
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct device_state *d = &s->devices[i];
		struct device_ring *ring = ring_get_locked(h, d->raw.name);
		struct history_record *rec;

		if (!ring) {
			/* over max_devices, or out of memory: no history for it */
			if (h->n_rings < h->max_devices) {
				r = -ENOMEM;
			}
			continue;
		}
		rec = &ring->records[slot];
		ring->last_seq = h->seq;
		if (!d->rates.valid) {
			rec->tag = 0;
			continue;
		}
		rec->tag = (uint32_t)h->seq;
		rates_to_history(d, &rec->rates);
	}
	if (h->seq % h->n_slots == 0 && r == 0) {
		r = sweep_locked(h);
	}
	pthread_mutex_unlock(&h->lock);
	return r;
}

/* Running means for one bucket of a stepped query. */
struct bucket {
	uint64_t start;
	double sum[sizeof(struct history_rates) / sizeof(float)];
	size_t n, n_member;
};

static void bucket_add(struct bucket *b, const struct history_rates *r)
{
	const float *v = (const float *)r;
	size_t last = ELEMENTSOF(b->sum) - 1; /* member_utilization */

	for (size_t i = 0; i < last; i++) {
		b->sum[i] += v[i];
	}
	if (!isnan(r->member_utilization)) {
		b->sum[last] += r->member_utilization;
		b->n_member++;
	}
	b->n++;
}

static void bucket_emit(const struct bucket *b, struct history_point *p)
{
	float *v = (float *)&p->rates;
	size_t last = ELEMENTSOF(b->sum) - 1;

	p->realtime_usec = b->start;
	for (size_t i = 0; i < last; i++) {
		v[i] = (float)(b->sum[i] / (double)b->n);
	}
	v[last] = b->n_member ? (float)(b->sum[last] / (double)b->n_member) : NAN;
}

int history_query(struct history *h, const char *device, uint64_t since_realtime_usec, uint64_t step_usec,
		  struct history_point **ret, size_t *ret_n)
{
	_cleanup_free_ struct history_point *out = NULL;
	struct bucket b = {0};
	size_t n = 0, live, i;
	int r = 0;

	pthread_mutex_lock(&h->lock);
	i = name_index_find(&h->index, h->rings, ring_name_get, device);
	if (i == SIZE_MAX) {
		r = -ENOENT;
		goto unlock;
	}
	live = h->seq < h->n_slots ? (size_t)h->seq : h->n_slots;
	if (live > 0) {
		out = calloc(live, sizeof(*out));
		if (!out) {
			r = -ENOMEM;
			goto unlock;
		}
	}
	for (uint64_t seq = h->seq - live + 1; seq <= h->seq && live > 0; seq++) {
		size_t slot = (size_t)((seq - 1) % h->n_slots);
		const struct history_record *rec = &h->rings[i].records[slot];
		uint64_t ts = h->timestamps[slot];

		if (rec->tag != (uint32_t)seq || ts < since_realtime_usec) {
			continue;
		}
		if (step_usec == 0) {
			out[n].realtime_usec = ts;
			out[n].rates = rec->rates;
			n++;
			continue;
		}
		if (b.n > 0 && ts - ts % step_usec != b.start) {
			bucket_emit(&b, &out[n++]);
			b = (struct bucket){0};
		}
		b.start = ts - ts % step_usec;
		bucket_add(&b, &rec->rates);
	}
	if (b.n > 0) {
		bucket_emit(&b, &out[n++]);
	}
unlock:
	pthread_mutex_unlock(&h->lock);
	if (r < 0) {
		return r;
	}
	if (n == 0) {
		free(TAKE_PTR(out));
	}
	*ret = TAKE_PTR(out);
	*ret_n = n;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void history_names_free(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++) {
		free(names[i]);
	}
	free(names);
}

int history_devices(struct history *h, char ***ret, size_t *ret_n)
{
	char **names;
	size_t n = 0;

	pthread_mutex_lock(&h->lock);
	names = calloc(h->n_rings ? h->n_rings : 1, sizeof(*names));
	if (!names) {
		pthread_mutex_unlock(&h->lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->n_rings; i++) {
		if (ring_is_expired(h, &h->rings[i])) {
			continue;
		}
		names[n] = strdup(h->rings[i].name);
		if (!names[n]) {
			pthread_mutex_unlock(&h->lock);
			history_names_free(names, n);
			return -ENOMEM;
		}
		n++;
	}
	pthread_mutex_unlock(&h->lock);
	qsort(names, n, sizeof(*names), cmp_names);
	*ret = names;
	*ret_n = n;
	return 0;
}

static struct probe_ring *probe_ring_get_locked(struct history *h, const char *name)
{
	struct probe_ring *p;

	for (size_t i = 0; i < h->n_probes; i++) {
		if (strcmp(h->probes[i].name, name) == 0) {
			return &h->probes[i];
		}
	}
	if (h->n_probes == h->max_probes) {
		/* reuse the ring of the probe updated longest ago (renamed away) */
		size_t oldest = 0;

		for (size_t i = 1; i < h->n_probes; i++) {
			if (h->probes[i].last_update_usec < h->probes[oldest].last_update_usec) {
				oldest = i;
			}
		}
		p = &h->probes[oldest];
		free(p->name);
		p->name = strdup(name);
		p->head = p->n = 0;
		return p->name ? p : NULL;
	}
	p = &h->probes[h->n_probes];
	*p = (struct probe_ring){0};
	p->name = strdup(name);
	p->points = zero_alloc(h->probe_slots, sizeof(*p->points));
	if (!p->name || !p->points) {
		free(p->name);
		zero_free(p->points, h->probe_slots, sizeof(*p->points));
		*p = (struct probe_ring){0};
		return NULL;
	}
	h->n_probes++;
	return p;
}

int history_probe_append(struct history *h, const char *probe, uint64_t realtime_usec, double p50_sec,
			 double p99_sec, double iops)
{
	struct probe_ring *p;
	int r = 0;

	pthread_mutex_lock(&h->lock);
	p = probe_ring_get_locked(h, probe);
	if (!p) {
		r = -ENOMEM;
	} else {
		p->points[p->head] = (struct history_probe_point){
		    .realtime_usec = realtime_usec,
		    .p50_sec = (float)p50_sec,
		    .p99_sec = (float)p99_sec,
		    .iops = (float)iops,
		};
		p->head = (p->head + 1) % h->probe_slots;
		if (p->n < h->probe_slots) {
			p->n++;
		}
		p->last_update_usec = realtime_usec;
	}
	pthread_mutex_unlock(&h->lock);
	return r;
}

int history_probe_query(struct history *h, const char *probe, uint64_t since_realtime_usec,
			struct history_probe_point **ret, size_t *ret_n)
{
	struct history_probe_point *out = NULL;
	const struct probe_ring *p = NULL;
	size_t n = 0;
	int r = 0;

	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->n_probes; i++) {
		if (strcmp(h->probes[i].name, probe) == 0) {
			p = &h->probes[i];
			break;
		}
	}
	if (!p) {
		r = -ENOENT;
	} else if (p->n > 0) {
		out = calloc(p->n, sizeof(*out));
		if (!out) {
			r = -ENOMEM;
		}
		for (size_t k = 0; out && k < p->n; k++) {
			size_t idx = (p->head + h->probe_slots - p->n + k) % h->probe_slots;

			if (p->points[idx].realtime_usec >= since_realtime_usec) {
				out[n++] = p->points[idx];
			}
		}
	}
	pthread_mutex_unlock(&h->lock);
	if (r < 0) {
		return r;
	}
	if (n == 0) {
		free(out);
		out = NULL;
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

size_t history_slots(struct history *h)
{
	size_t n;

	pthread_mutex_lock(&h->lock);
	n = h->n_slots;
	pthread_mutex_unlock(&h->lock);
	return n;
}

size_t history_memory_bytes(struct history *h)
{
	size_t bytes;

	pthread_mutex_lock(&h->lock);
	bytes = sizeof(*h) + h->n_slots * sizeof(*h->timestamps) +
		(size_t)h->max_devices * sizeof(*h->rings) + h->max_probes * sizeof(*h->probes) +
		h->n_rings * h->n_slots * sizeof(struct history_record) +
		h->n_probes * h->probe_slots * sizeof(struct history_probe_point) +
		(h->index.mask + 1) * sizeof(size_t);
	pthread_mutex_unlock(&h->lock);
	return bytes;
}
