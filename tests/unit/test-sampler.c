/* sampler: snapshots from fixture trees with a fake clock — md aggregates,
 * filtering, devices vanishing and returning, PSI, topology refresh. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <sys/sysmacros.h>

#include "config.h"
#include "sampler.h"
#include "targets.h"
#include "fileio.h"
#include "macro.h"
#include "sampler-env.h"

#define EPS 1e-9

static const struct device_state *get(const struct sampler_snapshot *s, const char *name)
{
	const struct device_state *d = sampler_snapshot_find(s, name);

	if (!d) {
		fail_msg("device %s not in the snapshot", name);
	}
	return d;
}

/* The seeds' md RAID0: fio showed md0 util=0.00% while xvdf ran at 82.95%
 * and xvdg at 87.91% (aggrutil=87.91%). */
static void test_md0_members_reproduce_the_fio_run(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s0, *s1;
	const struct device_state *md, *f, *g;

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	s0 = sampler_env_sample(&e, 0);
	assert_false(get(s0, "md0")->rates.valid); /* nothing to derive from yet */
	assert_false(get(s0, "md0")->member_rates.valid);
	sampler_env_diskstats(&e, "diskstats.t60");
	s1 = sampler_env_sample(&e, 60);

	md = get(s1, "md0");
	f = get(s1, "xvdf");
	g = get(s1, "xvdg");
	assert_true(md->rates.valid);
	assert_float_equal(md->rates.interval_sec, 60, EPS);
	assert_float_equal(md->rates.utilization, 0, EPS);
	assert_float_equal(md->rates.read_iops, 6000, EPS);
	assert_float_equal(md->rates.read_bytes_per_sec, 6000 * 4096.0, EPS);
	assert_float_equal(md->rates.read_await_sec, 0, EPS);

	assert_float_equal(f->rates.utilization, 0.8295, EPS);
	assert_float_equal(g->rates.utilization, 0.8791, EPS);
	assert_float_equal(f->rates.read_iops, 3000, EPS);
	/* xvdf's read_ms wrapped at 2^32 during the run */
	assert_float_equal(f->rates.read_await_sec, 0.00078, EPS);
	assert_float_equal(g->rates.read_await_sec, 0.00088, EPS);

	assert_true(md->has_member_rates);
	assert_true(md->member_rates.valid);
	assert_float_equal(md->member_rates.utilization, 0.8791, EPS);
	assert_float_equal(md->member_rates.read_iops, 3000, EPS);
	assert_float_equal(md->member_rates.read_await_sec, 0.00083, EPS);
	assert_float_equal(md->member_rates.queue_depth, (140400.0 + 158400.0) / 2 / 60000, EPS);
	assert_false(f->has_member_rates);

	assert_int_equal(md->topo.n_members, 2);
	assert_string_equal(md->topo.members[0], "xvdf");
	assert_string_equal(md->topo.members[1], "xvdg");
	assert_string_equal(md->topo.mountpoints, "/data,/srv/backup");
	assert_int_equal(md->topo.kind, DEVICE_KIND_MD);
	assert_int_equal(s1->samples_total, 2);
	assert_int_equal(s1->realtime_usec, 1700000060 * USEC_PER_SEC);
	sampler_snapshot_unref(s0);
	sampler_snapshot_unref(s1);
	sampler_env_teardown(&e);
}

static void assert_names(const struct sampler_snapshot *s, const char *expected)
{
	char names[1024] = "";

	for (size_t i = 0; i < s->n_devices; i++) {
		if (i > 0) {
			strcat(names, ",");
		}
		strcat(names, s->devices[i].raw.name);
	}
	assert_string_equal(names, expected);
}

static void test_default_filter_drops_ram_zram_unused_loops_and_partitions(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	s = sampler_env_sample(&e, 0);
	assert_names(s, "xvda,xvdf,xvdg,nvme0n1,md0,dm-0,loop1");
	assert_int_equal(s->n_devices_seen, 13);
	assert_int_equal(s->n_devices_dropped, 0);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

/* A floppy drive as the kernel shows it (fd0, major 2, platform device, no
 * I/O) in the private sysfs and in /proc/diskstats. */
static void add_floppy(struct sampler_env *e)
{
	char cmd[6000], ds[128];
	_cleanup_free_ char *buf = NULL, *more = NULL;

	snprintf(cmd, sizeof(cmd),
		 "set -e; d='%1$s/devices/platform/floppy.0/block/fd0'; mkdir -p \"$d/queue\";"
		 " echo 2:0 > \"$d/dev\"; echo 8 > \"$d/size\";"
		 " echo 512 > \"$d/queue/logical_block_size\"; echo 1 > \"$d/queue/rotational\";"
		 " ln -s ../../devices/platform/floppy.0/block/fd0 '%1$s/class/block/fd0';"
		 " ln -s ../devices/platform/floppy.0/block/fd0 '%1$s/block/fd0';"
		 " ln -s ../../devices/platform/floppy.0/block/fd0 '%1$s/dev/block/2:0'",
		 e->sys);
	assert_int_equal(system(cmd), 0);
	snprintf(ds, sizeof(ds), "%s/diskstats", e->dir);
	assert_true(read_virtual_file(ds, 1 << 20, &buf) > 0);
	assert_true(asprintf(&more, "%s   2       0 fd0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", buf) > 0);
	sampler_env_write_file(ds, more);
}

/* node_exporter's default filter leaves floppy drives out (a guest with a
 * floppy controller has fd0 and nothing behind it); device_include can still
 * ask for one. */
static void test_default_filter_drops_floppy_drives(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	sampler_env_private_sysfs(&e);
	add_floppy(&e);
	s = sampler_env_sample(&e, 0);
	assert_null(sampler_snapshot_find(s, "fd0"));
	assert_names(s, "xvda,xvdf,xvdg,nvme0n1,md0,dm-0,loop1");
	assert_int_equal(s->n_devices_seen, 14);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);

	sampler_env_setup(&e, "ec2-md-raid0", "[global]\ndevice_include=^(fd|md)[0-9]\n");
	sampler_env_private_sysfs(&e);
	add_floppy(&e);
	s = sampler_env_sample(&e, 0);
	assert_names(s, "md0,fd0");
	assert_int_equal(get(s, "fd0")->topo.kind, DEVICE_KIND_DISK);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

static void test_partitions_holding_a_configured_target_are_kept(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	char name[DISKSTATS_NAME_MAX];
	dev_t disk = 0;

	sampler_env_setup(&e, "ec2-md-raid0",
			  "[global]\n"
			  "[spacey]\nrw=randread\ndirectory=/mnt/my disk/probe\n"
			  "[mysql]\nrw=randread\ndirectory=/var/lib/mysql\n"
			  "[device /]\niops_limit=3000\n");
	s = sampler_env_sample(&e, 0);
	assert_names(s, "xvda,xvda1,xvdf,xvdg,nvme0n1,nvme0n1p1,md0,dm-0,loop1");
	/* a partition's runs are serialised on its whole disk */
	assert_int_equal(targets_place(sampler_last_sample(e.s)->topology, "/mnt/my disk/probe", name, &disk),
			 0);
	assert_string_equal(name, "nvme0n1p1");
	assert_true(disk == makedev(259, 0));
	assert_int_equal(targets_place(sampler_last_sample(e.s)->topology, "/data", name, &disk), 0);
	assert_string_equal(name, "md0");
	assert_true(disk == makedev(9, 0));
	assert_int_equal(targets_place(sampler_last_sample(e.s)->topology, "/dev/xvdf", name, &disk), 0);
	assert_string_equal(name, "xvdf");
	assert_true(disk == makedev(202, 80));
	/* tmpfs has no device: its runs are serialised on the filesystem */
	assert_int_equal(targets_place(sampler_last_sample(e.s)->topology, "/run/x", name, &disk), 0);
	assert_string_equal(name, "");
	assert_true(disk == makedev(0, 40));
	assert_int_equal(targets_place(sampler_last_sample(e.s)->topology, "relative/x", name, &disk),
			 -ENODEV);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

static void test_include_and_exclude_regexes_select_devices(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;

	/* include alone decides: partitions and unused loops too */
	sampler_env_setup(&e, "ec2-md-raid0", "[global]\ndevice_include=^(xvd|loop)\n");
	s = sampler_env_sample(&e, 0);
	assert_names(s, "xvda,xvda1,xvdf,xvdg,loop0,loop1");
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);

	/* exclude drops on top of the default */
	sampler_env_setup(&e, "ec2-md-raid0", "[global]\ndevice_exclude=^(xvd[fg]|loop)\n");
	s = sampler_env_sample(&e, 0);
	assert_names(s, "xvda,nvme0n1,md0,dm-0");
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);

	/* and wins over include */
	sampler_env_setup(&e, "ec2-md-raid0", "[global]\ndevice_include=^xvd\ndevice_exclude=[0-9]$\n");
	s = sampler_env_sample(&e, 0);
	assert_names(s, "xvda,xvdf,xvdg");
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

static void test_reload_applies_the_new_filter(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	struct config *cfg = NULL;
	struct config_errors errs = {0};

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	s = sampler_env_sample(&e, 0);
	assert_int_equal(s->n_devices, 7);
	sampler_snapshot_unref(s);

	assert_int_equal(config_load_string("new.conf", "[global]\ndevice_include=^md\n", &errs, &cfg), 0);
	assert_int_equal(sampler_set_config(e.s, cfg), 0);
	assert_int_equal(detect_set_config(e.d, cfg), 0);
	config_free(e.cfg);
	e.cfg = cfg;
	s = sampler_env_sample(&e, 1);
	assert_names(s, "md0");
	/* rates continue across the reload */
	assert_true(get(s, "md0")->rates.valid);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

static void test_bad_regex_is_refused(void **state)
{
	struct sampler_env e;
	struct config cfg;
	struct sampler *s = NULL;
	struct detect *d = NULL;

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	cfg = *e.cfg;
	cfg.device_include = (char *)"(unclosed";
	assert_int_equal(sampler_new(e.dir, e.sys, &cfg, &s), -EINVAL);
	assert_int_equal(sampler_set_config(e.s, &cfg), -EINVAL);
	assert_int_equal(sampler_set_config(e.s, e.cfg), 0);
	/* [instance] devices= is the detection stage's */
	cfg = *e.cfg;
	cfg.instance.devices = (char *)"(unclosed";
	assert_int_equal(detect_new(&cfg, &d), -EINVAL);
	assert_int_equal(detect_set_config(e.d, &cfg), -EINVAL);
	assert_int_equal(detect_set_config(e.d, e.cfg), 0);
	sampler_env_teardown(&e);
}

/* xvdg disappears for a sample, then returns (counters restarted or not):
 * no rate is derived across the gap, the next one is right again. */
static void test_device_vanishing_and_returning_restarts_its_rates(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	char path[128];
	_cleanup_free_ char *t0 = NULL, *t60 = NULL;
	char *line, *end;

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	snprintf(path, sizeof(path), "%s/diskstats", e.dir);
	assert_true(read_virtual_file(path, 1 << 20, &t0) > 0);
	sampler_snapshot_unref(sampler_env_sample(&e, 0));

	/* xvdg gone */
	line = strstr(t0, " xvdg ");
	while (line > t0 && line[-1] != '\n') {
		line--;
	}
	end = strchr(line, '\n') + 1;
	{
		_cleanup_free_ char *without = strndup(t0, (size_t)(line - t0));

		assert_non_null(without);
		without = realloc(without, strlen(without) + strlen(end) + 1);
		strcat(without, end);
		sampler_env_write_file(path, without);
	}
	s = sampler_env_sample(&e, 1);
	assert_null(sampler_snapshot_find(s, "xvdg"));
	assert_true(get(s, "xvdf")->rates.valid);
	/* md0's aggregate covers the members still present */
	assert_true(get(s, "md0")->member_rates.valid);
	sampler_snapshot_unref(s);

	/* back, with the counters of 60 s later */
	sampler_env_diskstats(&e, "diskstats.t60");
	s = sampler_env_sample(&e, 1);
	assert_false(get(s, "xvdg")->rates.valid);
	assert_float_equal(get(s, "xvdg")->rates.read_iops, 0, EPS);
	assert_false(get(s, "md0")->member_rates.valid);
	sampler_snapshot_unref(s);

	/* and derives again from there */
	s = sampler_env_sample(&e, 1);
	assert_true(get(s, "xvdg")->rates.valid);
	assert_float_equal(get(s, "xvdg")->rates.read_iops, 0, EPS);
	sampler_snapshot_unref(s);

	/* a reset in place (counters restart at 0 under the same name) */
	sampler_env_diskstats(&e, "diskstats");
	assert_true(read_virtual_file(path, 1 << 20, &t60) > 0);
	s = sampler_env_sample(&e, 1);
	/* every counter went back: nothing derived, nothing negative */
	for (size_t i = 0; i < s->n_devices; i++) {
		const struct device_rates *r = &s->devices[i].rates;

		assert_true(r->read_iops >= 0 && r->write_iops >= 0 && r->utilization >= 0);
		assert_true(r->read_iops < 1e7);
	}
	assert_false(get(s, "xvdf")->rates.valid);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

static void test_kernel_4x_trees_sample_without_psi(void **state)
{
	static const char *const trees[] = {"kernel-4.14", "kernel-4.18"};

	for (size_t i = 0; i < ELEMENTSOF(trees); i++) {
		struct sampler_env e;
		struct sampler_snapshot *s;

		sampler_env_setup(&e, trees[i], NULL);
		sampler_snapshot_unref(sampler_env_sample(&e, 0));
		sampler_env_diskstats(&e, "diskstats.t1");
		s = sampler_env_sample(&e, 1);
		assert_false(s->pressure.available);
		assert_names(s, "sda");
		assert_true(get(s, "sda")->rates.valid);
		assert_float_equal(get(s, "sda")->rates.utilization, 0.655, EPS);
		assert_float_equal(get(s, "sda")->rates.read_iops, 240, EPS);
		assert_float_equal(get(s, "sda")->rates.discard_iops, i == 0 ? 0 : 3, EPS);
		assert_string_equal(get(s, "sda")->topo.model, "Samsung SSD 860");
		sampler_snapshot_unref(s);
		sampler_env_teardown(&e);
	}
}

/* NVMe native multipath as the lab's 6.1 guest counted it: all on one
 * hidden path, nothing on the head that /data is mounted from. The head
 * carries the I/O, the paths are no devices of their own (nothing counted
 * twice), and the machine's SMBIOS names the instance type. */
static void test_multipath_head_carries_its_hidden_paths_io(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;

	sampler_env_setup(&e, "nvme-multipath", NULL);
	sampler_snapshot_unref(sampler_env_sample(&e, 0));
	sampler_env_diskstats(&e, "diskstats.t1");
	s = sampler_env_sample(&e, 1);
	assert_names(s, "nvme0n1,nvme1n1");
	assert_float_equal(get(s, "nvme1n1")->rates.read_iops, 800, EPS);
	assert_float_equal(get(s, "nvme1n1")->rates.utilization, 1.0, EPS);
	assert_float_equal(get(s, "nvme1n1")->rates.queue_depth, 16, EPS);
	assert_string_equal(get(s, "nvme1n1")->topo.mountpoints, "/data");
	assert_float_equal(get(s, "nvme0n1")->rates.read_iops, 0, EPS);
	assert_string_equal(s->dmi.vendor, "Amazon EC2");
	assert_string_equal(s->dmi.product, "m5.large");
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

/* A read between samples (the pulse test's, sampler_read_ios()) counts a
 * device's I/Os as the samples do: the multipath head with its hidden
 * paths' I/O; a name not there is UINT64_MAX; the clock is read with it. */
static void test_reads_between_samples_count_as_the_samples_do(void **state)
{
	static const char *const names[] = {"nvme1n1", "nvme0n1", "sdz"};
	struct sampler_env e;
	struct sampler_snapshot *s;
	uint64_t ios[3], mono = 0;

	sampler_env_setup(&e, "nvme-multipath", NULL);
	sampler_env_diskstats(&e, "diskstats.t1");
	s = sampler_env_sample(&e, 0);
	e.mono += 50000;
	assert_int_equal(sampler_read_ios(e.s, names, 3, ios, &mono), 2);
	assert_true(mono == e.mono);
	assert_true(ios[0] == get(s, "nvme1n1")->raw.reads + get(s, "nvme1n1")->raw.writes);
	assert_true(ios[0] > 0);
	assert_true(ios[1] == get(s, "nvme0n1")->raw.reads + get(s, "nvme0n1")->raw.writes);
	assert_true(ios[2] == UINT64_MAX);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

/* The head's hidden paths are its members, as an md array's are (found by
 * name where the kernel has no multipath/ links, as 6.1 has not), and a
 * namespace of one controller has none. */
static void test_multipath_paths_are_the_heads_members(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	const struct device_state *head;

	sampler_env_setup(&e, "nvme-multipath", NULL);
	s = sampler_env_sample(&e, 0);
	head = get(s, "nvme1n1");
	assert_int_equal(head->topo.kind, DEVICE_KIND_DISK);
	assert_int_equal(head->topo.n_members, 2);
	assert_string_equal(head->topo.members[0], "nvme1c1n1");
	assert_string_equal(head->topo.members[1], "nvme1c2n1");
	assert_int_equal(get(s, "nvme0n1")->topo.n_members, 0);
	/* the paths are still no devices of their own */
	assert_names(s, "nvme0n1,nvme1n1");
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

/* A kernel with the head's multipath/ links: the paths they name, not
 * whatever else is called like one (a stray nvme1c9n1 in /sys/block). */
static void test_multipath_links_name_the_paths(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	const struct device_state *head;
	char cmd[3000];

	sampler_env_setup(&e, "nvme-multipath", NULL);
	sampler_env_private_sysfs(&e);
	snprintf(
	    cmd, sizeof(cmd),
	    "cd '%s/devices/virtual/nvme-subsystem/nvme-subsys1/block/nvme1n1' && mkdir multipath && "
	    "ln -s ../../../../../pci0000:00/0000:00:0b.0/nvme/nvme2/block/nvme1c2n1 multipath/nvme1c2n1 && "
	    "ln -s ../devices/pci0000:00/0000:00:0b.0/nvme/nvme2/block/nvme1c2n1 '%s/block/nvme1c9n1'",
	    e.sys, e.sys);
	assert_int_equal(system(cmd), 0);
	s = sampler_env_sample(&e, 0);
	head = get(s, "nvme1n1");
	assert_int_equal(head->topo.n_members, 1);
	assert_string_equal(head->topo.members[0], "nvme1c2n1");
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

static void test_psi_totals_are_in_the_snapshot(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	s = sampler_env_sample(&e, 0);
	assert_true(s->pressure.available);
	assert_int_equal(s->pressure.some_total_usec, 123456789);
	assert_int_equal(s->pressure.full_total_usec, 98765432);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

static void test_snapshot_outlives_the_sampler(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s, *ref;

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	s = sampler_env_sample(&e, 0);
	ref = sampler_snapshot_ref(s);
	sampler_env_teardown(&e);
	assert_string_equal(get(s, "nvme0n1")->topo.model, "Amazon Elastic Block Store");
	assert_string_equal(get(s, "dm-0")->topo.dm_name, "vg0-data");
	assert_null(sampler_snapshot_unref(s));
	assert_string_equal(get(ref, "md0")->topo.raid_level, "raid0");
	sampler_snapshot_unref(ref);
}

static void test_max_devices_caps_the_snapshot(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;

	sampler_env_setup(&e, "ec2-md-raid0", "[global]\nmax_devices=3\n");
	s = sampler_env_sample(&e, 0);
	assert_names(s, "xvda,xvdf,xvdg");
	assert_int_equal(s->n_devices_dropped, 4);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

static void test_malformed_lines_are_counted_across_samples(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	char path[128];

	sampler_env_setup(&e, "kernel-4.14", NULL);
	snprintf(path, sizeof(path), "%s/diskstats", e.dir);
	sampler_env_write_file(path, "8 0 sda 1 2 3 4 5 6 7 8 9 10 11\nbroken line\n8 1 sda1 1 2\n");
	sampler_snapshot_unref(sampler_env_sample(&e, 0));
	s = sampler_env_sample(&e, 1);
	assert_int_equal(s->parse_errors_total, 4);
	assert_int_equal(s->n_devices_seen, 1);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

/* losetup on an existing (unused, filtered) loop device does not change
 * /proc/diskstats' device list; its first I/O makes the sampler look at
 * sysfs again. */
static void test_loop_device_set_up_later_appears(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	char path[1200], ds[128];
	_cleanup_free_ char *buf = NULL;
	char *p;

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	sampler_env_private_sysfs(&e);
	s = sampler_env_sample(&e, 0);
	assert_null(sampler_snapshot_find(s, "loop0"));
	sampler_snapshot_unref(s);

	snprintf(path, sizeof(path), "%s/block/loop0/size", e.sys);
	sampler_env_write_file(path, "2048\n");
	snprintf(path, sizeof(path), "%s/block/loop0/loop", e.sys);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/block/loop0/loop/backing_file", e.sys);
	sampler_env_write_file(path, "/var/tmp/new.img\n");
	snprintf(ds, sizeof(ds), "%s/diskstats", e.dir);
	assert_true(read_virtual_file(ds, 1 << 20, &buf) > 0);
	p = strstr(buf, "loop0 0 ");
	assert_non_null(p);
	p[6] = '7'; /* seven reads */
	sampler_env_write_file(ds, buf);

	s = sampler_env_sample(&e, 1);
	assert_non_null(sampler_snapshot_find(s, "loop0"));
	assert_int_equal(get(s, "loop0")->topo.size_bytes, 2048 * 512);
	assert_true(get(s, "loop0")->rates.valid);
	assert_float_equal(get(s, "loop0")->rates.read_iops, 7, EPS);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

/* Mounts are not re-read every tick, but within the refresh period. */
static void test_new_mount_is_noticed_at_the_next_refresh(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	char path[128];
	_cleanup_free_ char *buf = NULL, *more = NULL;

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	sampler_snapshot_unref(sampler_env_sample(&e, 0));
	snprintf(path, sizeof(path), "%s/self/mountinfo", e.dir);
	assert_true(read_virtual_file(path, 1 << 20, &buf) > 0);
	assert_true(asprintf(&more, "%s50 22 202:80 / /mnt/scratch rw - ext4 /dev/xvdf rw\n", buf) > 0);
	sampler_env_write_file(path, more);

	s = sampler_env_sample(&e, 1);
	assert_string_equal(get(s, "xvdf")->topo.mountpoints, "");
	sampler_snapshot_unref(s);
	s = sampler_env_sample(&e, 59);
	assert_string_equal(get(s, "xvdf")->topo.mountpoints, "/mnt/scratch");
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

/* The ceiling hook sees each device's [device] section: by name, or by the
 * mount point the device holds. */
static void test_declared_limits_reach_the_device(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;

	sampler_env_setup(&e, "ec2-md-raid0",
			  "[global]\n[device /data]\niops_limit=6000\nthroughput_limit=250m\n"
			  "[device xvdf]\niops_limit=3000\n");
	s = sampler_env_sample(&e, 0);
	assert_int_equal(get(s, "md0")->ceiling.iops_limit, 6000);
	assert_int_equal(get(s, "md0")->ceiling.throughput_limit, 250ULL << 20);
	assert_int_equal(get(s, "xvdf")->ceiling.iops_limit, 3000);
	assert_int_equal(get(s, "xvdg")->ceiling.iops_limit, 0);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

/* Synthetic per-second counters for the RAID0 fixture: md0 over xvdf and
 * xvdg, with everything else idle. */
struct raid_counters {
	uint64_t reads, sectors, read_ms, io_ms, weighted_ms;
};

static void raid_tick(struct raid_counters *c, double iops, double await_ms, double util, double queue)
{
	c->reads += (uint64_t)llround(iops);
	c->sectors += (uint64_t)llround(iops) * 8;
	c->read_ms += (uint64_t)llround(iops * await_ms);
	c->io_ms += (uint64_t)llround(util * 1000);
	c->weighted_ms += (uint64_t)llround(queue * 1000);
}

static void write_raid_diskstats(struct sampler_env *e, const struct raid_counters c[3])
{
	static const char *const names[] = {"202 80 xvdf", "202 96 xvdg", "9 0 md0"};
	static const char *const idle[] = {
	    "202 0 xvda", "202 1 xvda1", "259 0 nvme0n1", "259 1 nvme0n1p1", "259 2 nvme0n1p2",
	    "253 0 dm-0", "7 0 loop0",	 "7 1 loop1",	  "1 0 ram0",	     "251 0 zram0",
	};
	char buf[4096], path[128];
	size_t n = 0;

	for (size_t i = 0; i < ELEMENTSOF(idle); i++) {
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n",
				      idle[i]);
	}
	for (size_t i = 0; i < 3; i++) {
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      "%s %" PRIu64 " 0 %" PRIu64 " %" PRIu64 " 0 0 0 0 0 %" PRIu64
				      " %" PRIu64 " 0 0 0 0 0 0\n",
				      names[i], c[i].reads, c[i].sectors, c[i].read_ms, c[i].io_ms,
				      c[i].weighted_ms);
	}
	snprintf(path, sizeof(path), "%s/diskstats", e->dir);
	sampler_env_write_file(path, buf);
}

/* The field measurement: md RAID0 over a capped member (queue 15.6, flat at
 * 500) and an uncapped one (queue 0.15); md0's own IOPS wander by a few
 * percent, so its own detector says nothing. The array is held by xvdf. */
static struct sampler_snapshot *run_raid(struct sampler_env *e, unsigned seconds, bool is_capped)
{
	/* counters only grow, across calls and tests */
	static struct raid_counters c[3];
	struct sampler_snapshot *s = NULL;

	for (unsigned t = 0; t < seconds; t++) {
		double wobble = (double)((t * 37) % 9) - 4.0; /* -4 .. +4 */

		raid_tick(&c[0], is_capped ? 500 : 500 + 10 * wobble, 31, 1.0, 15.6);
		raid_tick(&c[1], is_capped ? 500 : 500 - 8 * wobble, 0.3, 0.15, 0.15);
		raid_tick(&c[2], 1000 + 10 * wobble, 16, 1.0, 16);
		write_raid_diskstats(e, c);
		sampler_snapshot_unref(s);
		s = sampler_env_sample(e, 1);
	}
	return s;
}

static void test_array_is_held_by_its_throttled_member(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	const struct device_state *md;

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	s = run_raid(&e, 25, true);
	assert_true(get(s, "xvdf")->ceiling.is_throttled);
	assert_float_equal(get(s, "xvdf")->ceiling.iops_ceiling_estimate, 500, 1);
	assert_false(get(s, "xvdg")->ceiling.is_throttled);
	md = get(s, "md0");
	assert_true(md->ceiling.is_throttled);
	/* bit 0: xvdf, the first of "xvdf,xvdg" */
	assert_int_equal(md->ceiling.held_by_mask, 1);
	/* its own plateau is not what flags it */
	assert_true(md->ceiling.iops_ceiling_estimate == 0);
	assert_int_equal(get(s, "xvdf")->ceiling.held_by_mask, 0);
	sampler_snapshot_unref(s);

	/* the cap goes away: xvdf wanders, and the hold ends with its plateau
	 * (once its window has more than a quarter of outliers) and the
	 * hold-over */
	s = run_raid(&e, 20, false);
	assert_false(get(s, "xvdf")->ceiling.is_throttled);
	assert_int_equal(get(s, "md0")->ceiling.held_by_mask, 0);
	assert_false(get(s, "md0")->ceiling.is_throttled);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

/* With only the array kept, its members are still followed. */
static void test_members_the_filter_drops_still_hold_the_array(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;

	sampler_env_setup(&e, "ec2-md-raid0", "[global]\ndevice_include=^md\n");
	s = run_raid(&e, 25, true);
	assert_names(s, "md0");
	assert_true(get(s, "md0")->ceiling.is_throttled);
	assert_int_equal(get(s, "md0")->ceiling.held_by_mask, 1);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

/* Recorded by iopsd in a QEMU guest: md RAID0 (-c256) over a virtio and an
 * NVMe volume each capped at 500 IOPS, fio randread 4k numjobs=16 on the
 * array; per second IOPS, aqu-sz, %util of the virtio member, the NVMe
 * member and the array. The members take turns at holding the queue. */
static const double qemu_raid0_500x2[][9] = {
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {307.8, 2.21, 42.0, 304.8, 5.28, 49.6, 627.6, 7.57, 50.0},
    {499.4, 7.97, 98.5, 500.4, 7.51, 100.0, 1000.8, 15.35, 100.0},
    {500.5, 14.03, 100.0, 470.5, 1.05, 38.4, 971.1, 14.95, 100.0},
    {493.5, 14.61, 98.7, 451.2, 0.26, 27.9, 933.8, 14.84, 98.7},
    {506.9, 11.73, 93.2, 535.4, 0.75, 47.6, 1052.5, 12.50, 97.3},
    {476.7, 9.38, 93.3, 479.6, 2.05, 68.7, 943.4, 11.55, 97.7},
    {514.3, 4.69, 82.5, 520.3, 9.08, 98.2, 1046.7, 14.12, 100.0},
    {508.6, 0.39, 28.0, 500.6, 14.09, 97.7, 1011.2, 14.74, 99.3},
    {498.3, 4.71, 78.3, 496.3, 9.78, 99.1, 987.6, 14.70, 99.9},
    {502.1, 6.79, 96.0, 497.1, 4.58, 82.8, 996.2, 11.73, 99.2},
    {500.1, 3.78, 77.5, 506.1, 10.69, 98.2, 1013.1, 14.60, 99.8},
    {499.5, 10.64, 97.7, 474.5, 3.55, 72.5, 974.1, 14.32, 100.0},
    {497.0, 11.31, 99.8, 525.7, 3.10, 69.3, 1014.8, 14.55, 99.8},
    {434.8, 0.54, 30.7, 499.4, 12.74, 98.9, 940.3, 13.69, 98.5},
    {529.7, 3.39, 70.2, 500.6, 11.65, 99.9, 1035.3, 15.25, 99.9},
    {486.7, 0.43, 33.6, 499.7, 14.37, 99.9, 986.4, 15.13, 99.9},
    {513.0, 9.80, 88.4, 493.0, 4.84, 62.8, 1004.0, 14.82, 100.0},
    {500.5, 9.23, 91.0, 487.6, 2.04, 62.1, 990.0, 11.41, 95.3},
    {497.8, 12.75, 100.0, 498.9, 2.38, 73.7, 995.7, 15.26, 100.0},
    {501.2, 13.48, 100.0, 502.2, 1.90, 58.6, 999.5, 15.37, 100.0},
    {449.6, 5.87, 73.7, 423.5, 2.55, 59.9, 866.6, 8.73, 85.6},
    {430.6, 2.86, 73.5, 440.4, 2.77, 68.3, 866.6, 6.50, 97.0},
    {500.0, 1.67, 62.1, 527.0, 8.93, 90.2, 1037.0, 10.63, 95.0},
    {502.1, 9.79, 92.0, 484.1, 5.24, 57.2, 991.3, 15.26, 100.0},
    {500.4, 15.15, 99.7, 479.4, 0.22, 23.2, 981.8, 15.54, 99.7},
    {499.0, 14.63, 99.8, 495.0, 0.37, 34.6, 992.0, 15.18, 99.8},
    {500.0, 14.36, 100.0, 490.0, 0.39, 34.5, 991.0, 14.96, 100.0},
    {501.5, 14.14, 100.0, 478.4, 0.40, 36.4, 978.9, 14.77, 100.0},
    {499.3, 14.72, 100.0, 512.4, 0.36, 28.0, 1012.7, 15.25, 100.0},
    {500.3, 15.29, 99.9, 505.3, 0.16, 18.8, 1005.6, 15.62, 99.9},
    {499.4, 14.94, 100.0, 505.4, 0.52, 37.2, 1004.8, 15.60, 100.0},
    {500.5, 13.19, 97.7, 502.5, 2.40, 50.8, 1002.9, 15.79, 99.7},
    {485.7, 5.93, 75.2, 499.7, 9.67, 93.9, 985.4, 15.83, 99.9},
    {435.7, 0.12, 18.0, 500.6, 15.55, 100.0, 936.3, 15.63, 100.0},
    {472.4, 0.13, 16.4, 499.4, 15.43, 100.0, 971.8, 15.51, 100.0},
    {501.9, 0.17, 16.4, 499.9, 15.36, 100.0, 1001.9, 15.44, 100.0},
    {517.3, 0.13, 16.8, 500.3, 15.51, 99.7, 1017.6, 15.63, 99.7},
    {457.2, 0.23, 21.6, 500.3, 15.42, 100.0, 957.5, 15.60, 100.0},
    {529.1, 1.22, 32.0, 500.1, 14.55, 100.0, 1027.1, 15.75, 100.0},
    {499.7, 10.12, 99.9, 499.7, 5.49, 73.6, 1001.5, 15.47, 99.9},
    {500.0, 5.33, 92.4, 500.0, 10.29, 100.0, 1000.1, 15.40, 100.0},
    {500.0, 10.90, 100.0, 500.0, 4.65, 90.8, 1000.1, 15.31, 100.0},
    {498.9, 8.82, 98.8, 499.9, 6.71, 93.6, 998.9, 15.22, 100.0},
    {501.3, 10.70, 96.1, 487.3, 4.73, 75.6, 988.5, 15.25, 100.0},
    {497.6, 8.98, 90.7, 512.5, 6.66, 72.3, 1010.1, 15.55, 100.0},
    {223.1, 0.05, 5.6, 255.1, 7.91, 50.8, 462.1, 7.95, 50.8},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
};

static void test_members_capped_alike_take_turns_at_holding_the_array(void **state)
{
	static struct raid_counters c[3];
	struct sampler_env e;
	unsigned n_held = 0, n_after = 0, n_member[2] = {0, 0};

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	for (size_t t = 0; t < ELEMENTSOF(qemu_raid0_500x2); t++) {
		const double *x = qemu_raid0_500x2[t];
		struct sampler_snapshot *s;
		const struct device_state *md;

		for (size_t k = 0; k < 3; k++) {
			raid_tick(&c[k], x[3 * k], x[3 * k] > 0 ? x[3 * k + 1] / x[3 * k] * 1000 : 0,
				  x[3 * k + 2] / 100, x[3 * k + 1]);
		}
		write_raid_diskstats(&e, c);
		s = sampler_env_sample(&e, 1);
		md = get(s, "md0");
		/* never before a window of load */
		if (t < 20) {
			assert_false(md->ceiling.is_throttled);
		} else if (t + 1 < ELEMENTSOF(qemu_raid0_500x2)) {
			n_after++;
			n_held += md->ceiling.is_throttled;
			n_member[0] += md->ceiling.held_by_mask & 1;
			n_member[1] += (md->ceiling.held_by_mask >> 1) & 1;
		}
		assert_true(md->ceiling.iops_ceiling_estimate == 0);
		/* a stripe's members are no shared ceiling */
		assert_int_equal(s->n_shared, 0);
		sampler_snapshot_unref(s);
	}
	/* held most of the time, by one member and then the other */
	assert_true(n_held >= n_after * 2 / 3);
	assert_true(n_member[0] >= 5);
	assert_true(n_member[1] >= 5);
	sampler_env_teardown(&e);
}

/* [instance]: the volumes it counts summed against its limits, with a ratio
 * and time at the limit like a device's; every whole disk by default. */
static void test_instance_limits_count_the_volumes_together(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	const struct instance_state *in;
	char joined[4 * DISKSTATS_NAME_MAX];

	sampler_env_setup(&e, "ec2-md-raid0", "[global]\n[instance]\niops_limit=1000\ndevices=^xvd[fg]$\n");
	s = run_raid(&e, 10, true);
	in = &s->instance;
	assert_true(in->is_declared);
	device_names_join(in->devices, in->n_devices, joined, sizeof(joined));
	assert_string_equal(joined, "xvdf,xvdg");
	assert_float_equal(in->iops, 1000, 1);
	assert_float_equal(in->iops_limit_ratio, 1.0, 0.001);
	assert_true(isnan(in->throughput_limit_ratio));
	/* the first sample derives nothing */
	assert_float_equal(in->at_ceiling_iops_seconds, 9, EPS);
	assert_true(in->is_at_limit);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);

	sampler_env_setup(&e, "ec2-md-raid0", "[global]\n[instance]\nthroughput_limit=100m\n");
	s = run_raid(&e, 3, true);
	/* whole disks only: the array and its dm would count the I/O again */
	device_names_join(s->instance.devices, s->instance.n_devices, joined, sizeof(joined));
	assert_string_equal(joined, "xvda,nvme0n1,xvdf,xvdg");
	assert_float_equal(s->instance.throughput_limit_ratio, 1000 * 4096.0 / (100 << 20), 0.001);
	assert_true(s->instance.at_ceiling_throughput_seconds == 0);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	s = sampler_env_sample(&e, 0);
	assert_false(s->instance.is_declared);
	assert_null(s->instance.devices);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

/* An NVMe volume whose serial is an EBS volume id (QEMU's, in the lab, has
 * no log page: none is asked for, its model is not EBS's) and a virtio
 * disk with one: the id, as EBS users know it, on the device and its
 * partitions; a serial that is no volume id gives none. */
static void test_volume_id_from_an_ebs_style_serial(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	char path[1400];

	sampler_env_setup(&e, "ec2-md-raid0", "[global]\ndevice_include=^(nvme|xvd[fg])\n");
	sampler_env_private_sysfs(&e);
	snprintf(path, sizeof(path),
		 "%s/devices/pci0000:00/0000:00:1f.0/nvme/nvme0/block/nvme0n1/device/serial", e.sys);
	sampler_env_write_file(path, "vol0123456789abcdef0        \n");
	snprintf(path, sizeof(path),
		 "%s/devices/pci0000:00/0000:00:1f.0/nvme/nvme0/block/nvme0n1/device/model", e.sys);
	sampler_env_write_file(path, "QEMU NVMe Ctrl                          \n");
	snprintf(path, sizeof(path), "%s/devices/vbd-51792/block/xvdf/serial", e.sys);
	sampler_env_write_file(path, "vol1a2b3c4d\n");
	snprintf(path, sizeof(path), "%s/devices/vbd-51808/block/xvdg/serial", e.sys);
	sampler_env_write_file(path, "vol0gggg\n");
	s = sampler_env_sample(&e, 0);
	assert_string_equal(get(s, "nvme0n1")->topo.volume_id, "vol-0123456789abcdef0");
	assert_string_equal(get(s, "nvme0n1p1")->topo.volume_id, "vol-0123456789abcdef0");
	assert_string_equal(get(s, "xvdf")->topo.volume_id, "vol-1a2b3c4d");
	assert_string_equal(get(s, "xvdg")->topo.volume_id, "");
	/* QEMU's NVMe is no EBS volume to the log page reader */
	assert_int_equal(s->n_ebs, 0);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

static void test_missing_diskstats_is_an_error(void **state)
{
	struct config *cfg = NULL;
	struct sampler *s = NULL;
	struct sampler_snapshot *snap = NULL;

	assert_int_equal(config_load_builtin(&cfg), 0);
	assert_int_equal(sampler_new("/nonexistent", "/nonexistent", cfg, &s), 0);
	assert_int_equal(sampler_sample(s, &snap), -ENOENT);
	assert_null(snap);
	sampler_free(s);
	config_free(cfg);
}

/* A member's failure is in every sample, not only after the next topology
 * refresh: md0's member xvdg marked faulty, then the array broken. */
static void test_md_member_failure_is_seen_at_the_next_sample(void **state)
{
	struct sampler_env e;
	struct sampler_snapshot *s;
	const struct device_state *md;
	char path[1400];

	(void)state;
	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	sampler_env_private_sysfs(&e);
	s = sampler_env_sample(&e, 1);
	md = get(s, "md0");
	assert_false(md->md.is_known); /* no md/array_state in the tree: nothing said */
	assert_false(get(s, "xvdf")->md.is_known);
	sampler_snapshot_unref(s);

	snprintf(path, sizeof(path), "%s/block/md0/md/array_state", e.sys);
	sampler_env_write_file(path, "clean\n");
	snprintf(path, sizeof(path), "%s/block/md0/md/dev-xvdf", e.sys);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/block/md0/md/dev-xvdg", e.sys);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/block/md0/md/dev-xvdf/state", e.sys);
	sampler_env_write_file(path, "in_sync\n");
	snprintf(path, sizeof(path), "%s/block/md0/md/dev-xvdg/state", e.sys);
	sampler_env_write_file(path, "in_sync\n");
	s = sampler_env_sample(&e, 1);
	md = get(s, "md0");
	assert_true(md->md.is_known);
	assert_string_equal(md->md.array_state, "clean");
	assert_int_equal(md->md.degraded, 0);
	assert_int_equal(md->md.failed_mask, 0);
	sampler_snapshot_unref(s);

	sampler_env_write_file(path, "faulty\n");
	s = sampler_env_sample(&e, 1);
	md = get(s, "md0");
	assert_int_equal(md->md.degraded, 1);
	assert_int_equal(md->md.failed_mask, 2); /* members "xvdf,xvdg": the second */
	sampler_snapshot_unref(s);

	/* a RAID0 that lost a member whose state says nothing: the kernel's
	 * "broken" counts one */
	sampler_env_write_file(path, "in_sync\n");
	snprintf(path, sizeof(path), "%s/block/md0/md/array_state", e.sys);
	sampler_env_write_file(path, "broken\n");
	s = sampler_env_sample(&e, 1);
	md = get(s, "md0");
	assert_int_equal(md->md.degraded, 1);
	assert_int_equal(md->md.failed_mask, 0);
	sampler_snapshot_unref(s);
	sampler_env_teardown(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_md0_members_reproduce_the_fio_run),
	    cmocka_unit_test(test_default_filter_drops_ram_zram_unused_loops_and_partitions),
	    cmocka_unit_test(test_default_filter_drops_floppy_drives),
	    cmocka_unit_test(test_partitions_holding_a_configured_target_are_kept),
	    cmocka_unit_test(test_include_and_exclude_regexes_select_devices),
	    cmocka_unit_test(test_reload_applies_the_new_filter),
	    cmocka_unit_test(test_bad_regex_is_refused),
	    cmocka_unit_test(test_device_vanishing_and_returning_restarts_its_rates),
	    cmocka_unit_test(test_kernel_4x_trees_sample_without_psi),
	    cmocka_unit_test(test_multipath_head_carries_its_hidden_paths_io),
	    cmocka_unit_test(test_reads_between_samples_count_as_the_samples_do),
	    cmocka_unit_test(test_multipath_paths_are_the_heads_members),
	    cmocka_unit_test(test_multipath_links_name_the_paths),
	    cmocka_unit_test(test_psi_totals_are_in_the_snapshot),
	    cmocka_unit_test(test_snapshot_outlives_the_sampler),
	    cmocka_unit_test(test_max_devices_caps_the_snapshot),
	    cmocka_unit_test(test_malformed_lines_are_counted_across_samples),
	    cmocka_unit_test(test_loop_device_set_up_later_appears),
	    cmocka_unit_test(test_new_mount_is_noticed_at_the_next_refresh),
	    cmocka_unit_test(test_declared_limits_reach_the_device),
	    cmocka_unit_test(test_array_is_held_by_its_throttled_member),
	    cmocka_unit_test(test_members_the_filter_drops_still_hold_the_array),
	    cmocka_unit_test(test_members_capped_alike_take_turns_at_holding_the_array),
	    cmocka_unit_test(test_volume_id_from_an_ebs_style_serial),
	    cmocka_unit_test(test_instance_limits_count_the_volumes_together),
	    cmocka_unit_test(test_missing_diskstats_is_an_error),
	    cmocka_unit_test(test_md_member_failure_is_seen_at_the_next_sample),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
