/* The disks fio would list for the run's targets, from two samples. */
#include "once_disks.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sampler.h"
#include "targets.h"
#include "timeutil.h"

/* fio follows slaves/ one level per device; nesting beyond this is not an
 * array anyone builds. */
#define ONCE_DISKS_MAX 64

struct once_disks {
	struct sampler *sampler;
	struct sampler_snapshot *first;
};

struct once_disks *once_disks_start(const struct config *cfg, const char *procfs, const char *sysfs)
{
	struct once_disks *d = calloc(1, sizeof(*d));

	if (!d) {
		return NULL;
	}
	if (sampler_new(procfs, sysfs, cfg, &d->sampler) < 0 || sampler_sample(d->sampler, &d->first) < 0) {
		sampler_free(d->sampler);
		free(d);
		return NULL;
	}
	return d;
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

size_t once_disks_finish(struct once_disks *d, const struct config *cfg, struct fio_disk **ret)
{
	struct sampler_snapshot *last = NULL;
	struct disk_list l = {0};

	*ret = NULL;
	if (!d) {
		return 0;
	}
	l.disks = calloc(ONCE_DISKS_MAX, sizeof(*l.disks));
	if (l.disks && sampler_sample(d->sampler, &last) == 0) {
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
	free(d);
	if (l.n == 0) {
		free(l.disks);
		return 0;
	}
	*ret = l.disks;
	return l.n;
}
