/* fio's random_distribution: which block of a region a random I/O goes to
 * (uniform, zipf, pareto, normal, zoned, zoned_abs), with fio's shapes.
 * Pure: a state set up once per run, then a block per call. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* zipf sums its normalisation over at most this many blocks (fio caps it
 * at 10M; past 1M the sum moves by less than the PRNG's resolution shows). */
#define IOGEN_DIST_ZETA_MAX 1000000

struct iogen_dist {
	enum probe_dist_type type;
	uint64_t nranges; /* blocks the I/Os choose among */
	double theta, zetan, zeta2, pareto_pow;
	uint64_t stddev; /* normal: blocks */
	uint64_t rand_off;
	bool is_hashed; /* hot blocks spread over the region, as fio's default */
	unsigned n_zones;
	struct {
		unsigned access_end; /* cumulative percent of the I/Os */
		uint64_t start, len; /* blocks */
	} zones[PROBE_DIST_ZONES_MAX];
};

/* Set *ret up for `nranges` blocks of `block` bytes (zoned_abs sizes are
 * in bytes); `seed` places a hot spot that has no center. */
void iogen_dist_init(struct iogen_dist *ret, const struct probe_dist *pd, uint64_t nranges, uint64_t block,
		     uint64_t seed);
/* The next block, in [0, nranges). */
uint64_t iogen_dist_next(const struct iogen_dist *d, uint64_t *rng);
