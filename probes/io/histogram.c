/* Log-linear latency histogram: values below 2^SUB_BITS ns are exact; above,
 * each power of two is split into SUB_COUNT equal buckets, so a bucket's
 * midpoint is within 1/(2*SUB_COUNT) of any value in it. */
#include "histogram.h"

#include <math.h>
#include <string.h>

const double histogram_fio_percentiles[HISTOGRAM_N_FIO_PERCENTILES] = {
    1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99,
};

const double histogram_prom_bounds_seconds[] = {
    0.000005, 0.00001, 0.000025, 0.00005, 0.000075, 0.0001, 0.00015, 0.0002, 0.0003, 0.0004, 0.0005, 0.00075,
    0.001,    0.0015,  0.002,	 0.003,	  0.005,    0.0075, 0.01,    0.015,  0.02,   0.03,   0.05,   0.075,
    0.1,      0.15,    0.25,	 0.5,	  1,	    2.5,    5,	     10,     30,     60,
};
const size_t histogram_n_prom_bounds =
    sizeof(histogram_prom_bounds_seconds) / sizeof(histogram_prom_bounds_seconds[0]);

void histogram_init(struct histogram *h)
{
	memset(h, 0, sizeof(*h));
	h->min_ns = UINT64_MAX;
}

static size_t bucket_index(uint64_t v)
{
	unsigned e, k = HISTOGRAM_SUB_BITS;
	size_t idx;

	if (v < HISTOGRAM_SUB_COUNT) {
		return (size_t)v;
	}
	e = 63u - (unsigned)__builtin_clzll(v);
	idx = HISTOGRAM_SUB_COUNT + (size_t)(e - k) * HISTOGRAM_SUB_COUNT +
	      (size_t)((v >> (e - k)) - HISTOGRAM_SUB_COUNT);
	return idx < HISTOGRAM_BUCKETS ? idx : HISTOGRAM_BUCKETS - 1;
}

/* Lower bound and width of bucket `idx`. */
static void bucket_range(size_t idx, uint64_t *ret_low, uint64_t *ret_width)
{
	size_t e_off, sub;

	if (idx < HISTOGRAM_SUB_COUNT) {
		*ret_low = idx;
		*ret_width = 1;
		return;
	}
	e_off = (idx - HISTOGRAM_SUB_COUNT) / HISTOGRAM_SUB_COUNT; /* e - k */
	sub = (idx - HISTOGRAM_SUB_COUNT) % HISTOGRAM_SUB_COUNT;
	*ret_low = ((uint64_t)HISTOGRAM_SUB_COUNT + sub) << e_off;
	*ret_width = (uint64_t)1 << e_off;
}

static uint64_t bucket_mid(size_t idx)
{
	uint64_t low, width;

	bucket_range(idx, &low, &width);
	return low + (width - 1) / 2;
}

void histogram_record(struct histogram *h, uint64_t v)
{
	h->buckets[bucket_index(v)]++;
	h->count++;
	h->sum_ns = (h->sum_ns + v < h->sum_ns) ? UINT64_MAX : h->sum_ns + v;
	if (v < h->min_ns) {
		h->min_ns = v;
	}
	if (v > h->max_ns) {
		h->max_ns = v;
	}
}

void histogram_merge(struct histogram *dst, const struct histogram *src)
{
	if (src->count == 0) {
		return;
	}
	for (size_t i = 0; i < HISTOGRAM_BUCKETS; i++) {
		dst->buckets[i] += src->buckets[i];
	}
	dst->count += src->count;
	dst->sum_ns = (dst->sum_ns + src->sum_ns < dst->sum_ns) ? UINT64_MAX : dst->sum_ns + src->sum_ns;
	if (src->min_ns < dst->min_ns) {
		dst->min_ns = src->min_ns;
	}
	if (src->max_ns > dst->max_ns) {
		dst->max_ns = src->max_ns;
	}
}

uint64_t histogram_percentile(const struct histogram *h, double p)
{
	uint64_t rank, seen = 0, v;

	if (h->count == 0) {
		return 0;
	}
	if (p <= 0) {
		return h->min_ns;
	}
	if (p >= 100) {
		return h->max_ns;
	}
	/* the smallest value with at least p% of the values at or below it */
	rank = (uint64_t)((p / 100.0) * (double)h->count + 0.999999);
	if (rank == 0) {
		rank = 1;
	}
	for (size_t i = 0; i < HISTOGRAM_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			v = bucket_mid(i);
			if (v < h->min_ns) {
				v = h->min_ns;
			}
			if (v > h->max_ns) {
				v = h->max_ns;
			}
			return v;
		}
	}
	return h->max_ns;
}

double histogram_mean(const struct histogram *h)
{
	return h->count ? (double)h->sum_ns / (double)h->count : 0.0;
}

double histogram_stddev(const struct histogram *h)
{
	double mean, var = 0;

	if (h->count < 2) {
		return 0.0;
	}
	mean = histogram_mean(h);
	for (size_t i = 0; i < HISTOGRAM_BUCKETS; i++) {
		double d;

		if (h->buckets[i] == 0) {
			continue;
		}
		d = (double)bucket_mid(i) - mean;
		var += d * d * (double)h->buckets[i];
	}
	return sqrt(var / (double)(h->count - 1));
}

uint64_t histogram_count_le(const struct histogram *h, uint64_t le_ns)
{
	size_t last = bucket_index(le_ns);
	uint64_t n = 0;

	/* le is inclusive: le's own bucket counts whole, so no value <= le is
	 * ever missed, and values above le are counted only when they share its
	 * bucket (less than 1/64 above it) */
	for (size_t i = 0; i <= last; i++) {
		n += h->buckets[i];
	}
	return n;
}
