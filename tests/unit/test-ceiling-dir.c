/* Per-direction ceilings over synthetic per-second series shaped as the
 * lab's QEMU caps delivered them: separate read and write caps, one total
 * cap over both, a throughput cap, declared direction limits, I/O units. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ceiling_dir.h"

/* `r` reads and `w` writes per second of `bs` bytes, each direction with
 * `qd` requests waiting. */
static struct device_rates rw_rates(double r, double w, double bs, double qd)
{
	return (struct device_rates){
	    .valid = true,
	    .interval_sec = 1.0,
	    .read_iops = r,
	    .write_iops = w,
	    .read_bytes_per_sec = r * bs,
	    .write_bytes_per_sec = w * bs,
	    .read_await_sec = r > 0 ? qd / r : 0,
	    .write_await_sec = w > 0 ? qd / w : 0,
	    .queue_depth = (r > 0 ? qd : 0) + (w > 0 ? qd : 0),
	    .utilization = 1.0,
	};
}

struct run {
	struct ceiling_state total;
	struct ceiling_dir dir;
	struct ceiling_params p;
	struct device_ceiling out;
	struct ceiling_dir_result res;
};

static void run(struct run *x, const struct device_limits *lim, double r, double w, double bs, double qd_r,
		double qd_w, unsigned seconds)
{
	memset(x, 0, sizeof(*x));
	ceiling_state_init(&x->total);
	ceiling_dir_init(&x->dir);
	ceiling_params_default(&x->p);
	for (unsigned i = 0; i < seconds; i++) {
		/* a second a little above, the next a little below */
		double wobble = (i % 3 == 0 ? 0.004 : i % 3 == 1 ? -0.003 : 0.0);
		struct device_rates s = rw_rates(r * (1 + wobble), w * (1 - wobble), bs, qd_r);

		if (w > 0 && qd_w != qd_r) {
			s.write_await_sec = qd_w / s.write_iops;
			s.queue_depth = qd_r + qd_w;
		}
		ceiling_update(&x->total, &x->p, NULL, &s, &x->out);
		ceiling_dir_update(&x->dir, &x->p, lim, 0.95, &s, &x->out, &x->res);
	}
}

static void assert_near(double v, double want, double rel)
{
	if (!(fabs(v - want) <= rel * want)) {
		fail_msg("%g is not within %g%% of %g", v, rel * 100, want);
	}
}

static void test_separate_read_and_write_caps_each_flagged(void **state)
{
	struct run x;

	/* iops-read=600, iops-write=300, a QD16 job each */
	run(&x, NULL, 600, 300, 4096, 16, 16, 30);
	assert_true(x.res.verdict.is_read_flagged);
	assert_true(x.res.verdict.is_write_flagged);
	assert_near(x.res.read_iops_estimate, 600, 0.02);
	assert_near(x.res.write_iops_estimate, 300, 0.02);
	assert_false(x.res.verdict.has_iops_ceiling);
	assert_true(x.out.is_throttled); /* the total detector saw 900 flat: a shadow */
	assert_near(x.out.iops_ceiling_estimate, 900, 0.02);
}

/* The verdict stays with the estimates while the load is away (the rerun
 * of the lab's scenario found the total of 900 back once its load fell
 * short), until a load shows another. */
static void test_the_verdict_outlasts_the_load(void **state)
{
	struct run x;
	struct device_rates idle = rw_rates(0, 0, 4096, 0);

	run(&x, NULL, 600, 300, 4096, 16, 16, 30);
	for (unsigned i = 0; i < 10; i++) {
		ceiling_update(&x.total, &x.p, NULL, &idle, &x.out);
		ceiling_dir_update(&x.dir, &x.p, NULL, 0.95, &idle, &x.out, &x.res);
	}
	assert_int_equal(x.res.verdict.resource, CEILING_RESOURCE_WRITE_IOPS);
	assert_false(x.res.verdict.has_iops_ceiling);
	assert_false(x.res.verdict.is_read_flagged || x.res.verdict.is_write_flagged);
	assert_near(x.res.read_iops_estimate, 600, 0.02);
	assert_near(x.res.write_iops_estimate, 300, 0.02);
	assert_near(x.out.iops_ceiling_estimate, 900,
		    0.02); /* the total's, which detect.c does not publish */
}

static void test_one_total_cap_is_not_split(void **state)
{
	struct run x;

	/* iops-total=900 with the same two jobs: 450 each, the same wait */
	run(&x, NULL, 450, 450, 4096, 16, 16, 30);
	assert_false(x.res.verdict.is_read_flagged);
	assert_false(x.res.verdict.is_write_flagged);
	assert_int_equal(x.res.verdict.resource, CEILING_RESOURCE_IOPS);
	assert_true(x.res.verdict.has_iops_ceiling);
	assert_true(x.res.read_iops_estimate == 0 && x.res.write_iops_estimate == 0);
}

static void test_throughput_cap_under_64k_reads(void **state)
{
	struct run x;

	/* iops-total=1000, bps-total=16 MiB/s, 64 KiB reads at QD16: 256 I/O/s */
	run(&x, NULL, 256, 0, 65536, 16, 16, 30);
	assert_int_equal(x.res.verdict.resource, CEILING_RESOURCE_THROUGHPUT);
	assert_false(x.res.verdict.has_iops_ceiling);
	assert_true(x.res.verdict.has_throughput_ceiling);
	assert_near(x.out.throughput_ceiling_estimate, 16777216, 0.02);
	assert_near(x.res.average_io_bytes, 65536, 0.001);
}

static void test_declared_direction_limits_get_their_ratios_and_seconds(void **state)
{
	struct device_limits lim = {.read_iops_limit = 600, .write_iops_limit = 300};
	struct run x;

	run(&x, &lim, 600, 300, 4096, 16, 16, 20);
	assert_near(x.res.read_iops_limit_ratio, 1.0, 0.02);
	assert_near(x.res.write_iops_limit_ratio, 1.0, 0.02);
	assert_true(isnan(x.res.iops_limit_ratio));
	/* every second within 5% of its limit */
	assert_near(x.res.at_ceiling_read_seconds, 20, 0.01);
	assert_near(x.res.at_ceiling_write_seconds, 20, 0.01);
	assert_true(isnan(x.res.provider_iops));
}

static void test_declared_direction_throughput_limits_get_their_ratios_and_seconds(void **state)
{
	struct device_limits lim = {.read_throughput_limit = 16 << 20, .write_throughput_limit = 16 << 20};
	struct run x;

	/* 64 KiB reads at their cap of 16 MiB/s, writes at half of theirs */
	run(&x, &lim, 256, 128, 65536, 16, 16, 20);
	assert_near(x.res.read_throughput_limit_ratio, 1.0, 0.02);
	assert_near(x.res.write_throughput_limit_ratio, 0.5, 0.02);
	assert_near(x.res.at_ceiling_read_throughput_seconds, 20, 0.01);
	assert_true(x.res.at_ceiling_write_throughput_seconds == 0);
	/* the IOPS limits stay undeclared */
	assert_true(isnan(x.res.read_iops_limit_ratio) && isnan(x.res.write_iops_limit_ratio));
	assert_true(x.res.at_ceiling_read_seconds == 0 && x.res.at_ceiling_write_seconds == 0);
}

static void test_no_direction_throughput_limit_is_no_ratio(void **state)
{
	struct device_limits lim = {.iops_limit = 1000};
	struct run x;

	run(&x, &lim, 256, 128, 65536, 16, 16, 5);
	assert_true(isnan(x.res.read_throughput_limit_ratio) && isnan(x.res.write_throughput_limit_ratio));
	assert_true(x.res.at_ceiling_read_throughput_seconds == 0);
}

static void test_units_count_large_ios_against_the_limit(void **state)
{
	struct device_limits lim = {.iops_limit = 1000, .iops_unit = 256 * 1024};
	struct run x;

	/* iops-total=1000, iops-size=256k, 1 MiB reads at QD4: 250 I/O/s */
	run(&x, &lim, 250, 0, 1 << 20, 4, 4, 25);
	assert_near(x.res.provider_iops, 1000, 0.02);
	assert_near(x.res.iops_limit_ratio, 1.0, 0.02);
	/* the plateau is found where it is, with its I/O size */
	assert_near(x.out.iops_ceiling_estimate, 250, 0.02);
	assert_near(x.res.average_io_bytes, 1 << 20, 0.001);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_separate_read_and_write_caps_each_flagged),
	    cmocka_unit_test(test_the_verdict_outlasts_the_load),
	    cmocka_unit_test(test_one_total_cap_is_not_split),
	    cmocka_unit_test(test_throughput_cap_under_64k_reads),
	    cmocka_unit_test(test_declared_direction_limits_get_their_ratios_and_seconds),
	    cmocka_unit_test(test_declared_direction_throughput_limits_get_their_ratios_and_seconds),
	    cmocka_unit_test(test_no_direction_throughput_limit_is_no_ratio),
	    cmocka_unit_test(test_units_count_large_ios_against_the_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
