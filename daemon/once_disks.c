/* The disks fio would list for the run's targets, sampled as fio's disk
 * util thread samples them. */
#include "once_disks.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "sampler.h"
#include "targets.h"
#include "timeutil.h"

/* fio follows slaves/ one level per device; nesting beyond this is not an
 * array anyone builds. */
#define ONCE_DISKS_MAX 64
/* fio's DISK_UTIL_MSEC: its helper thread reads the disks this often */
#define ONCE_DISKS_TICK_USEC (250 * USEC_PER_MSEC)
/* the ticks kept: 4 s, past a group's teardown unless a device is stuck */
#define ONCE_DISKS_RING 16

/* fio's window starts when the first job is set up and ends at the last
 * tick its jobs' files were open: the seconds iopsd spends after the I/O
 * (reaping 16 threads and their engines on a slow guest) are not in it.
 * So a ticker samples every 250 ms, and the window ends at the last tick
 * taken by the time the I/O ended. */
struct once_disks {
	struct sampler *sampler;
	struct sampler_snapshot *first;
	struct sampler_snapshot *ring[ONCE_DISKS_RING];
	size_t n_ticks; /* ring[n_ticks % ONCE_DISKS_RING] is the next */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool is_stopping;
	bool has_ticker;
	pthread_t ticker;
};

static void *ticker_main(void *arg)
{
	struct once_disks *d = arg;
	/* on a fixed schedule: a slow sample does not push the next ones back */
	uint64_t next = now_usec(CLOCK_MONOTONIC);

	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct sampler_snapshot *s = NULL;
		struct timespec ts = timespec_from_usec(next += ONCE_DISKS_TICK_USEC);

		while (!d->is_stopping && pthread_cond_timedwait(&d->cond, &d->lock, &ts) != ETIMEDOUT) {
		}
		if (d->is_stopping) {
			break;
		}
		/* the sampler is this thread's until finish joins it */
		if (sampler_sample(d->sampler, &s) == 0) {
			struct sampler_snapshot **slot = &d->ring[d->n_ticks++ % ONCE_DISKS_RING];

			sampler_snapshot_unref(*slot);
			*slot = s;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

struct once_disks *once_disks_start(const struct config *cfg, const char *procfs, const char *sysfs)
{
	struct once_disks *d = calloc(1, sizeof(*d));
	pthread_condattr_t attr;

	if (!d) {
		return NULL;
	}
	if (sampler_new(procfs, sysfs, cfg, &d->sampler) < 0 || sampler_sample(d->sampler, &d->first) < 0) {
		sampler_free(d->sampler);
		free(d);
		return NULL;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &attr);
	pthread_condattr_destroy(&attr);
	/* without the ticker the window ends after the run, as before */
	d->has_ticker = pthread_create(&d->ticker, NULL, ticker_main, d) == 0;
	if (!d->has_ticker) {
		log_warning(
		    "Disk stats: no thread to sample the disks during the run; they cover its teardown too.");
	}
	return d;
}

size_t once_disks_pick(const uint64_t *tick_usec, size_t n, uint64_t end_usec)
{
	size_t best = SIZE_MAX;

	if (end_usec == 0) {
		return SIZE_MAX;
	}
	for (size_t i = 0; i < n; i++) {
		if (tick_usec[i] <= end_usec && (best == SIZE_MAX || tick_usec[i] > tick_usec[best])) {
			best = i;
		}
	}
	return best;
}

/* The window's end: the last tick by end_usec (a reference of the caller's),
 * or a sample taken now when no tick fits (a run shorter than a tick, a
 * run that never started, or no ticker). */
static struct sampler_snapshot *window_end(struct once_disks *d, uint64_t end_usec)
{
	uint64_t ticks[ONCE_DISKS_RING];
	struct sampler_snapshot *s = NULL;
	size_t n, k;

	if (d->has_ticker) {
		pthread_mutex_lock(&d->lock);
		d->is_stopping = true;
		pthread_cond_signal(&d->cond);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->ticker, NULL);
	}
	/* counted once the ticker is gone: a tick it took after a count made
	 * before the stop would be left in the ring, neither picked nor freed */
	n = d->n_ticks < ONCE_DISKS_RING ? d->n_ticks : ONCE_DISKS_RING;
	for (size_t i = 0; i < n; i++) {
		ticks[i] = d->ring[i]->monotonic_usec;
	}
	k = once_disks_pick(ticks, n, end_usec);
	if (k != SIZE_MAX) {
		s = sampler_snapshot_ref(d->ring[k]);
	} else if (sampler_sample(d->sampler, &s) < 0) {
		s = NULL;
	}
	for (size_t i = 0; i < n; i++) {
		sampler_snapshot_unref(d->ring[i]);
	}
	return s;
}

struct disk_list {
	struct fio_disk *disks;
	size_t n;
	const struct sampler_snapshot *a, *b;
	uint64_t msec;
};

/* Add `name` (a partition as its disk) and, for md/dm, its members after
 * it; returns its index, or SIZE_MAX when the samples do not have it. */
static size_t add_disk(struct disk_list *l, const char *name, unsigned depth)
{
	const struct device_state *da = sampler_snapshot_find(l->a, name),
				  *db = sampler_snapshot_find(l->b, name);
	size_t idx;

	if (db && db->topo.kind == DEVICE_KIND_PARTITION && db->topo.parent[0] != '\0') {
		return add_disk(l, db->topo.parent, depth);
	}
	if (!da || !db || l->n >= ONCE_DISKS_MAX || depth > 4) {
		return SIZE_MAX;
	}
	for (size_t i = 0; i < l->n; i++) {
		if (strcmp(l->disks[i].name, name) == 0) {
			return i;
		}
	}
	idx = l->n++;
	fio_disk_from_raw(&da->raw, &db->raw, l->msec, &l->disks[idx]);
	for (unsigned k = 0; k < db->topo.n_members; k++) {
		size_t m = add_disk(l, db->topo.members[k], depth + 1);

		if (m != SIZE_MAX) {
			fio_disk_add_member(&l->disks[idx], &l->disks[m]);
		}
	}
	return idx;
}

size_t once_disks_finish(struct once_disks *d, const struct config *cfg, uint64_t end_usec,
			 struct fio_disk **ret)
{
	struct sampler_snapshot *last = NULL;
	struct disk_list l = {0};

	*ret = NULL;
	if (!d) {
		return 0;
	}
	last = window_end(d, end_usec);
	l.disks = calloc(ONCE_DISKS_MAX, sizeof(*l.disks));
	if (l.disks && last) {
		l.a = d->first;
		l.b = last;
		l.msec = (last->monotonic_usec - d->first->monotonic_usec) / USEC_PER_MSEC;
		for (size_t i = 0; i < cfg->n_probes; i++) {
			const struct probe_config *pc = &cfg->probes[i];
			char name[DISKSTATS_NAME_MAX];
			dev_t disk;

			if (targets_place(last->topology, pc->directory ? pc->directory : pc->filename, name,
					  &disk) == 0 &&
			    name[0] != '\0') {
				add_disk(&l, name, 0);
			}
		}
	}
	sampler_snapshot_unref(last);
	sampler_snapshot_unref(d->first);
	sampler_free(d->sampler);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
	if (l.n == 0) {
		free(l.disks);
		return 0;
	}
	*ret = l.disks;
	return l.n;
}
