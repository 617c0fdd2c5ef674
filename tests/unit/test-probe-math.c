/* The pure arithmetic of the probe engine: rwmix ratio, offset alignment
 * and range, per-job regions, rate pacing, timeouts, sysfs parsing. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <stdio.h>

#include <cmocka.h>

#include "probe.h"

#define KIB 1024ULL
#define MIB (1024ULL * 1024ULL)

static void test_rwmix_ratio_matches_rwmixread(void **state)
{
	static const unsigned mixes[] = {0, 1, 10, 30, 50, 60, 70, 99, 100};

	for (size_t m = 0; m < sizeof(mixes) / sizeof(mixes[0]); m++) {
		uint64_t rng = 7 + m;
		unsigned reads = 0, n = 200000;
		double ratio;

		for (unsigned i = 0; i < n; i++) {
			reads += probe_rwmix_is_read(&rng, mixes[m]);
		}
		ratio = 100.0 * reads / n;
		/* binomial sd at 50% is 0.11%: 0.5% is > 4 sd */
		if (fabs(ratio - mixes[m]) > 0.5) {
			fail_msg("rwmixread=%u gave %.2f%% reads", mixes[m], ratio);
		}
		if (mixes[m] == 0) {
			assert_int_equal(reads, 0);
		}
		if (mixes[m] == 100) {
			assert_int_equal(reads, n);
		}
	}
}

static void test_random_offsets_are_aligned_and_in_range(void **state)
{
	const uint64_t bs = 4 * KIB, start = 3 * bs, len = 1000 * bs;
	unsigned deciles[10] = {0};
	uint64_t rng = 1, lo = UINT64_MAX, hi = 0;
	const unsigned n = 200000;

	for (unsigned i = 0; i < n; i++) {
		uint64_t off = probe_random_offset(&rng, start, len, bs);

		assert_int_equal((off - start) % bs, 0);
		assert_true(off >= start);
		assert_true(off + bs <= start + len);
		lo = off < lo ? off : lo;
		hi = off > hi ? off : hi;
		deciles[(off - start) * 10 / len]++;
	}
	/* both ends are reachable, and the spread is uniform */
	assert_int_equal(lo, start);
	assert_int_equal(hi, start + len - bs);
	for (unsigned d = 0; d < 10; d++) {
		assert_true(fabs(deciles[d] - n / 10.0) < n / 10.0 * 0.03);
	}
}

static void test_random_offsets_never_pass_an_unaligned_end(void **state)
{
	/* a raw device whose size is not a multiple of bs */
	const uint64_t bs = 16 * KIB, len = 10 * bs + 4096;
	uint64_t rng = 99;

	for (unsigned i = 0; i < 100000; i++) {
		uint64_t off = probe_random_offset(&rng, 0, len, bs);

		assert_int_equal(off % bs, 0);
		assert_true(off + bs <= len);
	}
}

static void test_sequential_offsets_walk_the_region_and_wrap(void **state)
{
	const uint64_t bs = 16 * KIB, start = 64 * MIB, len = 4 * bs;
	uint64_t cursor = 0;
	static const uint64_t want[] = {0, 1, 2, 3, 0, 1, 2, 3, 0};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(probe_sequential_offset(&cursor, start, len, bs), start + want[i] * bs);
	}
}

static void test_sequential_jobs_get_disjoint_regions(void **state)
{
	/* the field notes' job: size=100m, 16 jobs */
	const uint64_t size = 100 * MIB, bs = 4 * KIB;
	uint64_t next = 0;

	for (unsigned j = 0; j < 16; j++) {
		uint64_t start, len;

		probe_job_region(PROBE_RW_READ, size, bs, 16, j, &start, &len);
		assert_int_equal(start, next);
		assert_int_equal(start % bs, 0);
		assert_int_equal(len % bs, 0);
		assert_true(len >= size / 16 - bs);
		next = start + len;
	}
	assert_true(next <= size);
	for (unsigned j = 0; j < 3; j++) {
		uint64_t s1, l1, s2, l2;

		probe_job_region(PROBE_RW_WRITE, size, bs, 3, j, &s1, &l1);
		probe_job_region(PROBE_RW_RW, size, bs, 3, j, &s2, &l2);
		assert_int_equal(s1, s2);
		assert_int_equal(l1, l2);
	}
}

static void test_random_and_rewrite_jobs_share_the_whole_target(void **state)
{
	static const enum probe_rw modes[] = {PROBE_RW_RANDREAD, PROBE_RW_RANDWRITE, PROBE_RW_RANDRW,
					      PROBE_RW_REWRITE};
	const uint64_t size = 100 * MIB + 1000, bs = 16 * KIB;

	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		for (unsigned j = 0; j < 8; j++) {
			uint64_t start, len;

			probe_job_region(modes[m], size, bs, 8, j, &start, &len);
			assert_int_equal(start, 0);
			assert_int_equal(len, size / bs * bs);
		}
	}
}

static void test_too_small_target_gives_empty_regions(void **state)
{
	uint64_t start, len;

	probe_job_region(PROBE_RW_RANDREAD, 3 * 4096, 4096, 4, 0, &start, &len);
	assert_int_equal(len, 0);
	probe_job_region(PROBE_RW_READ, 3 * 4096, 4096, 4, 3, &start, &len);
	assert_int_equal(len, 0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void assert_rate(uint64_t rate, unsigned numjobs)
{
	const unsigned per_job = 200;
	const uint64_t start = 123456789;
	size_t n = (size_t)per_job * numjobs;
	uint64_t *due = malloc(n * sizeof(*due));

	assert_non_null(due);
	for (unsigned j = 0; j < numjobs; j++) {
		for (unsigned k = 0; k < per_job; k++) {
			due[(size_t)j * per_job + k] = probe_rate_due_ns(start, k, j, numjobs, rate);
		}
	}
	qsort(due, n, sizeof(*due), cmp_u64);
	/* all jobs together: one op every 1/rate seconds, evenly interleaved */
	assert_int_equal(due[0], start);
	for (size_t i = 1; i < n; i++) {
		double gap = (double)(due[i] - due[i - 1]);

		assert_true(fabs(gap - 1e9 / (double)rate) <= 1.0);
	}
	free(due);
}

static void test_rate_pacing_interleaves_jobs_at_the_total_rate(void **state)
{
	assert_rate(400, 1);
	assert_rate(400, 16);
	assert_rate(3, 2); /* not divisible by numjobs */
	assert_rate(1000000, 64);
}

static void test_rate_pacing_does_not_drift(void **state)
{
	/* absolute times: op 10^7 of job 5 of 8 at 333 IOPS is op 80000005 of
	 * the run, due at floor(80000005 s / 333), with no accumulated
	 * rounding (a per-op step of 3003003 ns would be 0.24 ms early) */
	assert_int_equal(probe_rate_due_ns(0, 10000000, 5, 8, 333), 240240255255255ULL);
	assert_int_equal(probe_rate_due_ns(1000, 0, 0, 1, 0), 1000);
}

static void test_timeout_is_twice_the_runtime(void **state)
{
	struct probe_config pc = {.runtime_usec = 1500000, .interval_usec = 10000000};

	assert_int_equal(probe_timeout_usec(&pc), 3000000);
	/* number_ios probes have no runtime: the interval bounds them */
	pc.runtime_usec = 0;
	pc.number_ios = 1000;
	assert_int_equal(probe_timeout_usec(&pc), 10000000);
}

static void test_logical_block_size_parsing(void **state)
{
	unsigned v = 0;

	assert_int_equal(probe_parse_block_size("512\n", &v), 0);
	assert_int_equal(v, 512);
	assert_int_equal(probe_parse_block_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(probe_parse_block_size("1000", &v), -EINVAL);
	assert_int_equal(probe_parse_block_size("", &v), -EINVAL);
	assert_int_equal(probe_parse_block_size("4k", &v), -EINVAL);
	assert_int_equal(probe_parse_block_size("256", &v), -EINVAL);
	assert_int_equal(probe_parse_block_size("131072", &v), -EINVAL);
	assert_int_equal(probe_parse_block_size("-512", &v), -EINVAL);
}

static void write_attr(const char *dir, const char *name, const char *value)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(value, f);
	fclose(f);
}

/* A sysfs tree like the kernel's: /sys/dev/block/M:m are symlinks into
 * devices/, a partition is a directory inside its disk's, with no queue. */
static void test_block_size_comes_from_sysfs(void **state)
{
	char root[] = "./sysfs-test-XXXXXX", path[512], cmd[600];

	assert_non_null(mkdtemp(root));
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %1$s/devices/nvme0n1/nvme0n1p2 %1$s/devices/nvme0n1/queue %1$s/dev/block "
		 "%1$s/devices/loop5/queue && "
		 "ln -s ../../devices/nvme0n1 %1$s/dev/block/259:0 && "
		 "ln -s ../../devices/nvme0n1/nvme0n1p2 %1$s/dev/block/259:2 && "
		 "ln -s ../../devices/loop5 %1$s/dev/block/7:5",
		 root);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/devices/nvme0n1", root);
	write_attr(path, "dev", "259:0\n");
	write_attr(path, "queue/logical_block_size", "4096\n");
	snprintf(path, sizeof(path), "%s/devices/nvme0n1/nvme0n1p2", root);
	write_attr(path, "dev", "259:2\n");
	write_attr(path, "partition", "2\n");
	snprintf(path, sizeof(path), "%s/devices/loop5", root);
	write_attr(path, "dev", "7:5\n");
	write_attr(path, "queue/logical_block_size", "512\n");

	/* a partition has no queue: its disk's block size applies */
	assert_int_equal(probe_logical_block_size(root, makedev(259, 2)), 4096);
	assert_int_equal(probe_logical_block_size(root, makedev(259, 0)), 4096);
	assert_int_equal(probe_logical_block_size(root, makedev(7, 5)), 512);
	/* unknown to sysfs (tmpfs, btrfs: anonymous major 0) */
	assert_int_equal(probe_logical_block_size(root, makedev(0, 45)), 512);
	assert_int_equal(probe_logical_block_size(root, makedev(8, 0)), 512);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void test_rng_is_deterministic_per_seed(void **state)
{
	uint64_t a = 5, b = 5, c = 6;
	uint64_t x = probe_rng_next(&a);

	assert_int_equal(x, probe_rng_next(&b));
	assert_true(x != probe_rng_next(&c));
	assert_true(probe_rng_next(&a) != x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rwmix_ratio_matches_rwmixread),
	    cmocka_unit_test(test_random_offsets_are_aligned_and_in_range),
	    cmocka_unit_test(test_random_offsets_never_pass_an_unaligned_end),
	    cmocka_unit_test(test_sequential_offsets_walk_the_region_and_wrap),
	    cmocka_unit_test(test_sequential_jobs_get_disjoint_regions),
	    cmocka_unit_test(test_random_and_rewrite_jobs_share_the_whole_target),
	    cmocka_unit_test(test_too_small_target_gives_empty_regions),
	    cmocka_unit_test(test_rate_pacing_interleaves_jobs_at_the_total_rate),
	    cmocka_unit_test(test_rate_pacing_does_not_drift),
	    cmocka_unit_test(test_timeout_is_twice_the_runtime),
	    cmocka_unit_test(test_logical_block_size_parsing),
	    cmocka_unit_test(test_block_size_comes_from_sysfs),
	    cmocka_unit_test(test_rng_is_deterministic_per_seed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
