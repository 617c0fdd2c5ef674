/* The metric registry: mutable state owned by the main thread (plus a
 * mutex-guarded inbox for probe threads), and immutable snapshots swapped in
 * under a short lock. */
#include "registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"

struct registry {
	pthread_mutex_t lock;       /* guards probes[], current */
	struct probe_state *probes;
	size_t n_probes;
	struct sampler_snapshot *samples;
	struct snapshot *current;
	uint64_t generation;
};

static uint64_t now_realtime_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / NSEC_PER_USEC;
}

static void probe_state_done(struct probe_state *p)
{
	free(p->name);
	free(p->target);
	free(p->device);
}

struct snapshot *snapshot_ref(struct snapshot *s)
{
	if (s) {
		__atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
	}
	return s;
}

struct snapshot *snapshot_unref(struct snapshot *s)
{
	if (!s || __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) > 0) {
		return NULL;
	}
	sampler_snapshot_unref(s->samples);
	for (size_t i = 0; i < s->n_probes; i++) {
		probe_state_done(&s->probes[i]);
	}
	free(s->probes);
	free(s->prom_text);
	free(s->openmetrics_text);
	free(s);
	return NULL;
}

int registry_new(struct registry **ret)
{
	struct registry *r = calloc(1, sizeof(*r));

	if (!r) {
		return -ENOMEM;
	}
	pthread_mutex_init(&r->lock, NULL);
	*ret = r;
	return 0;
}

struct registry *registry_free(struct registry *r)
{
	if (!r) {
		return NULL;
	}
	snapshot_unref(r->current);
	sampler_snapshot_unref(r->samples);
	for (size_t i = 0; i < r->n_probes; i++) {
		probe_state_done(&r->probes[i]);
	}
	free(r->probes);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

static int probe_state_copy(const struct probe_state *src, struct probe_state *dst)
{
	*dst = *src;
	dst->name = strdup(src->name);
	dst->target = strdup(src->target);
	dst->device = strdup(src->device);
	if (!dst->name || !dst->target || !dst->device) {
		probe_state_done(dst);
		return -ENOMEM;
	}
	return 0;
}

int registry_set_probes(struct registry *r, const struct config *cfg)
{
	struct probe_state *probes;

	probes = calloc(cfg->n_probes ? cfg->n_probes : 1, sizeof(*probes));
	if (!probes) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < cfg->n_probes; i++) {
		const struct probe_config *pc = &cfg->probes[i];
		struct probe_state *p = &probes[i];

		for (size_t j = 0; j < r->n_probes; j++) {
			if (strcmp(r->probes[j].name, pc->name) == 0) {
				/* keep counters of a probe that survives a reload */
				*p = r->probes[j];
				p->name = p->target = p->device = NULL;
				break;
			}
		}
		p->name = strdup(pc->name);
		p->target = strdup(pc->directory ? pc->directory : pc->filename);
		p->device = strdup("");
		p->rw = pc->rw;
		p->interval_usec = pc->interval_usec;
		if (!p->name || !p->target || !p->device) {
			for (size_t k = 0; k <= i; k++) {
				probe_state_done(&probes[k]);
			}
			free(probes);
			return -ENOMEM;
		}
	}
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->n_probes; i++) {
		probe_state_done(&r->probes[i]);
	}
	free(r->probes);
	r->probes = probes;
	r->n_probes = cfg->n_probes;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

static void op_result_accumulate(struct probe_op_result *total, const struct probe_op_result *run)
{
	total->ops += run->ops;
	total->bytes += run->bytes;
	for (size_t i = 0; i < _PROBE_ERR_MAX; i++) {
		total->errors[i] += run->errors[i];
	}
	histogram_merge(&total->lat, &run->lat);
	total->iops = run->iops;
	total->bw_bytes = run->bw_bytes;
}

void registry_probe_done(struct registry *r, size_t index, const struct probe_result *res)
{
	pthread_mutex_lock(&r->lock);
	if (index < r->n_probes) {
		struct probe_state *p = &r->probes[index];

		p->runs_total++;
		if (!res->success) {
			p->failures_total++;
		}
		for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
			op_result_accumulate(&p->total[op], &res->op[op]);
		}
		p->last = *res;
		p->has_last = true;
		p->last_run_realtime_usec = res->start_realtime_usec;
	}
	pthread_mutex_unlock(&r->lock);
}

void registry_set_samples(struct registry *r, struct sampler_snapshot *s)
{
	sampler_snapshot_unref(r->samples);
	r->samples = sampler_snapshot_ref(s);
}

int registry_publish(struct registry *r)
{
	struct snapshot *s, *old;

	s = calloc(1, sizeof(*s));
	if (!s) {
		return -ENOMEM;
	}
	s->refcount = 1;
	s->realtime_usec = now_realtime_usec();
	s->samples = sampler_snapshot_ref(r->samples);
	s->is_healthy = true;

	pthread_mutex_lock(&r->lock);
	s->probes = calloc(r->n_probes ? r->n_probes : 1, sizeof(*s->probes));
	if (!s->probes) {
		pthread_mutex_unlock(&r->lock);
		snapshot_unref(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->n_probes; i++) {
		if (probe_state_copy(&r->probes[i], &s->probes[i]) < 0) {
			pthread_mutex_unlock(&r->lock);
			snapshot_unref(s);
			return -ENOMEM;
		}
		s->n_probes++;
	}
	pthread_mutex_unlock(&r->lock);

	/* Renderers: pre-render the /metrics bodies here (outside the lock). */

	pthread_mutex_lock(&r->lock);
	s->generation = ++r->generation;
	old = r->current;
	r->current = s;
	pthread_mutex_unlock(&r->lock);
	snapshot_unref(old);
	return 0;
}

struct snapshot *registry_acquire(struct registry *r)
{
	struct snapshot *s;

	pthread_mutex_lock(&r->lock);
	s = snapshot_ref(r->current);
	pthread_mutex_unlock(&r->lock);
	return s;
}
