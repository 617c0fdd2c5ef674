/* The latency quantiles iopsd exports, one list for both renderers:
 * /metrics' summary (quantile="0.99") and the JSON API ("p99"). */
#pragma once

struct latency_quantile {
	const char *prom_label; /* the quantile label's value */
	const char *json_key;
	double percentile;
};

#define N_LATENCY_QUANTILES 4

extern const struct latency_quantile latency_quantiles[N_LATENCY_QUANTILES];
