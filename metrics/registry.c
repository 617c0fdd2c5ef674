/* The metric registry: mutable state owned by the main thread (plus a
 * mutex-guarded inbox for probe threads), and immutable snapshots swapped in
 * under a second lock that is only ever held to swap or take a pointer, so
 * a scrape never waits behind a probe. */
#include "registry.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "history.h"
#include "log.h"
#include "macro.h"
#include "refcount.h"
#include "timeutil.h"

struct registry {
	pthread_mutex_t lock; /* guards probes[] (probe threads write) */
	struct probe_state *probes;
	size_t n_probes;
	struct sampler_snapshot *samples;
	struct history *history;
	uint64_t sample_interval_usec;
	uint64_t history_usec;
	uint64_t start_realtime_usec;
	uint64_t start_monotonic_usec;
	struct process_stats process; /* registry_set_process() */
	bool has_failed_reload;	      /* registry_set_reload(), main thread */
	uint64_t config_loaded_realtime_usec;
	char hostname[HOST_NAME_MAX + 1];
	double last_render_seconds;
	registry_publish_fn publish_hook;
	void *publish_hook_userdata;
	uint64_t generation;
	/* the copy of probes[] the last publish handed out, and whether
	 * probes[] changed since: a histogram is 17 KB and a probe has six */
	struct probe_block *published;
	bool probes_changed;

	pthread_mutex_t current_lock; /* guards current only */
	struct snapshot *current;
};

static void probe_state_done(struct probe_state *p)
{
	probe_identity_unref(p->id);
}

static void probe_states_free(struct probe_state *probes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		probe_state_done(&probes[i]);
	}
	free(probes);
}

/* An immutable copy of probes[], shared by snapshots. */
struct probe_block {
	unsigned refcount; /* atomic */
	size_t n;
	struct probe_state probes[];
};

static void probe_block_destroy(struct probe_block *b)
{
	for (size_t i = 0; i < b->n; i++) {
		probe_state_done(&b->probes[i]);
	}
	free(b);
}

DEFINE_PRIVATE_REFCOUNT(struct probe_block, probe_block, probe_block_destroy);

static void snapshot_destroy(struct snapshot *s)
{
	sampler_snapshot_unref(s->samples);
	probe_block_unref(s->probe_block);
	free(s);
}

DEFINE_REFCOUNT(struct snapshot, snapshot, snapshot_destroy);

int registry_new(struct registry **ret)
{
	struct registry *r = calloc(1, sizeof(*r));

	if (!r) {
		return -ENOMEM;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->current_lock, NULL);
	r->start_realtime_usec = now_usec(CLOCK_REALTIME);
	r->start_monotonic_usec = now_usec(CLOCK_MONOTONIC);
	r->sample_interval_usec = USEC_PER_SEC;
	*ret = r;
	return 0;
}

struct registry *registry_free(struct registry *r)
{
	if (!r) {
		return NULL;
	}
	snapshot_unref(r->current);
	probe_block_unref(r->published);
	sampler_snapshot_unref(r->samples);
	probe_states_free(r->probes, r->n_probes);
	pthread_mutex_destroy(&r->current_lock);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

bool probe_state_does_op(const struct probe_state *p, enum probe_op op)
{
	switch (op) {
	case PROBE_OP_READ:
		return probe_rw_reads(p->rw);
	case PROBE_OP_WRITE:
		return probe_rw_writes(p->rw);
	case PROBE_OP_FSYNC:
		return p->has_fsync;
	default:
		return false;
	}
}

/* The state of `pc` in a new probe list, with identity `id`: the counters
 * of the probe of the same name in the current one, if any, and its device
 * when it keeps its identity (its target) too. Under r->lock. */
static void probe_state_init(struct registry *r, const struct probe_config *pc, struct probe_identity *id,
			     struct probe_state *p)
{
	for (size_t j = 0; j < r->n_probes; j++) {
		if (strcmp(r->probes[j].name, pc->name) == 0) {
			*p = r->probes[j];
			if (p->id != id) {
				p->device[0] = '\0';
			}
			break;
		}
	}
	p->id = probe_identity_ref(id);
	p->name = id->name;
	p->target = id->target;
	p->rw = pc->rw;
	p->interval_usec = pc->interval_usec;
	p->runtime_usec = pc->runtime_usec;
	p->has_fsync = probe_rw_writes(pc->rw) && (pc->fsync > 0 || pc->end_fsync);
}

int registry_set_probes(struct registry *r, const struct config *cfg, struct probe_identity *const *ids)
{
	struct probe_state *probes;

	probes = calloc(cfg->n_probes ? cfg->n_probes : 1, sizeof(*probes));
	if (!probes) {
		return -ENOMEM;
	}
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < cfg->n_probes; i++) {
		probe_state_init(r, &cfg->probes[i], ids[i], &probes[i]);
	}
	probe_states_free(r->probes, r->n_probes);
	r->probes = probes;
	r->n_probes = cfg->n_probes;
	r->probes_changed = true;
	r->sample_interval_usec = cfg->sample_interval_usec;
	r->history_usec = cfg->history_usec;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

void registry_set_history(struct registry *r, struct history *h)
{
	/* probe threads read it in registry_probe_done() */
	__atomic_store_n(&r->history, h, __ATOMIC_RELEASE);
}

/* One point of the probe's latency history: p50/p99 over its read and
 * write completions, their IOPS summed. */
static void record_probe_history(struct registry *r, const char *name, const struct probe_result *res)
{
	struct history *h = __atomic_load_n(&r->history, __ATOMIC_ACQUIRE);
	struct histogram *all;
	int k;

	if (!h) {
		return;
	}
	all = malloc(sizeof(*all));
	if (!all) {
		return;
	}
	histogram_init(all);
	histogram_merge(all, &res->op[PROBE_OP_READ].lat);
	histogram_merge(all, &res->op[PROBE_OP_WRITE].lat);
	if (all->count > 0) {
		k = history_probe_append(h, name, res->start_realtime_usec,
					 (double)histogram_percentile(all, 50) / (double)NSEC_PER_SEC,
					 (double)histogram_percentile(all, 99) / (double)NSEC_PER_SEC,
					 res->op[PROBE_OP_READ].iops + res->op[PROBE_OP_WRITE].iops);
		if (k < 0) {
			log_debug_errno(k, "Failed to record the history of probe %s: %m", name);
		}
	}
	free(all);
}

static struct probe_state *find_state_locked(struct registry *r, const struct probe_identity *id)
{
	for (size_t i = 0; i < r->n_probes; i++) {
		if (r->probes[i].id == id) {
			return &r->probes[i];
		}
	}
	return NULL;
}

void registry_probe_done(struct registry *r, const struct probe_identity *id, const struct probe_result *res)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	struct probe_state *p;

	/* the percentiles before the lock: probe threads share it */
	record_probe_history(r, id->name, res);
	pthread_mutex_lock(&r->lock);
	p = find_state_locked(r, id);
	if (p) {
		p->runs_total++;
		if (!res->success) {
			p->failures_total++;
		}
		for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
			probe_op_result_add(&p->total[op], &res->op[op]);
			/* the totals' rates are the last run's */
			p->total[op].iops = res->op[op].iops;
			p->total[op].bw_bytes = res->op[op].bw_bytes;
		}
		p->last = *res;
		p->has_last = true;
		p->last_run_realtime_usec = res->start_realtime_usec;
		p->last_done_monotonic_usec = now;
		r->probes_changed = true;
	}
	pthread_mutex_unlock(&r->lock);
}

void registry_update_devices(struct registry *r)
{
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->n_probes; i++) {
		struct probe_state *p = &r->probes[i];
		char now[DISKSTATS_NAME_MAX];

		if (probe_identity_device(p->id, now, NULL) && strcmp(p->device, now) != 0) {
			memcpy(p->device, now, sizeof(p->device));
			r->probes_changed = true;
		}
	}
	pthread_mutex_unlock(&r->lock);
}

void registry_set_samples(struct registry *r, struct sampler_snapshot *s)
{
	sampler_snapshot_unref(r->samples);
	r->samples = sampler_snapshot_ref(s);
}

bool snapshot_check_health(const struct snapshot *s, uint64_t now, char *reason, size_t len)
{
	uint64_t sample_limit = 3 * s->sample_interval_usec + USEC_PER_SEC;

	if (now > s->monotonic_usec && now - s->monotonic_usec > s->stale_after_usec) {
		snprintf(reason, len, "no snapshot published for %.1fs (limit %.1fs): the main loop is stuck",
			 usec_to_sec(now - s->monotonic_usec), usec_to_sec(s->stale_after_usec));
		return false;
	}
	if (!s->samples) {
		if (now - s->start_monotonic_usec > sample_limit) {
			snprintf(reason, len, "no /proc/diskstats sample since start %.1fs ago",
				 usec_to_sec(now - s->start_monotonic_usec));
			return false;
		}
	} else if (now > s->samples->monotonic_usec && now - s->samples->monotonic_usec > sample_limit) {
		snprintf(reason, len, "last /proc/diskstats sample is %.1fs old (interval %.1fs)",
			 usec_to_sec(now - s->samples->monotonic_usec), usec_to_sec(s->sample_interval_usec));
		return false;
	}
	for (size_t i = 0; i < s->n_probes; i++) {
		const struct probe_state *p = &s->probes[i];
		/* a run may wait for another probe on the same device and take
		 * up to twice its budget before it is cancelled */
		uint64_t limit = 2 * p->interval_usec + 2 * p->runtime_usec + 10 * USEC_PER_SEC;
		uint64_t since = p->has_last ? p->last_done_monotonic_usec : s->start_monotonic_usec;

		if (now > since && now - since > limit) {
			snprintf(reason, len, "probe '%s' has not completed a run for %.1fs (interval %.1fs)",
				 p->name, usec_to_sec(now - since), usec_to_sec(p->interval_usec));
			return false;
		}
	}
	reason[0] = '\0';
	return true;
}

void registry_set_publish_hook(struct registry *r, registry_publish_fn fn, void *userdata)
{
	r->publish_hook = fn;
	r->publish_hook_userdata = userdata;
}

/* Copy probes[] into r->published if a probe changed since the last
 * publish. Under r->lock. */
static int publish_probes(struct registry *r)
{
	struct probe_block *b;

	if (r->published && !r->probes_changed) {
		return 0;
	}
	b = calloc(1, sizeof(*b) + r->n_probes * sizeof(b->probes[0]));
	if (!b) {
		return -ENOMEM;
	}
	b->refcount = 1;
	for (size_t i = 0; i < r->n_probes; i++) {
		b->probes[i] = r->probes[i];
		probe_identity_ref(b->probes[i].id);
		b->n++;
	}
	probe_block_unref(r->published);
	r->published = b;
	r->probes_changed = false;
	return 0;
}

int registry_publish(struct registry *r)
{
	struct snapshot *s, *old;
	uint64_t t0;
	int k;

	s = calloc(1, sizeof(*s));
	if (!s) {
		return -ENOMEM;
	}
	s->refcount = 1;
	s->realtime_usec = now_usec(CLOCK_REALTIME);
	s->monotonic_usec = now_usec(CLOCK_MONOTONIC);
	s->start_realtime_usec = r->start_realtime_usec;
	s->start_monotonic_usec = r->start_monotonic_usec;
	s->samples = sampler_snapshot_ref(r->samples);
	s->history = r->history;
	s->last_render_seconds = r->last_render_seconds;
	memcpy(s->hostname, r->hostname, sizeof(s->hostname));
	s->process = r->process;
	s->has_failed_reload = r->has_failed_reload;
	s->config_loaded_realtime_usec = r->config_loaded_realtime_usec;

	pthread_mutex_lock(&r->lock);
	s->sample_interval_usec = r->sample_interval_usec;
	s->history_usec = r->history_usec;
	k = publish_probes(r);
	if (k >= 0) {
		s->probe_block = probe_block_ref(r->published);
		s->probes = s->probe_block->probes;
		s->n_probes = s->probe_block->n;
	}
	pthread_mutex_unlock(&r->lock);
	if (k < 0) {
		snapshot_unref(s);
		return k;
	}

	s->stale_after_usec = 3 * s->sample_interval_usec + 2 * USEC_PER_SEC;
	s->generation = ++r->generation;
	s->is_healthy =
	    snapshot_check_health(s, s->monotonic_usec, s->health_reason, sizeof(s->health_reason));

	if (r->publish_hook) {
		t0 = now_usec(CLOCK_MONOTONIC);
		r->publish_hook(r->publish_hook_userdata, s);
		r->last_render_seconds = usec_to_sec(now_usec(CLOCK_MONOTONIC) - t0);
	}

	pthread_mutex_lock(&r->current_lock);
	old = r->current;
	r->current = s;
	pthread_mutex_unlock(&r->current_lock);
	snapshot_unref(old);
	return 0;
}

void registry_set_reload(struct registry *r, bool is_ok)
{
	r->has_failed_reload = !is_ok;
	if (is_ok) {
		r->config_loaded_realtime_usec = now_usec(CLOCK_REALTIME);
	}
}

void registry_set_process(struct registry *r, const struct process_stats *p, const char *hostname)
{
	r->process = *p;
	snprintf(r->hostname, sizeof(r->hostname), "%s", hostname ? hostname : "");
}

struct snapshot *registry_acquire(struct registry *r)
{
	struct snapshot *s;

	pthread_mutex_lock(&r->current_lock);
	s = snapshot_ref(r->current);
	pthread_mutex_unlock(&r->current_lock);
	return s;
}
