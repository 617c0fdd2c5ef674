/* The latency quantiles iopsd exports. */
#include "latency_quantiles.h"

const struct latency_quantile latency_quantiles[N_LATENCY_QUANTILES] = {
    {"0.5", "p50", 50},
    {"0.9", "p90", 90},
    {"0.99", "p99", 99},
    {"0.999", "p999", 99.9},
};
