/* fio's random distributions (lib/zipf.c, lib/gauss.c, io_u.c's zoned
 * ones), reimplemented over iopsd's PRNG. */
#include "iogen_dist.h"

#include <math.h>
#include <string.h>

#include "probe.h"

/* A uniform double in [0, 1). */
static double uniform(uint64_t *rng)
{
	return (double)(probe_rng_next(rng) >> 11) * 0x1.0p-53;
}

/* Spreads neighbouring indexes over the region (a bijection of 64 bits:
 * splitmix64's finaliser). */
static uint64_t spread(uint64_t v)
{
	v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ULL;
	v = (v ^ (v >> 27)) * 0x94d049bb133111ebULL;
	return v ^ (v >> 31);
}

static void zones_init(struct iogen_dist *d, const struct probe_dist *pd, uint64_t block)
{
	uint64_t start = 0;
	unsigned access = 0;

	for (unsigned i = 0; i < pd->n_zones && start < d->nranges; i++) {
		uint64_t len = pd->type == PROBE_DIST_ZONED ? d->nranges * pd->zones[i].size / 100
							    : pd->zones[i].size / block;

		if (len == 0) {
			len = 1;
		}
		if (len > d->nranges - start) {
			len = d->nranges - start; /* zoned_abs past the region: clipped */
		}
		access += pd->zones[i].access_pct;
		d->zones[d->n_zones].access_end = access;
		d->zones[d->n_zones].start = start;
		d->zones[d->n_zones].len = len;
		d->n_zones++;
		start += len;
	}
	if (d->n_zones > 0) {
		d->zones[d->n_zones - 1].access_end = 100; /* the clipped ones' share goes to the last */
	}
}

void iogen_dist_init(struct iogen_dist *ret, const struct probe_dist *pd, uint64_t nranges, uint64_t block,
		     uint64_t seed)
{
	struct iogen_dist d = {.type = pd->type, .nranges = nranges ? nranges : 1, .is_hashed = true};
	uint64_t n;

	d.rand_off = pd->center >= 0 ? (uint64_t)((double)d.nranges * pd->center) : spread(seed) % d.nranges;
	switch (pd->type) {
	case PROBE_DIST_ZIPF:
		d.theta = pd->param;
		d.zeta2 = 1.0 + pow(0.5, d.theta);
		n = d.nranges < IOGEN_DIST_ZETA_MAX ? d.nranges : IOGEN_DIST_ZETA_MAX;
		for (uint64_t i = 1; i <= n; i++) {
			d.zetan += pow(1.0 / (double)i, d.theta);
		}
		break;
	case PROBE_DIST_PARETO:
		d.pareto_pow = log(pd->param) / log(1.0 - pd->param);
		break;
	case PROBE_DIST_NORMAL:
		d.stddev = (uint64_t)ceil((double)d.nranges * pd->param / 100.0);
		d.stddev = d.stddev > d.nranges / 2 ? d.nranges / 2 : d.stddev;
		/* fio centres it in the middle unless told */
		d.rand_off =
		    pd->center >= 0 ? (uint64_t)((double)d.nranges * (pd->center + 0.5)) % d.nranges : 0;
		break;
	case PROBE_DIST_ZONED:
	case PROBE_DIST_ZONED_ABS:
		zones_init(&d, pd, block ? block : 1);
		break;
	default:
		break;
	}
	*ret = d;
}

/* Gray et al.'s quick zipf generator, as fio's zipf_next(). */
static uint64_t zipf_rank(const struct iogen_dist *d, uint64_t *rng)
{
	double n = (double)d->nranges, alpha = 1.0 / (1.0 - d->theta);
	double eta = (1.0 - pow(2.0 / n, 1.0 - d->theta)) / (1.0 - d->zeta2 / d->zetan);
	double u = uniform(rng), z = u * d->zetan;

	if (z < 1.0) {
		return 0;
	}
	if (z < 1.0 + pow(0.5, d->theta)) {
		return 1;
	}
	return (uint64_t)(n * pow(eta * u - eta + 1.0, alpha));
}

/* fio's gauss_next(): the mean of 12 uniform draws, plus a uniform
 * deviation of +-stddev/2. */
static uint64_t normal_rank(const struct iogen_dist *d, uint64_t *rng)
{
	uint64_t sum = 0;

	for (int i = 0; i < 12; i++) {
		sum += probe_rng_below(rng, d->nranges + 1);
	}
	sum = (sum + 11) / 12;
	if (d->stddev) {
		int64_t dev = (int64_t)probe_rng_below(rng, d->stddev) - (int64_t)(d->stddev / 2);

		while ((int64_t)sum + dev < 0 || (uint64_t)((int64_t)sum + dev) >= d->nranges) {
			dev /= 2;
		}
		sum = (uint64_t)((int64_t)sum + dev);
	}
	return sum;
}

static uint64_t zoned_block(const struct iogen_dist *d, uint64_t *rng)
{
	unsigned v = (unsigned)probe_rng_below(rng, 100) + 1, i = 0;

	while (i + 1 < d->n_zones && v > d->zones[i].access_end) {
		i++;
	}
	return d->zones[i].start + probe_rng_below(rng, d->zones[i].len);
}

uint64_t iogen_dist_next(const struct iogen_dist *d, uint64_t *rng)
{
	uint64_t r;

	switch (d->type) {
	case PROBE_DIST_ZIPF:
		r = zipf_rank(d, rng);
		break;
	case PROBE_DIST_PARETO:
		r = (uint64_t)((double)(d->nranges - 1) * pow(uniform(rng), d->pareto_pow));
		break;
	case PROBE_DIST_NORMAL:
		r = normal_rank(d, rng);
		break;
	case PROBE_DIST_ZONED:
	case PROBE_DIST_ZONED_ABS:
		return d->n_zones ? zoned_block(d, rng) : probe_rng_below(rng, d->nranges);
	default:
		return probe_rng_below(rng, d->nranges);
	}
	if (d->is_hashed) {
		r = spread(r);
	}
	return (r + d->rand_off) % d->nranges;
}
