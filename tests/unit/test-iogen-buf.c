/* Write buffer content as fio's keys make it: buffer_pattern fills it,
 * buffer_compress_percentage makes it compress to that share (zlib, as a
 * compressing device would), dedupe_percentage repeats earlier buffers;
 * without them every buffer is new; and rate_process=poisson's gaps. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "fio.h"
#include "iogen.h"
#include "iogen_buf.h"

#define BS 4096

static void set(struct probe_workload *wl, const char *name, const char *value)
{
	char err[256];

	assert_int_equal(fio_parse_workload(name, name, value, wl, err, sizeof(err)), 0);
}

static void test_pattern_fills_the_buffer(void **state)
{
	struct probe_workload wl = {0};
	struct iogen_buf b;
	uint8_t buf[BS];

	set(&wl, "buffer_pattern", "0xdeadbeef");
	iogen_buf_init(&b, &wl, 1 << 20, BS, 1);
	assert_false(iogen_buf_is_default(&b));
	iogen_buf_fill(&b, buf, BS, 12345);
	for (size_t i = 0; i < BS; i += 4) {
		assert_memory_equal(buf + i, "\xde\xad\xbe\xef", 4);
	}
	set(&wl, "buffer_pattern", "\"ab\"");
	assert_int_equal(wl.pattern_len, 2);
	set(&wl, "buffer_pattern", "0x1");
	assert_int_equal(wl.pattern_len, 1);
	assert_int_equal(wl.pattern[0], 1);
}

static double compressed_share(const uint8_t *buf, size_t len)
{
	uLongf out_len = compressBound(len);
	uint8_t *out = malloc(out_len);

	assert_non_null(out);
	assert_int_equal(compress2(out, &out_len, buf, len, 6), Z_OK);
	free(out);
	return (double)out_len / (double)len;
}

static void test_compress_percentage_compresses_to_that_share(void **state)
{
	struct probe_workload wl = {0};
	struct iogen_buf b;
	static uint8_t buf[64 * BS];

	set(&wl, "buffer_compress_percentage", "50");
	iogen_buf_init(&b, &wl, 1 << 20, BS, 1);
	iogen_buf_fill(&b, buf, sizeof(buf), 99);
	/* half of each 512-byte chunk random: zlib keeps about half */
	assert_true(fabs(compressed_share(buf, sizeof(buf)) - 0.5) < 0.05);
	set(&wl, "buffer_compress_percentage", "0");
	iogen_buf_init(&b, &wl, 1 << 20, BS, 1);
	iogen_buf_fill(&b, buf, sizeof(buf), 99);
	assert_true(compressed_share(buf, sizeof(buf)) > 0.99);
}

/* The share of `n` buffers equal to one before them. */
static double repeated_share(const struct probe_workload *wl, unsigned n)
{
	struct iogen_buf b;
	struct iogen_buf_job j = {0};
	uint64_t *seeds = calloc(n, sizeof(*seeds)), rng = 5, repeats = 0;

	assert_non_null(seeds);
	iogen_buf_init(&b, wl, 64ULL << 20, BS, 1);
	for (unsigned i = 0; i < n; i++) {
		seeds[i] = iogen_buf_seed(&b, &j, &rng, 0x1000000ULL + i);
		for (unsigned k = 0; k < i; k++) {
			if (seeds[k] == seeds[i]) {
				repeats++;
				break;
			}
		}
	}
	free(seeds);
	return (double)repeats / n;
}

static void test_dedupe_percentage_repeats_that_share(void **state)
{
	struct probe_workload wl = {0};
	uint8_t a[BS], c[BS];
	struct iogen_buf b;

	set(&wl, "dedupe_percentage", "50");
	assert_true(fabs(repeated_share(&wl, 4000) - 0.5) < 0.03);
	set(&wl, "dedupe_mode", "working_set");
	set(&wl, "dedupe_working_set_percentage", "1");
	/* repeats come from a set of 1% of the region's 16384 blocks */
	assert_true(fabs(repeated_share(&wl, 4000) - 0.5) < 0.05);
	/* the same seed, the same bytes: a device that deduplicates sees a copy */
	iogen_buf_init(&b, &wl, 1 << 20, BS, 1);
	iogen_buf_fill(&b, a, BS, 7);
	iogen_buf_fill(&b, c, BS, 7);
	assert_memory_equal(a, c, BS);
	iogen_buf_fill(&b, c, BS, 8);
	assert_memory_not_equal(a, c, BS);
}

static bool ws_has(const struct iogen_buf *b, uint64_t thread, uint64_t seed)
{
	for (uint64_t i = 0; i < b->ws_blocks; i++) {
		if (iogen_buf_ws_seed(b, thread, i) == seed) {
			return true;
		}
	}
	return false;
}

/* fio's init_dedupe_working_set_seeds(): a job's working set is the first
 * buffers of its own stream (so its first unique writes are the set's);
 * dedupe_global spreads it over every job of the file, a run of each in
 * turn starting with the job's own, so that two jobs' sets are one set. */
static void test_dedupe_working_sets_are_fios(void **state)
{
	struct probe_workload wl = {0};
	struct iogen_buf b;
	struct iogen_buf_job a, c;
	uint64_t rng = 7, shared = 0;

	set(&wl, "dedupe_mode", "working_set");
	set(&wl, "dedupe_percentage", "50");
	set(&wl, "dedupe_working_set_percentage", "50");
	wl.dedupe_jobs = 2;
	iogen_buf_init(&b, &wl, 64 * BS, BS, 1);
	assert_int_equal(b.ws_blocks, 32);
	iogen_buf_job_init(&b, &a, 0);
	b.wl.dedupe_job_base = 1;
	iogen_buf_job_init(&b, &c, 0);
	assert_int_equal(c.thread, 1);
	/* the first unique buffers are the working set's, in order */
	for (uint64_t i = 0; a.n_unique < 32; i++) {
		uint64_t before = a.n_unique, seed = iogen_buf_seed(&b, &a, &rng, i);

		if (a.n_unique > before) {
			assert_true(seed == iogen_buf_ws_seed(&b, 0, before));
		}
	}
	/* without dedupe_global the two jobs' sets have nothing in common */
	for (uint64_t i = 0; i < b.ws_blocks; i++) {
		shared += ws_has(&b, 1, iogen_buf_ws_seed(&b, 0, i));
	}
	assert_int_equal(shared, 0);
	/* with it: one set, half of it from each job's stream */
	b.wl.is_dedupe_global = true;
	for (uint64_t i = 0; i < b.ws_blocks; i++) {
		assert_true(ws_has(&b, 1, iogen_buf_ws_seed(&b, 0, i)));
	}
	assert_true(iogen_buf_ws_seed(&b, 0, 0) == iogen_buf_ws_seed(&b, 1, 16));
	assert_true(iogen_buf_ws_seed(&b, 1, 0) == iogen_buf_ws_seed(&b, 0, 16));
	assert_true(iogen_buf_ws_seed(&b, 0, 15) != iogen_buf_ws_seed(&b, 0, 16));
}

static void test_default_content_is_iopsds_own(void **state)
{
	struct probe_workload wl = {0};
	struct iogen_buf b;
	char err[256];

	iogen_buf_init(&b, &wl, 1 << 20, BS, 1);
	assert_true(iogen_buf_is_default(&b));
	assert_int_equal(fio_parse_workload("dedupe_mode", "dedupe_mode", "sometimes", &wl, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "repeat or working_set"));
}

static void test_poisson_gaps_are_exponential(void **state)
{
	uint64_t rng = 11;
	double sum = 0, sq = 0, n = 100000;

	for (int i = 0; i < (int)n; i++) {
		double g = (double)iogen_poisson_gap_ns(&rng, 300);

		sum += g;
		sq += g * g;
	}
	/* mean 1/rate, and a standard deviation equal to the mean */
	assert_true(fabs(sum / n / (1e9 / 300) - 1) < 0.02);
	assert_true(fabs(sqrt(sq / n - (sum / n) * (sum / n)) / (sum / n) - 1) < 0.03);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pattern_fills_the_buffer),
	    cmocka_unit_test(test_compress_percentage_compresses_to_that_share),
	    cmocka_unit_test(test_dedupe_percentage_repeats_that_share),
	    cmocka_unit_test(test_dedupe_working_sets_are_fios),
	    cmocka_unit_test(test_default_content_is_iopsds_own),
	    cmocka_unit_test(test_poisson_gaps_are_exponential),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
