/* The JSON API: golden files of every endpoint for the fixture snapshot,
 * unknown figures as null, and history columns. */
#include <math.h>
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
#include "render_json.h"
#include "shared_ceiling.h"
#include "snapshot-fixture.h"

static void assert_json_golden(const char *name, json_t *root)
{
	char *text;

	assert_non_null(root);
	text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
	assert_non_null(text);
	assert_golden(name, text);
	free(text);
	json_decref(root);
}

static void test_status_matches_golden(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);

	assert_json_golden("status.json",
			   render_json_status(s, false, "probe 'mixed' has not completed a run"));
	snapshot_unref(s);
}

static void test_devices_match_golden(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);

	assert_json_golden("devices.json", render_json_devices(s, NULL));
	snapshot_unref(s);
}

static void test_probes_match_golden(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);

	assert_json_golden("probes.json", render_json_probes(s, NULL));
	snapshot_unref(s);
}

static void test_unknown_figures_are_null_not_zero(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	json_t *root = render_json_devices(s, NULL), *devices, *p1, *md0, *disk;

	assert_non_null(root);
	devices = json_object_get(root, "devices");
	assert_int_equal(json_array_size(devices), 3);
	disk = json_array_get(devices, 0);
	p1 = json_array_get(devices, 1);
	md0 = json_array_get(devices, 2);
	/* first sample of a device: no rates yet */
	assert_true(json_is_null(json_object_get(p1, "rates")));
	/* no limit declared, no ceiling detected */
	assert_true(json_is_null(json_object_get(json_object_get(md0, "limits"), "iops")));
	assert_true(json_is_null(json_object_get(json_object_get(md0, "ceiling"), "iops_estimate")));
	/* md0's diskstats have no discard fields */
	assert_true(
	    json_is_null(json_object_get(json_object_get(json_object_get(md0, "rates"), "iops"), "discard")));
	assert_true(json_real_value(json_object_get(json_object_get(json_object_get(disk, "rates"), "iops"),
						    "total")) == 3000.0);
	assert_true(json_integer_value(json_object_get(json_object_get(disk, "limits"), "iops")) == 3000);
	assert_true(json_is_true(json_object_get(json_object_get(disk, "ceiling"), "throttled")));
	/* the mount point that is not UTF-8 is still a string */
	assert_true(json_is_string(json_array_get(json_object_get(p1, "mountpoints"), 0)));
	json_decref(root);

	root = render_json_probes(s, "mixed");
	assert_int_equal(json_array_size(json_object_get(root, "probes")), 1);
	assert_true(
	    json_is_null(json_object_get(json_array_get(json_object_get(root, "probes"), 0), "last_run")));
	json_decref(root);
	snapshot_unref(s);
}

/* A mount point with a non-ASCII name keeps it; only the bytes that are not
 * UTF-8 become U+FFFD, as in the Prometheus label values (utf8.h). */
static void test_strings_keep_valid_utf8_and_replace_only_invalid_bytes(void **state)
{
	json_t *j;

	j = render_json_string("/mnt/d\xc3\xa4ten/\xe2\x82\xac\xf0\x9f\x92\xbe");
	assert_non_null(j);
	assert_string_equal(json_string_value(j), "/mnt/d\xc3\xa4ten/\xe2\x82\xac\xf0\x9f\x92\xbe");
	json_decref(j);
	j = render_json_string("/mnt/d\xc3\xa4ten\xff/\xc0\xaf\xed\xa0\x80\xe2\x82");
	assert_non_null(j);
	assert_string_equal(json_string_value(j), "/mnt/d\xc3\xa4ten\xef\xbf\xbd/"
						  "\xef\xbf\xbd\xef\xbf\xbd"
						  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
						  "\xef\xbf\xbd\xef\xbf\xbd");
	json_decref(j);
	j = render_json_string(NULL);
	assert_string_equal(json_string_value(j), "");
	json_decref(j);
}

static void test_history_has_one_column_entry_per_sample(void **state)
{
	struct config_errors errs = {0};
	struct config *cfg = NULL;
	struct history *h = NULL;
	struct snapshot *s = fixture_snapshot_new(true);
	struct history_request q = {.window_usec = 300 * USEC_PER_SEC};
	uint64_t t0 = s->samples->realtime_usec;
	json_t *root, *devices, *disk, *series, *probes;

	assert_int_equal(config_load_string("history.conf", "[global]\nhistory=10m\n", &errs, &cfg), 0);
	assert_int_equal(history_new(cfg, &h), 0);
	for (int i = 2; i >= 0; i--) {
		s->samples->realtime_usec = t0 - (uint64_t)i * USEC_PER_SEC;
		assert_int_equal(history_append(h, s->samples), 0);
	}
	assert_int_equal(history_probe_append(h, "randread4k", t0 - 5 * USEC_PER_SEC, 0.0002, 0.0005, 50), 0);
	s->history = h;

	root = render_json_history(s, &q);
	assert_non_null(root);
	assert_true(json_real_value(json_object_get(root, "window_seconds")) == 300);
	devices = json_object_get(root, "devices");
	/* the partition had no valid rates: it has history slots but no points */
	disk = NULL;
	for (size_t i = 0; i < json_array_size(devices); i++) {
		if (strcmp(json_string_value(json_object_get(json_array_get(devices, i), "name")),
			   "nvme1n1") == 0) {
			disk = json_array_get(devices, i);
		}
	}
	assert_non_null(disk);
	series = json_object_get(disk, "series");
	assert_int_equal(json_array_size(json_object_get(series, "time")), 3);
	assert_int_equal(json_array_size(json_object_get(series, "iops")), 3);
	assert_int_equal(json_array_size(json_object_get(series, "utilization")), 3);
	assert_true(fabs(json_real_value(json_array_get(json_object_get(series, "iops"), 2)) - 3000) < 0.01);
	assert_true(json_integer_value(json_object_get(json_object_get(disk, "limits"), "iops")) == 3000);
	probes = json_object_get(root, "probes");
	assert_int_equal(json_array_size(probes), 2);
	series = json_object_get(json_array_get(probes, 0), "series");
	assert_int_equal(json_array_size(json_object_get(series, "p99_seconds")), 1);
	assert_true(
	    fabs(json_real_value(json_array_get(json_object_get(series, "p99_seconds"), 0)) - 0.0005) < 1e-9);
	json_decref(root);

	/* one device, one probe */
	q.device = "md0";
	q.probe = "mixed";
	root = render_json_history(s, &q);
	assert_int_equal(json_array_size(json_object_get(root, "devices")), 1);
	assert_int_equal(json_array_size(json_object_get(root, "probes")), 1);
	assert_json_golden("history-md0.json", root);

	s->history = NULL;
	history_free(h);
	config_free(cfg);
	snapshot_unref(s);
}

/* The live page shades the seconds at the limit, throttled and saturated:
 * each sample carries them as 1/0, an averaged step as the share. */
static void test_history_marks_each_second_at_the_limit_throttled_or_saturated(void **state)
{
	struct config_errors errs = {0};
	struct config *cfg = NULL;
	struct history *h = NULL;
	struct snapshot *s = fixture_snapshot_new(true);
	struct history_request q = {.window_usec = 300 * USEC_PER_SEC, .device = "nvme1n1"};
	uint64_t t0 = s->samples->realtime_usec - s->samples->realtime_usec % (4 * USEC_PER_SEC);
	struct device_state *disk = &s->samples->devices[0];
	json_t *root, *series;

	assert_int_equal(config_load_string("history.conf", "[global]\nhistory=10m\n", &errs, &cfg), 0);
	assert_int_equal(history_new(cfg, &h), 0);
	for (int i = 0; i < 4; i++) {
		/* below the limit in the first second only; throttled from the third */
		disk->ceiling.is_at_limit = i > 0;
		disk->ceiling.is_throttled = i > 1;
		disk->ceiling.is_saturated = false;
		s->samples->realtime_usec = t0 + (uint64_t)i * USEC_PER_SEC;
		assert_int_equal(history_append(h, s->samples), 0);
	}
	s->history = h;
	s->realtime_usec = s->samples->realtime_usec;

	root = render_json_history(s, &q);
	assert_non_null(root);
	series = json_object_get(json_array_get(json_object_get(root, "devices"), 0), "series");
	assert_int_equal(json_array_size(json_object_get(series, "at_limit")), 4);
	assert_true(json_real_value(json_array_get(json_object_get(series, "at_limit"), 0)) == 0.0);
	assert_true(json_real_value(json_array_get(json_object_get(series, "at_limit"), 1)) == 1.0);
	assert_true(json_real_value(json_array_get(json_object_get(series, "throttled"), 1)) == 0.0);
	assert_true(json_real_value(json_array_get(json_object_get(series, "throttled"), 3)) == 1.0);
	assert_true(json_real_value(json_array_get(json_object_get(series, "saturated"), 3)) == 0.0);
	json_decref(root);

	/* one 4 s step: the shares of its seconds */
	q.step_usec = 4 * USEC_PER_SEC;
	root = render_json_history(s, &q);
	series = json_object_get(json_array_get(json_object_get(root, "devices"), 0), "series");
	assert_int_equal(json_array_size(json_object_get(series, "at_limit")), 1);
	assert_true(fabs(json_real_value(json_array_get(json_object_get(series, "at_limit"), 0)) - 0.75) <
		    1e-6);
	assert_true(fabs(json_real_value(json_array_get(json_object_get(series, "throttled"), 0)) - 0.5) <
		    1e-6);
	json_decref(root);

	s->history = NULL;
	history_free(h);
	config_free(cfg);
	snapshot_unref(s);
}

/* The array held by a member says which; a probe on the array lists its
 * members. */
static void test_array_held_by_a_member_and_probe_on_it(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	json_t *root, *md0, *held, *probe;

	s->samples->devices[2].ceiling.is_throttled = true;
	s->samples->devices[2].ceiling.held_by_mask = 2;
	snprintf(s->probes[0].device, sizeof(s->probes[0].device), "md0");
	root = render_json_devices(s, "md0");
	assert_non_null(root);
	md0 = json_array_get(json_object_get(root, "devices"), 0);
	held = json_object_get(json_object_get(md0, "ceiling"), "held_by");
	assert_true(json_is_true(json_object_get(json_object_get(md0, "ceiling"), "throttled")));
	assert_int_equal(json_array_size(held), 1);
	assert_string_equal(json_string_value(json_array_get(held, 0)), "nvme3n1");
	json_decref(root);

	root = render_json_probes(s, NULL);
	assert_non_null(root);
	probe = json_array_get(json_object_get(root, "probes"), 0);
	assert_string_equal(json_string_value(json_object_get(probe, "device")), "md0");
	assert_int_equal(json_array_size(json_object_get(probe, "members")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(probe, "members"), 1)),
			    "nvme3n1");
	/* a probe whose device is not known has no members */
	probe = json_array_get(json_object_get(root, "probes"), 1);
	assert_int_equal(json_array_size(json_object_get(probe, "members")), 0);
	json_decref(root);
	snapshot_unref(s);
}

static void test_learned_burst_in_the_ceiling(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	struct device_ceiling *c = &s->samples->devices[0].ceiling;
	json_t *root, *burst;

	fixture_learned_burst(c);
	root = render_json_devices(s, "nvme1n1");
	assert_non_null(root);
	burst = json_object_get(
	    json_object_get(json_array_get(json_object_get(root, "devices"), 0), "ceiling"), "burst");
	assert_true(json_is_object(burst));
	assert_float_equal(json_real_value(json_object_get(burst, "iops_estimate")), 3000, 1e-9);
	assert_float_equal(json_real_value(json_object_get(burst, "base_iops_estimate")), 1000, 1e-9);
	assert_float_equal(json_real_value(json_object_get(burst, "exhausted_time")), 1699999970.5, 1e-6);
	json_decref(root);
	snapshot_unref(s);
}

static void test_shared_ceilings_in_the_devices(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	struct shared_ceiling_group g = {.names = {"vdb", "vdc"},
					 .n_members = 2,
					 .iops_estimate = 1500,
					 .iops = 1500,
					 .found_by = CEILING_STAGE_ONSET};
	json_t *root, *sc;

	s->samples->shared = malloc(sizeof(g));
	assert_non_null(s->samples->shared);
	*s->samples->shared = g;
	s->samples->n_shared = 1;
	root = render_json_devices(s, NULL);
	assert_non_null(root);
	sc = json_array_get(json_object_get(root, "shared_ceilings"), 0);
	assert_int_equal(json_array_size(json_object_get(sc, "devices")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(sc, "devices"), 1)), "vdc");
	assert_float_equal(json_real_value(json_object_get(sc, "iops_estimate")), 1500, 1e-9);
	assert_true(json_is_false(json_object_get(sc, "throttled")));
	assert_string_equal(json_string_value(json_object_get(sc, "found_by")), "onset");
	json_decref(root);
	snapshot_unref(s);
}

static void test_instance_in_the_devices(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	json_t *root, *in;

	root = render_json_devices(s, NULL);
	assert_true(json_is_null(json_object_get(root, "instance")));
	json_decref(root);
	s->samples->instance = (struct instance_state){
	    .is_declared = true,
	    .throughput_limit = 593750000,
	    .devices = fixture_names((const char *[]){"nvme1n1"}, 1),
	    .n_devices = 1,
	    .iops = 100,
	    .iops_limit_ratio = NAN,
	    .throughput_limit_ratio = 0.5,
	};
	root = render_json_devices(s, NULL);
	in = json_object_get(root, "instance");
	assert_string_equal(json_string_value(json_array_get(json_object_get(in, "devices"), 0)), "nvme1n1");
	assert_true(json_is_null(json_object_get(json_object_get(in, "limits"), "iops")));
	assert_float_equal(
	    json_real_value(json_object_get(json_object_get(in, "limits"), "throughput_ratio")), 0.5, 1e-9);
	json_decref(root);
	snapshot_unref(s);
}

static void test_status_names_the_host(void **state)
{
	struct snapshot *s = fixture_snapshot_new(false);
	json_t *root = render_json_status(s, true, "");

	assert_string_equal(json_string_value(json_object_get(root, "hostname")), "db-7");
	json_decref(root);
	snapshot_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_status_matches_golden),
	    cmocka_unit_test(test_devices_match_golden),
	    cmocka_unit_test(test_probes_match_golden),
	    cmocka_unit_test(test_unknown_figures_are_null_not_zero),
	    cmocka_unit_test(test_strings_keep_valid_utf8_and_replace_only_invalid_bytes),
	    cmocka_unit_test(test_history_has_one_column_entry_per_sample),
	    cmocka_unit_test(test_history_marks_each_second_at_the_limit_throttled_or_saturated),
	    cmocka_unit_test(test_array_held_by_a_member_and_probe_on_it),
	    cmocka_unit_test(test_learned_burst_in_the_ceiling),
	    cmocka_unit_test(test_shared_ceilings_in_the_devices),
	    cmocka_unit_test(test_instance_in_the_devices),
	    cmocka_unit_test(test_status_names_the_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
