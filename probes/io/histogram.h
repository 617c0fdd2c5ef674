/* Log-linear latency histogram (HDR-style): <= 1% relative error from 1 us
 * to 60 s, fixed memory, mergeable across jobs and runs. Values in ns. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Sub-buckets per power of two; 64 gives bucket midpoints within 0.8%. */
#define HISTOGRAM_SUB_BITS  6
#define HISTOGRAM_SUB_COUNT (1u << HISTOGRAM_SUB_BITS)
/* Covers 0 .. 2^38 ns (~275 s); larger values land in the last bucket. */
#define HISTOGRAM_MAX_POW 37
#define HISTOGRAM_BUCKETS ((HISTOGRAM_MAX_POW - HISTOGRAM_SUB_BITS + 2) * HISTOGRAM_SUB_COUNT)

struct histogram {
	uint64_t count;
	uint64_t sum_ns; /* saturating */
	uint64_t min_ns; /* UINT64_MAX when empty */
	uint64_t max_ns;
	uint64_t buckets[HISTOGRAM_BUCKETS];
};

/* fio's default percentile list: 1,5,10,20,30,40,50,60,70,80,90,95,99,99.5,99.9,99.95,99.99 */
extern const double histogram_fio_percentiles[17];
#define HISTOGRAM_N_FIO_PERCENTILES 17

void histogram_init(struct histogram *h);
void histogram_record(struct histogram *h, uint64_t value_ns);
void histogram_merge(struct histogram *dst, const struct histogram *src);
/* Value at percentile p (0..100], ns; 0 when empty. */
uint64_t histogram_percentile(const struct histogram *h, double p);
double histogram_mean(const struct histogram *h);
/* Standard deviation (ns), from the bucket midpoints and the exact mean:
 * within the histogram's resolution. 0 when fewer than two values. */
double histogram_stddev(const struct histogram *h);
/* Number of recorded values <= le_ns, for cumulative Prometheus buckets:
 * every value <= le_ns counts; a value above it counts only when it falls
 * in the same bucket (less than 1/64 above le_ns). */
uint64_t histogram_count_le(const struct histogram *h, uint64_t le_ns);

/* The Prometheus bucket bounds iopsd exports, in seconds, ascending, fine
 * below 1 ms; +Inf is implicit. */
extern const double histogram_prom_bounds_seconds[];
extern const size_t histogram_n_prom_bounds;
