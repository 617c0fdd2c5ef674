/* Block device topology from sysfs (partition -> whole disk, md/dm ->
 * members, block size, rotational, model, size), mount points from
 * mountinfo (mount -> device by major:minor) and the Kubernetes
 * PersistentVolumes the kubelet's mount paths among them name (kubelet.h).
 * Built when the set of devices changes and every minute, then immutable
 * and refcounted, so that sampler snapshots can point at its strings. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "diskstats.h"
#include "mountinfo.h"
#include "name_index.h"

/* How deep md/dm devices may nest (dm over md over partitions ...) before
 * the topology stops following members. */
#define TOPOLOGY_MAX_DEPTH 8

struct topology_device {
	char name[DISKSTATS_NAME_MAX];
	unsigned major, minor;
	struct device_topology topo; /* strings owned by the topology, never NULL */
	char *backing_file;	     /* loop: its file, "" when unbound or not a loop */
	bool is_unused_loop;	     /* loop with size 0 or no backing file */
	size_t parent;		     /* index of the whole disk of a partition, SIZE_MAX */
	size_t *members;	     /* indexes of topo.members present in the list */
	size_t n_members;
};

struct topology {
	unsigned refcount;		 /* atomic */
	struct topology_device *devices; /* in the order of the list it was built from */
	size_t n_devices;
	struct mountinfo_entry *mounts;
	size_t n_mounts;
	struct name_index by_name;
};

/* Build the topology of the n devices in `devs` (a parsed diskstats) from
 * SYSFS/class/block (falling back to SYSFS/block) and PROCFS/self/mountinfo.
 * Missing sysfs attributes leave defaults (a fixture or an old kernel need
 * not have all of them); a missing mountinfo means no mount points. Returns
 * 0 and a topology (refcount 1), or -ENOMEM. */
int topology_build(const char *procfs, const char *sysfs, const struct diskstats_raw *devs, size_t n,
		   struct topology **ret);

struct topology *topology_ref(struct topology *t);
struct topology *topology_unref(struct topology *t);

/* Lookups; NULL when absent. */
const struct topology_device *topology_find(const struct topology *t, const char *name);
const struct topology_device *topology_find_devnum(const struct topology *t, unsigned major, unsigned minor);
const struct topology_device *topology_find_dm_name(const struct topology *t, const char *dm_name);

/* The mount holding `path` (longest mount-point prefix on component
 * boundaries; the path need not exist). Later mounts over the same point win,
 * as in the kernel. NULL when none. */
const struct mountinfo_entry *topology_mount_for_path(const struct topology *t, const char *path);

/* The block device holding `path`: a device node path ("/dev/sdb1",
 * "/dev/mapper/vg0-data") -> that device; any other path -> its mount -> the
 * device by major:minor (or, for filesystems such as btrfs that report an
 * anonymous major 0, by the mount's source "/dev/NAME"). Pure: no stat() or
 * symlink resolution of the path (the caller may realpath() it first). NULL
 * when unknown. */
const struct topology_device *topology_device_for_path(const struct topology *t, const char *path);
