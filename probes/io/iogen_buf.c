/* Write buffer content as fio's buffer_pattern, buffer_compress_* and
 * dedupe_* make it. */
#include "iogen_buf.h"

#include <string.h>

#include "probe.h"
#include "splitmix.h"

/* What fio's randrepeat=1 gives its jobs: each job's buffers come from a
 * stream of its own, the same from one run to the next, so that a
 * dedupe_global working set can hold the first buffers of the other jobs'
 * streams. */
#define IOGEN_BUF_STREAMS 0x6a09e667f3bcc908ULL

void iogen_buf_init(struct iogen_buf *b, const struct probe_workload *wl, uint64_t region_bytes, uint64_t bs,
		    uint64_t seed)
{
	unsigned pct = wl->dedupe_ws_pct ? wl->dedupe_ws_pct : 5;
	uint64_t blocks = bs ? region_bytes / bs : 0;

	*b = (struct iogen_buf){.wl = *wl, .ws_base = seed};
	b->ws_blocks = blocks * pct / 100;
	if (b->ws_blocks == 0) {
		b->ws_blocks = 1;
	}
}

void iogen_buf_job_init(const struct iogen_buf *b, struct iogen_buf_job *j, unsigned index)
{
	*j = (struct iogen_buf_job){.thread = b->wl.dedupe_job_base + index};
}

/* Buffer `k` of job `thread`'s stream. */
static uint64_t stream_seed(uint64_t thread, uint64_t k)
{
	return splitmix64_mix(IOGEN_BUF_STREAMS ^ splitmix64_mix(thread * SPLITMIX64_GOLDEN + k));
}

/* Entry `i` of job `thread`'s working set, as fio's
 * init_dedupe_working_set_seeds() fills it: its own stream's first
 * buffers; with dedupe_global, a run of each job's in turn (an even share
 * of the set for every job of the file, its own first). */
uint64_t iogen_buf_ws_seed(const struct iogen_buf *b, uint64_t thread, uint64_t i)
{
	uint64_t jobs = b->wl.dedupe_jobs ? b->wl.dedupe_jobs : 1, per = b->ws_blocks / jobs;

	if (!b->wl.is_dedupe_global) {
		return stream_seed(thread, i);
	}
	if (per == 0) {
		per = 1;
	}
	return stream_seed((thread + i / per) % jobs, i % per);
}

bool iogen_buf_is_default(const struct iogen_buf *b)
{
	return b->wl.pattern_len == 0 && b->wl.compress_pct == 0 && b->wl.dedupe_pct == 0;
}

uint64_t iogen_buf_seed(const struct iogen_buf *b, struct iogen_buf_job *j, uint64_t *rng, uint64_t stamp)
{
	if (b->wl.dedupe_pct && probe_rng_below(rng, 100) < b->wl.dedupe_pct) {
		if (b->wl.is_dedupe_working_set) {
			return iogen_buf_ws_seed(b, j->thread, probe_rng_below(rng, b->ws_blocks));
		}
		if (j->has_last) {
			return j->last_seed;
		}
	}
	/* a working set's buffers are the first of the job's stream, as
	 * fio's: its first unique buffers are the set's */
	j->last_seed = b->wl.is_dedupe_working_set ? stream_seed(j->thread, j->n_unique++) : stamp;
	j->has_last = true;
	return j->last_seed;
}

/* `len` bytes of the pattern, from its start. */
static void fill_pattern(const struct probe_workload *wl, uint8_t *p, uint64_t len)
{
	if (wl->pattern_len == 0) {
		memset(p, 0, len);
		return;
	}
	for (uint64_t i = 0; i < len; i++) {
		p[i] = wl->pattern[i % wl->pattern_len];
	}
}

static void fill_random(uint8_t *p, uint64_t len, uint64_t *rng)
{
	uint64_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = probe_rng_next(rng);

		memcpy(p + i, &v, 8);
	}
	if (i < len) {
		uint64_t v = probe_rng_next(rng);

		memcpy(p + i, &v, len - i);
	}
}

void iogen_buf_fill(const struct iogen_buf *b, void *buf, uint64_t len, uint64_t seed)
{
	const struct probe_workload *wl = &b->wl;
	uint64_t chunk = wl->compress_chunk ? wl->compress_chunk : 512, rng = seed;
	uint8_t *p = buf;

	if (wl->pattern_len && wl->compress_pct == 0 && wl->dedupe_pct == 0) {
		fill_pattern(wl, p, len);
		return;
	}
	for (uint64_t off = 0; off < len; off += chunk) {
		uint64_t n = len - off < chunk ? len - off : chunk;
		uint64_t random_part = n * (100 - wl->compress_pct) / 100;

		fill_random(p + off, random_part, &rng);
		fill_pattern(wl, p + off + random_part, n - random_part);
	}
}
