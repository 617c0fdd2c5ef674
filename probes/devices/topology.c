/* Block device topology from sysfs, and mount points and the kubelet's
 * volumes from mountinfo. */
#include "topology.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ebs_nvme.h"
#include "fileio.h"
#include "kubelet.h"
#include "macro.h"
#include "multipath.h"
#include "refcount.h"
#include "strutil.h"
#include "sysfs.h"
#include "units.h"

#define MOUNTINFO_MAX_SIZE (16U << 20)

static void name_from_sysfs(char *name)
{
	for (char *p = name; *p; p++) {
		if (*p == '!') {
			*p = '/';
		}
	}
}

/* The whole disk of a partition: the directory that contains it once the
 * class/block symlink is resolved (.../block/sda/sda1 -> "sda"). */
static void partition_parent(const char *dir, char *ret, size_t len)
{
	char resolved[PATH_MAX], *slash;

	ret[0] = '\0';
	if (!realpath(dir, resolved)) {
		return;
	}
	slash = strrchr(resolved, '/');
	if (!slash || slash == resolved) {
		return;
	}
	*slash = '\0';
	slash = strrchr(resolved, '/');
	if (!slash) {
		return;
	}
	snprintf(ret, len, "%s", slash + 1);
	name_from_sysfs(ret);
}

static int cmp_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++) {
		free(names[i]);
	}
	free(names);
}

/* Keeps an entry of a directory read by read_names(); NULL keeps all. */
typedef bool (*name_filter_fn)(const char *name, const char *arg);

/* The entries of directory `path` that `keep` keeps (at most
 * DEVICE_MAX_MEMBERS), sorted; none when it cannot be opened. */
static int read_names(const char *path, name_filter_fn keep, const char *arg, char ***ret, unsigned *ret_n)
{
	char **names;
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	*ret = NULL;
	*ret_n = 0;
	d = opendir(path);
	if (!d) {
		return 0;
	}
	names = calloc(DEVICE_MAX_MEMBERS, sizeof(*names));
	if (!names) {
		closedir(d);
		return -ENOMEM;
	}
	while ((de = readdir(d)) && n < DEVICE_MAX_MEMBERS) {
		if (de->d_name[0] == '.' || (keep && !keep(de->d_name, arg))) {
			continue;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			closedir(d);
			free_names(names, n);
			return -ENOMEM;
		}
		name_from_sysfs(names[n]);
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_strings);
	if (n == 0) {
		free(names);
		names = NULL;
	}
	*ret = names;
	*ret_n = (unsigned)n;
	return 0;
}

/* The entries of DIR/SUB, sorted. */
static int read_subdir(const char *dir, const char *sub, char ***ret, unsigned *ret_n)
{
	char path[PATH_MAX];

	*ret = NULL;
	*ret_n = 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, sub) >= sizeof(path)) {
		return 0;
	}
	return read_names(path, NULL, NULL, ret, ret_n);
}

static bool is_path_of(const char *name, const char *head)
{
	char h[DISKSTATS_NAME_MAX];

	return multipath_head_of(name, h, sizeof(h)) && strcmp(h, head) == 0;
}

/* An NVMe multipath head is a device of its subsystem, not of a controller:
 * its sysfs link goes to .../virtual/nvme-subsystem/nvme-subsysN/block/. */
static bool is_multipath_head(const char *dir, const char *name)
{
	char target[PATH_MAX];
	ssize_t n;

	if (!has_prefix_number(name, "nvme")) {
		return false;
	}
	n = readlink(dir, target, sizeof(target) - 1);
	if (n < 0) {
		return false;
	}
	target[n] = '\0';
	return strstr(target, "/nvme-subsystem/") != NULL;
}

/* An NVMe multipath head's hidden paths, its members as an md array's
 * are: the head's multipath/ links where the kernel has them, else the
 * block devices named as its paths (nvme1c1n1, nvme1c2n1 for nvme1n1). */
static int read_paths(const char *sysfs, const char *dir, const char *head, char ***ret, unsigned *ret_n)
{
	static const char *const block_dirs[] = {"class/block", "block"};
	char path[PATH_MAX];
	int r = read_subdir(dir, "multipath", ret, ret_n);

	for (size_t i = 0; r >= 0 && *ret_n == 0 && i < ELEMENTSOF(block_dirs); i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", sysfs, block_dirs[i]) < sizeof(path)) {
			r = read_names(path, is_path_of, head, ret, ret_n);
		}
	}
	return r;
}

static void topology_device_done(struct topology_device *d)
{
	free_names(d->topo.members, d->topo.n_members);
	free(d->topo.mountpoints);
	free_names(d->topo.mountpoint_list, d->topo.n_mountpoints);
	free(d->topo.model);
	free(d->topo.dm_name);
	free(d->topo.raid_level);
	free(d->topo.volume_id);
	kubelet_volumes_free(d->topo.persistentvolumes, d->topo.n_persistentvolumes);
	free(d->backing_file);
	free(d->members);
}

/* An EBS volume's serial is its id without the dash, on NVMe
 * (device/serial) and, in labs that copy it, on virtio (serial). NULL only
 * on ENOMEM. */
static char *read_volume_id(const char *dir)
{
	char serial[128], id[EBS_NVME_VOLUME_ID_MAX] = "";

	if (dir &&
	    (sysfs_attr_read(dir, "device/serial", serial, sizeof(serial)) >= 0 ||
	     sysfs_attr_read(dir, "serial", serial, sizeof(serial)) >= 0) &&
	    ebs_nvme_is_volume_serial(serial)) {
		ebs_nvme_volume_id_from_serial(serial, id);
	}
	return strdup(id);
}

/* The kind of device d (and a partition's parent) from its sysfs
 * directory `dir` (NULL without one), else from its name. */
static void read_kind(struct topology_device *d, const char *dir)
{
	d->topo.kind = DEVICE_KIND_DISK;
	if (dir && sysfs_attr_exists(dir, "partition")) {
		d->topo.kind = DEVICE_KIND_PARTITION;
		partition_parent(dir, d->topo.parent, sizeof(d->topo.parent));
	} else if ((dir && sysfs_attr_exists(dir, "md")) || (!dir && has_prefix_number(d->name, "md"))) {
		d->topo.kind = DEVICE_KIND_MD;
	} else if ((dir && sysfs_attr_exists(dir, "dm")) || has_prefix_number(d->name, "dm-")) {
		d->topo.kind = DEVICE_KIND_DM;
	} else if (d->major == 7 || has_prefix_number(d->name, "loop")) {
		d->topo.kind = DEVICE_KIND_LOOP;
	}
}

/* Everything sysfs says about one device; the cross-device links (parent,
 * members, mount points) come later. */
static int read_device(const char *sysfs, struct topology_device *d)
{
	char dir[PATH_MAX], qdir[PATH_MAX];
	uint64_t v;
	bool has_dir;
	int r;

	has_dir = sysfs_block_dir(sysfs, d->name, dir, sizeof(dir)) == 0;
	read_kind(d, has_dir ? dir : NULL);

	d->topo.raid_level =
	    has_dir && d->topo.kind == DEVICE_KIND_MD ? sysfs_attr_strdup(dir, "md/level") : strdup("");
	d->topo.dm_name =
	    has_dir && d->topo.kind == DEVICE_KIND_DM ? sysfs_attr_strdup(dir, "dm/name") : strdup("");
	d->backing_file = has_dir && d->topo.kind == DEVICE_KIND_LOOP
			      ? sysfs_attr_strdup(dir, "loop/backing_file")
			      : strdup("");
	if (!d->topo.raid_level || !d->topo.dm_name || !d->backing_file) {
		return -ENOMEM;
	}
	if (has_dir && sysfs_attr_u64(dir, "size", &v) >= 0 && v <= UINT64_MAX / 512) {
		d->topo.size_bytes = v * 512;
	}
	d->is_unused_loop =
	    d->topo.kind == DEVICE_KIND_LOOP && (d->topo.size_bytes == 0 || d->backing_file[0] == '\0');

	if (has_dir) {
		r = read_subdir(dir, "slaves", &d->topo.members, &d->topo.n_members);
		if (r >= 0 && d->topo.n_members == 0 && d->topo.kind == DEVICE_KIND_DISK &&
		    is_multipath_head(dir, d->name)) {
			r = read_paths(sysfs, dir, d->name, &d->topo.members, &d->topo.n_members);
		}
		if (r < 0) {
			return r;
		}
	}

	/* queue/ and device/ belong to the whole disk */
	if (d->topo.kind == DEVICE_KIND_PARTITION && d->topo.parent[0] != '\0') {
		has_dir = sysfs_block_dir(sysfs, d->topo.parent, qdir, sizeof(qdir)) == 0;
	} else {
		snprintf(qdir, sizeof(qdir), "%s", dir);
	}
	if (has_dir && sysfs_attr_u64(qdir, "queue/logical_block_size", &v) >= 0 && v <= UINT32_MAX) {
		d->topo.logical_block_size = (unsigned)v;
	}
	if (has_dir && sysfs_attr_u64(qdir, "queue/rotational", &v) >= 0) {
		d->topo.is_rotational = v != 0;
	}
	d->topo.model = has_dir ? sysfs_attr_strdup(qdir, "device/model") : strdup("");
	d->topo.volume_id = read_volume_id(has_dir ? qdir : NULL);
	if (!d->topo.model || !d->topo.volume_id) {
		return -ENOMEM;
	}
	return 0;
}

static const char *device_name_get(const void *base, size_t i)
{
	return ((const struct topology_device *)base)[i].name;
}

const struct topology_device *topology_find(const struct topology *t, const char *name)
{
	size_t i;

	if (!t) {
		return NULL;
	}
	i = name_index_find(&t->by_name, t->devices, device_name_get, name);
	return i == SIZE_MAX ? NULL : &t->devices[i];
}

const struct topology_device *topology_find_devnum(const struct topology *t, unsigned major, unsigned minor)
{
	for (size_t i = 0; t && i < t->n_devices; i++) {
		if (t->devices[i].major == major && t->devices[i].minor == minor) {
			return &t->devices[i];
		}
	}
	return NULL;
}

const struct topology_device *topology_find_dm_name(const struct topology *t, const char *dm_name)
{
	for (size_t i = 0; t && i < t->n_devices; i++) {
		if (t->devices[i].topo.kind == DEVICE_KIND_DM &&
		    strcmp(t->devices[i].topo.dm_name, dm_name) == 0) {
			return &t->devices[i];
		}
	}
	return NULL;
}

/* Parent and member indexes. */
static int link_devices(struct topology *t)
{
	for (size_t i = 0; i < t->n_devices; i++) {
		struct topology_device *d = &t->devices[i];
		const struct topology_device *p;

		d->parent = SIZE_MAX;
		if (d->topo.kind == DEVICE_KIND_PARTITION) {
			p = topology_find(t, d->topo.parent);
			d->parent = p ? (size_t)(p - t->devices) : SIZE_MAX;
		}
		if (d->topo.n_members > 0) {
			d->members = calloc(d->topo.n_members, sizeof(*d->members));
			if (!d->members) {
				return -ENOMEM;
			}
			for (unsigned k = 0; k < d->topo.n_members; k++) {
				p = topology_find(t, d->topo.members[k]);
				if (p) {
					d->members[d->n_members++] = (size_t)(p - t->devices);
				}
			}
		}
	}
	return 0;
}

/* A mount whose filesystem reports an anonymous device (btrfs: 0:NN) is
 * attributed through its source when that names a block device. */
static const struct topology_device *mount_device(const struct topology *t, const struct mountinfo_entry *m)
{
	if (m->major != 0) {
		return topology_find_devnum(t, m->major, m->minor);
	}
	/* only btrfs: any user may mount FUSE with fsname=/dev/nvme0n1, which
	 * must not attach their paths to a real device's labels */
	if (strcmp(m->fstype, "btrfs") == 0 && strncmp(m->source, "/dev/", 5) == 0) {
		return topology_find(t, m->source + 5);
	}
	return NULL;
}

/* Mount point `mp` on device d: once each, DEVICE_MAX_MOUNTPOINTS at most. */
static int add_mountpoint(struct topology_device *d, const char *mp)
{
	struct device_topology *ti = &d->topo;
	char **v;

	for (size_t i = 0; i < ti->n_mountpoints; i++) {
		if (strcmp(ti->mountpoint_list[i], mp) == 0) {
			return 0;
		}
	}
	if (ti->n_mountpoints == DEVICE_MAX_MOUNTPOINTS) {
		return 0;
	}
	v = realloc(ti->mountpoint_list, (ti->n_mountpoints + 1) * sizeof(*v));
	if (!v) {
		return -ENOMEM;
	}
	ti->mountpoint_list = v;
	v[ti->n_mountpoints] = strdup(mp);
	if (!v[ti->n_mountpoints]) {
		return -ENOMEM;
	}
	ti->n_mountpoints++;
	return 0;
}

/* iopsd's own probe directory, DIR/.iopsd, where systemd's ReadWritePaths=
 * bind-mounts it onto itself in the unit's namespace: not a mount point of
 * the volume (its label would read "/data,/data/.iopsd"). */
static bool is_probe_directory(const struct mountinfo_entry *m)
{
	const char *base = strrchr(m->mountpoint, '/');

	return base && strcmp(base, "/.iopsd") == 0;
}

/* Each device's mount points, and its label of them joined. */
static int assign_mountpoints(struct topology *t)
{
	for (size_t i = 0; i < t->n_mounts; i++) {
		const struct topology_device *d = mount_device(t, &t->mounts[i]);
		int r = d && !is_probe_directory(&t->mounts[i])
			    ? add_mountpoint(&t->devices[d - t->devices], t->mounts[i].mountpoint)
			    : 0;

		if (r < 0) {
			return r;
		}
	}
	for (size_t i = 0; i < t->n_devices; i++) {
		struct device_topology *ti = &t->devices[i].topo;

		ti->mountpoints =
		    device_names_join_new((const char *const *)ti->mountpoint_list, ti->n_mountpoints);
		if (!ti->mountpoints) {
			return -ENOMEM;
		}
	}
	return 0;
}

/* A raw block volume's device node bind-mounted by the kubelet: a mount
 * of devtmpfs (st_dev is devtmpfs's, not the node's) whose root is the
 * node, "/nvme1n1". Only devtmpfs, whose files are the nodes the kernel
 * names after its devices: another filesystem's root names no device. */
static const struct topology_device *device_node_mount(const struct topology *t,
						       const struct mountinfo_entry *m)
{
	if (strcmp(m->fstype, "devtmpfs") != 0 || m->root[0] != '/' || m->root[1] == '\0') {
		return NULL;
	}
	return topology_find(t, m->root + 1);
}

/* Each device's PersistentVolumes and the pods that mount them, from the
 * kubelet's paths among the mounts: a filesystem's mounts, and a raw block
 * volume's device node bind-mounted. */
static int assign_persistentvolumes(struct topology *t)
{
	for (size_t i = 0; i < t->n_mounts; i++) {
		const struct mountinfo_entry *m = &t->mounts[i];
		const struct topology_device *d;
		struct device_topology *ti;
		struct kubelet_volume v;
		int r;

		if (!kubelet_volume_parse(m->mountpoint, &v)) {
			continue;
		}
		d = mount_device(t, m);
		d = d ? d : device_node_mount(t, m);
		if (!d) {
			continue;
		}
		ti = &t->devices[d - t->devices].topo;
		r = kubelet_volume_add(&ti->persistentvolumes, &ti->n_persistentvolumes, &v);
		if (r < 0) {
			return r;
		}
	}
	return 0;
}

static int read_mounts(const char *procfs, struct topology *t)
{
	_cleanup_free_ char *path = path_join(procfs, "self/mountinfo");
	_cleanup_free_ char *buf = NULL;
	int r;

	if (!path) {
		return -ENOMEM;
	}
	r = read_virtual_file(path, MOUNTINFO_MAX_SIZE, &buf);
	if (r < 0) {
		/* no mountinfo (a bare fixture): no mount points */
		return r == -ENOMEM ? r : 0;
	}
	r = mountinfo_parse(buf, &t->mounts);
	if (r < 0) {
		return r;
	}
	t->n_mounts = (size_t)r;
	return 0;
}

static void topology_destroy(struct topology *t)
{
	for (size_t i = 0; i < t->n_devices; i++) {
		topology_device_done(&t->devices[i]);
	}
	free(t->devices);
	mountinfo_free(t->mounts, t->n_mounts);
	name_index_done(&t->by_name);
	free(t);
}

DEFINE_REFCOUNT(struct topology, topology, topology_destroy);

DEFINE_TRIVIAL_CLEANUP_FUNC(struct topology *, topology_unref);

int topology_build(const char *procfs, const char *sysfs, const struct diskstats_raw *devs, size_t n,
		   struct topology **ret)
{
	_cleanup_(topology_unrefp) struct topology *t = NULL;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t) {
		return -ENOMEM;
	}
	t->refcount = 1;
	t->devices = calloc(n ? n : 1, sizeof(*t->devices));
	if (!t->devices) {
		return -ENOMEM;
	}
	t->n_devices = n;
	for (size_t i = 0; i < n; i++) {
		struct topology_device *d = &t->devices[i];

		memcpy(d->name, devs[i].name, sizeof(d->name));
		d->major = devs[i].major;
		d->minor = devs[i].minor;
		r = read_device(sysfs, d);
		if (r < 0) {
			return r;
		}
	}
	r = name_index_build(&t->by_name, t->devices, n, device_name_get);
	if (r < 0) {
		return r;
	}
	r = link_devices(t);
	if (r < 0) {
		return r;
	}
	r = read_mounts(procfs, t);
	if (r < 0) {
		return r;
	}
	r = assign_mountpoints(t);
	if (r < 0) {
		return r;
	}
	r = assign_persistentvolumes(t);
	if (r < 0) {
		return r;
	}
	*ret = TAKE_PTR(t);
	return 0;
}

/* Does mount point `mp` contain `path` (on a component boundary)? */
static size_t mount_prefix_len(const char *mp, const char *path)
{
	size_t n = strlen(mp);

	if (strcmp(mp, "/") == 0) {
		return path[0] == '/' ? 1 : 0;
	}
	if (strncmp(mp, path, n) == 0 && (path[n] == '\0' || path[n] == '/')) {
		return n;
	}
	return 0;
}

const struct mountinfo_entry *topology_mount_for_path(const struct topology *t, const char *path)
{
	const struct mountinfo_entry *best = NULL;
	size_t best_len = 0;

	for (size_t i = 0; t && i < t->n_mounts; i++) {
		size_t len = mount_prefix_len(t->mounts[i].mountpoint, path);

		/* ">=": a later mount over the same point hides the earlier one */
		if (len > 0 && len >= best_len) {
			best = &t->mounts[i];
			best_len = len;
		}
	}
	return best;
}

const struct topology_device *topology_device_for_path(const struct topology *t, const char *path)
{
	const struct mountinfo_entry *m;

	if (!t || !path) {
		return NULL;
	}
	if (strncmp(path, "/dev/mapper/", 12) == 0) {
		return topology_find_dm_name(t, path + 12);
	}
	if (strncmp(path, "/dev/", 5) == 0 && topology_find(t, path + 5)) {
		return topology_find(t, path + 5);
	}
	m = topology_mount_for_path(t, path);
	return m ? mount_device(t, m) : NULL;
}
