/* fio's workload keys beyond the I/O pattern, parsed into struct
 * probe_workload: rate_process, thinktime*, buffer_pattern,
 * buffer_compress_*, dedupe_*, prio, prioclass, cmdprio*. */
#include "fio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errstr.h"
#include "macro.h"
#include "units.h"

static int one_of(const char *value, const char *a, const char *b, bool *ret_is_b)
{
	if (strcmp(value, a) == 0 || strcmp(value, b) == 0) {
		*ret_is_b = strcmp(value, b) == 0;
		return 0;
	}
	return -EINVAL;
}

static int uint_in(const char *value, uint64_t max, unsigned *ret)
{
	uint64_t v;

	if (parse_uint64(value, &v) < 0 || v > max) {
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

/* "20" for both directions or "20,30" for reads and writes. */
static int per_dir(const char *value, uint64_t max, unsigned ret[_PROBE_DIR_MAX], bool has[_PROBE_DIR_MAX])
{
	char buf[64], *comma;
	unsigned v[_PROBE_DIR_MAX];

	if (snprintf(buf, sizeof(buf), "%s", value) >= (int)sizeof(buf)) {
		return -EINVAL;
	}
	comma = strchr(buf, ',');
	if (comma) {
		*comma++ = '\0';
	}
	if (uint_in(buf, max, &v[0]) < 0 || uint_in(comma ? comma : buf, max, &v[1]) < 0) {
		return -EINVAL;
	}
	for (size_t d = 0; d < _PROBE_DIR_MAX; d++) {
		ret[d] = v[d];
		if (has) {
			has[d] = true;
		}
	}
	return 0;
}

static int hex_nibble(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* buffer_pattern: 0xHEX, "string" or a decimal number (its bytes, least
 * significant first, as fio stores it). A file ('name') is refused. */
static int parse_pattern(const char *value, struct probe_workload *wl)
{
	size_t n = strlen(value), k = 0;
	uint64_t v;

	if (n > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X')) {
		const char *h = value + 2;
		size_t nd = n - 2, i = nd % 2;

		/* an odd count of digits: the first byte has one */
		if (i == 1) {
			if (hex_nibble(h[0]) < 0) {
				return -EINVAL;
			}
			wl->pattern[k++] = (uint8_t)hex_nibble(h[0]);
		}
		for (; i < nd; i += 2) {
			int hi = hex_nibble(h[i]), lo = hex_nibble(h[i + 1]);

			if (hi < 0 || lo < 0 || k == PROBE_PATTERN_MAX) {
				return -EINVAL;
			}
			wl->pattern[k++] = (uint8_t)(hi << 4 | lo);
		}
	} else if (n >= 2 && value[0] == '"' && value[n - 1] == '"' && n - 2 <= PROBE_PATTERN_MAX) {
		memcpy(wl->pattern, value + 1, n - 2);
		k = n - 2;
	} else if (parse_uint64(value, &v) == 0) {
		do {
			wl->pattern[k++] = (uint8_t)(v & 0xff);
			v >>= 8;
		} while (v);
	} else {
		return -EINVAL;
	}
	wl->pattern_len = (unsigned)k;
	return k > 0 ? 0 : -EINVAL;
}

static int parse_thinktime(const char *name, const char *value, struct probe_workload *wl)
{
	bool is_issue;

	if (strcmp(name, "thinktime") == 0) {
		return parse_duration(value, 1, &wl->thinktime_usec);
	}
	if (strcmp(name, "thinktime_spin") == 0) {
		return parse_duration(value, 1, &wl->thinktime_spin_usec);
	}
	if (strcmp(name, "thinktime_iotime") == 0) {
		return parse_duration(value, USEC_PER_SEC, &wl->thinktime_iotime_usec);
	}
	if (strcmp(name, "thinktime_blocks") == 0) {
		return uint_in(value, UINT32_MAX, &wl->thinktime_blocks) < 0 || wl->thinktime_blocks == 0
			   ? -EINVAL
			   : 0;
	}
	if (one_of(value, "complete", "issue", &is_issue) < 0) {
		return -EINVAL;
	}
	wl->is_thinktime_issue = is_issue;
	return 0;
}

static int parse_buffer(const char *name, const char *value, struct probe_workload *wl)
{
	bool b;

	if (strcmp(name, "buffer_pattern") == 0) {
		return parse_pattern(value, wl);
	}
	if (strcmp(name, "buffer_compress_percentage") == 0) {
		return uint_in(value, 100, &wl->compress_pct);
	}
	if (strcmp(name, "buffer_compress_chunk") == 0) {
		return parse_size(value, &wl->compress_chunk) < 0 || wl->compress_chunk == 0 ? -EINVAL : 0;
	}
	if (strcmp(name, "dedupe_percentage") == 0) {
		return uint_in(value, 100, &wl->dedupe_pct);
	}
	if (strcmp(name, "dedupe_working_set_percentage") == 0) {
		return uint_in(value, 100, &wl->dedupe_ws_pct);
	}
	if (strcmp(name, "dedupe_global") == 0) {
		return parse_bool(value, &wl->is_dedupe_global);
	}
	if (one_of(value, "repeat", "working_set", &b) < 0) {
		return -EINVAL;
	}
	wl->is_dedupe_working_set = b;
	return 0;
}

/* One direction of cmdprio_bssplit: BS/PERCENT[/CLASS/LEVEL]:... */
static int parse_cmdprio_split_dir(char *list, struct probe_workload *wl, int d)
{
	char *save = NULL;

	wl->n_cmdprio_split[d] = 0;
	for (char *e = strtok_r(list, ":", &save); e; e = strtok_r(NULL, ":", &save)) {
		char *f[4] = {e, NULL, NULL, NULL}, *save2 = NULL;
		unsigned n = 0, i = wl->n_cmdprio_split[d];
		uint64_t bs;

		for (char *x = strtok_r(e, "/", &save2); x && n < 4; x = strtok_r(NULL, "/", &save2)) {
			f[n++] = x;
		}
		if (i == PROBE_BSSPLIT_MAX || (n != 2 && n != 4) || parse_size(f[0], &bs) < 0 ||
		    uint_in(f[1], 100, &wl->cmdprio_split[d][i].pct) < 0 ||
		    (n == 4 && (uint_in(f[2], 3, &wl->cmdprio_split[d][i].cls) < 0 ||
				uint_in(f[3], 7, &wl->cmdprio_split[d][i].lvl) < 0))) {
			return -EINVAL;
		}
		wl->cmdprio_split[d][i].bs = bs;
		wl->cmdprio_split[d][i].has_prio = n == 4;
		wl->n_cmdprio_split[d]++;
	}
	return 0;
}

/* cmdprio_bssplit=64k/40:1m/10[,...]: one list for both directions, or
 * READ,WRITE. */
static int parse_cmdprio_split(const char *value, struct probe_workload *wl)
{
	char buf[1024], *comma;

	if (snprintf(buf, sizeof(buf), "%s", value) >= (int)sizeof(buf)) {
		return -EINVAL;
	}
	comma = strchr(buf, ',');
	if (comma) {
		*comma++ = '\0';
		comma[strcspn(comma, ",")] = '\0'; /* a trim list is accepted and unused */
	}
	if (parse_cmdprio_split_dir(buf, wl, PROBE_DIR_READ) < 0) {
		return -EINVAL;
	}
	if (!comma) {
		memcpy(wl->cmdprio_split[PROBE_DIR_WRITE], wl->cmdprio_split[PROBE_DIR_READ],
		       sizeof(wl->cmdprio_split[0]));
		wl->n_cmdprio_split[PROBE_DIR_WRITE] = wl->n_cmdprio_split[PROBE_DIR_READ];
		return 0;
	}
	return parse_cmdprio_split_dir(comma, wl, PROBE_DIR_WRITE);
}

/* latency_target, latency_window (bare numbers are microseconds),
 * latency_percentile, latency_run */
static int parse_latency(const char *name, const char *value, struct probe_workload *wl)
{
	char *end = NULL;

	if (strcmp(name, "latency_target") == 0) {
		return parse_duration(value, 1, &wl->latency_target_usec);
	}
	if (strcmp(name, "latency_window") == 0) {
		return parse_duration(value, 1, &wl->latency_window_usec);
	}
	if (strcmp(name, "latency_run") == 0) {
		return parse_bool(value, &wl->is_latency_run);
	}
	errno = 0;
	wl->latency_percentile = strtod(value, &end);
	return errno == 0 && end != value && *end == '\0' && wl->latency_percentile > 0 &&
		       wl->latency_percentile <= 100
		   ? 0
		   : -EINVAL;
}

/* ss=iops:10%, bw_slope:1% (fio's steadystate), ss_dur=, ss_ramp= */
static int parse_ss(const char *name, const char *value, struct probe_workload *wl)
{
	const char *colon = strchr(value, ':');
	char *end = NULL;
	size_t n = colon ? (size_t)(colon - value) : 0;

	if (strcmp(name, "steadystate_duration") == 0) {
		return parse_duration(value, USEC_PER_SEC, &wl->ss_dur_usec) < 0 ||
			       wl->ss_dur_usec < USEC_PER_SEC || wl->ss_dur_usec > 300 * USEC_PER_SEC
			   ? -EINVAL
			   : 0;
	}
	if (strcmp(name, "steadystate_ramp_time") == 0) {
		return parse_duration(value, USEC_PER_SEC, &wl->ss_ramp_usec);
	}
	if (!colon ||
	    !((n == 4 && strncmp(value, "iops", 4) == 0) || (n == 2 && strncmp(value, "bw", 2) == 0) ||
	      (n == 10 && strncmp(value, "iops_slope", 10) == 0) ||
	      (n == 8 && strncmp(value, "bw_slope", 8) == 0))) {
		return -EINVAL;
	}
	wl->is_ss_iops = value[0] == 'i';
	wl->is_ss_slope = n > 4;
	errno = 0;
	wl->ss_limit = strtod(colon + 1, &end);
	if (errno != 0 || end == colon + 1 || !(wl->ss_limit >= 0) ||
	    (*end != '\0' && strcmp(end, "%") != 0)) {
		return -EINVAL;
	}
	wl->is_ss_pct = *end == '%';
	wl->has_ss = true;
	return 0;
}

/* prio and prioclass as ioprio_set(2) takes them (class 1 realtime, 2
 * best effort, 3 idle; level 0..7); cmdprio* per direction. */
static int parse_prio(const char *name, const char *value, struct probe_workload *wl)
{
	if (strcmp(name, "prio") == 0) {
		wl->has_prio = true;
		return uint_in(value, 7, &wl->prio);
	}
	if (strcmp(name, "prioclass") == 0) {
		wl->has_prioclass = true;
		return uint_in(value, 3, &wl->prioclass);
	}
	if (strcmp(name, "cmdprio_bssplit") == 0) {
		return parse_cmdprio_split(value, wl);
	}
	if (strcmp(name, "cmdprio_percentage") == 0) {
		return per_dir(value, 100, wl->cmdprio_pct, NULL);
	}
	if (strcmp(name, "cmdprio_class") == 0) {
		return per_dir(value, 3, wl->cmdprio_class, wl->has_cmdprio_class);
	}
	return per_dir(value, 7, wl->cmdprio, wl->has_cmdprio);
}

const char *fio_workload_syntax(const char *name)
{
	static const struct {
		const char *name, *syntax;
	} syntax[] = {
	    {"rate_process", "expected linear or poisson"},
	    {"thinktime", "expected a pause (a bare number is microseconds)"},
	    {"thinktime_spin", "expected a time (a bare number is microseconds)"},
	    {"thinktime_iotime", "expected a time (a bare number is seconds)"},
	    {"thinktime_blocks", "expected a count of I/Os from 1"},
	    {"thinktime_blocks_type", "expected complete or issue"},
	    {"buffer_pattern", "expected 0xHEX, \"string\" or a number (a file is not read)"},
	    {"buffer_compress_percentage", "expected 0 to 100"},
	    {"buffer_compress_chunk", "expected a size"},
	    {"dedupe_percentage", "expected 0 to 100"},
	    {"dedupe_mode", "expected repeat or working_set"},
	    {"dedupe_working_set_percentage", "expected 0 to 100"},
	    {"dedupe_global", "expected a boolean"},
	    {"prio", "expected 0 to 7"},
	    {"prioclass", "expected 0 to 3 (1 realtime, 2 best effort, 3 idle)"},
	    {"cmdprio_percentage", "expected 0 to 100, or READ,WRITE"},
	    {"cmdprio_class", "expected 0 to 3, or READ,WRITE"},
	    {"cmdprio", "expected 0 to 7, or READ,WRITE"},
	    {"wait_for", "expected a job's name (up to 127 bytes)"},
	    {"latency_target", "expected a time (a bare number is microseconds)"},
	    {"latency_window", "expected a time (a bare number is microseconds)"},
	    {"latency_percentile", "expected a percentage above 0, up to 100"},
	    {"latency_run", "expected a boolean"},
	    {"steadystate",
	     "expected iops:LIMIT, iops_slope:LIMIT, bw:LIMIT or bw_slope:LIMIT (LIMIT may end in %)"},
	    {"steadystate_duration", "expected 1s to 300s (a bare number is seconds)"},
	    {"steadystate_ramp_time", "expected a time (a bare number is seconds)"},
	    {"cmdprio_bssplit", "expected BS/PERCENT[/CLASS/LEVEL]:..., or READ,WRITE lists"},
	    {"flow", "expected a weight from 0"},
	    {"flow_id", "expected a number"},
	    {"flow_sleep", "expected a time (a bare number is microseconds)"},
	};

	for (size_t i = 0; i < ELEMENTSOF(syntax); i++) {
		if (strcmp(syntax[i].name, name) == 0) {
			return syntax[i].syntax;
		}
	}
	return "not a workload key";
}

int fio_parse_workload(const char *name, const char *key, const char *value, struct probe_workload *wl,
		       char *err, size_t len)
{
	struct probe_workload w = *wl;
	bool is_poisson = false;
	int r;

	if (strncmp(name, "latency_", 8) == 0) {
		r = parse_latency(name, value, &w);
	} else if (strncmp(name, "steadystate", 11) == 0) {
		r = parse_ss(name, value, &w);
	} else if (strcmp(name, "flow") == 0 || strcmp(name, "flow_id") == 0) {
		r = uint_in(value, 1000000, strcmp(name, "flow") == 0 ? &w.flow : &w.flow_id);
	} else if (strcmp(name, "flow_sleep") == 0) {
		r = parse_duration(value, 1, &w.flow_sleep_usec);
	} else if (strcmp(name, "wait_for") == 0) {
		r = snprintf(w.wait_for, sizeof(w.wait_for), "%s", value) >= (int)sizeof(w.wait_for) ||
			    value[0] == '\0'
			? -EINVAL
			: 0;
	} else if (strcmp(name, "rate_process") == 0) {
		r = one_of(value, "linear", "poisson", &is_poisson);
		w.is_poisson = is_poisson;
	} else if (strncmp(name, "thinktime", 9) == 0) {
		r = parse_thinktime(name, value, &w);
	} else if (strncmp(name, "buffer_", 7) == 0 || strncmp(name, "dedupe_", 7) == 0) {
		r = parse_buffer(name, value, &w);
	} else if (strncmp(name, "prio", 4) == 0 || strncmp(name, "cmdprio", 7) == 0) {
		r = parse_prio(name, value, &w);
	} else {
		r = -EINVAL;
	}
	if (r < 0) {
		return errstr_set(err, len, -EINVAL, "invalid value '%s' for %s: %s", value, key,
				  fio_workload_syntax(name));
	}
	*wl = w;
	return 0;
}
