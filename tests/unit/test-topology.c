/* topology: sysfs (partition -> disk, md/dm -> members, attributes),
 * mountinfo (mount -> device). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "diskstats.h"
#include "fileio.h"
#include "macro.h"
#include "topology.h"

static struct topology *build_at(const char *proc, const char *sys)
{
	char path[1100];
	_cleanup_free_ char *buf = NULL;
	_cleanup_free_ struct diskstats_raw *a = NULL;
	struct topology *t = NULL;
	size_t cap = 0;
	int n;

	snprintf(path, sizeof(path), "%s/diskstats", proc);
	assert_true(read_virtual_file(path, 1 << 20, &buf) > 0);
	n = diskstats_parse_into(buf, &a, &cap, NULL);
	assert_true(n > 0);
	assert_int_equal(topology_build(proc, sys, a, (size_t)n, &t), 0);
	assert_int_equal(t->n_devices, (size_t)n);
	return t;
}

static struct topology *build(const char *tree)
{
	char proc[1024], sys[1024];

	snprintf(proc, sizeof(proc), "%s/sampler/%s/proc", FIXTURES_DIR, tree);
	snprintf(sys, sizeof(sys), "%s/sampler/%s/sys", FIXTURES_DIR, tree);
	return build_at(proc, sys);
}

static const struct topology_device *get(const struct topology *t, const char *name)
{
	const struct topology_device *d = topology_find(t, name);

	if (!d) {
		fail_msg("no device %s", name);
	}
	return d;
}

static void test_mountinfo_unescapes_octal(void **state)
{
	char s1[] = "/mnt/my\\040disk";
	char s2[] = "/a\\011b\\012c\\134d";
	char s3[] = "/plain\\";
	char s4[] = "/not\\8escape";

	assert_int_equal(mountinfo_unescape(s1), strlen("/mnt/my disk"));
	assert_string_equal(s1, "/mnt/my disk");
	mountinfo_unescape(s2);
	assert_string_equal(s2, "/a\tb\nc\\d");
	mountinfo_unescape(s3);
	assert_string_equal(s3, "/plain\\");
	mountinfo_unescape(s4);
	assert_string_equal(s4, "/not\\8escape");
}

static void test_mountinfo_parses_fields_and_skips_malformed_lines(void **state)
{
	const char *buf =
	    "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
	    "garbage line\n"
	    "37 35 8:1 / /no/separator rw\n"
	    "38 35 x:1 / /bad/devnum rw - ext4 /dev/sda1 rw\n"
	    "41 22 259:1 / /mnt/my\\040disk rw,relatime shared:31 unbindable - ext4 /dev/nvme0n1p1 rw\n"
	    "42 22 0:44 / /srv rw - btrfs /dev/sdb rw\n";
	struct mountinfo_entry *e = NULL;
	int n;

	n = mountinfo_parse(buf, &e);
	assert_int_equal(n, 3);
	assert_int_equal(e[0].major, 98);
	assert_int_equal(e[0].minor, 0);
	assert_string_equal(e[0].root, "/mnt1");
	assert_string_equal(e[0].mountpoint, "/mnt2");
	assert_string_equal(e[0].fstype, "ext3");
	assert_string_equal(e[0].source, "/dev/root");
	assert_string_equal(e[1].mountpoint, "/mnt/my disk");
	assert_int_equal(e[1].major, 259);
	assert_string_equal(e[1].fstype, "ext4");
	assert_string_equal(e[2].fstype, "btrfs");
	mountinfo_free(e, (size_t)n);
}

static void test_partition_maps_to_its_whole_disk(void **state)
{
	struct topology *t = build("ec2-md-raid0");
	const struct topology_device *p = get(t, "xvda1");

	assert_int_equal(p->topo.kind, DEVICE_KIND_PARTITION);
	assert_string_equal(p->topo.parent, "xvda");
	assert_ptr_equal(&t->devices[p->parent], get(t, "xvda"));
	assert_string_equal(get(t, "nvme0n1p2")->topo.parent, "nvme0n1");
	assert_int_equal(get(t, "xvda")->topo.kind, DEVICE_KIND_DISK);
	assert_int_equal(get(t, "xvda")->parent, SIZE_MAX);
	assert_string_equal(get(t, "xvda")->topo.parent, "");
	topology_unref(t);
}

static void test_md_and_dm_members_come_from_slaves(void **state)
{
	struct topology *t = build("ec2-md-raid0");
	const struct topology_device *md = get(t, "md0");
	const struct topology_device *dm = get(t, "dm-0");

	assert_int_equal(md->topo.kind, DEVICE_KIND_MD);
	assert_int_equal(md->topo.n_members, 2);
	assert_string_equal(md->topo.members[0], "xvdf");
	assert_string_equal(md->topo.members[1], "xvdg");
	assert_int_equal(md->n_members, 2);
	assert_ptr_equal(&t->devices[md->members[0]], get(t, "xvdf"));
	assert_ptr_equal(&t->devices[md->members[1]], get(t, "xvdg"));
	assert_string_equal(md->topo.raid_level, "raid0");

	/* LVM on a partition: the member is the partition */
	assert_int_equal(dm->topo.kind, DEVICE_KIND_DM);
	assert_string_equal(dm->topo.dm_name, "vg0-data");
	assert_int_equal(dm->topo.n_members, 1);
	assert_string_equal(dm->topo.members[0], "nvme0n1p2");
	assert_ptr_equal(topology_find_dm_name(t, "vg0-data"), dm);
	topology_unref(t);
}

static void test_attributes_come_from_sysfs(void **state)
{
	struct topology *t = build("ec2-md-raid0");
	const struct topology_device *nvme = get(t, "nvme0n1");
	const struct topology_device *p1 = get(t, "nvme0n1p1");

	/* sysfs pads the model with spaces */
	assert_string_equal(nvme->topo.model, "Amazon Elastic Block Store");
	assert_int_equal(nvme->topo.logical_block_size, 4096);
	assert_false(nvme->topo.is_rotational);
	assert_int_equal(nvme->topo.size_bytes, 104857600ULL * 512);
	/* queue/ and device/ of a partition are its disk's */
	assert_string_equal(p1->topo.model, "Amazon Elastic Block Store");
	assert_int_equal(p1->topo.logical_block_size, 4096);
	assert_int_equal(p1->topo.size_bytes, 20971520ULL * 512);
	assert_string_equal(get(t, "xvdf")->topo.model, "");
	assert_int_equal(get(t, "xvdf")->topo.logical_block_size, 512);

	assert_int_equal(get(t, "loop0")->topo.kind, DEVICE_KIND_LOOP);
	assert_true(get(t, "loop0")->is_unused_loop);
	assert_false(get(t, "loop1")->is_unused_loop);
	assert_string_equal(get(t, "loop1")->backing_file, "/var/lib/images/disk.img");
	assert_int_equal(get(t, "ram0")->topo.kind, DEVICE_KIND_DISK);
	topology_unref(t);

	t = build("kernel-4.14");
	assert_string_equal(get(t, "sda")->topo.model, "Samsung SSD 860");
	assert_string_equal(get(t, "sda2")->topo.parent, "sda");
	topology_unref(t);
}

static void test_mount_points_are_attributed_by_devnum(void **state)
{
	struct topology *t = build("ec2-md-raid0");

	/* a bind mount of a subdirectory counts too */
	assert_string_equal(get(t, "md0")->topo.mountpoints, "/data,/srv/backup");
	assert_string_equal(get(t, "nvme0n1p1")->topo.mountpoints, "/mnt/my disk");
	assert_string_equal(get(t, "dm-0")->topo.mountpoints, "/var/lib/mysql");
	assert_string_equal(get(t, "xvda1")->topo.mountpoints, "/");
	assert_string_equal(get(t, "xvda")->topo.mountpoints, "");
	assert_string_equal(get(t, "xvdf")->topo.mountpoints, "");
	topology_unref(t);
}

/* The ec2-md-raid0 tree with the lines `write` writes appended to its
 * mountinfo: a copy under /tmp, removed once the topology is built. */
static struct topology *build_with_mounts(void (*write)(FILE *f))
{
	char dir[] = "/tmp/iopsd-topology-XXXXXX", cmd[512], proc[600], sys[600], path[700];
	struct topology *t;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp -r '%s/sampler/ec2-md-raid0/proc' '%s/sampler/ec2-md-raid0/sys' '%s'",
		 FIXTURES_DIR, FIXTURES_DIR, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/proc/self/mountinfo", dir);
	f = fopen(path, "ae");
	assert_non_null(f);
	write(f);
	fclose(f);
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	t = build_at(proc, sys);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return t;
}

static void write_untrusted_and_many_mounts(FILE *f)
{
	fputs("60 22 0:60 / /home/u/fuse rw - fuse.sshfs /dev/xvdf rw\n", f);
	fputs("61 22 0:61 / /btr rw - btrfs /dev/xvdg rw\n", f);
	fputs("62 22 202:1 / /mnt/a,b rw - ext4 /dev/xvda1 rw\n", f);
	/* the unit's ReadWritePaths= of a probe directory, bind-mounted onto itself */
	fputs("63 40 9:0 /.iopsd /data/.iopsd rw - xfs /dev/md0 rw\n", f);
	for (int i = 0; i < 30; i++) {
		fprintf(f, "%d 22 202:1 / /bind/%d rw - ext4 /dev/xvda1 rw\n", 70 + i, i);
	}
}

/* mountinfo's source names a device only for btrfs (a user's FUSE mount
 * with fsname=/dev/xvdf does not get xvdf's labels); a "," inside a mount
 * point stays inside one entry; at most DEVICE_MAX_MOUNTPOINTS per device;
 * iopsd's own probe directory bind-mounted by its unit is none of them. */
static void test_mount_points_trust_no_source_but_btrfs_and_are_capped(void **state)
{
	struct topology *t = build_with_mounts(write_untrusted_and_many_mounts);
	const struct topology_device *d;
	char path[700];

	assert_string_equal(get(t, "xvdf")->topo.mountpoints, "");
	assert_int_equal(get(t, "xvdf")->topo.n_mountpoints, 0);
	assert_string_equal(get(t, "xvdg")->topo.mountpoints, "/btr");
	assert_string_equal(get(t, "md0")->topo.mountpoints, "/data,/srv/backup");
	d = get(t, "xvda1");
	assert_int_equal(d->topo.n_mountpoints, DEVICE_MAX_MOUNTPOINTS);
	assert_string_equal(d->topo.mountpoint_list[0], "/");
	assert_string_equal(d->topo.mountpoint_list[1], "/mnt/a,b");
	/* the label is the capped list joined */
	snprintf(path, sizeof(path), "/,/mnt/a,b");
	for (int i = 0; i < DEVICE_MAX_MOUNTPOINTS - 2; i++) {
		snprintf(path + strlen(path), sizeof(path) - strlen(path), ",/bind/%d", i);
	}
	assert_string_equal(d->topo.mountpoints, path);
	topology_unref(t);
}

#define PV_A	"pvc-5b1f0c2e-7d3a-4e9b-8c6d-0f1e2d3c4b5a"
#define PV_B	"pvc-0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d"
#define POD_1	"8d3c1f0e-6b9a-4c2d-9e7f-1a2b3c4d5e6f"
#define POD_2	"2c4e6a8b-0d1f-4e3a-9b7c-5d6e7f8a9b0c"
#define KUBELET "/var/lib/kubelet"
#define CSI	"/var/lib/kubelet/plugins/kubernetes.io/csi"

/* A Kubernetes node: xvdf holds PV_A, staged by its CSI driver (a path
 * named by a hash) and mounted by two pods; xvdg a volume staged as older
 * kubelets name it, no pod yet; loop0 the raw block volume PV_B, its node
 * bind-mounted for POD_2 (devtmpfs's 0:5, the node as the root); and what
 * must name nothing: a user's FUSE mount claiming xvda1 and a tmpfs whose
 * root looks like a node, both at kubelet-shaped paths. */
static void write_kubelet_mounts(FILE *f)
{
	fputs("200 22 202:80 / " CSI
	      "/ebs.csi.aws.com/3f0b2b2c6e0e4a0d9f5f0a1e8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
	      "1a0b9c/globalmount rw,relatime shared:71 - ext4 /dev/xvdf rw\n",
	      f);
	fputs("201 22 202:80 / " KUBELET "/pods/" POD_2 "/volumes/kubernetes.io~csi/" PV_A
	      "/mount rw,relatime shared:71 - ext4 /dev/xvdf rw\n",
	      f);
	fputs("202 22 202:80 / " KUBELET "/pods/" POD_1 "/volumes/kubernetes.io~csi/" PV_A
	      "/mount rw,relatime shared:71 - ext4 /dev/xvdf rw\n",
	      f);
	fputs("203 22 202:96 / " CSI "/pv/pvc-legacy-1/globalmount rw - xfs /dev/xvdg rw\n", f);
	fputs("204 25 0:5 /loop0 " CSI "/volumeDevices/" PV_B "/dev/" POD_2
	      " rw,nosuid shared:2 - devtmpfs udev rw,size=4010k\n",
	      f);
	fputs("205 22 0:62 / /home/u/pods/" POD_1 "/volumes/kubernetes.io~csi/pvc-fake/mount rw - fuse.x "
	      "/dev/xvda1 rw\n",
	      f);
	fputs("206 22 0:40 /xvda " CSI "/volumeDevices/pvc-fake/dev/" POD_1 " rw - tmpfs tmpfs rw\n", f);
}

static void assert_volume(const struct topology_device *d, size_t i, const char *pv, const char *pod)
{
	assert_true(i < d->topo.n_persistentvolumes);
	assert_string_equal(d->topo.persistentvolumes[i].persistentvolume, pv);
	assert_string_equal(d->topo.persistentvolumes[i].pod_uid, pod);
}

static void test_kubelet_paths_name_each_devices_persistentvolumes(void **state)
{
	struct topology *t = build_with_mounts(write_kubelet_mounts);

	assert_int_equal(get(t, "xvdf")->topo.n_persistentvolumes, 2);
	assert_volume(get(t, "xvdf"), 0, PV_A, POD_2);
	assert_volume(get(t, "xvdf"), 1, PV_A, POD_1);
	/* the kubelet's paths are the device's mount points, as any are */
	assert_int_equal(get(t, "xvdf")->topo.n_mountpoints, 3);
	assert_int_equal(get(t, "xvdg")->topo.n_persistentvolumes, 1);
	assert_volume(get(t, "xvdg"), 0, "pvc-legacy-1", "");
	/* a device node bind-mounted is no mount of its filesystem */
	assert_int_equal(get(t, "loop0")->topo.n_persistentvolumes, 1);
	assert_volume(get(t, "loop0"), 0, PV_B, POD_2);
	assert_int_equal(get(t, "loop0")->topo.n_mountpoints, 0);
	assert_int_equal(get(t, "xvda1")->topo.n_persistentvolumes, 0);
	assert_int_equal(get(t, "xvda")->topo.n_persistentvolumes, 0);
	assert_null(get(t, "xvda")->topo.persistentvolumes);
	assert_int_equal(get(t, "md0")->topo.n_persistentvolumes, 0);
	topology_unref(t);
}

/* A list's label: joined with commas, truncated to the buffer, and the
 * whole length returned as snprintf does. */
static void test_names_join_truncates_and_returns_the_whole_length(void **state)
{
	const char *const names[] = {"xvdf", "xvdg", "nvme0n1"};
	char buf[8];
	char *s;

	(void)state;
	assert_int_equal(device_names_join(names, 3, buf, sizeof(buf)), strlen("xvdf,xvdg,nvme0n1"));
	assert_string_equal(buf, "xvdf,xv");
	assert_int_equal(device_names_join(names, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(device_names_join(names, 1, NULL, 0), 4);
	s = device_names_join_new(names, 3);
	assert_non_null(s);
	assert_string_equal(s, "xvdf,xvdg,nvme0n1");
	free(s);
}

/* A path's mount -> the device -> its members or its partition's disk. */
static void test_path_maps_through_partition_and_raid_to_members(void **state)
{
	struct topology *t = build("ec2-md-raid0");
	const struct topology_device *d;

	d = topology_device_for_path(t, "/data/mysql/ibdata1");
	assert_non_null(d);
	assert_string_equal(d->name, "md0");
	assert_int_equal(d->topo.n_members, 2);
	assert_string_equal(d->topo.members[1], "xvdg");

	d = topology_device_for_path(t, "/var/lib/mysql");
	assert_string_equal(d->name, "dm-0");
	assert_string_equal(t->devices[t->devices[d->members[0]].parent].name, "nvme0n1");

	d = topology_device_for_path(t, "/mnt/my disk/file");
	assert_string_equal(d->name, "nvme0n1p1");
	assert_string_equal(t->devices[d->parent].name, "nvme0n1");

	/* longest prefix on component boundaries: /database is on / */
	assert_string_equal(topology_device_for_path(t, "/database")->name, "xvda1");
	assert_string_equal(topology_device_for_path(t, "/srv/backup/x")->name, "md0");
	assert_string_equal(topology_mount_for_path(t, "/srv/backup/x")->root, "/backup");
	/* tmpfs has no block device */
	assert_null(topology_device_for_path(t, "/run/lock"));

	/* device nodes */
	assert_string_equal(topology_device_for_path(t, "/dev/mapper/vg0-data")->name, "dm-0");
	assert_string_equal(topology_device_for_path(t, "/dev/xvdf")->name, "xvdf");
	assert_null(topology_device_for_path(t, "/dev/mapper/nope"));
	topology_unref(t);

	t = build("kernel-4.14");
	d = topology_device_for_path(t, "/home/alice");
	assert_string_equal(d->name, "sda2");
	assert_string_equal(t->devices[d->parent].name, "sda");
	topology_unref(t);
}

static void test_overmount_hides_the_earlier_mount(void **state)
{
	struct topology t = {0};
	struct topology_device devs[2] = {
	    {.name = "sda1", .major = 8, .minor = 1},
	    {.name = "sdb1", .major = 8, .minor = 17},
	};
	int n;

	t.devices = devs;
	t.n_devices = 2;
	n = mountinfo_parse("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
			    "2 1 8:1 / /data rw - ext4 /dev/sda1 rw\n"
			    "3 1 8:17 / /data rw - ext4 /dev/sdb1 rw\n",
			    &t.mounts);
	assert_int_equal(n, 3);
	t.n_mounts = (size_t)n;
	assert_string_equal(topology_device_for_path(&t, "/data/x")->name, "sdb1");
	mountinfo_free(t.mounts, t.n_mounts);
}

/* Devices sysfs does not know (a partial fixture, a vanished device):
 * defaults, never NULL strings. */
static void test_device_missing_from_sysfs_gets_defaults(void **state)
{
	struct diskstats_raw a[] = {
	    {.major = 8, .minor = 64, .name = "sde", .n_fields = 14},
	    {.major = 9, .minor = 1, .name = "md1", .n_fields = 14},
	};
	struct topology *t = NULL;
	char sys[1024];

	snprintf(sys, sizeof(sys), "%s/sampler/kernel-4.14/sys", FIXTURES_DIR);
	assert_int_equal(topology_build("/nonexistent", sys, a, 2, &t), 0);
	assert_int_equal(get(t, "sde")->topo.kind, DEVICE_KIND_DISK);
	assert_string_equal(get(t, "sde")->topo.model, "");
	assert_int_equal(get(t, "sde")->topo.n_members, 0);
	assert_string_equal(get(t, "sde")->topo.mountpoints, "");
	assert_int_equal(get(t, "sde")->topo.logical_block_size, 0);
	assert_int_equal(get(t, "md1")->topo.kind, DEVICE_KIND_MD);
	assert_int_equal(t->n_mounts, 0);
	topology_unref(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mountinfo_unescapes_octal),
	    cmocka_unit_test(test_mountinfo_parses_fields_and_skips_malformed_lines),
	    cmocka_unit_test(test_partition_maps_to_its_whole_disk),
	    cmocka_unit_test(test_names_join_truncates_and_returns_the_whole_length),
	    cmocka_unit_test(test_md_and_dm_members_come_from_slaves),
	    cmocka_unit_test(test_attributes_come_from_sysfs),
	    cmocka_unit_test(test_mount_points_are_attributed_by_devnum),
	    cmocka_unit_test(test_mount_points_trust_no_source_but_btrfs_and_are_capped),
	    cmocka_unit_test(test_kubelet_paths_name_each_devices_persistentvolumes),
	    cmocka_unit_test(test_path_maps_through_partition_and_raid_to_members),
	    cmocka_unit_test(test_overmount_hides_the_earlier_mount),
	    cmocka_unit_test(test_device_missing_from_sysfs_gets_defaults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
