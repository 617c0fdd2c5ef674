/* Where a probe target lives (a directory or file: the device of its
 * filesystem; a raw device path: that device), from a topology. */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include <sys/types.h>

#include "topology.h"

/* targets_device() and targets_place() make filesystem calls (stat(),
 * realpath()) that a filesystem which stopped answering blocks for good:
 * never on the main loop or under a lock (the daemon places its probes
 * with targets_place_identity()). */

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
 * name and target never change. The device comes from a topology
 * (targets_place_identity(), on the main thread after each sample) and what
 * the probe's own runs found (target_dev, from the descriptor they opened):
 * placing it makes no filesystem call, so that a target on a filesystem
 * that stopped answering (NFS, FUSE) cannot stop the main loop. Read it
 * with probe_identity_device(), from any thread. */
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
	dev_t target_dev;		 /* the last run's probe_result.target_dev; 0 before */
	struct topology *topo;		 /* the topology it was last placed on, a reference */
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

/* Note where a run of `id` found its target (probe_result.target_dev; 0 is
 * ignored). Any thread. */
void probe_identity_set_target_dev(struct probe_identity *id, dev_t dev);

/* The device of `id` on t without a filesystem call: by the device number
 * its runs found, else by the mount table for the path as written. NULL when
 * unknown (yet). */
const struct topology_device *targets_identity_device(const struct topology *t, struct probe_identity *id);

/* Place `id` where topology t and its runs say its target is now (no
 * filesystem call); a target not known (yet) keeps what it was. Main
 * thread. */
void targets_place_identity(const struct topology *t, struct probe_identity *id);

/* Place `id` by a stat() of its target on the topology it was last placed
 * on: for a target that the mount table does not show (a chroot) before
 * its first run. Blocks while the target's filesystem does: on the probe's
 * own thread only, never the main loop's. */
void targets_resolve_identity(struct probe_identity *id);
