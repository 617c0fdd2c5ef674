/* The ceiling probe's gate: quietness computed on the main loop, read by
 * probe threads under a mutex; probe results fed back into the ceiling
 * detector. See ceiling_gate.h. */
#include "ceiling_gate.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ceiling.h"
#include "log.h"
#include "macro.h"
#include "timeutil.h"

struct gate_probe {
	struct probe_identity *id; /* a reference */
	const struct probe_config *pc;
	bool is_quiet;		  /* under the lock */
	bool has_run;		  /* under the lock */
	uint64_t last_start_usec; /* under the lock, CLOCK_MONOTONIC */
	double pending_own_ops;	  /* under the lock: I/Os of runs not collected yet */
	bool has_measured;	  /* under the lock: a ceiling run's result not collected yet */
	double measured_iops, measured_bw;
};

struct ceiling_gate {
	pthread_mutex_t lock;
	ceiling_gate_clock_fn clock;
	void *clock_userdata;
	struct gate_probe *probes;
	size_t n_probes;
};

static uint64_t monotonic_usec(void *userdata)
{
	return now_usec(CLOCK_MONOTONIC);
}

int ceiling_gate_new(struct ceiling_gate **ret)
{
	struct ceiling_gate *g = calloc(1, sizeof(*g));

	if (!g) {
		return -ENOMEM;
	}
	pthread_mutex_init(&g->lock, NULL);
	g->clock = monotonic_usec;
	*ret = g;
	return 0;
}

static void free_probes(struct gate_probe *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		probe_identity_unref(p[i].id);
	}
	free(p);
}

void ceiling_gate_set_clock(struct ceiling_gate *g, ceiling_gate_clock_fn fn, void *userdata)
{
	g->clock = fn ? fn : monotonic_usec;
	g->clock_userdata = userdata;
}

struct ceiling_gate *ceiling_gate_free(struct ceiling_gate *g)
{
	if (!g) {
		return NULL;
	}
	free_probes(g->probes, g->n_probes);
	pthread_mutex_destroy(&g->lock);
	free(g);
	return NULL;
}

int ceiling_gate_set_config(struct ceiling_gate *g, const struct config *cfg,
			    struct probe_identity *const *ids)
{
	struct gate_probe *probes = calloc(cfg->n_probes ? cfg->n_probes : 1, sizeof(*probes));
	int r = -ENOMEM;

	for (size_t i = 0; probes && i < cfg->n_probes; i++) {
		struct gate_probe *p = &probes[i];

		p->pc = &cfg->probes[i];
		p->id = probe_identity_ref(ids[i]);
		/* a reload must not reset the budget of a ceiling probe, nor
		 * drop the runs not collected yet (the scheduler is stopped) */
		for (size_t j = 0; j < g->n_probes; j++) {
			const struct gate_probe *o = &g->probes[j];

			if (strcmp(o->id->name, p->id->name) == 0) {
				p->has_run = o->has_run;
				p->last_start_usec = o->last_start_usec;
				p->pending_own_ops = o->pending_own_ops;
				p->has_measured = o->has_measured && p->pc->ceiling;
				p->measured_iops = o->measured_iops;
				p->measured_bw = o->measured_bw;
			}
		}
	}
	if (probes) {
		r = 0;
	}
	/* on failure the old table, which points into the old config, goes:
	 * no ceiling probe runs until the next successful call */
	pthread_mutex_lock(&g->lock);
	free_probes(g->probes, g->n_probes);
	g->probes = probes;
	g->n_probes = probes ? cfg->n_probes : 0;
	pthread_mutex_unlock(&g->lock);
	return r;
}

void ceiling_gate_clear(struct ceiling_gate *g)
{
	pthread_mutex_lock(&g->lock);
	free_probes(g->probes, g->n_probes);
	g->probes = NULL;
	g->n_probes = 0;
	pthread_mutex_unlock(&g->lock);
}

/* The ceiling detector state of the device a probe's identity resolved to
 * (NULL while unresolved, or on a filesystem without a device). */
static struct ceiling_state *state_of(struct gate_probe *p, struct ceiling_set *ceilings)
{
	char device[DISKSTATS_NAME_MAX];

	if (!probe_identity_device(p->id, device, NULL) || device[0] == '\0') {
		return NULL;
	}
	return ceiling_set_find(ceilings, device);
}

/* The gate's entry of `id`, NULL when it has none. */
static struct gate_probe *find_probe(struct ceiling_gate *g, const struct probe_identity *id)
{
	for (size_t i = 0; i < g->n_probes; i++) {
		if (g->probes[i].id == id) {
			return &g->probes[i];
		}
	}
	return NULL;
}

void ceiling_gate_probe_done(struct ceiling_gate *g, const struct probe_identity *id,
			     const struct probe_result *res)
{
	struct gate_probe *p;

	pthread_mutex_lock(&g->lock);
	p = find_probe(g, id);
	if (p) {
		p->pending_own_ops += (double)(res->op[PROBE_OP_READ].ops + res->op[PROBE_OP_WRITE].ops);
		if (p->pc->ceiling && res->success) {
			p->has_measured = true;
			p->measured_iops = res->op[PROBE_OP_READ].iops + res->op[PROBE_OP_WRITE].iops;
			p->measured_bw = res->op[PROBE_OP_READ].bw_bytes + res->op[PROBE_OP_WRITE].bw_bytes;
		}
	}
	pthread_mutex_unlock(&g->lock);
}

/* Hand one probe's runs since the last call to the detector. */
static void collect_probe(struct gate_probe *p, struct ceiling_set *ceilings, double own_ops,
			  bool has_measured, double iops, double bw)
{
	struct ceiling_state *st = state_of(p, ceilings);
	char device[DISKSTATS_NAME_MAX] = "";

	if (!st) {
		return;
	}
	if (own_ops > 0) {
		ceiling_state_note_own_ops(st, own_ops);
	}
	if (has_measured) {
		ceiling_state_measured(st, iops, bw);
		(void)probe_identity_device(p->id, device, NULL);
		log_info("Ceiling probe [%s] measured %.0f IOPS, %.1f MiB/s on %s.", p->id->name, iops,
			 bw / (1024.0 * 1024.0), device);
	}
}

void ceiling_gate_collect(struct ceiling_gate *g, struct ceiling_set *ceilings)
{
	/* only the main loop changes g->probes, and it is running this */
	for (size_t i = 0; g && i < g->n_probes; i++) {
		struct gate_probe *p = &g->probes[i];
		double own_ops, iops, bw;
		bool has_measured;

		pthread_mutex_lock(&g->lock);
		own_ops = p->pending_own_ops;
		has_measured = p->has_measured;
		iops = p->measured_iops;
		bw = p->measured_bw;
		p->pending_own_ops = 0;
		p->has_measured = false;
		pthread_mutex_unlock(&g->lock);
		if (own_ops > 0 || has_measured) {
			collect_probe(p, ceilings, own_ops, has_measured, iops, bw);
		}
	}
}

void ceiling_gate_refresh(struct ceiling_gate *g, struct ceiling_set *ceilings)
{
	for (size_t i = 0; g && i < g->n_probes; i++) {
		struct gate_probe *p = &g->probes[i];
		struct ceiling_state *st;
		bool is_quiet;

		if (!p->pc->ceiling) {
			continue;
		}
		st = state_of(p, ceilings);
		is_quiet = st && ceiling_state_is_quiet(st, CEILING_GATE_QUIET_SEC, CEILING_GATE_QUIET_IOPS);
		pthread_mutex_lock(&g->lock);
		p->is_quiet = is_quiet;
		pthread_mutex_unlock(&g->lock);
	}
}

uint64_t ceiling_gate_check(void *userdata, const struct probe_identity *id, const struct probe_config *pc)
{
	struct ceiling_gate *g = userdata;
	uint64_t now = g->clock(g->clock_userdata), delay;
	struct gate_probe *p;

	if (!pc->ceiling) {
		return 0;
	}
	pthread_mutex_lock(&g->lock);
	p = find_probe(g, id);
	if (!p) {
		delay = CEILING_GATE_RETRY_USEC;
	} else if (p->has_run && now < p->last_start_usec + CEILING_GATE_MIN_SPACING_USEC) {
		delay = p->last_start_usec + CEILING_GATE_MIN_SPACING_USEC - now;
	} else if (!p->is_quiet) {
		delay = CEILING_GATE_RETRY_USEC;
	} else {
		p->has_run = true;
		p->last_start_usec = now;
		p->is_quiet = false;
		delay = 0;
	}
	pthread_mutex_unlock(&g->lock);
	return delay;
}
