/* The registry: health judged from a snapshot, the publish hook, shared
 * probe copies, the probe history. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "history.h"
#include "registry.h"
#include "snapshot-fixture.h"
#include "timeutil.h"
#include "identity-fixture.h"

static void test_healthy_while_sampler_and_probes_are_on_schedule(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	char reason[256] = "x";

	assert_true(snapshot_check_health(s, s->monotonic_usec + USEC_PER_SEC, reason, sizeof(reason)));
	assert_string_equal(reason, "");
	snapshot_unref(s);
}

static void test_unhealthy_when_the_last_sample_is_old(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	char reason[256];

	s->monotonic_usec = s->samples->monotonic_usec + 10 * USEC_PER_SEC;
	assert_false(snapshot_check_health(s, s->monotonic_usec, reason, sizeof(reason)));
	assert_non_null(strstr(reason, "/proc/diskstats sample is 10.0s old"));
	snapshot_unref(s);
}

static void test_unhealthy_without_any_sample_after_the_grace_period(void **state)
{
	struct snapshot *s = fixture_snapshot_new(false);
	char reason[256];

	s->monotonic_usec = s->start_monotonic_usec + 2 * USEC_PER_SEC;
	assert_true(snapshot_check_health(s, s->monotonic_usec, reason, sizeof(reason)));
	s->monotonic_usec = s->start_monotonic_usec + 5 * USEC_PER_SEC;
	assert_false(snapshot_check_health(s, s->monotonic_usec, reason, sizeof(reason)));
	assert_non_null(strstr(reason, "no /proc/diskstats sample since start"));
	snapshot_unref(s);
}

static void test_unhealthy_when_a_probe_is_overdue(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	char reason[256];

	/* randread4k: every 10 s with 1 s runs; 2x10 + 2x1 + 10 s of slack */
	s->samples->monotonic_usec = s->probes[0].last_done_monotonic_usec + 33 * USEC_PER_SEC;
	s->monotonic_usec = s->samples->monotonic_usec;
	assert_false(snapshot_check_health(s, s->monotonic_usec, reason, sizeof(reason)));
	assert_non_null(strstr(reason, "probe 'randread4k' has not completed a run for 33.0s"));
	snapshot_unref(s);
}

static void test_unhealthy_when_no_snapshot_is_published(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	char reason[256];

	assert_false(snapshot_check_health(s, s->monotonic_usec + 6 * USEC_PER_SEC, reason, sizeof(reason)));
	assert_non_null(strstr(reason, "no snapshot published for 6.0s"));
	snapshot_unref(s);
}

/* Each snapshot goes through the publish hook before it becomes current,
 * and the hook's time is reported by the next one. */
struct hook_seen {
	struct registry *r;
	unsigned n;
	uint64_t generation;
	bool was_current;
};

static void on_publish(void *userdata, struct snapshot *s)
{
	struct hook_seen *seen = userdata;
	struct snapshot *cur = registry_acquire(seen->r);
	uint64_t until = now_usec(CLOCK_MONOTONIC) + 2000;

	seen->n++;
	seen->generation = s->generation;
	seen->was_current = cur == s;
	snapshot_unref(cur);
	while (now_usec(CLOCK_MONOTONIC) < until) {
		/* take a measurable time */
	}
}

static void test_publish_hands_each_snapshot_to_the_hook_before_serving_it(void **state)
{
	struct hook_seen seen = {0};
	struct registry *r = NULL;
	struct snapshot *s;

	assert_int_equal(registry_new(&r), 0);
	seen.r = r;
	registry_set_publish_hook(r, on_publish, &seen);
	assert_int_equal(registry_publish(r), 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.generation, 1);
	assert_false(seen.was_current);
	s = registry_acquire(r);
	assert_int_equal(s->generation, 1);
	assert_true(s->last_render_seconds == 0);
	snapshot_unref(s);

	assert_int_equal(registry_publish(r), 0);
	assert_int_equal(seen.n, 2);
	s = registry_acquire(r);
	assert_true(s->last_render_seconds >= 0.002);
	snapshot_unref(s);

	registry_set_publish_hook(r, NULL, NULL);
	assert_int_equal(registry_publish(r), 0);
	assert_int_equal(seen.n, 2);
	registry_free(r);
}

static void test_publish_copies_the_probes_only_after_one_changed(void **state)
{
	static const char conf[] =
	    "[global]\n"
	    "[seq]\nrw=read\nbs=1m\nsize=64m\ndirectory=/srv\nruntime=1s\ninterval=10s\n";
	struct config_errors errs = {0};
	struct config *cfg = NULL;
	struct registry *r = NULL;
	struct probe_result *res = calloc(1, sizeof(*res));
	struct snapshot *a, *b, *c;
	struct probe_identity **ids, *id;

	assert_non_null(res);
	assert_int_equal(config_load_string("c.conf", conf, &errs, &cfg), 0);
	assert_int_equal(registry_new(&r), 0);
	ids = fixture_identities(cfg);
	assert_int_equal(registry_set_probes(r, cfg, ids), 0);
	for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
		histogram_init(&res->op[op].lat);
	}
	res->success = true;

	assert_int_equal(registry_publish(r), 0);
	a = registry_acquire(r);
	/* nothing changed: the next snapshot shares the copies */
	assert_int_equal(registry_publish(r), 0);
	b = registry_acquire(r);
	assert_ptr_not_equal(a, b);
	assert_ptr_equal(a->probes, b->probes);
	assert_int_equal(b->probes[0].runs_total, 0);
	/* a completed run: new copies, the older snapshots keep theirs */
	id = ids[0];
	assert_ptr_equal(id, a->probes[0].id);
	registry_probe_done(r, id, res);
	assert_int_equal(registry_publish(r), 0);
	c = registry_acquire(r);
	assert_ptr_not_equal(c->probes, b->probes);
	assert_int_equal(c->n_probes, 1);
	assert_int_equal(c->probes[0].runs_total, 1);
	assert_true(c->probes[0].has_last);
	assert_int_equal(a->probes[0].runs_total, 0);
	assert_string_equal(a->probes[0].name, "seq");
	snapshot_unref(a);
	snapshot_unref(b);
	registry_free(r);
	assert_string_equal(c->probes[0].name, "seq");
	snapshot_unref(c);
	fixture_identities_free(ids, cfg->n_probes);
	config_free(cfg);
	free(res);
}

static void test_completed_runs_land_in_the_probe_history(void **state)
{
	static const char conf[] =
	    "[global]\nhistory=10m\n"
	    "[mix]\nrw=randrw\nbs=4k\nsize=64m\ndirectory=/srv\nruntime=1s\ninterval=10s\n";
	struct config_errors errs = {0};
	struct config *cfg = NULL;
	struct registry *r = NULL;
	struct history *h = NULL;
	struct history_probe_point *pts = NULL;
	struct probe_result *res = calloc(1, sizeof(*res));
	struct probe_identity **ids, *id;
	size_t n = 0;

	assert_non_null(res);
	assert_int_equal(config_load_string("h.conf", conf, &errs, &cfg), 0);
	assert_int_equal(history_new(cfg, &h), 0);
	assert_int_equal(registry_new(&r), 0);
	ids = fixture_identities(cfg);
	assert_int_equal(registry_set_probes(r, cfg, ids), 0);
	registry_set_history(r, h);
	for (size_t op = 0; op < _PROBE_OP_MAX; op++) {
		histogram_init(&res->op[op].lat);
	}
	/* reads at 100 us, writes at 1 ms: the point's p50 and p99 span both */
	for (int i = 0; i < 60; i++) {
		histogram_record(&res->op[PROBE_OP_READ].lat, 100000);
	}
	for (int i = 0; i < 40; i++) {
		histogram_record(&res->op[PROBE_OP_WRITE].lat, 1000000);
	}
	res->op[PROBE_OP_READ].iops = 60;
	res->op[PROBE_OP_WRITE].iops = 40;
	res->success = true;
	res->start_realtime_usec = 1700000000000000ULL;
	id = ids[0];
	registry_probe_done(r, id, res);
	assert_int_equal(history_probe_query(h, "mix", 0, &pts, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(pts[0].realtime_usec, 1700000000000000ULL);
	assert_true(pts[0].p50_sec > 0.000099 && pts[0].p50_sec < 0.000101);
	assert_true(pts[0].p99_sec > 0.00099 && pts[0].p99_sec < 0.00101);
	assert_true(pts[0].iops == 100);
	free(pts);
	free(res);
	registry_free(r);
	history_free(h);
	fixture_identities_free(ids, cfg->n_probes);
	config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_healthy_while_sampler_and_probes_are_on_schedule),
	    cmocka_unit_test(test_unhealthy_when_the_last_sample_is_old),
	    cmocka_unit_test(test_unhealthy_without_any_sample_after_the_grace_period),
	    cmocka_unit_test(test_unhealthy_when_a_probe_is_overdue),
	    cmocka_unit_test(test_unhealthy_when_no_snapshot_is_published),
	    cmocka_unit_test(test_publish_hands_each_snapshot_to_the_hook_before_serving_it),
	    cmocka_unit_test(test_publish_copies_the_probes_only_after_one_changed),
	    cmocka_unit_test(test_completed_runs_land_in_the_probe_history),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
