/* /metrics rendering: the whole output of a fixture snapshot against golden
 * files in both formats, and the exposition rules one by one. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "render_prom.h"
#include "shared_ceiling.h"
#include "snapshot-fixture.h"

static char *render(struct snapshot *s, enum metrics_format fmt)
{
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(render_prom(s, fmt, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	return text;
}

static void test_text_format_matches_golden(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	char *text = render(s, METRICS_FORMAT_PROMETHEUS);

	assert_golden("metrics.prom", text);
	free(text);
	snapshot_unref(s);
}

static void test_openmetrics_matches_golden(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	char *text = render(s, METRICS_FORMAT_OPENMETRICS);

	assert_golden("metrics.openmetrics", text);
	free(text);
	snapshot_unref(s);
}

/* fsync moves no data: it has ops and a rate, never bytes or a throughput */
static void test_fsync_has_ops_and_iops_but_no_bytes(void **state)
{
	struct snapshot *s = fixture_snapshot_new(false);
	struct probe_state *p = &s->probes[1]; /* "mixed": randrw with fsync */
	char *text;

	p->has_last = true;
	p->total[PROBE_OP_FSYNC].ops = 7;
	p->last.op[PROBE_OP_WRITE].iops = 20;
	p->last.op[PROBE_OP_WRITE].bw_bytes = 81920;
	p->last.op[PROBE_OP_FSYNC].iops = 2.5;
	p->last.op[PROBE_OP_FSYNC].bw_bytes = 123;
	text = render(s, METRICS_FORMAT_PROMETHEUS);
#define L "probe=\"mixed\",target=\"/srv/db\""
	assert_non_null(strstr(text, "\niopsd_probe_ops_total{" L ",op=\"fsync\"} 7\n"));
	assert_non_null(strstr(text, "\niopsd_probe_iops{" L ",op=\"fsync\"} 2.5\n"));
	assert_non_null(strstr(text, "\niopsd_probe_iops{" L ",op=\"write\"} 20\n"));
	assert_non_null(
	    strstr(text, "\niopsd_probe_throughput_bytes_per_second{" L ",op=\"write\"} 81920\n"));
	assert_non_null(strstr(text, "\niopsd_probe_bytes_total{" L ",op=\"write\"} 0\n"));
	assert_null(strstr(text, "iopsd_probe_throughput_bytes_per_second{" L ",op=\"fsync\"}"));
	assert_null(strstr(text, "iopsd_probe_bytes_total{" L ",op=\"fsync\"}"));
#undef L
	free(text);
	snapshot_unref(s);
}

static void test_fresh_daemon_renders_without_devices_or_runs(void **state)
{
	struct snapshot *s = fixture_snapshot_new(false);
	char *text = render(s, METRICS_FORMAT_PROMETHEUS);

	assert_golden("metrics-empty.prom", text);
	assert_null(strstr(text, "iopsd_device_reads_completed_total{"));
	assert_null(strstr(text, "iopsd_probe_iops{"));
	/* counters of a probe that never ran are there, at zero */
	assert_non_null(strstr(text, "iopsd_probe_runs_total{probe=\"randread4k\",target=\"/data\"} 0\n"));
	free(text);
	snapshot_unref(s);
}

/* md0 over nvme2n1,nvme3n1 is held by its second member: one series per
 * member, and the array is throttled. */
static void test_array_names_the_member_that_holds_it(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	struct device_state *md = &s->samples->devices[2];
	char *text;

	md->ceiling.is_throttled = true;
	md->ceiling.held_by_mask = 2;
	text = render(s, METRICS_FORMAT_PROMETHEUS);
	assert_non_null(strstr(text, "\niopsd_device_held_by{device=\"md0\",member=\"nvme2n1\"} 0\n"
				     "iopsd_device_held_by{device=\"md0\",member=\"nvme3n1\"} 1\n"));
	assert_non_null(strstr(text, "\niopsd_device_throttled{device=\"md0\"} 1\n"));
	/* a plain disk has no members to be held by */
	assert_null(strstr(text, "iopsd_device_held_by{device=\"nvme1n1\""));
	free(text);
	snapshot_unref(s);
}

/* A shared ceiling: its three families, only where one was found. */
static void test_shared_ceiling_names_its_devices(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	struct shared_ceiling_group g = {
	    .names = {"vdb", "vdc", "vdd"},
	    .n_members = 3,
	    .iops_estimate = 1500,
	    .iops = 1499.5,
	    .is_throttled = true,
	};
	char *text = render(s, METRICS_FORMAT_PROMETHEUS);

	assert_null(strstr(text, "iopsd_shared_ceiling"));
	free(text);
	s->samples->shared = malloc(sizeof(g));
	assert_non_null(s->samples->shared);
	*s->samples->shared = g;
	s->samples->n_shared = 1;
	text = render(s, METRICS_FORMAT_PROMETHEUS);
	assert_non_null(strstr(text, "\niopsd_shared_ceiling_iops_estimate{devices=\"vdb,vdc,vdd\"} 1500\n"));
	assert_non_null(strstr(text, "\niopsd_shared_ceiling_iops{devices=\"vdb,vdc,vdd\"} 1499.5\n"));
	assert_non_null(strstr(text, "\niopsd_shared_ceiling_throttled{devices=\"vdb,vdc,vdd\"} 1\n"));
	free(text);
	snapshot_unref(s);
}

/* [instance] families, only when one is declared. */
static void test_instance_limits_are_exported_when_declared(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	char *text;

	s->samples->instance = (struct instance_state){
	    .is_declared = true,
	    .iops_limit = 18750,
	    .devices = fixture_names((const char *[]){"nvme1n1", "nvme2n1"}, 2),
	    .n_devices = 2,
	    .iops = 18000,
	    .bytes_per_sec = 73728000,
	    .iops_limit_ratio = 0.96,
	    .throughput_limit_ratio = NAN,
	    .at_ceiling_iops_seconds = 42,
	    .is_at_limit = true,
	};
	assert_non_null(s->samples->instance.devices);
	text = render(s, METRICS_FORMAT_PROMETHEUS);
	assert_non_null(strstr(text, "\niopsd_instance_info{devices=\"nvme1n1,nvme2n1\"} 1\n"));
	assert_non_null(strstr(text, "\niopsd_instance_iops 18000\n"));
	assert_non_null(strstr(text, "\niopsd_instance_throughput_bytes_per_second 73728000\n"));
	assert_non_null(strstr(text, "\niopsd_instance_iops_limit 18750\n"));
	assert_non_null(strstr(text, "\niopsd_instance_limit_ratio{resource=\"iops\"} 0.96\n"));
	assert_non_null(strstr(text, "\niopsd_instance_at_ceiling_seconds_total{resource=\"iops\"} 42\n"));
	/* no throughput limit, no throughput figures of it */
	assert_null(strstr(text, "iopsd_instance_throughput_limit_bytes"));
	assert_null(strstr(text, "iopsd_instance_limit_ratio{resource=\"throughput\"}"));
	free(text);
	snapshot_unref(s);
}

/* The volume id is a label of iopsd_device_info where there is one. */
static void test_device_info_has_the_volume_id_where_known(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	struct device_topology *t = &s->samples->devices[0].topo;
	char *text;

	t->volume_id = "vol-0123456789abcdef0";
	text = render(s, METRICS_FORMAT_PROMETHEUS);
	assert_non_null(strstr(text, "\niopsd_device_info{device=\"nvme1n1\",kind=\"disk\",members=\"\","
				     "mountpoint=\"/data\",volume_id=\"vol-0123456789abcdef0\"} 1\n"));
	assert_non_null(strstr(text,
			       "\niopsd_device_info{device=\"md0\",kind=\"md\",members=\"nvme2n1,nvme3n1\","
			       "mountpoint=\"/srv\"} 1\n"));
	free(text);
	snapshot_unref(s);
}

/* A volume declared at 3000 IOPS held at 1000: the ratio tells; none for a
 * device without a declared limit or without a ceiling found (0). */
static void test_ceiling_below_the_declared_limit_is_a_ratio(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	char *text;

	s->samples->devices[0].ceiling.iops_ceiling_limit_ratio = 1000.0 / 3000;
	s->samples->devices[0].ceiling.throughput_ceiling_limit_ratio = 0.1;
	text = render(s, METRICS_FORMAT_PROMETHEUS);
	assert_non_null(strstr(
	    text,
	    "\niopsd_device_ceiling_limit_ratio{device=\"nvme1n1\",resource=\"iops\"} 0.333333333333333"));
	assert_non_null(strstr(
	    text, "\niopsd_device_ceiling_limit_ratio{device=\"nvme1n1\",resource=\"throughput\"} 0.1\n"));
	assert_null(strstr(text, "iopsd_device_ceiling_limit_ratio{device=\"md0\""));
	free(text);
	snapshot_unref(s);
}

/* What iopsd learned of a burst bucket, only once it saw one run out. */
static void test_learned_burst_is_exported_once_known(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	struct device_ceiling *c = &s->samples->devices[2].ceiling;
	char *text = render(s, METRICS_FORMAT_PROMETHEUS);

	assert_null(strstr(text, "iopsd_device_burst_iops_estimate{"));
	assert_null(strstr(text, "iopsd_device_burst_exhausted_timestamp_seconds{"));
	free(text);
	fixture_learned_burst(c);
	c->has_burst_model = true;
	c->burst_balance_ratio = 0;
	text = render(s, METRICS_FORMAT_PROMETHEUS);
	assert_non_null(strstr(text, "\niopsd_device_burst_iops_estimate{device=\"md0\"} 3000\n"));
	assert_non_null(strstr(text, "\niopsd_device_burst_base_iops_estimate{device=\"md0\"} 1000\n"));
	assert_non_null(strstr(text, "\niopsd_device_burst_credits_estimate{device=\"md0\"} 60000\n"));
	assert_non_null(strstr(text, "\niopsd_device_burst_duration_seconds{device=\"md0\"} 30\n"));
	assert_non_null(
	    strstr(text, "\niopsd_device_burst_exhausted_timestamp_seconds{device=\"md0\"} 1699999970.5\n"));
	assert_non_null(strstr(text, "\niopsd_device_burst_balance_ratio{device=\"md0\"} 0\n"));
	/* the declared one of the fixture is still there, the others have none */
	assert_non_null(strstr(text, "\niopsd_device_burst_balance_ratio{device=\"nvme1n1\"} 0.25\n"));
	assert_null(strstr(text, "iopsd_device_burst_iops_estimate{device=\"nvme1n1\"}"));
	free(text);
	snapshot_unref(s);
}

static char *escaped(const char *value)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	prom_write_label_value(f, value);
	fclose(f);
	return buf;
}

static void test_label_values_escape_quote_backslash_newline_and_bad_utf8(void **state)
{
	char *e;

	e = escaped("a\"b\\c\nd");
	assert_string_equal(e, "a\\\"b\\\\c\\nd");
	free(e);
	/* a stray byte, an overlong '/', a surrogate: each becomes U+FFFD */
	e = escaped("x\xffy\xc0\xafz\xed\xa0\x80");
	assert_string_equal(e, "x\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbdz\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	free(e);
	/* valid multi-byte text passes unchanged */
	e = escaped("/mnt/d\xc3\xa4ten/\xe2\x82\xac/\xf0\x9f\x92\xbe");
	assert_string_equal(e, "/mnt/d\xc3\xa4ten/\xe2\x82\xac/\xf0\x9f\x92\xbe");
	free(e);
}

static void test_values_are_shortest_round_trip(void **state)
{
	static const double values[] = {0.1, 1.0 / 3.0, 2950.5, 1e-05, 123456789.123, 0.00125, 1e300};
	char buf[64];

	prom_format_value(buf, sizeof(buf), 0);
	assert_string_equal(buf, "0");
	prom_format_value(buf, sizeof(buf), -0.0);
	assert_string_equal(buf, "0");
	prom_format_value(buf, sizeof(buf), 3);
	assert_string_equal(buf, "3");
	prom_format_value(buf, sizeof(buf), 18446744073709551615.0);
	assert_string_equal(buf, "1.8446744073709552e+19");
	prom_format_value(buf, sizeof(buf), 0.1);
	assert_string_equal(buf, "0.1");
	prom_format_value(buf, sizeof(buf), NAN);
	assert_string_equal(buf, "NaN");
	prom_format_value(buf, sizeof(buf), INFINITY);
	assert_string_equal(buf, "+Inf");
	prom_format_value(buf, sizeof(buf), -INFINITY);
	assert_string_equal(buf, "-Inf");
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		prom_format_value(buf, sizeof(buf), values[i]);
		assert_true(strtod(buf, NULL) == values[i]);
		assert_true(strlen(buf) <= 24);
	}
}

static void test_openmetrics_le_is_canonical(void **state)
{
	char buf[32];

	prom_format_le(buf, sizeof(buf), 1, METRICS_FORMAT_OPENMETRICS);
	assert_string_equal(buf, "1.0");
	prom_format_le(buf, sizeof(buf), 60, METRICS_FORMAT_OPENMETRICS);
	assert_string_equal(buf, "60.0");
	prom_format_le(buf, sizeof(buf), 0.0005, METRICS_FORMAT_OPENMETRICS);
	assert_string_equal(buf, "0.0005");
	prom_format_le(buf, sizeof(buf), 5e-06, METRICS_FORMAT_OPENMETRICS);
	assert_string_equal(buf, "5e-06");
	prom_format_le(buf, sizeof(buf), 1, METRICS_FORMAT_PROMETHEUS);
	assert_string_equal(buf, "1");
}

/* The value of the line that starts with `prefix`, NAN when none. */
static double value_of(const char *text, const char *prefix)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, prefix, strlen(prefix)) == 0) {
			const char *end = p + strcspn(p, "\n");
			const char *sp = end;

			while (sp > p && sp[-1] != ' ') {
				sp--;
			}
			return strtod(sp, NULL);
		}
	}
	return NAN;
}

static void test_histogram_buckets_are_cumulative_up_to_inf_equal_to_count(void **state)
{
	static const char labels[] = "{probe=\"randread4k\",target=\"/data\",op=\"read\"";
	struct snapshot *s = fixture_snapshot_new(true);
	char *text = render(s, METRICS_FORMAT_PROMETHEUS);
	char prefix[256];
	double prev = 0, inf, count, sum;
	unsigned n = 0;

	for (const char *p = strstr(text, "iopsd_probe_latency_seconds_bucket{probe=\"randread4k\""); p;
	     p = strstr(p + 1, "iopsd_probe_latency_seconds_bucket{probe=\"randread4k\"")) {
		const char *sp = p + strcspn(p, "\n");
		double v;

		while (sp[-1] != ' ') {
			sp--;
		}
		v = strtod(sp, NULL);

		assert_true(v >= prev);
		prev = v;
		n++;
	}
	assert_int_equal(n, histogram_n_prom_bounds + 1);
	snprintf(prefix, sizeof(prefix), "iopsd_probe_latency_seconds_bucket%s,le=\"+Inf\"}", labels);
	inf = value_of(text, prefix);
	snprintf(prefix, sizeof(prefix), "iopsd_probe_latency_seconds_count%s}", labels);
	count = value_of(text, prefix);
	snprintf(prefix, sizeof(prefix), "iopsd_probe_latency_seconds_sum%s}", labels);
	sum = value_of(text, prefix);
	assert_true(inf == 300);
	assert_true(count == inf);
	/* the real sum: 299 values from 180 us to ~540 us and one of 25 ms */
	assert_true(sum > 0.1 && sum < 0.2);
	assert_true(fabs(sum - (double)s->probes[0].total[0].lat.sum_ns / 1e9) < 1e-9);
	snprintf(prefix, sizeof(prefix), "iopsd_probe_latency_seconds_bucket%s,le=\"0.0001\"}", labels);
	assert_true(value_of(text, prefix) == 0);
	snprintf(prefix, sizeof(prefix), "iopsd_probe_latency_seconds_bucket%s,le=\"0.02\"}", labels);
	assert_true(value_of(text, prefix) == 299);
	free(text);
	snapshot_unref(s);
}

static void test_openmetrics_counters_drop_total_in_type_and_end_with_eof(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	char *om = render(s, METRICS_FORMAT_OPENMETRICS);
	char *text = render(s, METRICS_FORMAT_PROMETHEUS);
	size_t n = strlen(om);

	assert_non_null(strstr(om, "# TYPE iopsd_device_reads_completed counter\n"));
	assert_non_null(strstr(om, "\niopsd_device_reads_completed_total{device=\"nvme1n1\"} 1234567\n"));
	assert_null(strstr(om, "# TYPE iopsd_device_reads_completed_total"));
	assert_true(n > 6 && strcmp(om + n - 6, "# EOF\n") == 0);
	assert_non_null(strstr(text, "# TYPE iopsd_device_reads_completed_total counter\n"));
	assert_null(strstr(text, "# EOF"));
	free(om);
	free(text);
	snapshot_unref(s);
}

static void test_limit_families_only_for_declared_limits(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	char *text = render(s, METRICS_FORMAT_PROMETHEUS);

	assert_true(value_of(text, "iopsd_device_iops_limit{device=\"nvme1n1\"}") == 3000);
	assert_true(isnan(value_of(text, "iopsd_device_iops_limit{device=\"md0\"}")));
	assert_true(isnan(value_of(text, "iopsd_device_limit_ratio{device=\"md0\"")));
	/* the flags and the estimate are there for every device */
	assert_true(value_of(text, "iopsd_device_throttled{device=\"nvme1n1\"}") == 1);
	assert_true(value_of(text, "iopsd_device_throttled{device=\"md0\"}") == 0);
	assert_true(value_of(text, "iopsd_device_saturated{device=\"md0\"}") == 1);
	assert_true(value_of(text, "iopsd_device_iops_ceiling_estimate{device=\"nvme1n1p1\"}") == 0);
	/* no rates for a device seen once, raw counters in base units */
	assert_true(isnan(value_of(text, "iopsd_device_iops{device=\"nvme1n1p1\"")));
	assert_true(value_of(text, "iopsd_device_read_bytes_total{device=\"nvme1n1p1\"}") == 800 * 512);
	assert_true(value_of(text, "iopsd_device_read_time_seconds_total{device=\"nvme1n1\"}") == 456.789);
	/* discard and flush figures only where diskstats has them */
	assert_true(isnan(value_of(text, "iopsd_device_discards_completed_total{device=\"md0\"}")));
	assert_true(value_of(text, "iopsd_device_flush_requests_total{device=\"nvme1n1\"}") == 777);
	free(text);
	snapshot_unref(s);
}

static void test_every_family_has_help_and_type(void **state)
{
	struct snapshot *s = fixture_snapshot_new(true);
	char *text = render(s, METRICS_FORMAT_PROMETHEUS);
	char last_type[128] = "";

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char name[128];

		if (strncmp(line, "# TYPE ", 7) == 0) {
			snprintf(last_type, sizeof(last_type), "%.*s", (int)strcspn(line + 7, " "), line + 7);
			continue;
		}
		if (line[0] == '#') {
			continue;
		}
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(line, "{ "), line);
		/* a sample belongs to the family announced last */
		assert_true(strncmp(name, last_type, strlen(last_type)) == 0);
	}
	free(text);
	snapshot_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text_format_matches_golden),
	    cmocka_unit_test(test_openmetrics_matches_golden),
	    cmocka_unit_test(test_array_names_the_member_that_holds_it),
	    cmocka_unit_test(test_learned_burst_is_exported_once_known),
	    cmocka_unit_test(test_ceiling_below_the_declared_limit_is_a_ratio),
	    cmocka_unit_test(test_device_info_has_the_volume_id_where_known),
	    cmocka_unit_test(test_shared_ceiling_names_its_devices),
	    cmocka_unit_test(test_instance_limits_are_exported_when_declared),
	    cmocka_unit_test(test_fsync_has_ops_and_iops_but_no_bytes),
	    cmocka_unit_test(test_fresh_daemon_renders_without_devices_or_runs),
	    cmocka_unit_test(test_label_values_escape_quote_backslash_newline_and_bad_utf8),
	    cmocka_unit_test(test_values_are_shortest_round_trip),
	    cmocka_unit_test(test_openmetrics_le_is_canonical),
	    cmocka_unit_test(test_histogram_buckets_are_cumulative_up_to_inf_equal_to_count),
	    cmocka_unit_test(test_openmetrics_counters_drop_total_in_type_and_end_with_eof),
	    cmocka_unit_test(test_limit_families_only_for_declared_limits),
	    cmocka_unit_test(test_every_family_has_help_and_type),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
