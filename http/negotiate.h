/* What a request asks for, parsed from its headers and query: pure
 * functions, exposed for the tests and the fuzzer. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "render_prom.h"

/* OpenMetrics when the Accept header lists application/openmetrics-text
 * (version 1.0.0, 0.0.1 or none) with a q at least that of text/plain;
 * the text format 0.0.4 otherwise (also for NULL). */
enum metrics_format http_negotiate_format(const char *accept);

/* True when Accept-Encoding allows gzip (gzip, x-gzip or * with q > 0). */
bool http_accepts_gzip(const char *accept_encoding);

/* A history window ("5m", "300", "90s"): 1 s .. max_usec. -EINVAL for
 * syntax, -ERANGE out of range. */
int http_parse_window(const char *s, uint64_t max_usec, uint64_t *ret_usec);

/* A device or probe name in a query: 1..63 printable bytes. */
bool http_valid_name(const char *s);
