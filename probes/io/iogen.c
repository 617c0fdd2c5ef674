/* I/O generation, separate from the engine's submit and reap loop. */
#include "iogen.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "probe.h"

void iogen_init(struct iogen *g, const struct probe_config *pc, const struct fio_layout *layout,
		uint64_t seed)
{
	uint64_t nranges;

	*g = (struct iogen){
	    .rw = pc->rw,
	    .rwmixread = pc->rwmixread,
	    .numjobs = pc->numjobs ? pc->numjobs : 1,
	    .nfiles = pc->nrfiles ? pc->nrfiles : 1,
	    .layout = *layout,
	    .seq_add = pc->rw_seq_add,
	    .seq_nr = pc->rw_seq_nr,
	};
	for (int d = 0; d < _PROBE_DIR_MAX; d++) {
		g->bs[d] = pc->bsdir[d];
		if (g->bs[d].max == 0) {
			/* a probe_config not made by the loader: bs= alone */
			g->bs[d] = (struct probe_bs){.min = pc->bs, .max = pc->bs};
		}
		if (g->bs[d].max > g->bs_max) {
			g->bs_max = g->bs[d].max;
		}
	}
	if (pc->bs > g->bs_max) {
		g->bs_max = pc->bs;
	}
	g->align = pc->blockalign;
	if (g->align == 0) {
		uint64_t r = g->bs[PROBE_DIR_READ].min, w = g->bs[PROBE_DIR_WRITE].min;

		g->align = !probe_rw_writes(pc->rw) ? r : !probe_rw_reads(pc->rw) ? w : r < w ? r : w;
	}
	/* a random job's region is the whole layout's (probe_job_region()) */
	nranges = layout->region >= g->bs_max ? (layout->region - g->bs_max) / g->align + 1 : 1;
	for (int d = 0; d < _PROBE_DIR_MAX; d++) {
		iogen_dist_init(&g->dist[d], &pc->dist[d], nranges, g->align, seed + (uint64_t)d);
	}
}

int iogen_job_init(const struct iogen *g, unsigned job, uint64_t seed, struct iogen_job *ret)
{
	struct iogen_job j = {.rng = seed + 0x632be59bd9b4e019ULL * (job + 1)};

	if (g->layout.increment > 0) {
		j.region_start = g->layout.offset + (uint64_t)job * g->layout.increment;
		j.region_len = g->layout.region;
	} else {
		probe_job_region(g->rw, g->layout.region, g->bs_max, g->numjobs, job, &j.region_start,
				 &j.region_len);
		j.region_start += g->layout.offset;
	}
	if (j.region_len < g->bs_max) {
		return -EINVAL;
	}
	j.cursors = calloc((size_t)g->nfiles * _PROBE_DIR_MAX, sizeof(*j.cursors));
	if (!j.cursors) {
		return -ENOMEM;
	}
	*ret = j;
	return 0;
}

void iogen_job_done(struct iogen_job *j)
{
	free(j->cursors);
	j->cursors = NULL;
}

uint64_t iogen_pick_bs(uint64_t *rng, const struct probe_bs *b)
{
	if (b->n_split > 0) {
		uint64_t x = probe_rng_below(rng, 100);

		for (unsigned i = 0; i < b->n_split; i++) {
			if (x < b->split[i].pct) {
				return b->split[i].bs;
			}
			x -= b->split[i].pct;
		}
		return b->split[b->n_split - 1].bs;
	}
	if (b->min == b->max || b->min == 0) {
		return b->max;
	}
	return b->min * (1 + probe_rng_below(rng, b->max / b->min));
}

static bool next_is_read(struct iogen_job *j, const struct iogen *g)
{
	switch (g->rw) {
	case PROBE_RW_READ:
	case PROBE_RW_RANDREAD:
		return true;
	case PROBE_RW_RW:
	case PROBE_RW_RANDRW:
		return probe_rwmix_is_read(&j->rng, g->rwmixread);
	default:
		return false;
	}
}

/* A random job's offset: from the distribution, or with rw=randread:N a
 * new one only every N I/Os and sequential in between (fio's
 * rw_sequencer=sequential). */
static uint64_t random_offset(const struct iogen *g, struct iogen_job *j, int d, uint64_t len)
{
	uint64_t slots = (j->region_len - len) / g->align + 1, off;

	if (g->seq_nr > 1 && ++j->seq_count < g->seq_nr) {
		off = j->last_end[d] >= j->region_start &&
			      j->last_end[d] + len <= j->region_start + j->region_len
			  ? j->last_end[d]
			  : j->region_start;
	} else if (g->dist[d].type == PROBE_DIST_RANDOM || g->dist[d].nranges > slots) {
		j->seq_count = 0;
		off = j->region_start + probe_rng_below(&j->rng, slots) * g->align;
	} else {
		j->seq_count = 0;
		off = j->region_start + iogen_dist_next(&g->dist[d], &j->rng) * g->align;
	}
	j->last_end[d] = off + len;
	return off;
}

void iogen_next(struct iogen *g, struct iogen_job *j, struct iogen_io *ret)
{
	struct iogen_io io = {.is_read = next_is_read(j, g)};
	int d = io.is_read ? PROBE_DIR_READ : PROBE_DIR_WRITE;

	io.len = iogen_pick_bs(&j->rng, &g->bs[d]);
	if (g->rw == PROBE_RW_REWRITE) {
		/* all jobs share one sequential position, as sysbench's threads */
		uint64_t blocks = j->region_len / g->bs_max;
		uint64_t b = __atomic_fetch_add(&g->shared_block, 1, __ATOMIC_RELAXED);

		io.file = (unsigned)(b % g->nfiles);
		io.offset = j->region_start + (b / g->nfiles % blocks) * g->bs_max;
		*ret = io;
		return;
	}
	/* round robin over the files, as fio's default file_service_type */
	io.file = j->next_file;
	j->next_file = (j->next_file + 1) % g->nfiles;
	if (probe_rw_is_random(g->rw)) {
		io.offset = random_offset(g, j, d, io.len);
	} else if (g->seq_add != 0) {
		io.offset =
		    j->region_start + iogen_seq_offset_add(&j->cursors[(size_t)io.file * _PROBE_DIR_MAX + d],
							   j->region_len, io.len, g->seq_add);
	} else {
		io.offset = probe_sequential_offset(&j->cursors[(size_t)io.file * _PROBE_DIR_MAX + d],
						    j->region_start, j->region_len, io.len);
	}
	*ret = io;
}

uint64_t iogen_seq_offset_add(uint64_t *last_end, uint64_t region_len, uint64_t io_len, int64_t add)
{
	int64_t pos = (int64_t)*last_end;

	/* as fio: the first I/O at the start, each next one `add` from the
	 * last one's end */
	if (pos != 0) {
		pos += add;
	}
	if (pos < 0 || (uint64_t)pos + io_len > region_len) {
		pos = add > 0 ? 0 : (int64_t)region_len + add;
		if (pos < 0 || (uint64_t)pos + io_len > region_len) {
			pos = (int64_t)(region_len - io_len);
		}
	}
	*last_end = (uint64_t)pos + io_len;
	return (uint64_t)pos;
}

uint64_t iogen_rate_bytes_due_ns(uint64_t start_ns, uint64_t bytes, uint64_t rate_bytes)
{
	if (rate_bytes == 0) {
		return start_ns;
	}
	return start_ns + (uint64_t)((unsigned __int128)bytes * NSEC_PER_SEC / rate_bytes);
}

uint64_t iogen_poisson_gap_ns(uint64_t *rng, uint64_t rate)
{
	/* u in (0, 1]: -ln(u) / rate seconds */
	double u = ((double)(probe_rng_next(rng) >> 11) + 1.0) * 0x1.0p-53;

	return rate ? (uint64_t)(-log(u) * (double)NSEC_PER_SEC / (double)rate) : 0;
}
