/* Probe results as JSON: fio's field names (the contract --once and
 * /api/v1/probes share). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "config.h"
#include "json_probe.h"

static struct probe_result *sample_result(void)
{
	struct probe_result *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	probe_result_init(r);
	r->success = false;
	r->error = -ETIMEDOUT;
	snprintf(r->message, sizeof(r->message), "timed out");
	r->start_realtime_usec = 1700000000123456ULL;
	r->runtime_usec = 2000000;
	r->op[PROBE_OP_READ].ops = 1000;
	r->op[PROBE_OP_READ].bytes = 1000 * 4096;
	r->op[PROBE_OP_READ].iops = 500;
	r->op[PROBE_OP_READ].bw_bytes = 500 * 4096;
	for (uint64_t i = 1; i <= 1000; i++) {
		histogram_record(&r->op[PROBE_OP_READ].lat, i * 1000);
	}
	r->op[PROBE_OP_READ].errors[PROBE_ERR_TIMEOUT] = 2;
	r->op[PROBE_OP_FSYNC].ops = 3;
	r->op[PROBE_OP_FSYNC].errors[PROBE_ERR_EIO] = 1;
	histogram_record(&r->op[PROBE_OP_FSYNC].lat, 5000000);
	return r;
}

static json_int_t get_int(json_t *o, const char *path)
{
	json_t *v = o;
	char buf[128], *save = NULL, *key;

	snprintf(buf, sizeof(buf), "%s", path);
	for (key = strtok_r(buf, "/", &save); key; key = strtok_r(NULL, "/", &save)) {
		v = json_object_get(v, key);
		if (!v) {
			fail_msg("no %s in the JSON (at %s)", path, key);
		}
	}
	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static void test_result_uses_fio_field_names(void **state)
{
	struct probe_result *r = sample_result();
	json_t *o = probe_result_to_json(r);

	assert_non_null(o);
	assert_int_equal(get_int(o, "read/total_ios"), 1000);
	assert_int_equal(get_int(o, "read/io_bytes"), 4096000);
	assert_int_equal(get_int(o, "read/io_kbytes"), 4000);
	assert_int_equal(get_int(o, "read/bw_bytes"), 2048000);
	assert_int_equal(get_int(o, "read/bw"), 2000);
	assert_int_equal(get_int(o, "read/runtime"), 2000);
	assert_true(json_real_value(json_object_get(json_object_get(o, "read"), "iops")) == 500.0);
	assert_int_equal(get_int(o, "read/clat_ns/min"), 1000);
	assert_int_equal(get_int(o, "read/clat_ns/max"), 1000000);
	assert_int_equal(get_int(o, "read/clat_ns/N"), 1000);
	/* fio's percentile keys, values in ns within the histogram's 1% */
	assert_true(llabs(get_int(o, "read/clat_ns/percentile/50.000000") - 500000) <= 5000);
	assert_true(llabs(get_int(o, "read/clat_ns/percentile/99.990000") - 1000000) <= 10000);
	assert_non_null(json_object_get(json_object_get(json_object_get(o, "read"), "clat_ns"), "stddev"));
	/* fsync is fio's "sync", with lat_ns */
	assert_int_equal(get_int(o, "sync/total_ios"), 3);
	assert_int_equal(get_int(o, "sync/lat_ns/max"), 5000000);
	assert_null(json_object_get(json_object_get(o, "sync"), "clat_ns"));
	/* errors by reason, per op and summed */
	assert_int_equal(get_int(o, "read/errors/timeout"), 2);
	assert_int_equal(get_int(o, "errors/timeout"), 2);
	assert_int_equal(get_int(o, "errors/eio"), 1);
	assert_int_equal(get_int(o, "errors/other"), 0);
	/* iopsd's own fields */
	assert_true(json_is_false(json_object_get(o, "success")));
	assert_int_equal(get_int(o, "error"), ETIMEDOUT);
	assert_string_equal(json_string_value(json_object_get(o, "error_name")), "ETIMEDOUT");
	assert_string_equal(json_string_value(json_object_get(o, "message")), "timed out");
	assert_int_equal(get_int(o, "timestamp_ms"), 1700000000123LL);
	assert_int_equal(get_int(o, "job_runtime"), 2000);
	json_decref(o);
	free(r);
}

static void test_empty_op_has_no_percentiles_and_zero_min(void **state)
{
	struct probe_result *r = sample_result();
	json_t *o = probe_result_to_json(r);
	json_t *clat = json_object_get(json_object_get(o, "write"), "clat_ns");

	assert_non_null(clat);
	assert_int_equal(json_integer_value(json_object_get(clat, "min")), 0);
	assert_int_equal(json_integer_value(json_object_get(clat, "N")), 0);
	assert_null(json_object_get(clat, "percentile"));
	json_decref(o);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_result_uses_fio_field_names),
	    cmocka_unit_test(test_empty_op_has_no_percentiles_and_zero_min),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
