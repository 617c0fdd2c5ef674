/* I/O generation: bssplit weights, bsrange multiples, offsets inside each
 * job's region and aligned, files used round robin, offset_increment, rate
 * pacing in bytes. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fio.h"
#include "iogen.h"

#define KIB 1024ULL
#define MIB (1024ULL * KIB)

static struct probe_config probe(enum probe_rw rw)
{
	struct probe_config pc = {
	    .rw = rw,
	    .bs = 4096,
	    .bs_rw = {4096, 4096},
	    .size = 8 * MIB,
	    .nrfiles = 1,
	    .numjobs = 1,
	    .rwmixread = 50,
	};

	return pc;
}

static void setup(struct probe_config *pc, struct iogen *g)
{
	struct fio_layout l;
	char err[256];

	fio_resolve_bs(pc);
	assert_int_equal(fio_layout(pc, 0, &l, err, sizeof(err)), 0);
	iogen_init(g, pc, &l, 1);
}

static void test_bssplit_sizes_follow_their_weights(void **state)
{
	struct probe_bs b[2] = {0};
	unsigned n4k = 0, n64k = 0, n1m = 0, total = 100000;
	char err[256];
	uint64_t rng = 3;

	assert_int_equal(fio_parse_bssplit("bssplit", "4k/60:64k/30:1m", b, err, sizeof(err)), 0);
	assert_int_equal(b[1].n_split, 3);
	assert_int_equal(b[1].split[2].pct, 10);
	for (unsigned i = 0; i < total; i++) {
		uint64_t bs = iogen_pick_bs(&rng, &b[0]);

		n4k += bs == 4 * KIB;
		n64k += bs == 64 * KIB;
		n1m += bs == MIB;
	}
	assert_int_equal(n4k + n64k + n1m, total);
	/* binomial sd at 60% is 0.15%: 1% is > 6 sd */
	assert_true(fabs(100.0 * n4k / total - 60) < 1 && fabs(100.0 * n64k / total - 30) < 1);
	assert_true(fabs(100.0 * n1m / total - 10) < 1);
}

static void test_bsrange_gives_multiples_of_its_minimum(void **state)
{
	struct probe_bs b[2] = {0};
	bool seen[17] = {false};
	char err[256];
	uint64_t rng = 5;

	assert_int_equal(fio_parse_bsrange("bsrange", "4k-64k", b, err, sizeof(err)), 0);
	for (unsigned i = 0; i < 10000; i++) {
		uint64_t bs = iogen_pick_bs(&rng, &b[1]);

		assert_int_equal(bs % (4 * KIB), 0);
		assert_true(bs >= 4 * KIB && bs <= 64 * KIB);
		seen[bs / (4 * KIB)] = true;
	}
	for (unsigned k = 1; k <= 16; k++) {
		assert_true(seen[k]);
	}
	assert_int_equal(fio_parse_bsrange("bsrange", "64k-4k", b, err, sizeof(err)), -EINVAL);
}

static void test_random_variable_sizes_stay_aligned_inside_the_region(void **state)
{
	struct probe_config pc = probe(PROBE_RW_RANDRW);
	struct iogen_job j;
	struct iogen g;
	char err[256];

	pc.offset = 1 * MIB;
	assert_int_equal(fio_parse_bssplit("bssplit", "512/50:64k/50", pc.bsdir, err, sizeof(err)), 0);
	setup(&pc, &g);
	assert_int_equal(g.align, 512);
	assert_int_equal(g.layout.file_size, 9 * MIB);
	assert_int_equal(iogen_job_init(&g, 0, 42, &j), 0);
	for (unsigned i = 0; i < 50000; i++) {
		struct iogen_io io;

		iogen_next(&g, &j, &io);
		assert_int_equal(io.offset % 512, 0);
		assert_true(io.offset >= MIB);
		assert_true(io.offset + io.len <= 9 * MIB);
		assert_true(io.len == 512 || io.len == 64 * KIB);
	}
	iogen_job_done(&j);
}

static void test_files_are_used_round_robin_each_sequentially(void **state)
{
	struct probe_config pc = probe(PROBE_RW_READ);
	uint64_t next[4] = {0};
	struct iogen_job j;
	struct iogen g;

	pc.nrfiles = 4;
	pc.size = 4 * MIB;
	setup(&pc, &g);
	assert_int_equal(g.layout.file_size, MIB);
	assert_int_equal(iogen_job_init(&g, 0, 1, &j), 0);
	for (unsigned i = 0; i < 4 * 300; i++) {
		struct iogen_io io;

		iogen_next(&g, &j, &io);
		assert_true(io.is_read);
		assert_int_equal(io.file, i % 4);
		/* each file's own cursor, wrapping at the end of the 1 MiB file */
		assert_int_equal(io.offset, next[io.file]);
		next[io.file] = (next[io.file] + 4096) % MIB;
	}
	iogen_job_done(&j);
}

static void test_offset_increment_gives_each_job_its_region(void **state)
{
	struct probe_config pc = probe(PROBE_RW_READ);
	struct iogen g;

	pc.numjobs = 3;
	pc.offset = 2 * MIB;
	pc.offset_increment = 10 * MIB;
	pc.size = MIB;
	setup(&pc, &g);
	assert_int_equal(g.layout.file_size, 23 * MIB);
	for (unsigned job = 0; job < 3; job++) {
		struct iogen_job j;
		struct iogen_io io;

		assert_int_equal(iogen_job_init(&g, job, 9, &j), 0);
		for (unsigned i = 0; i < 600; i++) {
			iogen_next(&g, &j, &io);
			assert_true(io.offset >= 2 * MIB + job * 10 * MIB);
			assert_true(io.offset + io.len <= 3 * MIB + job * 10 * MIB);
		}
		iogen_job_done(&j);
	}
}

static void test_a_raw_device_region_past_its_end_is_refused(void **state)
{
	struct probe_config pc = probe(PROBE_RW_RANDREAD);
	struct fio_layout l;
	char err[256];

	pc.size = 0;
	pc.offset = 60 * MIB;
	fio_resolve_bs(&pc);
	assert_int_equal(fio_layout(&pc, 64 * MIB, &l, err, sizeof(err)), 0);
	assert_int_equal(l.region, 4 * MIB);
	assert_int_equal(l.file_size, 0);
	pc.size = 8 * MIB;
	assert_int_equal(fio_layout(&pc, 64 * MIB, &l, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "run past the end of the device"));
}

static void test_rate_in_bytes_paces_without_drift(void **state)
{
	assert_int_equal(iogen_rate_bytes_due_ns(1000, 0, MIB), 1000);
	/* 1 MiB/s: 256 KiB are due a quarter of a second after the start */
	assert_int_equal(iogen_rate_bytes_due_ns(1000, 256 * KIB, MIB), 1000 + 250000000);
	assert_int_equal(iogen_rate_bytes_due_ns(5, 123, 0), 5);
}

/* fio-examples' backwards-read: rw=read:-8k with bs=4k reads the file from
 * its end down, each I/O 4k before the last one's start (as fio: the first
 * at 0, then the end minus 8k, and on down). */
static void test_offset_modifier_backwards_as_fio(void **state)
{
	struct probe_config pc = probe(PROBE_RW_READ);
	struct iogen g;
	struct iogen_job j;
	struct iogen_io io;
	char err[256];
	static const uint64_t want[] = {0, 120 * KIB, 116 * KIB, 112 * KIB};

	pc.size = 128 * KIB;
	assert_int_equal(fio_parse_rw("rw", "read:-8k", &pc, err, sizeof(err)), 0);
	assert_int_equal(pc.rw_seq_add, -8192);
	setup(&pc, &g);
	assert_int_equal(iogen_job_init(&g, 0, 1, &j), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		iogen_next(&g, &j, &io);
		assert_int_equal(io.offset, want[i]);
	}
	for (int i = 0; i < 40; i++) {
		iogen_next(&g, &j, &io);
		assert_true(io.offset + io.len <= 128 * KIB);
	}
	iogen_job_done(&j);
}

/* rw=write:112k: a 112k hole after each 16k write, wrapping to the start. */
static void test_offset_modifier_holes_as_fio(void **state)
{
	struct probe_config pc = probe(PROBE_RW_WRITE);
	struct iogen g;
	struct iogen_job j;
	struct iogen_io io;
	char err[256];

	pc.size = 512 * KIB;
	pc.bs = pc.bs_rw[0] = pc.bs_rw[1] = 16 * KIB;
	assert_int_equal(fio_parse_rw("rw", "write:112k", &pc, err, sizeof(err)), 0);
	setup(&pc, &g);
	assert_int_equal(iogen_job_init(&g, 0, 1, &j), 0);
	for (uint64_t i = 0; i < 8; i++) {
		iogen_next(&g, &j, &io);
		assert_int_equal(io.offset, (i % 4) * 128 * KIB);
	}
	iogen_job_done(&j);
}

/* rw=randread:4: a new random offset every 4 I/Os, sequential between. */
static void test_offset_modifier_random_every_n_as_fio(void **state)
{
	struct probe_config pc = probe(PROBE_RW_RANDREAD);
	struct iogen g;
	struct iogen_job j;
	struct iogen_io io;
	uint64_t last = 0;
	unsigned jumps = 0;
	char err[256];

	assert_int_equal(fio_parse_rw("rw", "randread:4", &pc, err, sizeof(err)), 0);
	assert_int_equal(pc.rw_seq_nr, 4);
	setup(&pc, &g);
	assert_int_equal(iogen_job_init(&g, 0, 1, &j), 0);
	for (int i = 0; i < 400; i++) {
		iogen_next(&g, &j, &io);
		if (i % 4 != 3 && i > 0) {
			assert_int_equal(io.offset, last); /* sequential after the last */
		}
		jumps += i % 4 == 3 && io.offset != last;
		last = io.offset + io.len;
	}
	assert_true(jumps > 90);
	iogen_job_done(&j);
	assert_int_equal(fio_parse_rw("rw", "randread:0", &pc, err, sizeof(err)), -EINVAL);
	assert_int_equal(fio_parse_rw("rw", "read:x", &pc, err, sizeof(err)), -EINVAL);
	assert_int_equal(fio_parse_rw("rw", "randtrim", &pc, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bssplit_sizes_follow_their_weights),
	    cmocka_unit_test(test_bsrange_gives_multiples_of_its_minimum),
	    cmocka_unit_test(test_random_variable_sizes_stay_aligned_inside_the_region),
	    cmocka_unit_test(test_files_are_used_round_robin_each_sequentially),
	    cmocka_unit_test(test_offset_increment_gives_each_job_its_region),
	    cmocka_unit_test(test_a_raw_device_region_past_its_end_is_refused),
	    cmocka_unit_test(test_rate_in_bytes_paces_without_drift),
	    cmocka_unit_test(test_offset_modifier_backwards_as_fio),
	    cmocka_unit_test(test_offset_modifier_holes_as_fio),
	    cmocka_unit_test(test_offset_modifier_random_every_n_as_fio),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
