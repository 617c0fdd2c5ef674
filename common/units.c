/* Units for sizes and durations, shared by the config loader and the CLI. */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Split "123unit" into a number and a suffix; the number may not be signed. */
static int split_number(const char *s, uint64_t *ret_n, const char **ret_suffix)
{
	char *end;
	unsigned long long v;

	if (!s || !isdigit((unsigned char)*s)) {
		return -EINVAL;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE) {
		return -ERANGE;
	}
	while (*end == ' ') {
		end++;
	}
	*ret_n = v;
	*ret_suffix = end;
	return 0;
}

int parse_uint64(const char *s, uint64_t *ret)
{
	const char *suffix;
	uint64_t v;
	int r;

	r = split_number(s, &v, &suffix);
	if (r < 0) {
		return r;
	}
	if (*suffix != '\0') {
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

int parse_double(const char *s, double *ret)
{
	char *end;
	double v;

	if (!s || *s == '\0') {
		return -EINVAL;
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno == ERANGE || !isfinite(v)) {
		return -ERANGE;
	}
	if (*end != '\0' || end == s) {
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

int parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

int parse_size(const char *s, uint64_t *ret_bytes)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} table[] = {
	    {"", 0},	 {"b", 0},  {"k", 10},	{"kb", 10},  {"kib", 10}, {"m", 20},  {"mb", 20},
	    {"mib", 20}, {"g", 30}, {"gb", 30}, {"gib", 30}, {"t", 40},	  {"tb", 40}, {"tib", 40},
	};
	const char *suffix;
	uint64_t n;
	int r;

	r = split_number(s, &n, &suffix);
	if (r < 0) {
		return r;
	}
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcasecmp(suffix, table[i].suffix) != 0) {
			continue;
		}
		if (table[i].shift > 0 && n > (UINT64_MAX >> table[i].shift)) {
			return -ERANGE;
		}
		*ret_bytes = n << table[i].shift;
		return 0;
	}
	return -EINVAL;
}

int parse_duration(const char *s, uint64_t default_unit_usec, uint64_t *ret_usec)
{
	static const struct {
		const char *suffix;
		uint64_t usec;
	} table[] = {
	    {"us", 1ULL},	  {"usec", 1ULL},	 {"ms", 1000ULL},    {"msec", 1000ULL},
	    {"s", 1000000ULL},	  {"sec", 1000000ULL},	 {"m", 60000000ULL}, {"min", 60000000ULL},
	    {"h", 3600000000ULL}, {"d", 86400000000ULL},
	};
	const char *suffix;
	uint64_t n, unit = 0;
	int r;

	r = split_number(s, &n, &suffix);
	if (r < 0) {
		return r;
	}
	if (*suffix == '\0') {
		unit = default_unit_usec;
	} else {
		for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
			if (strcasecmp(suffix, table[i].suffix) == 0) {
				unit = table[i].usec;
				break;
			}
		}
	}
	if (unit == 0) {
		return -EINVAL;
	}
	if (n > UINT64_MAX / unit) {
		return -ERANGE;
	}
	*ret_usec = n * unit;
	return 0;
}

const char *format_duration(char *buf, size_t len, uint64_t usec)
{
	if (usec % 3600000000ULL == 0 && usec > 0) {
		snprintf(buf, len, "%" PRIu64 "h", (uint64_t)(usec / 3600000000ULL));
	} else if (usec % 60000000ULL == 0 && usec > 0) {
		snprintf(buf, len, "%" PRIu64 "m", (uint64_t)(usec / 60000000ULL));
	} else if (usec % 1000000ULL == 0) {
		snprintf(buf, len, "%" PRIu64 "s", (uint64_t)(usec / 1000000ULL));
	} else if (usec % 1000ULL == 0) {
		snprintf(buf, len, "%" PRIu64 "ms", (uint64_t)(usec / 1000ULL));
	} else {
		snprintf(buf, len, "%" PRIu64 "us", usec);
	}
	return buf;
}
