/* The ceiling probe's gate with a real sampler on a fixture procfs/sysfs
 * and a fake clock: a ceiling probe waits until its device has been quiet,
 * iopsd's own probe I/O does not count against that, it runs at most once
 * per CEILING_GATE_MIN_SPACING_USEC, and its result becomes the device's
 * ceiling estimate. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
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

#include "ceiling_gate.h"
#include "config.h"
#include "detect.h"
#include "ebs_nvme.h"
#include "identities.h"
#include "macro.h"
#include "sampler.h"

struct env {
	char root[64];
	char procfs[128], sysfs[128];
	uint64_t now_usec; /* the fake CLOCK_MONOTONIC */
	uint64_t reads;	   /* loop5's read counter */
	struct config *cfg;
	struct sampler *sampler;
	struct detect *detect;
	struct identities ids; /* as the daemon builds them */
	struct ceiling_gate *gate;
	struct probe_identity *plain, *ceil; /* the identities of the two probes */
	struct device_ceiling last;	     /* loop5's ceiling in the last sample */
	int64_t exceeded_usec;		     /* loop5 as an EBS volume: its exceeded counter, -1 not one */
};

static const char config_text[] = "[global]\n"
				  "state_directory=/tmp\n"
				  "[plain]\n"
				  "directory=/srv/lab\n"
				  "rw=randread\n"
				  "rate_iops=50\n"
				  "[ceil]\n"
				  "directory=/srv/lab\n"
				  "rw=randread\n"
				  "iodepth=32\n"
				  "ceiling=1\n";

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void make_dir(const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static uint64_t fake_sampler_clock(clockid_t clock, void *userdata)
{
	struct env *e = userdata;

	return e->now_usec;
}

static uint64_t fake_gate_clock(void *userdata)
{
	struct env *e = userdata;

	return e->now_usec;
}

/* One second passes with `ios` reads on loop5, then a sample. */
static void tick(struct env *e, uint64_t ios)
{
	struct sampler_snapshot *snap = NULL;
	const struct device_state *d;
	char line[256];

	e->now_usec += 1000000;
	e->reads += ios;
	snprintf(line, sizeof(line),
		 "   7       5 loop5 %" PRIu64 " 0 %" PRIu64 " %" PRIu64 " 0 0 0 0 %u %u %u\n", e->reads,
		 e->reads * 8, e->reads / 2, 0u, (unsigned)(e->now_usec / 1000 % 100000),
		 (unsigned)(e->now_usec / 1000 % 100000));
	write_file(e->procfs, "diskstats", line);

	ceiling_gate_collect(e->gate, detect_ceilings(e->detect));
	assert_int_equal(sampler_sample(e->sampler, &snap), 0);
	if (e->exceeded_usec >= 0) {
		/* the log page the sampler would have read, were loop5 EBS's */
		assert_int_equal(snap->n_ebs, 0);
		snap->ebs = calloc(1, sizeof(*snap->ebs));
		assert_non_null(snap->ebs);
		snap->n_ebs = 1;
		strcpy(snap->ebs[0].device, "loop5");
		snap->ebs[0].stats.volume_exceeded_iops_usec = (uint64_t)e->exceeded_usec;
	}
	assert_int_equal(detect_run(e->detect, sampler_last_sample(e->sampler), snap), 0);
	identities_place(&e->ids, sampler_last_sample(e->sampler)->topology);
	ceiling_gate_refresh(e->gate, detect_ceilings(e->detect));
	d = sampler_snapshot_find(snap, "loop5");
	assert_non_null(d);
	e->last = d->ceiling;
	sampler_snapshot_unref(snap);
}

static void probe_done(struct env *e, const struct probe_identity *id, uint64_t ops, double iops)
{
	struct probe_result *res = calloc(1, sizeof(*res));

	assert_non_null(res);
	probe_result_init(res);
	res->success = true;
	res->runtime_usec = 1000000;
	res->op[PROBE_OP_READ].ops = ops;
	res->op[PROBE_OP_READ].bytes = ops * 4096;
	res->op[PROBE_OP_READ].iops = iops;
	res->op[PROBE_OP_READ].bw_bytes = iops * 4096;
	/* the scheduler's done callback, as the daemon's */
	ceiling_gate_probe_done(e->gate, id, res);
	free(res);
}

static int env_setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct config_errors errs = {0};

	assert_non_null(e);
	strcpy(e->root, "/tmp/test-ceiling-gate.XXXXXX");
	assert_non_null(mkdtemp(e->root));
	snprintf(e->procfs, sizeof(e->procfs), "%s/proc", e->root);
	snprintf(e->sysfs, sizeof(e->sysfs), "%s/sys", e->root);
	make_dir(e->root, "proc");
	make_dir(e->root, "proc/self");
	make_dir(e->root, "sys");
	write_file(e->procfs, "self/mountinfo", "30 1 7:5 / /srv/lab rw,relatime - ext4 /dev/loop5 rw\n");
	e->now_usec = 1000000000;
	e->exceeded_usec = -1;

	assert_int_equal(config_load_string("gate.conf", config_text, &errs, &e->cfg), 0);
	assert_int_equal(identities_build(e->cfg, NULL, &e->ids), 0);
	assert_int_equal(sampler_new(e->procfs, e->sysfs, e->cfg, &e->sampler), 0);
	sampler_set_clock(e->sampler, fake_sampler_clock, e);
	assert_int_equal(detect_new(e->cfg, &e->detect), 0);
	e->plain = probe_identity_ref(e->ids.ids[0]);
	e->ceil = probe_identity_ref(e->ids.ids[1]);
	assert_non_null(e->plain);
	assert_non_null(e->ceil);
	assert_int_equal(ceiling_gate_new(&e->gate), 0);
	ceiling_gate_set_clock(e->gate, fake_gate_clock, e);
	assert_int_equal(ceiling_gate_set_config(e->gate, e->cfg, e->ids.ids), 0);
	*state = e;
	return 0;
}

static int env_teardown(void **state)
{
	struct env *e = *state;
	char path[PATH_MAX];

	ceiling_gate_free(e->gate);
	probe_identity_unref(e->plain);
	probe_identity_unref(e->ceil);
	detect_free(e->detect);
	sampler_free(e->sampler);
	identities_clear(&e->ids);
	config_free(e->cfg);
	snprintf(path, sizeof(path), "%s/diskstats", e->procfs);
	unlink(path);
	snprintf(path, sizeof(path), "%s/self/mountinfo", e->procfs);
	unlink(path);
	snprintf(path, sizeof(path), "%s/self", e->procfs);
	rmdir(path);
	rmdir(e->procfs);
	rmdir(e->sysfs);
	rmdir(e->root);
	free(e);
	return 0;
}

static void test_ceiling_probe_waits_for_a_quiet_device(void **state)
{
	struct env *e = *state;
	const struct probe_config *plain = &e->cfg->probes[0], *ceil = &e->cfg->probes[1];

	/* other probes are never held */
	assert_int_equal(ceiling_gate_check(e->gate, e->plain, plain), 0);
	/* nothing known yet: wait */
	assert_int_equal(ceiling_gate_check(e->gate, e->ceil, ceil), CEILING_GATE_RETRY_USEC);
	for (unsigned i = 0; i < 10; i++) {
		tick(e, 800);
	}
	assert_int_equal(ceiling_gate_check(e->gate, e->ceil, ceil), CEILING_GATE_RETRY_USEC);
	/* quiet, but not for long enough yet */
	for (unsigned i = 0; i < 4; i++) {
		tick(e, 0);
	}
	assert_int_equal(ceiling_gate_check(e->gate, e->ceil, ceil), CEILING_GATE_RETRY_USEC);
	tick(e, 2);
	assert_int_equal(ceiling_gate_check(e->gate, e->plain, plain), 0);
	assert_int_equal(ceiling_gate_check(e->gate, e->ceil, ceil), 0);
}

static void test_own_probe_io_does_not_count_against_quiet(void **state)
{
	struct env *e = *state;
	const struct probe_config *ceil = &e->cfg->probes[1];

	tick(e, 0);
	/* the plain probe runs: 50 reads in the next second, all iopsd's */
	for (unsigned i = 0; i < 5; i++) {
		probe_done(e, e->plain, 50, 50);
		tick(e, 50);
	}
	assert_int_equal(ceiling_gate_check(e->gate, e->ceil, ceil), 0);
}

static void test_someone_else_io_keeps_it_waiting(void **state)
{
	struct env *e = *state;
	const struct probe_config *ceil = &e->cfg->probes[1];

	tick(e, 0);
	for (unsigned i = 0; i < 5; i++) {
		probe_done(e, e->plain, 50, 50);
		tick(e, 50 + 100);
	}
	assert_int_equal(ceiling_gate_check(e->gate, e->ceil, ceil), CEILING_GATE_RETRY_USEC);
}

static void test_at_most_one_run_per_spacing_and_result_becomes_the_estimate(void **state)
{
	struct env *e = *state;
	const struct probe_config *ceil = &e->cfg->probes[1];
	uint64_t delay;

	for (unsigned i = 0; i < 6; i++) {
		tick(e, 0);
	}
	assert_int_equal(ceiling_gate_check(e->gate, e->ceil, ceil), 0);
	/* the burst: 5 s at 606 IOPS, then its result */
	for (unsigned i = 0; i < 5; i++) {
		tick(e, 606);
	}
	probe_done(e, e->ceil, 5 * 606, 606.5);
	tick(e, 0);
	assert_true(e->last.iops_ceiling_estimate > 606.4 && e->last.iops_ceiling_estimate < 606.6);
	assert_true(e->last.throughput_ceiling_estimate > 606.4 * 4096);
	assert_false(e->last.is_throttled);

	/* quiet again, but the budget says no for the rest of the spacing */
	for (unsigned i = 0; i < 10; i++) {
		tick(e, 0);
	}
	delay = ceiling_gate_check(e->gate, e->ceil, ceil);
	assert_int_equal(delay, CEILING_GATE_MIN_SPACING_USEC - 16 * 1000000ULL);
	e->now_usec += delay;
	for (unsigned i = 0; i < 6; i++) {
		tick(e, 0);
	}
	assert_int_equal(ceiling_gate_check(e->gate, e->ceil, ceil), 0);
	/* and the estimate outlives all that idleness */
	assert_true(e->last.iops_ceiling_estimate > 606.4);
}

/* loop5 as an EBS volume, its reads wandering by 4% around 3000 (no
 * plateau): flagged at the second second its log page counts whole over
 * the volume's IOPS limit, at the mean of the two, and no longer once it
 * stops counting; a counter that goes back (the volume reattached) counts
 * nothing. */
static void test_ebs_exceeded_counter_flags_the_volume_at_once(void **state)
{
	static const uint64_t ios[] = {3000, 3110, 2905, 3080, 2950, 3060, 2920, 3100, 2990, 3050};
	struct env *e = *state;

	e->exceeded_usec = 5000000;
	for (size_t i = 0; i < ELEMENTSOF(ios); i++) {
		tick(e, ios[i]);
		assert_false(e->last.is_throttled);
	}
	e->exceeded_usec += 990000;
	tick(e, 3020);
	assert_false(e->last.is_throttled);
	e->exceeded_usec += 1000000;
	tick(e, 2980);
	assert_true(e->last.is_throttled);
	assert_string_equal(e->last.found_by, "provider");
	assert_float_equal(e->last.iops_ceiling_estimate, 3000, 1e-6);
	/* back: not a second over the limit */
	e->exceeded_usec = 1000;
	tick(e, 3090);
	tick(e, 2930);
	assert_false(e->last.is_throttled);
}

static void test_reload_keeps_the_budget(void **state)
{
	struct env *e = *state;
	const struct probe_config *ceil = &e->cfg->probes[1];

	for (unsigned i = 0; i < 6; i++) {
		tick(e, 0);
	}
	assert_int_equal(ceiling_gate_check(e->gate, e->ceil, ceil), 0);
	/* a reload keeps the identity of a probe that keeps name and target */
	{
		struct identities ids = {0};

		assert_int_equal(identities_build(e->cfg, &e->ids, &ids), 0);
		assert_ptr_equal(ids.ids[1], e->ceil);
		identities_clear(&e->ids);
		e->ids = ids;
	}
	assert_int_equal(ceiling_gate_set_config(e->gate, e->cfg, e->ids.ids), 0);
	for (unsigned i = 0; i < 6; i++) {
		tick(e, 0);
	}
	assert_true(ceiling_gate_check(e->gate, e->ceil, ceil) > CEILING_GATE_RETRY_USEC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_ceiling_probe_waits_for_a_quiet_device, env_setup,
					    env_teardown),
	    cmocka_unit_test_setup_teardown(test_own_probe_io_does_not_count_against_quiet, env_setup,
					    env_teardown),
	    cmocka_unit_test_setup_teardown(test_someone_else_io_keeps_it_waiting, env_setup, env_teardown),
	    cmocka_unit_test_setup_teardown(test_at_most_one_run_per_spacing_and_result_becomes_the_estimate,
					    env_setup, env_teardown),
	    cmocka_unit_test_setup_teardown(test_reload_keeps_the_budget, env_setup, env_teardown),
	    cmocka_unit_test_setup_teardown(test_ebs_exceeded_counter_flags_the_volume_at_once, env_setup,
					    env_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
