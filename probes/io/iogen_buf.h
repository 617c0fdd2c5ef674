/* The content of write buffers: iopsd's own (incompressible, every sector
 * different) unless the job asks for fio's buffer_pattern,
 * buffer_compress_percentage or dedupe_percentage. Pure functions. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

struct iogen_buf {
	struct probe_workload wl; /* the content keys */
	uint64_t ws_blocks;	  /* dedupe working set, in buffers */
	uint64_t ws_base;	  /* first seed of the working set */
};

/* A job's own state for repeats. */
struct iogen_buf_job {
	uint64_t last_seed; /* the last unique buffer's */
	bool has_last;
	uint64_t thread;   /* fio's thread number less one: the job's stream */
	uint64_t n_unique; /* the stream's buffers used so far */
};

/* `region_bytes` / `bs` buffers make the working set's percentage. */
void iogen_buf_init(struct iogen_buf *b, const struct probe_workload *wl, uint64_t region_bytes, uint64_t bs,
		    uint64_t seed);
/* Job `index` of the run (its thread: wl.dedupe_job_base + index). */
void iogen_buf_job_init(const struct iogen_buf *b, struct iogen_buf_job *j, unsigned index);
/* Entry `i` (below ws_blocks) of job `thread`'s dedupe working set. */
uint64_t iogen_buf_ws_seed(const struct iogen_buf *b, uint64_t thread, uint64_t i);
/* Whether the content keys leave iopsd's own content. */
bool iogen_buf_is_default(const struct iogen_buf *b);
/* The seed of the next write's content: a new one, or with
 * dedupe_percentage an earlier one (repeat: the job's last; working_set:
 * one of the set's), as fio chooses. `stamp` is a fresh value. */
uint64_t iogen_buf_seed(const struct iogen_buf *b, struct iogen_buf_job *j, uint64_t *rng, uint64_t stamp);
/* Fill `len` bytes from `seed`: the same seed gives the same bytes; with
 * buffer_compress_percentage each chunk is that percent pattern (or
 * zeros) after random bytes, with buffer_pattern alone all pattern. */
void iogen_buf_fill(const struct iogen_buf *b, void *buf, uint64_t len, uint64_t seed);
