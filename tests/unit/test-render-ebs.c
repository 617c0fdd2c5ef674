/* /metrics families of the EBS NVMe log page: present with the volume's own
 * counters and histogram (real _sum, +Inf = _count) where a volume exists,
 * absent altogether elsewhere. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ebs_nvme.h"
#include "registry.h"
#include "render_prom.h"

static void load_volume(struct ebs_nvme_volume *v)
{
	uint8_t page[EBS_NVME_LOG_PAGE_SIZE];
	FILE *f = fopen(FIXTURES_DIR "/ebs-nvme/volume.bin", "rbe");

	assert_non_null(f);
	assert_int_equal(fread(page, 1, sizeof(page), f), sizeof(page));
	fclose(f);
	memset(v, 0, sizeof(*v));
	strcpy(v->device, "nvme1n1");
	strcpy(v->volume_id, "vol-0123456789abcdef0");
	assert_int_equal(ebs_nvme_parse_log_page(page, sizeof(page), &v->stats), 0);
}

static char *render(struct ebs_nvme_volume *vols, size_t n, enum metrics_format fmt)
{
	struct sampler_snapshot ss = {.refcount = 1, .ebs = vols, .n_ebs = n};
	struct snapshot s = {.refcount = 1, .samples = &ss};
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(render_prom(&s, fmt, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	return text;
}

static void assert_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p++) {
		if ((p == text || p[-1] == '\n') && p[n] == '\n') {
			return;
		}
	}
	fail_msg("line not found: %s", line);
}

static void test_ebs_volume_families_with_a_real_sum(void **state)
{
	struct ebs_nvme_volume v;
	char *text;

	load_volume(&v);
	text = render(&v, 1, METRICS_FORMAT_PROMETHEUS);
#define L "device=\"nvme1n1\",volume_id=\"vol-0123456789abcdef0\""
	assert_line(text, "# TYPE iopsd_ebs_volume_statistics_readable gauge");
	assert_line(text, "iopsd_ebs_volume_statistics_readable{" L "} 1");
	assert_line(text, "# TYPE iopsd_ebs_volume_performance_exceeded_iops_seconds_total counter");
	assert_line(text, "iopsd_ebs_volume_performance_exceeded_iops_seconds_total{" L "} 12.345678");
	assert_line(text, "iopsd_ebs_volume_performance_exceeded_throughput_seconds_total{" L "} 0");
	assert_line(text, "iopsd_ebs_instance_performance_exceeded_iops_seconds_total{" L "} 1");
	assert_line(text, "iopsd_ebs_instance_performance_exceeded_throughput_seconds_total{" L "} 0.25");
	assert_line(text, "iopsd_ebs_volume_queue_length{" L "} 7");
	assert_line(text, "iopsd_ebs_volume_ops_total{" L ",op=\"read\"} 1000000");
	assert_line(text, "iopsd_ebs_volume_bytes_total{" L ",op=\"write\"} 8192000000");
	assert_line(text, "# TYPE iopsd_ebs_volume_latency_seconds histogram");
	assert_line(text,
		    "iopsd_ebs_volume_latency_seconds_bucket{" L ",op=\"read\",le=\"0.000128\"} 100000");
	assert_line(text,
		    "iopsd_ebs_volume_latency_seconds_bucket{" L ",op=\"read\",le=\"0.000512\"} 800000");
	assert_line(text,
		    "iopsd_ebs_volume_latency_seconds_bucket{" L ",op=\"read\",le=\"0.065536\"} 999900");
	assert_line(text, "iopsd_ebs_volume_latency_seconds_bucket{" L ",op=\"read\",le=\"+Inf\"} 1000000");
	assert_line(text, "iopsd_ebs_volume_latency_seconds_sum{" L ",op=\"read\"} 612.345678");
	assert_line(text, "iopsd_ebs_volume_latency_seconds_count{" L ",op=\"read\"} 1000000");
	assert_line(text, "iopsd_ebs_volume_latency_seconds_bucket{" L ",op=\"write\",le=\"1\"} 500000");
	assert_line(text, "iopsd_ebs_volume_latency_seconds_sum{" L ",op=\"write\"} 987.654321");
	/* the open-ended last read bin is the +Inf bucket, not a bucket of its own */
	assert_null(strstr(text, "le=\"18446744073709.551615\""));
	assert_null(strstr(text, "e+13"));
	free(text);

	text = render(&v, 1, METRICS_FORMAT_OPENMETRICS);
	assert_line(text, "# TYPE iopsd_ebs_volume_performance_exceeded_iops_seconds counter");
	assert_line(text, "iopsd_ebs_volume_latency_seconds_bucket{" L ",op=\"write\",le=\"1.0\"} 500000");
#undef L
	free(text);
}

/* Without CAP_SYS_ADMIN (the packaged unit) the page cannot be read: the
 * volume says so with the reason, and shows no statistics of zeros. */
static void test_unreadable_ebs_volume_says_why(void **state)
{
	struct ebs_nvme_volume v[2];
	char *text;

	load_volume(&v[0]);
	memset(&v[1], 0, sizeof(v[1]));
	strcpy(v[1].device, "nvme2n1");
	strcpy(v[1].volume_id, "vol-0fedcba9876543210");
	v[1].error = -EACCES;
	text = render(v, 2, METRICS_FORMAT_PROMETHEUS);
#define L1 "device=\"nvme1n1\",volume_id=\"vol-0123456789abcdef0\""
#define L2 "device=\"nvme2n1\",volume_id=\"vol-0fedcba9876543210\""
	assert_line(text, "iopsd_ebs_volume_statistics_readable{" L1 "} 1");
	assert_line(text, "iopsd_ebs_volume_statistics_readable{" L2 ",reason=\"eacces\"} 0");
	assert_line(text, "iopsd_ebs_volume_queue_length{" L1 "} 7");
	assert_null(strstr(text, "iopsd_ebs_volume_queue_length{" L2));
	free(text);

	/* only unreadable volumes: the statistics families are absent */
	v[1].error = -EPERM;
	text = render(&v[1], 1, METRICS_FORMAT_PROMETHEUS);
	assert_line(text, "iopsd_ebs_volume_statistics_readable{" L2 ",reason=\"eperm\"} 0");
#undef L1
#undef L2
	assert_null(strstr(text, "iopsd_ebs_volume_queue_length"));
	assert_null(strstr(text, "iopsd_ebs_volume_latency_seconds"));
	free(text);
}

static void test_no_ebs_volume_no_ebs_family(void **state)
{
	char *text = render(NULL, 0, METRICS_FORMAT_PROMETHEUS);

	assert_null(strstr(text, "iopsd_ebs_"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ebs_volume_families_with_a_real_sum),
	    cmocka_unit_test(test_unreadable_ebs_volume_says_why),
	    cmocka_unit_test(test_no_ebs_volume_no_ebs_family),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
