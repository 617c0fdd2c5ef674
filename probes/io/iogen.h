/* I/O generation: what each I/O of a run is (direction, file, offset,
 * size), from the job's keys. fio's bs, bsrange and bssplit, blockalign,
 * nrfiles (used round robin), offset and offset_increment; the engine only
 * submits what this module picks. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "fio.h"
#include "iogen_dist.h"

/* What every job of a run shares. */
struct iogen {
	enum probe_rw rw;
	unsigned rwmixread;
	unsigned numjobs;
	unsigned nfiles;
	struct probe_bs bs[_PROBE_DIR_MAX]; /* min and max always set */
	uint64_t bs_max;		    /* the largest I/O (buffers, rewrite's grid) */
	uint64_t align;			    /* random offsets' alignment */
	struct fio_layout layout;
	struct iogen_dist dist[_PROBE_DIR_MAX]; /* random_distribution of each direction */
	int64_t seq_add;			/* rw=read:8k */
	unsigned seq_nr;			/* rw=randread:8 */
	uint64_t shared_block;			/* atomic: rewrite's common sequential position */
};

/* One job's own state. */
struct iogen_job {
	uint64_t rng;
	uint64_t region_start, region_len;
	uint64_t *cursors; /* sequential positions: [file][read, write] */
	unsigned next_file;
	unsigned seq_count;		   /* rw=randread:N: I/Os since the last random offset */
	uint64_t last_end[_PROBE_DIR_MAX]; /* ... and where the last one ended (absolute) */
};

struct iogen_io {
	bool is_read;
	unsigned file;
	uint64_t offset, len;
};

/* Set *g up from the probe's keys and its layout (fio_layout()); `seed`
 * places the hot spots of random_distribution without a center. */
void iogen_init(struct iogen *g, const struct probe_config *pc, const struct fio_layout *layout,
		uint64_t seed);

/* Job `job`'s region and state, its PRNG seeded from `seed`. Returns 0 or
 * -ENOMEM; *ret_len-style failures (a region too small) are -EINVAL. */
int iogen_job_init(const struct iogen *g, unsigned job, uint64_t seed, struct iogen_job *ret);
void iogen_job_done(struct iogen_job *j);

/* The next I/O of the job. */
void iogen_next(struct iogen *g, struct iogen_job *j, struct iogen_io *ret);

/* fio's sequential offset with an offset modifier: the next I/O (of
 * `io_len`) starts `add` bytes after the end of the last (before it when
 * negative); *last_end is relative to the region, 0 at the start. Wraps to
 * the region's start, or going backwards to its end. */
uint64_t iogen_seq_offset_add(uint64_t *last_end, uint64_t region_len, uint64_t io_len, int64_t add);

/* One I/O size from `b`: its bssplit by weight, else a multiple of min up
 * to max (fio's bsrange), else the fixed size. */
uint64_t iogen_pick_bs(uint64_t *rng, const struct probe_bs *b);

/* rate_process=poisson: the gap (ns) before the next I/O of a job paced at
 * `rate` I/Os per second, exponentially distributed as fio draws it. */
uint64_t iogen_poisson_gap_ns(uint64_t *rng, uint64_t rate);

/* Absolute time (ns) at which a job that has issued `bytes` may issue more,
 * to move `rate_bytes` per second from `start_ns` (fio's rate=). */
uint64_t iogen_rate_bytes_due_ns(uint64_t start_ns, uint64_t bytes, uint64_t rate_bytes);
