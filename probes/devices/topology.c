/* Block device topology from sysfs, and mount points from mountinfo. */
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
#include "macro.h"
#include "refcount.h"
#include "strutil.h"
#include "units.h"

#define MOUNTINFO_MAX_SIZE (16U << 20)

/* A growable comma-separated list of names. */
struct name_list {
	char *s;
	size_t len, cap;
};

static bool name_list_contains(const struct name_list *l, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = l->s; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (len == n && memcmp(p, name, n) == 0) {
			return true;
		}
		if (!comma) {
			break;
		}
		p = comma + 1;
	}
	return false;
}

/* Append `name` unless already present. */
static int name_list_add(struct name_list *l, const char *name)
{
	size_t n = strlen(name), need;

	if (name_list_contains(l, name)) {
		return 0;
	}
	need = l->len + n + 2;
	if (need > l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char *s;

		while (cap < need) {
			cap *= 2;
		}
		s = realloc(l->s, cap);
		if (!s) {
			return -ENOMEM;
		}
		l->s = s;
		l->cap = cap;
	}
	if (l->len > 0) {
		l->s[l->len++] = ',';
	}
	memcpy(l->s + l->len, name, n + 1);
	l->len += n;
	return 0;
}

/* Hand the list out as a string ("" when empty); NULL on ENOMEM. */
static char *name_list_take(struct name_list *l)
{
	char *s = l->s ? l->s : strdup("");

	*l = (struct name_list){0};
	return s;
}

size_t mountinfo_unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

static void mountinfo_entry_done(struct mountinfo_entry *e)
{
	free(e->root);
	free(e->mountpoint);
	free(e->fstype);
	free(e->source);
}

void mountinfo_free(struct mountinfo_entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++) {
		mountinfo_entry_done(&e[i]);
	}
	free(e);
}

static char *dup_unescaped(const char *s)
{
	char *d = strdup(s);

	if (d) {
		mountinfo_unescape(d);
	}
	return d;
}

static bool parse_devnum(const char *s, unsigned *ret_major, unsigned *ret_minor)
{
	unsigned long long major, minor;
	char *end;

	if (*s < '0' || *s > '9') {
		return false;
	}
	errno = 0;
	major = strtoull(s, &end, 10);
	if (errno != 0 || *end != ':' || major > UINT32_MAX || end[1] < '0' || end[1] > '9') {
		return false;
	}
	minor = strtoull(end + 1, &end, 10);
	if (errno != 0 || *end != '\0' || minor > UINT32_MAX) {
		return false;
	}
	*ret_major = (unsigned)major;
	*ret_minor = (unsigned)minor;
	return true;
}

/* One line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE
 * SOURCE SUPEROPTS". Returns 0, -EINVAL for a malformed line, -ENOMEM. */
static int mountinfo_parse_line(char *line, struct mountinfo_entry *ret)
{
	char *fields[64], *save = NULL, *tok;
	size_t n = 0, sep = 0;
	struct mountinfo_entry e = {0};

	for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (n == ELEMENTSOF(fields)) {
			return -EINVAL;
		}
		if (sep == 0 && n >= 6 && strcmp(tok, "-") == 0) {
			sep = n;
		}
		fields[n++] = tok;
	}
	if (sep == 0 || n < sep + 3) {
		return -EINVAL;
	}
	if (!parse_devnum(fields[2], &e.major, &e.minor)) {
		return -EINVAL;
	}
	e.root = dup_unescaped(fields[3]);
	e.mountpoint = dup_unescaped(fields[4]);
	e.fstype = dup_unescaped(fields[sep + 1]);
	e.source = dup_unescaped(fields[sep + 2]);
	if (!e.root || !e.mountpoint || !e.fstype || !e.source) {
		mountinfo_entry_done(&e);
		return -ENOMEM;
	}
	*ret = e;
	return 0;
}

int mountinfo_parse(const char *buf, struct mountinfo_entry **ret)
{
	_cleanup_free_ char *copy = strdup(buf);
	struct mountinfo_entry *entries = NULL;
	size_t n = 0, cap = 0;
	char *line, *save = NULL;

	if (!copy) {
		return -ENOMEM;
	}
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct mountinfo_entry e;
		int r;

		r = mountinfo_parse_line(line, &e);
		if (r == -EINVAL) {
			continue;
		}
		if (r < 0) {
			mountinfo_free(entries, n);
			return r;
		}
		if (n == cap) {
			size_t c = cap ? cap * 2 : 32;
			struct mountinfo_entry *a = reallocarray(entries, c, sizeof(*a));

			if (!a) {
				mountinfo_entry_done(&e);
				mountinfo_free(entries, n);
				return -ENOMEM;
			}
			entries = a;
			cap = c;
		}
		entries[n++] = e;
	}
	if (n > INT_MAX) {
		mountinfo_free(entries, n);
		return -E2BIG;
	}
	*ret = entries;
	return (int)n;
}

static int read_attr(const char *base, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", base, attr) >= sizeof(path)) {
		return -ENAMETOOLONG;
	}
	return read_one_line(path, buf, len);
}

static int read_u64_attr(const char *base, const char *attr, uint64_t *ret)
{
	char buf[32];
	int r;

	r = read_attr(base, attr, buf, sizeof(buf));
	return r < 0 ? r : parse_uint64(buf, ret);
}

static bool has_attr(const char *base, const char *attr)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", base, attr) >= sizeof(path)) {
		return false;
	}
	return access(path, F_OK) == 0;
}

static char *read_string_attr(const char *base, const char *attr)
{
	char buf[PATH_MAX];

	if (read_attr(base, attr, buf, sizeof(buf)) < 0) {
		buf[0] = '\0';
	}
	return strdup(buf);
}

/* sysfs spells a '/' in a block device name as '!' (cciss!c0d0). */
static void name_to_sysfs(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s", name);
	for (char *p = buf; *p; p++) {
		if (*p == '/') {
			*p = '!';
		}
	}
}

static void name_from_sysfs(char *name)
{
	for (char *p = name; *p; p++) {
		if (*p == '!') {
			*p = '/';
		}
	}
}

/* The sysfs directory of a device: SYSFS/class/block/NAME (every disk and
 * partition), else SYSFS/block/NAME (disks only). */
static int device_sysfs_dir(const char *sysfs, const char *name, char *buf, size_t len)
{
	char sname[DISKSTATS_NAME_MAX];

	name_to_sysfs(name, sname, sizeof(sname));
	if ((size_t)snprintf(buf, len, "%s/class/block/%s", sysfs, sname) >= len) {
		return -ENAMETOOLONG;
	}
	if (access(buf, F_OK) == 0) {
		return 0;
	}
	if ((size_t)snprintf(buf, len, "%s/block/%s", sysfs, sname) >= len) {
		return -ENAMETOOLONG;
	}
	return access(buf, F_OK) == 0 ? 0 : -ENOENT;
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

/* The entries of DIR/slaves, sorted, as "a,b". */
static int read_slaves(const char *dir, char **ret, unsigned *ret_n)
{
	char path[PATH_MAX], *names[DEVICE_MAX_MEMBERS];
	struct name_list list = {0};
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	int r = 0;

	*ret_n = 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/slaves", dir) >= sizeof(path)) {
		*ret = strdup("");
		return *ret ? 0 : -ENOMEM;
	}
	d = opendir(path);
	if (d) {
		while ((de = readdir(d)) && n < ELEMENTSOF(names)) {
			if (de->d_name[0] == '.') {
				continue;
			}
			names[n] = strdup(de->d_name);
			if (!names[n]) {
				r = -ENOMEM;
				break;
			}
			name_from_sysfs(names[n]);
			n++;
		}
		closedir(d);
	}
	qsort(names, n, sizeof(names[0]), cmp_strings);
	for (size_t i = 0; i < n; i++) {
		if (r == 0) {
			r = name_list_add(&list, names[i]);
		}
		free(names[i]);
	}
	if (r < 0) {
		free(list.s);
		return r;
	}
	*ret = name_list_take(&list);
	if (!*ret) {
		return -ENOMEM;
	}
	*ret_n = (unsigned)n;
	return 0;
}

static void topology_device_done(struct topology_device *d)
{
	free(d->topo.members);
	free(d->topo.mountpoints);
	free(d->topo.model);
	free(d->topo.physical_members);
	free(d->topo.dm_name);
	free(d->topo.raid_level);
	free(d->topo.volume_id);
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
	    (read_attr(dir, "device/serial", serial, sizeof(serial)) >= 0 ||
	     read_attr(dir, "serial", serial, sizeof(serial)) >= 0) &&
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
	if (dir && has_attr(dir, "partition")) {
		d->topo.kind = DEVICE_KIND_PARTITION;
		partition_parent(dir, d->topo.parent, sizeof(d->topo.parent));
	} else if ((dir && has_attr(dir, "md")) || (!dir && has_prefix_number(d->name, "md"))) {
		d->topo.kind = DEVICE_KIND_MD;
	} else if ((dir && has_attr(dir, "dm")) || has_prefix_number(d->name, "dm-")) {
		d->topo.kind = DEVICE_KIND_DM;
	} else if (d->major == 7 || has_prefix_number(d->name, "loop")) {
		d->topo.kind = DEVICE_KIND_LOOP;
	}
}

/* Everything sysfs says about one device; the cross-device links (parent,
 * members, physical members, mount points) come later. */
static int read_device(const char *sysfs, struct topology_device *d)
{
	char dir[PATH_MAX], qdir[PATH_MAX];
	uint64_t v;
	bool has_dir;
	int r;

	has_dir = device_sysfs_dir(sysfs, d->name, dir, sizeof(dir)) == 0;
	read_kind(d, has_dir ? dir : NULL);

	d->topo.raid_level =
	    has_dir && d->topo.kind == DEVICE_KIND_MD ? read_string_attr(dir, "md/level") : strdup("");
	d->topo.dm_name =
	    has_dir && d->topo.kind == DEVICE_KIND_DM ? read_string_attr(dir, "dm/name") : strdup("");
	d->backing_file = has_dir && d->topo.kind == DEVICE_KIND_LOOP
			      ? read_string_attr(dir, "loop/backing_file")
			      : strdup("");
	if (!d->topo.raid_level || !d->topo.dm_name || !d->backing_file) {
		return -ENOMEM;
	}
	if (has_dir && read_u64_attr(dir, "size", &v) >= 0 && v <= UINT64_MAX / 512) {
		d->topo.size_bytes = v * 512;
	}
	d->is_unused_loop =
	    d->topo.kind == DEVICE_KIND_LOOP && (d->topo.size_bytes == 0 || d->backing_file[0] == '\0');

	if (has_dir) {
		r = read_slaves(dir, &d->topo.members, &d->topo.n_members);
		if (r < 0) {
			return r;
		}
	} else {
		d->topo.members = strdup("");
		if (!d->topo.members) {
			return -ENOMEM;
		}
	}

	/* queue/ and device/ belong to the whole disk */
	if (d->topo.kind == DEVICE_KIND_PARTITION && d->topo.parent[0] != '\0') {
		has_dir = device_sysfs_dir(sysfs, d->topo.parent, qdir, sizeof(qdir)) == 0;
	} else {
		snprintf(qdir, sizeof(qdir), "%s", dir);
	}
	if (has_dir && read_u64_attr(qdir, "queue/logical_block_size", &v) >= 0 && v <= UINT32_MAX) {
		d->topo.logical_block_size = (unsigned)v;
	}
	if (has_dir && read_u64_attr(qdir, "queue/rotational", &v) >= 0) {
		d->topo.is_rotational = v != 0;
	}
	d->topo.model = has_dir ? read_string_attr(qdir, "device/model") : strdup("");
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

/* Physical members: through partitions (-> their disk) and md/dm (-> their
 * members), down to devices with neither. */
static int collect_physical(const struct topology *t, const char *name, unsigned depth, struct name_list *out)
{
	const struct topology_device *d = topology_find(t, name);
	int r;

	if (!d || depth > TOPOLOGY_MAX_DEPTH) {
		return name_list_add(out, name);
	}
	if (d->topo.kind == DEVICE_KIND_PARTITION && d->topo.parent[0] != '\0') {
		return collect_physical(t, d->topo.parent, depth + 1, out);
	}
	if (d->topo.n_members == 0) {
		return name_list_add(out, name);
	}
	for (const char *p = d->topo.members; *p;) {
		char member[DISKSTATS_NAME_MAX];
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		snprintf(member, sizeof(member), "%.*s", (int)len, p);
		r = collect_physical(t, member, depth + 1, out);
		if (r < 0) {
			return r;
		}
		if (!comma) {
			break;
		}
		p = comma + 1;
	}
	return 0;
}

/* Parent and member indexes, and physical members. */
static int link_devices(struct topology *t)
{
	for (size_t i = 0; i < t->n_devices; i++) {
		struct topology_device *d = &t->devices[i];
		struct name_list phys = {0};
		const struct topology_device *p;
		int r = 0;

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
			for (const char *s = d->topo.members; *s;) {
				char member[DISKSTATS_NAME_MAX];
				const char *comma = strchr(s, ',');
				size_t len = comma ? (size_t)(comma - s) : strlen(s);

				snprintf(member, sizeof(member), "%.*s", (int)len, s);
				p = topology_find(t, member);
				if (p && d->n_members < d->topo.n_members) {
					d->members[d->n_members++] = (size_t)(p - t->devices);
				}
				if (!comma) {
					break;
				}
				s = comma + 1;
			}
		}
		if (d->topo.kind == DEVICE_KIND_PARTITION || d->topo.n_members > 0) {
			r = collect_physical(t, d->name, 0, &phys);
		}
		if (r < 0) {
			free(phys.s);
			return r;
		}
		d->topo.physical_members = name_list_take(&phys);
		if (!d->topo.physical_members) {
			return -ENOMEM;
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
	if (strncmp(m->source, "/dev/", 5) == 0) {
		return topology_find(t, m->source + 5);
	}
	return NULL;
}

static int assign_mountpoints(struct topology *t)
{
	struct name_list *lists = calloc(t->n_devices ? t->n_devices : 1, sizeof(*lists));
	int r = 0;

	if (!lists) {
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->n_mounts && r == 0; i++) {
		const struct topology_device *d = mount_device(t, &t->mounts[i]);

		if (d) {
			r = name_list_add(&lists[d - t->devices], t->mounts[i].mountpoint);
		}
	}
	for (size_t i = 0; i < t->n_devices; i++) {
		if (r == 0) {
			t->devices[i].topo.mountpoints = name_list_take(&lists[i]);
			if (!t->devices[i].topo.mountpoints) {
				r = -ENOMEM;
			}
		} else {
			free(lists[i].s);
		}
	}
	free(lists);
	return r;
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
