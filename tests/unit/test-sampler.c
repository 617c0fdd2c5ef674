/* sampler: snapshots from fixture trees with a fake clock — md aggregates,
 * filtering, devices vanishing and returning, PSI, topology refresh. */
#include <errno.h>
#include <fcntl.h>
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

#include "config.h"
#include "device.h"
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

	assert_string_equal(md->topo.members, "xvdf,xvdg");
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

	sampler_env_setup(&e, "ec2-md-raid0",
		  "[global]\n"
		  "[spacey]\nrw=randread\ndirectory=/mnt/my disk/probe\n"
		  "[mysql]\nrw=randread\ndirectory=/var/lib/mysql\n"
		  "[device /]\niops_limit=3000\n");
	s = sampler_env_sample(&e, 0);
	assert_names(s, "xvda,xvda1,xvdf,xvdg,nvme0n1,nvme0n1p1,md0,dm-0,loop1");
	assert_int_equal(sampler_device_for_target(e.s, "/mnt/my disk/probe", name), 0);
	assert_string_equal(name, "nvme0n1p1");
	assert_int_equal(sampler_device_for_target(e.s, "/data", name), 0);
	assert_string_equal(name, "md0");
	assert_int_equal(sampler_device_for_target(e.s, "/run/x", name), -ENODEV);
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

	sampler_env_setup(&e, "ec2-md-raid0", NULL);
	cfg = *e.cfg;
	cfg.device_include = (char *)"(unclosed";
	assert_int_equal(sampler_new(e.dir, e.sys, &cfg, &s), -EINVAL);
	assert_int_equal(sampler_set_config(e.s, &cfg), -EINVAL);
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
		cmocka_unit_test(test_psi_totals_are_in_the_snapshot),
		cmocka_unit_test(test_snapshot_outlives_the_sampler),
		cmocka_unit_test(test_max_devices_caps_the_snapshot),
		cmocka_unit_test(test_malformed_lines_are_counted_across_samples),
		cmocka_unit_test(test_loop_device_set_up_later_appears),
		cmocka_unit_test(test_new_mount_is_noticed_at_the_next_refresh),
		cmocka_unit_test(test_declared_limits_reach_the_device),
		cmocka_unit_test(test_missing_diskstats_is_an_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
