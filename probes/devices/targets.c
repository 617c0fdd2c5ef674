/* Where a probe target lives: the device that holds a directory or file
 * (stat()'s st_dev, then mountinfo), or that a raw device path names. See
 * targets.h. */
#include "targets.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "refcount.h"

/* The device the kernel says holds an existing absolute path: a device
 * node's st_rdev, else the filesystem's st_dev, which /sys/dev/block/MAJ:MIN
 * names for every block-backed filesystem, whether or not mountinfo shows
 * the mount (a chroot, some containers). NULL for an anonymous device
 * (tmpfs, overlayfs, NFS, a btrfs subvolume), a path that does not exist,
 * or a device the topology does not hold. */
static const struct topology_device *device_for_stat(const struct topology *t, const char *target)
{
	struct stat st;
	dev_t dev;

	if (target[0] != '/' || stat(target, &st) < 0) {
		return NULL;
	}
	dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	if (major(dev) == 0) {
		return NULL;
	}
	return topology_find_devnum(t, major(dev), minor(dev));
}

/* The device a path names: by stat() first, then by mountinfo (resolving
 * symlinks when the path exists here) for anonymous devices and paths that
 * do not exist yet. */
const struct topology_device *targets_device(const struct topology *t, const char *target)
{
	char resolved[PATH_MAX];
	const struct topology_device *d;

	if (!target || !t) {
		return NULL;
	}
	d = device_for_stat(t, target);
	if (d) {
		return d;
	}
	if (realpath(target, resolved)) {
		d = topology_device_for_path(t, resolved);
		if (d) {
			return d;
		}
	}
	return topology_device_for_path(t, target);
}

/* The mount a path is on, resolving symlinks when the path exists here. */
static const struct mountinfo_entry *mount_for_target(const struct topology *t, const char *target)
{
	char resolved[PATH_MAX];

	if (!target || !t) {
		return NULL;
	}
	return topology_mount_for_path(t, realpath(target, resolved) ? resolved : target);
}

int targets_place(const struct topology *t, const char *target, char *ret_name, dev_t *ret_disk)
{
	const struct topology_device *d = targets_device(t, target);
	const struct mountinfo_entry *m;
	struct stat st;

	if (d) {
		const struct topology_device *disk = d->parent != SIZE_MAX ? &t->devices[d->parent] : d;

		memcpy(ret_name, d->name, DISKSTATS_NAME_MAX);
		*ret_disk = makedev(disk->major, disk->minor);
		return 0;
	}
	/* a filesystem that no block device will ever hold (anonymous major
	 * 0: tmpfs, overlayfs): its runs are serialised on the filesystem,
	 * known by stat() even where mountinfo does not show it (a chroot) */
	if (target && target[0] == '/' && stat(target, &st) == 0 && major(st.st_dev) == 0) {
		ret_name[0] = '\0';
		*ret_disk = st.st_dev;
		return 0;
	}
	m = mount_for_target(t, target);
	if (!m || m->major != 0) {
		return -ENODEV;
	}
	ret_name[0] = '\0';
	*ret_disk = makedev(m->major, m->minor);
	return 0;
}

static void probe_identity_destroy(struct probe_identity *id)
{
	pthread_mutex_destroy(&id->lock);
	topology_unref(id->topo);
	free(id->name);
	free(id->target);
	free(id);
}

DEFINE_REFCOUNT(struct probe_identity, probe_identity, probe_identity_destroy);

struct probe_identity *probe_identity_new(const char *name, const char *target)
{
	struct probe_identity *id = calloc(1, sizeof(*id));

	if (!id) {
		return NULL;
	}
	id->refcount = 1;
	pthread_mutex_init(&id->lock, NULL);
	id->name = strdup(name);
	id->target = strdup(target);
	if (!id->name || !id->target) {
		return probe_identity_unref(id);
	}
	return id;
}

bool probe_identity_device(struct probe_identity *id, char *ret_device, dev_t *ret_disk)
{
	bool is_resolved;

	pthread_mutex_lock(&id->lock);
	is_resolved = id->is_resolved;
	if (is_resolved && ret_device) {
		memcpy(ret_device, id->device, sizeof(id->device));
	}
	if (is_resolved && ret_disk) {
		*ret_disk = id->disk;
	}
	pthread_mutex_unlock(&id->lock);
	return is_resolved;
}

void probe_identity_set_target_dev(struct probe_identity *id, dev_t dev)
{
	if (dev != 0) {
		pthread_mutex_lock(&id->lock);
		id->target_dev = dev;
		pthread_mutex_unlock(&id->lock);
	}
}

static dev_t identity_target_dev(struct probe_identity *id)
{
	dev_t dev;

	pthread_mutex_lock(&id->lock);
	dev = id->target_dev;
	pthread_mutex_unlock(&id->lock);
	return dev;
}

/* The device holding `target`, known by number `dev` (0: not yet) or else
 * by the mount table. Pure. */
static const struct topology_device *cached_device(const struct topology *t, const char *target, dev_t dev)
{
	const struct topology_device *d = NULL;

	if (!t) {
		return NULL;
	}
	if (major(dev) != 0) {
		d = topology_find_devnum(t, major(dev), minor(dev));
	}
	return d ? d : topology_device_for_path(t, target);
}

const struct topology_device *targets_identity_device(const struct topology *t, struct probe_identity *id)
{
	return cached_device(t, id->target, identity_target_dev(id));
}

/* targets_place() from a device number instead of a stat(). */
static int place_cached(const struct topology *t, const char *target, dev_t dev, char *ret_name,
			dev_t *ret_disk, const struct topology_device **ret_d)
{
	const struct topology_device *d = cached_device(t, target, dev);
	const struct mountinfo_entry *m;

	*ret_d = d;
	if (d) {
		const struct topology_device *disk = d->parent != SIZE_MAX ? &t->devices[d->parent] : d;

		memcpy(ret_name, d->name, DISKSTATS_NAME_MAX);
		*ret_disk = makedev(disk->major, disk->minor);
		return 0;
	}
	/* a filesystem without a block device (tmpfs, overlayfs, FUSE, NFS):
	 * runs are serialised on the filesystem */
	if (dev != 0 && major(dev) == 0) {
		ret_name[0] = '\0';
		*ret_disk = dev;
		return 0;
	}
	m = t ? topology_mount_for_path(t, target) : NULL;
	if (!m || m->major != 0) {
		return -ENODEV;
	}
	ret_name[0] = '\0';
	*ret_disk = makedev(m->major, m->minor);
	return 0;
}

static void identity_set_place(struct probe_identity *id, const char *device, dev_t disk,
			       const struct topology_device *d)
{
	pthread_mutex_lock(&id->lock);
	memcpy(id->device, device, sizeof(id->device));
	id->disk = disk;
	id->dev = d ? makedev(d->major, d->minor) : 0;
	id->logical_block_size = d ? d->topo.logical_block_size : 0;
	id->dev = d ? makedev(d->major, d->minor) : 0;
	id->logical_block_size = d ? d->topo.logical_block_size : 0;
	id->is_resolved = true;
	pthread_mutex_unlock(&id->lock);
}

void targets_place_identity(const struct topology *t, struct probe_identity *id)
{
	const struct topology_device *d;
	char device[DISKSTATS_NAME_MAX];
	struct topology *old = NULL;
	dev_t disk;

	pthread_mutex_lock(&id->lock);
	if (id->topo != t) {
		/* topologies are immutable; the count is the only thing written */
		old = id->topo;
		id->topo = topology_ref((struct topology *)t);
	}
	pthread_mutex_unlock(&id->lock);
	topology_unref(old);
	if (place_cached(t, id->target, identity_target_dev(id), device, &disk, &d) < 0) {
		return; /* not (yet) known: keep what it was */
	}
	identity_set_place(id, device, disk, d);
}

void targets_resolve_identity(struct probe_identity *id)
{
	const struct topology_device *d;
	char device[DISKSTATS_NAME_MAX];
	struct topology *t;
	struct stat st;
	dev_t disk;

	pthread_mutex_lock(&id->lock);
	t = topology_ref(id->topo);
	pthread_mutex_unlock(&id->lock);
	if (id->target[0] == '/' && stat(id->target, &st) == 0) {
		probe_identity_set_target_dev(id, S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev);
	}
	if (t && place_cached(t, id->target, identity_target_dev(id), device, &disk, &d) == 0) {
		identity_set_place(id, device, disk, d);
	}
	topology_unref(t);
}

bool probe_identity_block_size(struct probe_identity *id, dev_t *ret_dev, unsigned *ret_size)
{
	bool has;

	pthread_mutex_lock(&id->lock);
	has = id->is_resolved && id->dev != 0 && id->logical_block_size != 0;
	if (has) {
		*ret_dev = id->dev;
		*ret_size = id->logical_block_size;
	}
	pthread_mutex_unlock(&id->lock);
	return has;
}
