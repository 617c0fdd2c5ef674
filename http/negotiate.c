/* What a request asks for: the exposition format (Accept), gzip
 * (Accept-Encoding), a history window, a device or probe name. Pure. */
#include "negotiate.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "units.h"

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t') {
		p++;
	}
	return p;
}

/* Split one element of a comma-separated header at `p` into its token
 * (lowercase-compared by the caller) and q value; returns the element end. */
static const char *next_element(const char *p, char *token, size_t token_len, double *ret_q, char *version,
				size_t version_len)
{
	const char *end = p + strcspn(p, ",");
	const char *semi;
	size_t n;

	p = skip_space(p);
	semi = memchr(p, ';', (size_t)(end - p));
	n = (size_t)((semi ? semi : end) - p);
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t')) {
		n--;
	}
	if (n >= token_len) {
		n = 0; /* too long to be anything we know */
	}
	memcpy(token, p, n);
	token[n] = '\0';
	*ret_q = 1.0;
	if (version_len > 0) {
		version[0] = '\0';
	}
	for (const char *param = semi; param && param < end;) {
		const char *pend = memchr(param + 1, ';', (size_t)(end - param - 1));
		const char *name = skip_space(param + 1);
		const char *stop = pend ? pend : end;
		char value[32];
		size_t vn;

		if (strncasecmp(name, "q=", 2) == 0 || strncasecmp(name, "version=", 8) == 0) {
			bool is_q = (name[0] | 0x20) == 'q';
			const char *v = name + (is_q ? 2 : 8);

			vn = (size_t)(stop - v);
			while (vn > 0 && (v[vn - 1] == ' ' || v[vn - 1] == '\t')) {
				vn--;
			}
			if (vn < sizeof(value)) {
				memcpy(value, v, vn);
				value[vn] = '\0';
				if (is_q) {
					double q;

					/* a malformed q disqualifies the element */
					*ret_q = parse_double(value, &q) == 0 && q >= 0 && q <= 1 ? q : 0;
				} else if (version_len > vn) {
					memcpy(version, value, vn + 1);
				}
			}
		}
		param = pend;
	}
	return *end ? end + 1 : end;
}

enum metrics_format http_negotiate_format(const char *accept)
{
	double om_q = 0, text_q = 0;

	for (const char *p = accept; p && *p;) {
		char token[64], version[16];
		double q;

		p = next_element(p, token, sizeof(token), &q, version, sizeof(version));
		if (strcasecmp(token, "application/openmetrics-text") == 0 &&
		    (!version[0] || strcmp(version, "1.0.0") == 0 || strcmp(version, "0.0.1") == 0)) {
			if (q > om_q) {
				om_q = q;
			}
		} else if (strcasecmp(token, "text/plain") == 0) {
			if (q > text_q) {
				text_q = q;
			}
		}
	}
	return om_q > 0 && om_q >= text_q ? METRICS_FORMAT_OPENMETRICS : METRICS_FORMAT_PROMETHEUS;
}

bool http_accepts_gzip(const char *accept_encoding)
{
	double gzip_q = -1, star_q = -1;

	for (const char *p = accept_encoding; p && *p;) {
		char token[32];
		double q;

		p = next_element(p, token, sizeof(token), &q, NULL, 0);
		if (strcasecmp(token, "gzip") == 0 || strcasecmp(token, "x-gzip") == 0) {
			gzip_q = q > gzip_q ? q : gzip_q;
		} else if (strcmp(token, "*") == 0) {
			star_q = q;
		}
	}
	return gzip_q >= 0 ? gzip_q > 0 : star_q > 0;
}

int http_parse_window(const char *s, uint64_t max_usec, uint64_t *ret_usec)
{
	uint64_t usec;

	if (!s || parse_duration(s, USEC_PER_SEC, &usec) < 0) {
		return -EINVAL;
	}
	if (usec < USEC_PER_SEC || usec > max_usec) {
		return -ERANGE;
	}
	*ret_usec = usec;
	return 0;
}

bool http_valid_name(const char *s)
{
	size_t n = 0;

	if (!s) {
		return false;
	}
	for (; s[n]; n++) {
		if ((unsigned char)s[n] < 0x21 || s[n] == 0x7f || n >= 63) {
			return false;
		}
	}
	return n > 0;
}
