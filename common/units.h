/* Parsing of sizes (fio semantics: k = 1024) and durations with units. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parse "4k", "100m", "64MiB", "1g", "512" (bytes) into bytes. Accepts the
 * suffixes k, m, g, t, kb, mb, gb, tb, kib, mib, gib, tib (case-insensitive),
 * all powers of 1024 as in fio. Returns 0, -EINVAL on syntax, -ERANGE on
 * overflow. */
int parse_size(const char *s, uint64_t *ret_bytes);

/* Parse "500ms", "10s", "1h", "250us", "2m", "1d" into microseconds. A bare
 * number is taken in `default_unit_usec` units (fio takes seconds). */
int parse_duration(const char *s, uint64_t default_unit_usec, uint64_t *ret_usec);

/* Parse a non-negative decimal integer, whole string, no sign, no units. */
int parse_uint64(const char *s, uint64_t *ret);

/* Parse a boolean: 1/0, true/false, yes/no, on/off. */
int parse_bool(const char *s, bool *ret);

/* Parse a decimal number (strtod) that must be finite; whole string. */
int parse_double(const char *s, double *ret);

/* Format a duration in usec as a short human string ("10s", "500ms"). */
const char *format_duration(char *buf, size_t len, uint64_t usec);
