/* diskstats: parsing the 14/18/20-field formats and deriving iostat -x. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diskstats.h"
#include "fileio.h"
#include "macro.h"

#define EPS 1e-9

static struct diskstats_raw *load(const char *tree, const char *file, size_t *ret_n)
{
	char path[1024];
	_cleanup_free_ char *buf = NULL;
	struct diskstats_raw *a = NULL;
	size_t bad = 99, cap = 0;
	int n;

	snprintf(path, sizeof(path), "%s/sampler/%s/proc/%s", FIXTURES_DIR, tree, file);
	assert_true(read_virtual_file(path, 1 << 20, &buf) > 0);
	n = diskstats_parse_into(buf, &a, &cap, &bad);
	assert_true(n > 0);
	assert_int_equal(bad, 0);
	*ret_n = (size_t)n;
	return a;
}

static const struct diskstats_raw *find(const struct diskstats_raw *a, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(a[i].name, name) == 0) {
			return &a[i];
		}
	}
	fail_msg("no device %s", name);
	return NULL;
}

static void test_parses_14_18_and_20_field_lines(void **state)
{
	struct diskstats_raw r;
	const char *l14 = "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11";
	const char *l18 = "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15";
	const char *l20 = " 259       0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17";

	assert_int_equal(diskstats_parse_line(l14, strlen(l14), &r), 0);
	assert_int_equal(r.n_fields, 14);
	assert_int_equal(r.major, 8);
	assert_string_equal(r.name, "sda");
	assert_int_equal(r.reads, 1);
	assert_int_equal(r.write_ms, 8);
	assert_int_equal(r.in_flight, 9);
	assert_int_equal(r.io_ms, 10);
	assert_int_equal(r.weighted_ms, 11);
	assert_int_equal(r.discards, 0);

	assert_int_equal(diskstats_parse_line(l18, strlen(l18), &r), 0);
	assert_int_equal(r.n_fields, 18);
	assert_int_equal(r.discards, 12);
	assert_int_equal(r.discard_ms, 15);
	assert_int_equal(r.flushes, 0);

	assert_int_equal(diskstats_parse_line(l20, strlen(l20), &r), 0);
	assert_int_equal(r.n_fields, 20);
	assert_int_equal(r.major, 259);
	assert_string_equal(r.name, "nvme0n1");
	assert_int_equal(r.flushes, 16);
	assert_int_equal(r.flush_ms, 17);
}

static void test_fixture_files_of_each_kernel_parse(void **state)
{
	static const struct {
		const char *tree;
		unsigned fields;
		size_t n;
	} cases[] = {
	    {"kernel-4.14", 14, 3},
	    {"kernel-4.18", 18, 3},
	    {"ec2-md-raid0", 20, 13},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		size_t n;
		_cleanup_free_ struct diskstats_raw *a = load(cases[i].tree, "diskstats", &n);

		assert_int_equal(n, cases[i].n);
		for (size_t k = 0; k < n; k++) {
			assert_int_equal(a[k].n_fields, cases[i].fields);
		}
	}
}

static void test_malformed_lines_are_skipped_and_counted(void **state)
{
	const char *buf = "   8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n"
			  "   8 1 sda1 1 2 3 4 5 6 7 8 9 10\n"			     /* 13 fields */
			  "   8 2 sda2 1 2 3 4 5 6 7 8 9 10 11 12\n"		     /* 15 fields */
			  "   8 3 sda3 1 2 x 4 5 6 7 8 9 10 11\n"		     /* not a number */
			  "   8 4 sda4 1 2 -3 4 5 6 7 8 9 10 11\n"		     /* signed */
			  "   8 5 sda5 1 2 3 99999999999999999999 5 6 7 8 9 10 11\n" /* > 2^64 */
			  "   8 6 0123456789012345678901234567890123456789012345678901234567890123456789"
			  " 1 2 3 4 5 6 7 8 9 10 11\n" /* name too long */
			  "\n"
			  "   8 16 sdb 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n" /* 21 fields */
			  "   8 32 sdc 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17";     /* no newline */
	_cleanup_free_ struct diskstats_raw *a = NULL;
	size_t bad = 0, cap = 0;

	assert_int_equal(diskstats_parse_into(buf, &a, &cap, &bad), 2);
	assert_int_equal(bad, 7);
	assert_string_equal(a[0].name, "sda");
	assert_string_equal(a[1].name, "sdc");
	assert_int_equal(a[1].flush_ms, 17);
}

static void test_parse_into_reuses_and_grows_the_array(void **state)
{
	struct diskstats_raw *a = NULL;
	size_t cap = 0, bad;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	for (int i = 0; i < 200; i++) {
		fprintf(f, "8 %d sd%d 1 2 3 4 5 6 7 8 9 10 11\n", i, i);
	}
	fclose(f);
	assert_int_equal(diskstats_parse_into(buf, &a, &cap, &bad), 200);
	assert_true(cap >= 200);
	assert_string_equal(a[199].name, "sd199");
	assert_int_equal(diskstats_parse_into("8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", &a, &cap, &bad), 1);
	assert_true(cap >= 200);
	free(a);
	free(buf);
}

/* The kernel-4.14 fixture: one second of a mixed workload on sda, and the
 * figures `iostat -x` prints for it (r/s 240, rkB/s 7680, rrqm/s 12,
 * r_await 1.30, w/s 130, wkB/s 4160, wrqm/s 40, w_await 4.00, aqu-sz 0.83,
 * %util 65.50). */
static void test_rates_follow_iostat_formulas(void **state)
{
	size_t n0, n1;
	_cleanup_free_ struct diskstats_raw *a = load("kernel-4.14", "diskstats", &n0);
	_cleanup_free_ struct diskstats_raw *b = load("kernel-4.14", "diskstats.t1", &n1);
	struct device_rates r;

	diskstats_derive(find(a, n0, "sda"), find(b, n1, "sda"), 1.0, &r);
	assert_true(r.valid);
	assert_float_equal(r.interval_sec, 1.0, EPS);
	assert_float_equal(r.read_iops, 240, EPS);
	assert_float_equal(r.read_bytes_per_sec, 7680.0 * 1024, EPS);
	assert_float_equal(r.read_merges_per_sec, 12, EPS);
	assert_float_equal(r.read_await_sec, 0.0013, EPS);
	assert_float_equal(r.write_iops, 130, EPS);
	assert_float_equal(r.write_bytes_per_sec, 4160.0 * 1024, EPS);
	assert_float_equal(r.write_merges_per_sec, 40, EPS);
	assert_float_equal(r.write_await_sec, 0.004, EPS);
	assert_float_equal(r.queue_depth, 0.832, EPS);
	assert_float_equal(r.utilization, 0.655, EPS);
	/* 14 fields: no discard or flush figures */
	assert_float_equal(r.discard_iops, 0, EPS);
	assert_float_equal(r.flush_iops, 0, EPS);

	/* over two seconds every rate halves, awaits stay */
	diskstats_derive(find(a, n0, "sda"), find(b, n1, "sda"), 2.0, &r);
	assert_float_equal(r.read_iops, 120, EPS);
	assert_float_equal(r.read_await_sec, 0.0013, EPS);
	assert_float_equal(r.utilization, 0.3275, EPS);

	/* an idle partition: zero rates, zero awaits (not NaN) */
	diskstats_derive(find(a, n0, "sda1"), find(b, n1, "sda1"), 1.0, &r);
	assert_true(r.valid);
	assert_float_equal(r.read_iops, 0, EPS);
	assert_float_equal(r.read_await_sec, 0, EPS);
	assert_float_equal(r.write_await_sec, 0, EPS);
}

static void test_discard_rates_come_from_18_field_lines(void **state)
{
	size_t n0, n1;
	_cleanup_free_ struct diskstats_raw *a = load("kernel-4.18", "diskstats", &n0);
	_cleanup_free_ struct diskstats_raw *b = load("kernel-4.18", "diskstats.t1", &n1);
	struct device_rates r;

	diskstats_derive(find(a, n0, "sda"), find(b, n1, "sda"), 1.0, &r);
	assert_true(r.valid);
	assert_float_equal(r.read_iops, 240, EPS);
	assert_float_equal(r.discard_iops, 3, EPS);
	assert_float_equal(r.discard_bytes_per_sec, 2048.0 * 512, EPS);
	assert_float_equal(r.discard_await_sec, 0.002 / 3, EPS);
}

static void test_flush_rates_come_from_20_field_lines(void **state)
{
	struct diskstats_raw p = {.n_fields = 20, .flushes = 100, .flush_ms = 50};
	struct diskstats_raw c = {.n_fields = 20, .flushes = 160, .flush_ms = 80};
	struct device_rates r;

	diskstats_derive(&p, &c, 2.0, &r);
	assert_true(r.valid);
	assert_float_equal(r.flush_iops, 30, EPS);
	assert_float_equal(r.flush_await_sec, 0.0005, EPS);

	/* the same counters on an 18-field kernel are not there */
	p.n_fields = c.n_fields = 18;
	diskstats_derive(&p, &c, 2.0, &r);
	assert_true(r.valid);
	assert_float_equal(r.flush_iops, 0, EPS);
}

/* The millisecond fields are printed as 32-bit unsigned and wrap after
 * 49.7 days of accumulated time: the delta across the wrap is the true one. */
static void test_32bit_time_field_wrap_gives_the_true_delta(void **state)
{
	struct diskstats_raw p = {.n_fields = 14,
				  .reads = 1000,
				  .read_ms = 4294967000ULL,
				  .io_ms = 4294967200ULL,
				  .weighted_ms = 4294967290ULL};
	struct diskstats_raw c = {
	    .n_fields = 14, .reads = 1496, .read_ms = 200, .io_ms = 404, .weighted_ms = 490};
	struct device_rates r;

	diskstats_derive(&p, &c, 1.0, &r);
	assert_true(r.valid);
	assert_float_equal(r.read_iops, 496, EPS);
	assert_float_equal(r.read_await_sec, 0.001, EPS); /* 496 ms / 496 reads */
	assert_float_equal(r.utilization, 0.5, EPS);	  /* 500 ms of 1000 */
	assert_float_equal(r.queue_depth, 0.496, EPS);
}

/* A 32-bit kernel prints the operation counters as 32-bit too. */
static void test_32bit_counter_wrap_gives_the_true_delta(void **state)
{
	struct diskstats_raw p = {.n_fields = 14, .reads = 4294967196ULL, .read_sectors = 4294967000ULL};
	struct diskstats_raw c = {.n_fields = 14, .reads = 100, .read_sectors = 1304};
	struct device_rates r;

	diskstats_derive(&p, &c, 1.0, &r);
	assert_true(r.valid);
	assert_float_equal(r.read_iops, 200, EPS);
	assert_float_equal(r.read_bytes_per_sec, 1600.0 * 512, EPS);
}

/* A device removed and added again between two samples starts from zero:
 * no negative rate, and no 4-billion-IOPS one either. */
static void test_counter_reset_is_not_a_rate(void **state)
{
	struct diskstats_raw p = {.n_fields = 20,
				  .reads = 5000000000ULL,
				  .read_sectors = 9000000000ULL,
				  .read_ms = 123456,
				  .io_ms = 654321};
	struct diskstats_raw c = {.n_fields = 20, .reads = 12, .read_sectors = 96, .read_ms = 3, .io_ms = 4};
	struct device_rates r;

	diskstats_derive(&p, &c, 1.0, &r);
	assert_false(r.valid);
	assert_float_equal(r.read_iops, 0, EPS);
	assert_float_equal(r.utilization, 0, EPS);

	/* a small old value: the "wrapped" delta would be ~2^32, absurd */
	p = (struct diskstats_raw){.n_fields = 20, .reads = 1000, .io_ms = 5000};
	c = (struct diskstats_raw){.n_fields = 20, .reads = 10, .io_ms = 20};
	diskstats_derive(&p, &c, 1.0, &r);
	assert_false(r.valid);

	/* busy time alone going back by a lot is a reset, not 49 days of busy */
	p = (struct diskstats_raw){.n_fields = 14, .reads = 10, .io_ms = 3000000};
	c = (struct diskstats_raw){.n_fields = 14, .reads = 20, .io_ms = 100};
	diskstats_derive(&p, &c, 1.0, &r);
	assert_false(r.valid);
}

static void test_absurd_forward_jump_is_not_a_rate(void **state)
{
	struct diskstats_raw p = {.n_fields = 14, .reads = 10};
	struct diskstats_raw c = {.n_fields = 14, .reads = 10 + 1000000000000ULL};
	struct device_rates r;

	diskstats_derive(&p, &c, 1.0, &r);
	assert_false(r.valid);

	/* busy time cannot grow faster than the clock */
	p = (struct diskstats_raw){.n_fields = 14, .io_ms = 0};
	c = (struct diskstats_raw){.n_fields = 14, .io_ms = 10000};
	diskstats_derive(&p, &c, 1.0, &r);
	assert_false(r.valid);
}

static void test_first_sample_and_zero_interval_are_not_rates(void **state)
{
	struct diskstats_raw c = {.n_fields = 14, .reads = 10};
	struct device_rates r;

	diskstats_derive(NULL, &c, 1.0, &r);
	assert_false(r.valid);
	diskstats_derive(&c, &c, 0.0, &r);
	assert_false(r.valid);
	diskstats_derive(&c, &c, NAN, &r);
	assert_false(r.valid);
	diskstats_derive(&c, &c, -1.0, &r);
	assert_false(r.valid);
}

static void test_utilization_never_exceeds_one(void **state)
{
	struct diskstats_raw p = {.n_fields = 14, .io_ms = 1000};
	struct diskstats_raw c = {.n_fields = 14, .io_ms = 2004};
	struct device_rates r;

	/* io_ticks advanced a jiffy more than our clock did */
	diskstats_derive(&p, &c, 1.0, &r);
	assert_true(r.valid);
	assert_float_equal(r.utilization, 1.0, EPS);
}

/* fio's aggregate over md0's members, with the seeds' figures: members at
 * 82.95% and 87.91% busy -> aggrutil 87.91%; ios and ticks averaged. */
static void test_member_aggregate_is_fios_aggr(void **state)
{
	struct device_rates f = {.valid = true,
				 .interval_sec = 60,
				 .read_iops = 3000,
				 .read_await_sec = 0.00078,
				 .queue_depth = 2.34,
				 .utilization = 0.8295,
				 .read_bytes_per_sec = 3000 * 4096.0};
	struct device_rates g = {.valid = true,
				 .interval_sec = 60,
				 .read_iops = 3000,
				 .read_await_sec = 0.00088,
				 .queue_depth = 2.64,
				 .utilization = 0.8791,
				 .read_bytes_per_sec = 3000 * 4096.0};
	const struct device_rates *members[] = {&f, &g};
	struct device_rates m;

	diskstats_aggregate_members(members, 2, &m);
	assert_true(m.valid);
	assert_float_equal(m.utilization, 0.8791, EPS);
	assert_float_equal(m.read_iops, 3000, EPS);
	assert_float_equal(m.read_bytes_per_sec, 3000 * 4096.0, EPS);
	assert_float_equal(m.read_await_sec, 0.00083, EPS);
	assert_float_equal(m.queue_depth, 2.49, EPS);
	assert_float_equal(m.interval_sec, 60, EPS);

	/* one member without rates: no aggregate */
	g.valid = false;
	diskstats_aggregate_members(members, 2, &m);
	assert_false(m.valid);
	diskstats_aggregate_members(members, 0, &m);
	assert_false(m.valid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parses_14_18_and_20_field_lines),
	    cmocka_unit_test(test_fixture_files_of_each_kernel_parse),
	    cmocka_unit_test(test_malformed_lines_are_skipped_and_counted),
	    cmocka_unit_test(test_parse_into_reuses_and_grows_the_array),
	    cmocka_unit_test(test_rates_follow_iostat_formulas),
	    cmocka_unit_test(test_discard_rates_come_from_18_field_lines),
	    cmocka_unit_test(test_flush_rates_come_from_20_field_lines),
	    cmocka_unit_test(test_32bit_time_field_wrap_gives_the_true_delta),
	    cmocka_unit_test(test_32bit_counter_wrap_gives_the_true_delta),
	    cmocka_unit_test(test_counter_reset_is_not_a_rate),
	    cmocka_unit_test(test_absurd_forward_jump_is_not_a_rate),
	    cmocka_unit_test(test_first_sample_and_zero_interval_are_not_rates),
	    cmocka_unit_test(test_utilization_never_exceeds_one),
	    cmocka_unit_test(test_member_aggregate_is_fios_aggr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
