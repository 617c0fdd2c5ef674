/* Where a probe target lives (a directory or file: the device of its
 * filesystem; a raw device path: that device), from a topology. */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include <sys/types.h>

#include "topology.h"

/* The device that holds `target`: by stat() first (a device node's st_rdev,
 * else the filesystem's st_dev), then by mountinfo (resolving symlinks when
 * the path exists here) for anonymous devices and paths that do not exist
 * yet. NULL when unknown, or when target or t is NULL. */
const struct topology_device *targets_device(const struct topology *t, const char *target);

/* Place a probe target: its device's name into ret_name
 * (DISKSTATS_NAME_MAX bytes) and, in *ret_disk, the device number of its
 * whole disk (the disk of a partition, the device itself otherwise). A
 * target on a filesystem without a block device (tmpfs, overlayfs) gets ""
 * and the filesystem's number. -ENODEV when the topology does not know it
 * (yet). */
int targets_place(const struct topology *t, const char *target, char *ret_name, dev_t *ret_disk);

/* One configured probe as every module refers to it: the daemon makes one
 * for each probe of a configuration (and keeps it across a reload while the
 * probe keeps its name and target); the registry, its snapshots, the
 * scheduler and the ceiling gate hold references, never copies or indexes.
 * name and target never change. The device comes from a topology alone
 * (targets_place_identity(), on the main thread after each sample) and
 * follows it: a filesystem mounted on the target later is the probe's
 * device from then on. Read it with probe_identity_device(), from any
 * thread. */
struct probe_identity {
	unsigned refcount; /* atomic */
	char *name;
	char *target; /* directory or filename */
	/* under lock: */
	pthread_mutex_t lock;
	bool is_resolved;
	char device[DISKSTATS_NAME_MAX]; /* the device the target lives on, "" when the
					  * filesystem has none (tmpfs, overlayfs) */
	dev_t disk;			 /* what the scheduler serialises runs on: the whole
					  * disk of device, or the filesystem's number without
					  * a device; 0 when unknown */
	dev_t dev;			 /* device's own number, 0 without a device */
	unsigned logical_block_size;	 /* device's, from the topology; 0 when unknown */
};

struct probe_identity *probe_identity_ref(struct probe_identity *id);
struct probe_identity *probe_identity_unref(struct probe_identity *id);

/* The device of `id` into ret_device (DISKSTATS_NAME_MAX bytes; may be
 * NULL) and *ret_disk (may be NULL). False while the topology has not
 * placed the target (then neither is written). Any thread. */
bool probe_identity_device(struct probe_identity *id, char *ret_device, dev_t *ret_disk);

/* The device number and logical block size the topology gave id's device;
 * false while unplaced or without either. Any thread. */
bool probe_identity_block_size(struct probe_identity *id, dev_t *ret_dev, unsigned *ret_size);

/* A new identity (refcount 1, not placed yet), NULL without memory. */
struct probe_identity *probe_identity_new(const char *name, const char *target);

/* Place `id` where topology t says its target is now; a target t does not
 * know (yet) keeps what it was. Main thread. */
void targets_place_identity(const struct topology *t, struct probe_identity *id);
