/* The scheduler with real probes on a scratch directory (O_DIRECT needed;
 * skips without it): runs on one disk never overlap unless allowed, stop
 * is immediate even mid-run, the gate holds runs back, failures are
 * reported. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "identities.h"
#include "sampler.h"
#include "registry.h"
#include "scheduler.h"
#include "timeutil.h"

#define MAX_RUNS 64

struct run_span {
	uint64_t start_usec, end_usec;
	bool success;
	char message[256];
};

struct harness {
	struct config *cfg;
	struct identities ids; /* as the daemon builds them from the config */
	struct registry *registry;
	struct scheduler *sched;
	int wake_fd;
	uint64_t seen_runs[2];
	struct run_span runs[2][MAX_RUNS];
	size_t n_runs[2];
};

static char scratch[64];

static void make_fixture(void);

static int setup(void **state)
{
	snprintf(scratch, sizeof(scratch), "./scheduler-test-XXXXXX");
	if (!mkdtemp(scratch)) {
		return -1;
	}
	make_fixture();
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	return system(cmd) == 0 ? 0 : -1;
}

static uint64_t mono_msec(void)
{
	return now_nsec(CLOCK_MONOTONIC) / NSEC_PER_MSEC;
}

/* A fixture procfs and sysfs that hold the scratch directory's device as
 * the kernel names it (stat()'s st_dev), and no mount at all: what a daemon
 * in a chroot sees, where mountinfo does not show the root. Nothing of the
 * host's /proc or /sys is read. */
static char fixture_proc[PATH_MAX], fixture_sys[PATH_MAX];

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static void make_fixture(void)
{
	char path[PATH_MAX + 64], line[256];
	struct stat st;

	assert_int_equal(stat(scratch, &st), 0);
	snprintf(fixture_proc, sizeof(fixture_proc), "%s/proc", scratch);
	snprintf(fixture_sys, sizeof(fixture_sys), "%s/sys", scratch);
	snprintf(path, sizeof(path), "%s/self", fixture_proc);
	assert_int_equal(mkdir(fixture_proc, 0755), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(mkdir(fixture_sys, 0755), 0);
	snprintf(line, sizeof(line), "%4u %7u scratchdisk 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		 major(st.st_dev), minor(st.st_dev));
	snprintf(path, sizeof(path), "%s/diskstats", fixture_proc);
	write_text(path, major(st.st_dev) != 0 ? line : "");
	/* no mount is visible, as in a chroot */
	snprintf(path, sizeof(path), "%s/self/mountinfo", fixture_proc);
	write_text(path, "");
	/* 4096 suits O_DIRECT whatever the scratch device's sector */
	snprintf(path, sizeof(path), "%s/dev", fixture_sys);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/dev/block", fixture_sys);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/dev/block/%u:%u", fixture_sys, major(st.st_dev), minor(st.st_dev));
	assert_int_equal(mkdir(path, 0755), 0);
	strncat(path, "/queue", sizeof(path) - strlen(path) - 1);
	assert_int_equal(mkdir(path, 0755), 0);
	strncat(path, "/logical_block_size", sizeof(path) - strlen(path) - 1);
	write_text(path, "4096\n");
}

/* The probes' devices, from one sample of the fixture, with no mount in
 * mountinfo: the main loop's placement finds none, the stat() a probe's
 * thread makes before its first run finds st_dev. */
static void resolve_devices(struct harness *h)
{
	struct sampler *sampler = NULL;
	struct sampler_snapshot *snap = NULL;
	struct stat st;

	assert_int_equal(stat(scratch, &st), 0);
	assert_int_equal(sampler_new(fixture_proc, fixture_sys, h->cfg, &sampler), 0);
	assert_int_equal(sampler_sample(sampler, &snap), 0);
	identities_place(&h->ids, sampler_last_sample(sampler)->topology);
	for (size_t i = 0; i < h->cfg->n_probes; i++) {
		/* what a probe's thread does before its first run */
		targets_resolve_identity(h->ids.ids[i]);
	}
	for (size_t i = 0; i < h->cfg->n_probes; i++) {
		struct probe_identity *id = probe_identity_ref(h->ids.ids[i]);
		char device[DISKSTATS_NAME_MAX] = "";
		dev_t disk = 0;
		struct stat st_dir;

		assert_non_null(id);
		if (stat(h->cfg->probes[i].directory, &st_dir) < 0) {
			/* a directory that does not exist is on no device */
			assert_false(probe_identity_device(id, device, &disk));
			probe_identity_unref(id);
			continue;
		}
		/* placed although no mount shows the path: on the fixture's
		 * disk by st_dev, or, on an anonymous filesystem, on st_dev */
		assert_true(probe_identity_device(id, device, &disk));
		if (major(st.st_dev) != 0) {
			assert_string_equal(device, "scratchdisk");
		} else {
			assert_string_equal(device, "");
		}
		assert_true(disk == st.st_dev);
		probe_identity_unref(id);
	}
	sampler_snapshot_unref(snap);
	sampler_free(sampler);
}

/* The scheduler's done callback, as the daemon's: into the registry. */
static void harness_done(void *userdata, const struct probe_identity *id, const struct probe_result *res)
{
	struct harness *h = userdata;

	registry_probe_done(h->registry, id, res);
}

static void harness_start(struct harness *h, const char *text)
{
	struct config_errors errs = {0};
	char abs[PATH_MAX];

	memset(h, 0, sizeof(*h));
	assert_non_null(realpath(scratch, abs));
	{
		/* every probe of the text targets the scratch directory */
		char *conf = NULL;

		assert_true(asprintf(&conf, "[global]\ndirectory=%s\nsize=1m\n%s", abs, text) > 0);
		if (config_load_string("sched.conf", conf, &errs, &h->cfg) < 0) {
			fail_msg("%s", errs.n ? errs.items[0].message : "config");
		}
		free(conf);
	}
	assert_int_equal(registry_new(&h->registry), 0);
	assert_int_equal(identities_build(h->cfg, NULL, &h->ids), 0);
	assert_int_equal(registry_set_probes(h->registry, h->cfg, h->ids.ids), 0);
	resolve_devices(h);
	h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(h->wake_fd >= 0);
	assert_int_equal(scheduler_new(harness_done, h, h->wake_fd, fixture_sys, &h->sched), 0);
}

/* Collect every run reported during `msec`, as the main loop would. */
static void harness_collect(struct harness *h, uint64_t msec)
{
	uint64_t end = mono_msec() + msec;

	for (uint64_t now = mono_msec(); now < end; now = mono_msec()) {
		struct pollfd p = {.fd = h->wake_fd, .events = POLLIN};
		struct snapshot *s;
		uint64_t n;

		if (poll(&p, 1, (int)(end - now)) <= 0) {
			continue;
		}
		assert_int_equal(read(h->wake_fd, &n, sizeof(n)), sizeof(n));
		assert_int_equal(registry_publish(h->registry), 0);
		s = registry_acquire(h->registry);
		for (size_t i = 0; i < s->n_probes && i < 2; i++) {
			const struct probe_state *ps = &s->probes[i];

			if (ps->runs_total > h->seen_runs[i] && h->n_runs[i] < MAX_RUNS) {
				struct run_span *r = &h->runs[i][h->n_runs[i]++];

				r->start_usec = ps->last.start_realtime_usec;
				r->end_usec = r->start_usec + ps->last.runtime_usec;
				r->success = ps->last.success;
				snprintf(r->message, sizeof(r->message), "%s", ps->last.message);
				h->seen_runs[i] = ps->runs_total;
			}
		}
		snapshot_unref(s);
	}
}

static void harness_stop(struct harness *h)
{
	scheduler_free(h->sched);
	close(h->wake_fd);
	registry_free(h->registry);
	identities_clear(&h->ids);
	config_free(h->cfg);
}

static void skip_without_direct_io(struct harness *h)
{
	for (size_t i = 0; i < 2; i++) {
		for (size_t k = 0; k < h->n_runs[i]; k++) {
			if (strstr(h->runs[i][k].message, "O_DIRECT not supported")) {
				harness_stop(h);
				skip();
			}
		}
	}
}

static unsigned count_overlaps(const struct harness *h)
{
	unsigned n = 0;

	for (size_t a = 0; a < h->n_runs[0]; a++) {
		for (size_t b = 0; b < h->n_runs[1]; b++) {
			const struct run_span *x = &h->runs[0][a], *y = &h->runs[1][b];

			if (x->start_usec < y->end_usec && y->start_usec < x->end_usec) {
				n++;
			}
		}
	}
	return n;
}

static const char two_probes[] = "runtime=150ms\n"
				 "interval=200ms\n"
				 "rate_iops=100\n"
				 "%s"
				 "[a]\nrw=randread\n"
				 "[b]\nrw=randread\n";

static void run_two_probes(struct harness *h, const char *extra)
{
	char *text = NULL;

	assert_true(asprintf(&text, two_probes, extra) > 0);
	harness_start(h, text);
	free(text);
	assert_int_equal(scheduler_start(h->sched, h->cfg, h->ids.ids), 0);
	harness_collect(h, 1500);
	scheduler_stop(h->sched);
	skip_without_direct_io(h);
}

static void test_runs_on_the_same_disk_never_overlap(void **state)
{
	struct harness h;

	run_two_probes(&h, "");
	assert_true(h.n_runs[0] >= 2);
	assert_true(h.n_runs[1] >= 2);
	for (size_t i = 0; i < 2; i++) {
		for (size_t k = 0; k < h.n_runs[i]; k++) {
			assert_true(h.runs[i][k].success);
		}
	}
	assert_int_equal(count_overlaps(&h), 0);
	harness_stop(&h);
}

static void test_allow_overlap_runs_side_by_side(void **state)
{
	struct harness h;

	run_two_probes(&h, "allow_overlap=1\n");
	assert_true(h.n_runs[0] >= 3);
	assert_true(h.n_runs[1] >= 3);
	assert_true(count_overlaps(&h) > 0);
	harness_stop(&h);
}

static void test_stop_is_immediate_during_a_run(void **state)
{
	struct harness h;
	struct snapshot *s;
	struct timespec ts = {.tv_nsec = 400000000};
	uint64_t t0, took;

	harness_start(&h, "runtime=5s\ninterval=10s\nrate_iops=50\n[long]\nrw=randread\n");
	assert_int_equal(scheduler_start(h.sched, h.cfg, h.ids.ids), 0);
	nanosleep(&ts, NULL);
	t0 = mono_msec();
	scheduler_stop(h.sched);
	took = mono_msec() - t0;
	/* a 5 s run; generous for a loaded machine, still "at once" */
	assert_true(took < 500);
	/* the cancelled run is not reported as a result */
	assert_int_equal(registry_publish(h.registry), 0);
	s = registry_acquire(h.registry);
	assert_int_equal(s->probes[0].runs_total, 0);
	snapshot_unref(s);
	/* and it can start again (a reload) */
	assert_int_equal(scheduler_start(h.sched, h.cfg, h.ids.ids), 0);
	harness_stop(&h);
}

struct gate_state {
	unsigned calls;
	unsigned hold; /* calls that answer "not now" */
};

static uint64_t gate(void *userdata, const struct probe_identity *id, const struct probe_config *pc)
{
	struct gate_state *g = userdata;
	unsigned n = __atomic_add_fetch(&g->calls, 1, __ATOMIC_RELAXED);

	return n <= g->hold ? 30000 : 0;
}

static void test_gate_holds_runs_until_it_opens(void **state)
{
	struct harness h;
	struct gate_state g = {.hold = 3};

	harness_start(&h, "runtime=100ms\ninterval=1s\n[gated]\nrw=randread\n");
	scheduler_set_gate(h.sched, gate, &g);
	assert_int_equal(scheduler_start(h.sched, h.cfg, h.ids.ids), 0);
	harness_collect(&h, 600);
	scheduler_stop(h.sched);
	skip_without_direct_io(&h);
	assert_int_equal(g.calls, 4);
	assert_int_equal(h.n_runs[0], 1);
	harness_stop(&h);

	/* a gate that never opens skips every slot */
	g = (struct gate_state){.hold = 1000000};
	harness_start(&h, "runtime=100ms\ninterval=200ms\n[gated]\nrw=randread\n");
	scheduler_set_gate(h.sched, gate, &g);
	assert_int_equal(scheduler_start(h.sched, h.cfg, h.ids.ids), 0);
	harness_collect(&h, 700);
	scheduler_stop(h.sched);
	assert_true(g.calls > 10);
	assert_int_equal(h.n_runs[0], 0);
	harness_stop(&h);
}

static void test_failing_probe_is_reported_and_keeps_its_schedule(void **state)
{
	struct harness h;

	harness_start(
	    &h, "runtime=100ms\ninterval=200ms\n[gone]\nrw=randread\ndirectory=/nonexistent-iopsd-sched\n");
	assert_int_equal(scheduler_start(h.sched, h.cfg, h.ids.ids), 0);
	harness_collect(&h, 700);
	scheduler_stop(h.sched);
	assert_true(h.n_runs[0] >= 3);
	assert_false(h.runs[0][0].success);
	assert_non_null(strstr(h.runs[0][0].message, "cannot open directory /nonexistent-iopsd-sched"));
	harness_stop(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_runs_on_the_same_disk_never_overlap),
	    cmocka_unit_test(test_allow_overlap_runs_side_by_side),
	    cmocka_unit_test(test_stop_is_immediate_during_a_run),
	    cmocka_unit_test(test_gate_holds_runs_until_it_opens),
	    cmocka_unit_test(test_failing_probe_is_reported_and_keeps_its_schedule),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
