/* Configuration loader: INI through inih, fio key names, strict validation
 * with FILE:LINE messages. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include <ini.h>

#include "log.h"
#include "macro.h"
#include "netaddr.h"
#include "units.h"

#define MIN_BS 512ULL
#define MAX_BS (16ULL << 20)
#define MIN_INTERVAL_USEC (100ULL * USEC_PER_MSEC)
#define MAX_INTERVAL_USEC (24ULL * 3600ULL * USEC_PER_SEC)
#define MAX_HISTORY_USEC (7ULL * 24ULL * 3600ULL * USEC_PER_SEC)
#define DEFAULT_PROBE_SIZE (64ULL << 20)

const char config_builtin_text[] =
	"# Built-in default: sample every block device, one gentle probe.\n"
	"[global]\n"
	"listen_address=" CONFIG_DEFAULT_LISTEN "\n"
	"state_directory=" CONFIG_DEFAULT_STATE_DIRECTORY "\n"
	"\n"
	"[default]\n"
	"rw=randread\n"
	"bs=4k\n"
	"size=64m\n"
	"directory=" CONFIG_DEFAULT_STATE_DIRECTORY "\n"
	"iodepth=1\n"
	"rate_iops=50\n"
	"runtime=1s\n"
	"interval=10s\n";

static const char *const rw_names[_PROBE_RW_MAX] = {
	[PROBE_RW_READ] = "read",         [PROBE_RW_WRITE] = "write",
	[PROBE_RW_RANDREAD] = "randread", [PROBE_RW_RANDWRITE] = "randwrite",
	[PROBE_RW_RW] = "rw",             [PROBE_RW_RANDRW] = "randrw",
	[PROBE_RW_REWRITE] = "rewrite",
};

static const char *const engine_names[_PROBE_ENGINE_MAX] = {
	[PROBE_ENGINE_LIBAIO] = "libaio",
	[PROBE_ENGINE_SYNC] = "sync",
	[PROBE_ENGINE_PSYNC] = "psync",
	[PROBE_ENGINE_IO_URING] = "io_uring",
};

const char *probe_rw_to_string(enum probe_rw rw)
{
	return rw < _PROBE_RW_MAX ? rw_names[rw] : "unknown";
}

int probe_rw_from_string(const char *s)
{
	for (size_t i = 0; i < _PROBE_RW_MAX; i++) {
		if (strcmp(s, rw_names[i]) == 0) {
			return (int)i;
		}
	}
	/* fio aliases */
	if (strcmp(s, "readwrite") == 0) {
		return PROBE_RW_RW;
	}
	if (strcmp(s, "seqrewr") == 0 || strcmp(s, "readwrite-rewrite") == 0) {
		return PROBE_RW_REWRITE;
	}
	return -EINVAL;
}

const char *probe_engine_to_string(enum probe_engine e)
{
	return e < _PROBE_ENGINE_MAX ? engine_names[e] : "unknown";
}

bool probe_rw_reads(enum probe_rw rw)
{
	return rw == PROBE_RW_READ || rw == PROBE_RW_RANDREAD || rw == PROBE_RW_RW ||
	       rw == PROBE_RW_RANDRW;
}

bool probe_rw_writes(enum probe_rw rw)
{
	return rw != PROBE_RW_READ && rw != PROBE_RW_RANDREAD;
}

bool probe_rw_is_random(enum probe_rw rw)
{
	return rw == PROBE_RW_RANDREAD || rw == PROBE_RW_RANDWRITE || rw == PROBE_RW_RANDRW;
}

/* Which keys a section has set, for conflict and default checks. */
enum {
	SEEN_DIRECTORY = 1u << 0,
	SEEN_FILENAME = 1u << 1,
	SEEN_RUNTIME = 1u << 2,
	SEEN_NUMBER_IOS = 1u << 3,
	SEEN_RWMIXREAD = 1u << 4,
	SEEN_RWMIXWRITE = 1u << 5,
	SEEN_INTERVAL = 1u << 6,
	SEEN_RATE_IOPS = 1u << 7,
	SEEN_SIZE = 1u << 8,
	SEEN_FSYNC = 1u << 9,
};

enum section_kind {
	SECTION_NONE,
	SECTION_GLOBAL,
	SECTION_PROBE,
	SECTION_DEVICE,
};

struct parser {
	const char *file;
	struct config_errors *errs;
	struct config *cfg;

	/* reader state */
	const char *text;
	size_t pos;
	unsigned line;         /* line number of the line last handed to inih */
	bool at_line_start;

	/* current section */
	enum section_kind kind;
	char section[128];
	unsigned section_line;
	unsigned seen;         /* keys set, in this section or inherited from [global] */
	unsigned explicit_seen; /* keys set in this section */
	unsigned rwmixwrite;
	unsigned rwmixwrite_line;
	unsigned history_line;  /* last of history=, sample_interval=, max_history_memory= */
	char seen_keys[48][32];
	size_t n_seen_keys;

	/* probe defaults set by [global] (fio semantics: apply to later jobs) */
	struct probe_config defaults;
	unsigned defaults_seen;
	bool defaults_direct_seen;
};

_printf_(3, 4) static void add_error(struct parser *p, unsigned line, const char *fmt, ...)
{
	struct config_errors *errs = p->errs;
	struct config_error *e;
	va_list ap;

	if (!errs) {
		return;
	}
	if (errs->n >= CONFIG_MAX_ERRORS) {
		errs->n_dropped++;
		return;
	}
	e = &errs->items[errs->n];
	e->file = strdup(p->file);
	e->line = line;
	va_start(ap, fmt);
	if (vasprintf(&e->message, fmt, ap) < 0) {
		e->message = NULL;
	}
	va_end(ap);
	errs->n++;
}

static size_t error_count(const struct parser *p)
{
	return p->errs ? p->errs->n + p->errs->n_dropped : 0;
}

void config_errors_clear(struct config_errors *errs)
{
	for (size_t i = 0; i < errs->n; i++) {
		free(errs->items[i].file);
		free(errs->items[i].message);
	}
	errs->n = 0;
	errs->n_dropped = 0;
}

static void probe_config_done(struct probe_config *pc)
{
	free(pc->name);
	free(pc->directory);
	free(pc->filename);
}

struct config *config_free(struct config *c)
{
	if (!c) {
		return NULL;
	}
	for (size_t i = 0; i < c->n_probes; i++) {
		probe_config_done(&c->probes[i]);
	}
	free(c->probes);
	for (size_t i = 0; i < c->n_devices; i++) {
		free(c->devices[i].name);
	}
	free(c->devices);
	free(c->path);
	free(c->listen_address);
	free(c->state_directory);
	free(c->web_config_file);
	free(c->device_include);
	free(c->device_exclude);
	free(c);
	return NULL;
}

static void probe_defaults_init(struct probe_config *pc)
{
	*pc = (struct probe_config){
		.rw = PROBE_RW_RANDREAD,
		.ioengine = PROBE_ENGINE_LIBAIO,
		.bs = 4096,
		.iodepth = 1,
		.numjobs = 1,
		.rwmixread = 50,
		.runtime_usec = 0,
		.interval_usec = 0, /* resolved against probe_interval at the end */
	};
}

static int set_string(char **dst, const char *value)
{
	char *s = strdup(value);

	if (!s) {
		return -ENOMEM;
	}
	free(*dst);
	*dst = s;
	return 0;
}

/* Key tables ---------------------------------------------------------------- */

static const char *const global_only_keys[] = {
	"listen_address", "web.listen-address", "state_directory", "web_config_file",
	"log_level", "probe_interval", "sample_interval", "history", "device_include",
	"device_exclude", "ceiling_threshold", "max_connections", "max_connections_per_ip",
	"connection_timeout", "max_devices", "max_history_memory", "max_probe_memory",
	"max_history_points",
};

static const char *const probe_keys[] = {
	"rw", "readwrite", "bs", "blocksize", "size", "directory", "filename", "iodepth",
	"numjobs", "rwmixread", "rwmixwrite", "fsync", "end_fsync", "runtime", "number_ios",
	"rate_iops", "direct", "interval", "ioengine", "ceiling", "allow_overlap",
	/* fio keys accepted and ignored: they do not change what is measured */
	"name", "time_based", "group_reporting", "thread", "norandommap", "randrepeat",
	"invalidate", "buffered",
};

static const char *const device_keys[] = {
	"iops_limit", "throughput_limit", "burst_iops", "burst_credits", "credit_rate",
	"ceiling_threshold",
};

static bool key_in(const char *key, const char *const *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(key, keys[i]) == 0) {
			return true;
		}
	}
	return false;
}

/* Value helpers: each reports "FILE:LINE: invalid value for KEY: ..." */

static bool get_size(struct parser *p, const char *key, const char *value, uint64_t min,
		     uint64_t max, uint64_t *ret)
{
	uint64_t v;
	int r = parse_size(value, &v);

	if (r < 0) {
		add_error(p, p->line, "invalid value '%s' for %s: expected a size such as 4k, 100m, 64MiB",
			  value, key);
		return false;
	}
	if (v < min || v > max) {
		add_error(p, p->line, "%s=%s is out of range: must be between %" PRIu64 " and %" PRIu64 " bytes",
			  key, value, min, max);
		return false;
	}
	*ret = v;
	return true;
}

static bool get_uint(struct parser *p, const char *key, const char *value, uint64_t min,
		     uint64_t max, uint64_t *ret)
{
	uint64_t v;
	int r = parse_uint64(value, &v);

	if (r == -EINVAL) {
		add_error(p, p->line, "invalid value '%s' for %s: expected a whole number from %" PRIu64 " to %" PRIu64,
			  value, key, min, max);
		return false;
	}
	if (r < 0 || v < min || v > max) {
		add_error(p, p->line, "%s=%s is out of range: must be from %" PRIu64 " to %" PRIu64,
			  key, value, min, max);
		return false;
	}
	*ret = v;
	return true;
}

static bool get_duration(struct parser *p, const char *key, const char *value, uint64_t min,
			 uint64_t max, uint64_t *ret)
{
	char a[32], b[32];
	uint64_t v;
	int r = parse_duration(value, USEC_PER_SEC, &v);

	if (r < 0) {
		add_error(p, p->line, "invalid value '%s' for %s: expected a duration such as 500ms, 10s, 1h",
			  value, key);
		return false;
	}
	if (v < min || v > max) {
		add_error(p, p->line, "%s=%s is out of range: must be from %s to %s", key, value,
			  format_duration(a, sizeof(a), min), format_duration(b, sizeof(b), max));
		return false;
	}
	*ret = v;
	return true;
}

static bool get_bool(struct parser *p, const char *key, const char *value, bool *ret)
{
	if (parse_bool(value, ret) < 0) {
		add_error(p, p->line, "invalid value '%s' for %s: expected 0 or 1", value, key);
		return false;
	}
	return true;
}

static bool get_ratio(struct parser *p, const char *key, const char *value, double *ret)
{
	double v;

	if (parse_double(value, &v) < 0) {
		add_error(p, p->line, "invalid value '%s' for %s: expected a number such as 0.95", value, key);
		return false;
	}
	if (v <= 0.0 || v > 1.0) {
		add_error(p, p->line, "%s=%s is out of range: must be greater than 0 and at most 1", key, value);
		return false;
	}
	*ret = v;
	return true;
}

static bool check_regex(struct parser *p, const char *key, const char *value)
{
	regex_t re;
	int r = regcomp(&re, value, REG_EXTENDED | REG_NOSUB);

	if (r != 0) {
		char msg[128];

		regerror(r, &re, msg, sizeof(msg));
		add_error(p, p->line, "invalid value '%s' for %s: not a valid extended regular expression (%s)",
			  value, key, msg);
		return false;
	}
	regfree(&re);
	return true;
}

/* Probe keys (also valid in [global] as defaults). */
static void handle_probe_key(struct parser *p, struct probe_config *pc, unsigned *seen,
			     const char *key, const char *value)
{
	uint64_t v;
	bool b;
	int r;

	if (strcmp(key, "rw") == 0 || strcmp(key, "readwrite") == 0) {
		r = probe_rw_from_string(value);
		if (r < 0) {
			add_error(p, p->line,
				  "invalid value '%s' for %s: expected read, write, randread, randwrite, rw, randrw or rewrite",
				  value, key);
			return;
		}
		pc->rw = (enum probe_rw)r;
	} else if (strcmp(key, "bs") == 0 || strcmp(key, "blocksize") == 0) {
		if (!get_size(p, key, value, MIN_BS, MAX_BS, &v)) {
			return;
		}
		if (v % 512 != 0) {
			add_error(p, p->line, "%s=%s is not a multiple of 512 bytes", key, value);
			return;
		}
		pc->bs = v;
	} else if (strcmp(key, "size") == 0) {
		if (get_size(p, key, value, MIN_BS, 1ULL << 40, &v)) {
			pc->size = v;
			*seen |= SEEN_SIZE;
		}
	} else if (strcmp(key, "directory") == 0) {
		if (value[0] != '/') {
			add_error(p, p->line, "invalid value '%s' for directory: expected an absolute path", value);
			return;
		}
		set_string(&pc->directory, value);
		*seen |= SEEN_DIRECTORY;
		if (p->kind == SECTION_PROBE && !(p->explicit_seen & SEEN_FILENAME)) {
			/* a directory here replaces a filename inherited from [global] */
			free(pc->filename);
			pc->filename = NULL;
			*seen &= ~SEEN_FILENAME;
		}
	} else if (strcmp(key, "filename") == 0) {
		if (value[0] != '/') {
			add_error(p, p->line, "invalid value '%s' for filename: expected the absolute path of a block device",
				  value);
			return;
		}
		set_string(&pc->filename, value);
		*seen |= SEEN_FILENAME;
		if (p->kind == SECTION_PROBE && !(p->explicit_seen & SEEN_DIRECTORY)) {
			/* a filename here replaces a directory inherited from [global] */
			free(pc->directory);
			pc->directory = NULL;
			*seen &= ~SEEN_DIRECTORY;
		}
	} else if (strcmp(key, "iodepth") == 0) {
		if (get_uint(p, key, value, 1, 256, &v)) {
			pc->iodepth = (unsigned)v;
		}
	} else if (strcmp(key, "numjobs") == 0) {
		if (get_uint(p, key, value, 1, 64, &v)) {
			pc->numjobs = (unsigned)v;
		}
	} else if (strcmp(key, "rwmixread") == 0) {
		if (get_uint(p, key, value, 0, 100, &v)) {
			pc->rwmixread = (unsigned)v;
			*seen |= SEEN_RWMIXREAD;
		}
	} else if (strcmp(key, "rwmixwrite") == 0) {
		if (get_uint(p, key, value, 0, 100, &v)) {
			p->rwmixwrite = (unsigned)v;
			p->rwmixwrite_line = p->line;
			*seen |= SEEN_RWMIXWRITE;
		}
	} else if (strcmp(key, "fsync") == 0) {
		if (get_uint(p, key, value, 0, 1000000, &v)) {
			pc->fsync = (unsigned)v;
			*seen |= SEEN_FSYNC;
		}
	} else if (strcmp(key, "end_fsync") == 0) {
		if (get_bool(p, key, value, &b)) {
			pc->end_fsync = b;
		}
	} else if (strcmp(key, "runtime") == 0) {
		if (get_duration(p, key, value, USEC_PER_MSEC, 3600ULL * USEC_PER_SEC, &v)) {
			pc->runtime_usec = v;
			*seen |= SEEN_RUNTIME;
		}
	} else if (strcmp(key, "number_ios") == 0) {
		if (get_uint(p, key, value, 1, 100000000, &v)) {
			pc->number_ios = v;
			*seen |= SEEN_NUMBER_IOS;
		}
	} else if (strcmp(key, "rate_iops") == 0) {
		if (get_uint(p, key, value, 1, 10000000, &v)) {
			pc->rate_iops = v;
			*seen |= SEEN_RATE_IOPS;
		}
	} else if (strcmp(key, "direct") == 0) {
		if (!get_bool(p, key, value, &b)) {
			return;
		}
		if (!b) {
			add_error(p, p->line,
				  "direct=0 is not supported: iopsd measures the device, never the page cache; use direct=1 or remove the key");
		}
	} else if (strcmp(key, "buffered") == 0) {
		if (!get_bool(p, key, value, &b)) {
			return;
		}
		if (b) {
			add_error(p, p->line,
				  "buffered=1 is not supported: iopsd measures the device, never the page cache; use buffered=0 or remove the key");
		}
	} else if (strcmp(key, "interval") == 0) {
		if (get_duration(p, key, value, MIN_INTERVAL_USEC, MAX_INTERVAL_USEC, &v)) {
			pc->interval_usec = v;
			*seen |= SEEN_INTERVAL;
		}
	} else if (strcmp(key, "ioengine") == 0) {
		size_t i;

		for (i = 0; i < _PROBE_ENGINE_MAX; i++) {
			if (strcmp(value, engine_names[i]) == 0) {
				break;
			}
		}
		if (i == _PROBE_ENGINE_MAX) {
			add_error(p, p->line, "invalid value '%s' for ioengine: expected libaio, io_uring, sync or psync",
				  value);
			return;
		}
		pc->ioengine = (enum probe_engine)i;
	} else if (strcmp(key, "ceiling") == 0) {
		if (get_bool(p, key, value, &b)) {
			pc->ceiling = b;
		}
	} else if (strcmp(key, "allow_overlap") == 0) {
		if (get_bool(p, key, value, &b)) {
			pc->allow_overlap = b;
		}
	} else if (strcmp(key, "time_based") == 0 || strcmp(key, "group_reporting") == 0 ||
		   strcmp(key, "thread") == 0 || strcmp(key, "norandommap") == 0 ||
		   strcmp(key, "randrepeat") == 0 || strcmp(key, "invalidate") == 0) {
		get_bool(p, key, value, &b);
	}
	/* "name" is fio's job name; the section name is ours. */
}

/* The server's own parser (netaddr.h): a value that passes here binds,
 * unless a host name does not resolve (--check-config looks it up). */
static bool valid_listen_address(struct parser *p, const char *key, const char *value)
{
	struct netaddr_list l;
	char bad[128];
	int r;

	r = netaddr_parse_list(value, &l, bad, sizeof(bad));
	if (r == -E2BIG) {
		add_error(p, p->line, "invalid value for %s: more than %d addresses", key, NETADDR_LIST_MAX);
	} else if (r == -ENOENT) {
		add_error(p, p->line, "invalid value '' for %s: expected HOST:PORT, [IPV6]:PORT or :PORT",
			  key);
	} else if (r < 0 && bad[0] == '\0') {
		add_error(p, p->line, "invalid value '%s' for %s: an empty address between commas", value,
			  key);
	} else if (r < 0 && strcmp(bad, value) == 0) {
		add_error(p, p->line, "invalid value '%s' for %s: expected HOST:PORT, [IPV6]:PORT or :PORT",
			  value, key);
	} else if (r < 0) {
		add_error(p, p->line,
			  "invalid value '%s' for %s: '%s' is not HOST:PORT, [IPV6]:PORT or :PORT", value,
			  key, bad);
	}
	return r == 0;
}

static void handle_global_key(struct parser *p, const char *key, const char *value)
{
	struct config *c = p->cfg;
	uint64_t v;
	double d;
	int r;

	if (strcmp(key, "listen_address") == 0 || strcmp(key, "web.listen-address") == 0) {
		if (!valid_listen_address(p, key, value)) {
			return;
		}
		set_string(&c->listen_address, value);
	} else if (strcmp(key, "state_directory") == 0) {
		if (value[0] != '/') {
			add_error(p, p->line, "invalid value '%s' for state_directory: expected an absolute path",
				  value);
			return;
		}
		set_string(&c->state_directory, value);
	} else if (strcmp(key, "web_config_file") == 0) {
		set_string(&c->web_config_file, value);
	} else if (strcmp(key, "log_level") == 0) {
		r = log_level_from_string(value);
		if (r < 0) {
			add_error(p, p->line, "invalid value '%s' for log_level: expected error, warning, info or debug",
				  value);
			return;
		}
		c->log_level = r;
	} else if (strcmp(key, "probe_interval") == 0) {
		if (get_duration(p, key, value, MIN_INTERVAL_USEC, MAX_INTERVAL_USEC, &v)) {
			c->probe_interval_usec = v;
		}
	} else if (strcmp(key, "sample_interval") == 0) {
		if (get_duration(p, key, value, MIN_INTERVAL_USEC, 60ULL * USEC_PER_SEC, &v)) {
			c->sample_interval_usec = v;
			p->history_line = p->line;
		}
	} else if (strcmp(key, "history") == 0) {
		if (get_duration(p, key, value, 10ULL * USEC_PER_SEC, MAX_HISTORY_USEC, &v)) {
			c->history_usec = v;
			p->history_line = p->line;
		}
	} else if (strcmp(key, "device_include") == 0 || strcmp(key, "device_exclude") == 0) {
		if (check_regex(p, key, value)) {
			set_string(key[7] == 'i' ? &c->device_include : &c->device_exclude, value);
		}
	} else if (strcmp(key, "ceiling_threshold") == 0) {
		if (get_ratio(p, key, value, &d)) {
			c->ceiling_threshold = d;
		}
	} else if (strcmp(key, "max_connections") == 0) {
		if (get_uint(p, key, value, 1, 65536, &v)) {
			c->max_connections = (unsigned)v;
		}
	} else if (strcmp(key, "max_connections_per_ip") == 0) {
		if (get_uint(p, key, value, 1, 65536, &v)) {
			c->max_connections_per_ip = (unsigned)v;
		}
	} else if (strcmp(key, "connection_timeout") == 0) {
		if (get_duration(p, key, value, USEC_PER_SEC, 3600ULL * USEC_PER_SEC, &v)) {
			c->connection_timeout_usec = v;
		}
	} else if (strcmp(key, "max_devices") == 0) {
		if (get_uint(p, key, value, 1, 65536, &v)) {
			c->max_devices = (unsigned)v;
		}
	} else if (strcmp(key, "max_history_memory") == 0) {
		if (get_size(p, key, value, 1ULL << 20, 64ULL << 30, &v)) {
			c->max_history_memory = v;
			p->history_line = p->line;
		}
	} else if (strcmp(key, "max_probe_memory") == 0) {
		if (get_size(p, key, value, 1ULL << 20, 64ULL << 30, &v)) {
			c->max_probe_memory = v;
		}
	} else if (strcmp(key, "max_history_points") == 0) {
		if (get_uint(p, key, value, 1000, 100000000, &v)) {
			c->max_history_points = v;
		}
	}
}

static void handle_device_key(struct parser *p, struct device_config *dc, const char *key,
			      const char *value)
{
	uint64_t v;
	double d;

	if (strcmp(key, "iops_limit") == 0) {
		if (get_uint(p, key, value, 1, 100000000, &v)) {
			dc->iops_limit = v;
		}
	} else if (strcmp(key, "throughput_limit") == 0) {
		if (get_size(p, key, value, 1, 1ULL << 50, &v)) {
			dc->throughput_limit = v;
		}
	} else if (strcmp(key, "burst_iops") == 0) {
		if (get_uint(p, key, value, 1, 100000000, &v)) {
			dc->burst_iops = v;
		}
	} else if (strcmp(key, "burst_credits") == 0) {
		if (get_uint(p, key, value, 1, 1000000000000ULL, &v)) {
			dc->burst_credits = v;
		}
	} else if (strcmp(key, "credit_rate") == 0) {
		if (parse_double(value, &d) < 0 || d <= 0.0) {
			add_error(p, p->line, "invalid value '%s' for credit_rate: expected a positive number of credits per second",
				  value);
			return;
		}
		dc->credit_rate = d;
	} else if (strcmp(key, "ceiling_threshold") == 0) {
		if (get_ratio(p, key, value, &d)) {
			dc->ceiling_threshold = d;
		}
	}
}

/* Section bookkeeping ------------------------------------------------------- */

static void finish_probe(struct parser *p, struct probe_config *pc, unsigned seen)
{
	const char *where = pc->name;
	unsigned line = pc->line;

	if ((seen & SEEN_DIRECTORY) && (seen & SEEN_FILENAME)) {
		add_error(p, line, "[%s]: directory= and filename= conflict: set one target, a directory for a probe file or filename= for a raw block device",
			  where);
	} else if (!pc->directory && !pc->filename) {
		add_error(p, line, "[%s]: missing target: set directory= (a mounted filesystem) or filename= (a block device, read-only)",
			  where);
	}
	if (pc->filename && probe_rw_writes(pc->rw) && !(seen & SEEN_DIRECTORY)) {
		add_error(p, line, "[%s]: rw=%s writes, but filename=%s is a raw device: iopsd never writes a raw device; use a read mode or directory=",
			  where, probe_rw_to_string(pc->rw), pc->filename);
	}
	if ((seen & SEEN_RWMIXWRITE)) {
		if ((seen & SEEN_RWMIXREAD) && pc->rwmixread + p->rwmixwrite != 100) {
			add_error(p, p->rwmixwrite_line, "rwmixread=%u and rwmixwrite=%u conflict: they must add up to 100",
				  pc->rwmixread, p->rwmixwrite);
		} else {
			pc->rwmixread = 100 - p->rwmixwrite;
		}
	}
	if ((seen & (SEEN_RWMIXREAD | SEEN_RWMIXWRITE)) && pc->rw != PROBE_RW_RW &&
	    pc->rw != PROBE_RW_RANDRW) {
		add_error(p, line, "[%s]: rwmixread/rwmixwrite only apply to rw=rw or rw=randrw, not rw=%s",
			  where, probe_rw_to_string(pc->rw));
	}
	if ((seen & SEEN_FSYNC) && pc->fsync > 0 && !probe_rw_writes(pc->rw)) {
		add_error(p, line, "[%s]: fsync=%u conflicts with rw=%s, which never writes", where,
			  pc->fsync, probe_rw_to_string(pc->rw));
	}
	if (pc->ceiling && (seen & SEEN_RATE_IOPS)) {
		add_error(p, line, "[%s]: ceiling=1 and rate_iops conflict: a ceiling probe runs unthrottled",
			  where);
	}
	if ((pc->ioengine == PROBE_ENGINE_SYNC || pc->ioengine == PROBE_ENGINE_PSYNC) && pc->iodepth > 1) {
		add_error(p, line, "[%s]: ioengine=%s is synchronous and conflicts with iodepth=%u; use ioengine=libaio",
			  where, probe_engine_to_string(pc->ioengine), pc->iodepth);
	}
	if (!(seen & SEEN_RUNTIME) && !(seen & SEEN_NUMBER_IOS)) {
		pc->runtime_usec = pc->ceiling ? 5ULL * USEC_PER_SEC : USEC_PER_SEC;
	}
	if (pc->directory && pc->size == 0) {
		pc->size = DEFAULT_PROBE_SIZE;
	}
	if (pc->size && pc->size < pc->bs * pc->numjobs) {
		add_error(p, line, "[%s]: size=%" PRIu64 " is smaller than bs*numjobs=%" PRIu64 ": each job needs at least one block",
			  where, pc->size, pc->bs * pc->numjobs);
	}
}

static void end_section(struct parser *p)
{
	struct config *c = p->cfg;

	if (p->kind == SECTION_PROBE && c->n_probes > 0) {
		finish_probe(p, &c->probes[c->n_probes - 1], p->seen);
	} else if (p->kind == SECTION_GLOBAL) {
		p->defaults_seen |= p->seen;
	}
	p->kind = SECTION_NONE;
}

static bool valid_probe_name(const char *s)
{
	if (!*s || strlen(s) > 64) {
		return false;
	}
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.') {
			return false;
		}
	}
	return true;
}

static void begin_section(struct parser *p, const char *name, unsigned line)
{
	struct config *c = p->cfg;

	end_section(p);
	snprintf(p->section, sizeof(p->section), "%s", name);
	p->section_line = line;
	p->seen = 0;
	p->explicit_seen = 0;
	p->n_seen_keys = 0;
	p->rwmixwrite = 0;

	if (strcmp(name, "global") == 0) {
		p->kind = SECTION_GLOBAL;
		p->seen = p->defaults_seen;
		return;
	}
	if (strncmp(name, "device ", 7) == 0 || strcmp(name, "device") == 0) {
		const char *dev = name + (name[6] ? 7 : 6);
		struct device_config *dc;

		while (*dev == ' ') {
			dev++;
		}
		p->kind = SECTION_DEVICE;
		if (!*dev) {
			add_error(p, line, "[device] needs a name: [device NAME] with a device name (nvme1n1) or a mount point (/data)");
			p->kind = SECTION_NONE;
			return;
		}
		for (size_t i = 0; i < c->n_devices; i++) {
			if (strcmp(c->devices[i].name, dev) == 0) {
				add_error(p, line, "duplicate section [device %s]: first defined on line %u", dev,
					  c->devices[i].line);
				p->kind = SECTION_NONE;
				return;
			}
		}
		if (c->n_devices >= CONFIG_MAX_DEVICES) {
			add_error(p, line, "too many [device] sections: at most %d", CONFIG_MAX_DEVICES);
			p->kind = SECTION_NONE;
			return;
		}
		dc = &c->devices[c->n_devices++];
		*dc = (struct device_config){.name = strdup(dev), .line = line};
		return;
	}

	p->kind = SECTION_PROBE;
	if (!valid_probe_name(name)) {
		add_error(p, line, "invalid probe name [%s]: use 1 to 64 letters, digits, '-', '_' or '.'", name);
		p->kind = SECTION_NONE;
		return;
	}
	for (size_t i = 0; i < c->n_probes; i++) {
		if (strcmp(c->probes[i].name, name) == 0) {
			add_error(p, line, "duplicate probe [%s]: first defined on line %u", name, c->probes[i].line);
			p->kind = SECTION_NONE;
			return;
		}
	}
	if (c->n_probes >= CONFIG_MAX_PROBES) {
		add_error(p, line, "too many probes: at most %d", CONFIG_MAX_PROBES);
		p->kind = SECTION_NONE;
		return;
	}
	{
		struct probe_config *pc = &c->probes[c->n_probes++];

		*pc = p->defaults;
		pc->name = strdup(name);
		pc->line = line;
		pc->directory = p->defaults.directory ? strdup(p->defaults.directory) : NULL;
		pc->filename = p->defaults.filename ? strdup(p->defaults.filename) : NULL;
		p->seen = p->defaults_seen & (SEEN_DIRECTORY | SEEN_FILENAME | SEEN_RUNTIME |
					      SEEN_NUMBER_IOS | SEEN_RATE_IOPS | SEEN_SIZE |
					      SEEN_INTERVAL | SEEN_FSYNC);
	}
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct parser *p = user;

	(void)section;
	if (p->kind == SECTION_NONE) {
		/* keys outside a section, or in a section already reported */
		if (p->section[0] == '\0') {
			add_error(p, p->line, "key '%s' outside of a section: put it under [global] or a probe section", key);
		}
		return 1;
	}

	for (size_t i = 0; i < p->n_seen_keys; i++) {
		if (strcmp(p->seen_keys[i], key) == 0) {
			add_error(p, p->line, "duplicate key '%s' in [%s]", key, p->section);
			return 1;
		}
	}
	if (p->n_seen_keys < ELEMENTSOF(p->seen_keys)) {
		snprintf(p->seen_keys[p->n_seen_keys++], sizeof(p->seen_keys[0]), "%s", key);
	}

	switch (p->kind) {
	case SECTION_GLOBAL:
		if (key_in(key, global_only_keys, ELEMENTSOF(global_only_keys))) {
			handle_global_key(p, key, value);
		} else if (key_in(key, probe_keys, ELEMENTSOF(probe_keys))) {
			handle_probe_key(p, &p->defaults, &p->seen, key, value);
		} else {
			add_error(p, p->line, "unknown key '%s' in [global]: valid keys are the global keys (listen_address, state_directory, probe_interval, sample_interval, history, log_level, ...) and probe defaults (rw, bs, size, iodepth, ...)",
				  key);
		}
		break;
	case SECTION_PROBE:
		if (key_in(key, probe_keys, ELEMENTSOF(probe_keys))) {
			unsigned before = p->seen;

			handle_probe_key(p, &p->cfg->probes[p->cfg->n_probes - 1], &p->seen, key, value);
			p->explicit_seen |= p->seen & ~before;
		} else if (key_in(key, global_only_keys, ELEMENTSOF(global_only_keys))) {
			add_error(p, p->line, "key '%s' belongs in [global], not in probe [%s]", key, p->section);
		} else {
			add_error(p, p->line, "unknown key '%s' in probe [%s]: valid keys are rw, bs, size, directory, filename, iodepth, numjobs, rwmixread, fsync, end_fsync, runtime, number_ios, rate_iops, direct, interval, ioengine, ceiling",
				  key, p->section);
		}
		break;
	case SECTION_DEVICE:
		if (key_in(key, device_keys, ELEMENTSOF(device_keys))) {
			handle_device_key(p, &p->cfg->devices[p->cfg->n_devices - 1], key, value);
		} else {
			add_error(p, p->line, "unknown key '%s' in [%s]: valid keys are iops_limit, throughput_limit, burst_iops, burst_credits, credit_rate, ceiling_threshold",
				  key, p->section);
		}
		break;
	case SECTION_NONE:
		break;
	}
	return 1;
}

/* The reader hands inih one line at a time, which lets us number lines,
 * notice section headers (inih reports none for an empty section), and turn
 * fio's bare flags ("time_based") into "time_based=1". */
static char *reader(char *str, int num, void *stream)
{
	struct parser *p = stream;
	const char *start, *nl, *s;
	size_t len, max = (size_t)num - 1;

	if (p->text[p->pos] == '\0') {
		return NULL;
	}
	start = p->text + p->pos;
	nl = strchr(start, '\n');
	len = nl ? (size_t)(nl - start) + 1 : strlen(start);
	if (len > max) {
		/* Longer than inih's line buffer: report it and skip the line. */
		p->line++;
		add_error(p, p->line, "line too long: at most %d characters", num - 2);
		p->pos += len;
		str[0] = '\n';
		str[1] = '\0';
		return str;
	}
	memcpy(str, start, len);
	str[len] = '\0';
	p->pos += len;
	p->line++;

	for (s = str; *s == ' ' || *s == '\t'; s++) {
	}
	if (*s == '[') {
		const char *end = strchr(s, ']');

		if (end) {
			char name[128];
			const char *a = s + 1, *b = end;

			while (a < b && isspace((unsigned char)*a)) {
				a++;
			}
			while (b > a && isspace((unsigned char)b[-1])) {
				b--;
			}
			snprintf(name, sizeof(name), "%.*s", (int)(b - a), a);
			begin_section(p, name, p->line);
		}
	} else if (*s && *s != '#' && *s != ';' && *s != '\n' && *s != '\r' && !strchr(s, '=') &&
		   !strchr(s, ':') && s == str) {
		size_t l = strcspn(str, "\r\n");

		if (l + 3 <= max) {
			memcpy(str + l, "=1\n", 4);
		}
	}
	return str;
}

static int config_new_defaults(const char *path, struct config **ret)
{
	struct config *c = calloc(1, sizeof(*c));

	if (!c) {
		return -ENOMEM;
	}
	c->path = strdup(path);
	c->listen_address = strdup(CONFIG_DEFAULT_LISTEN);
	c->state_directory = strdup(CONFIG_DEFAULT_STATE_DIRECTORY);
	c->probes = calloc(CONFIG_MAX_PROBES, sizeof(*c->probes));
	c->devices = calloc(CONFIG_MAX_DEVICES, sizeof(*c->devices));
	if (!c->path || !c->listen_address || !c->state_directory || !c->probes || !c->devices) {
		config_free(c);
		return -ENOMEM;
	}
	c->log_level = -1;
	c->probe_interval_usec = 10ULL * USEC_PER_SEC;
	c->sample_interval_usec = USEC_PER_SEC;
	c->history_usec = 3600ULL * USEC_PER_SEC;
	c->ceiling_threshold = 0.95;
	c->max_connections = 64;
	c->max_connections_per_ip = 16;
	c->connection_timeout_usec = 10ULL * USEC_PER_SEC;
	c->max_devices = 4096;
	c->max_history_memory = 64ULL << 20;
	c->max_probe_memory = 128ULL << 20;
	c->max_history_points = 50000;
	*ret = c;
	return 0;
}

/* Checks across the whole file, after every section is known. */
static double mib(uint64_t bytes)
{
	return (double)bytes / (double)(1ULL << 20);
}

/* Bounds on what a configuration makes the daemon allocate. */
static void check_memory_limits(struct parser *p)
{
	struct config *c = p->cfg;
	uint64_t interval = c->sample_interval_usec ? c->sample_interval_usec : USEC_PER_SEC;
	uint64_t ring = (c->history_usec + interval - 1) / interval * CONFIG_HISTORY_BYTES_PER_SAMPLE;
	uint64_t buffers = 0;
	char a[32], b[32];

	if (ring > c->max_history_memory) {
		add_error(p, p->history_line, "history=%s at sample_interval=%s needs %.1f MiB per device, more than max_history_memory=%.1f MiB",
			  format_duration(a, sizeof(a), c->history_usec), format_duration(b, sizeof(b), interval),
			  mib(ring), mib(c->max_history_memory));
	}
	for (size_t i = 0; i < c->n_probes; i++) {
		const struct probe_config *pc = &c->probes[i];

		/* every job holds iodepth buffers of bs bytes while it runs */
		buffers += pc->bs * pc->iodepth * pc->numjobs;
		if (buffers > c->max_probe_memory) {
			add_error(p, pc->line, "[%s]: the probes up to here need %.1f MiB of I/O buffers (bs * iodepth * numjobs, summed), more than max_probe_memory=%.1f MiB",
				  pc->name, mib(buffers), mib(c->max_probe_memory));
			break;
		}
	}
}

static void finish_config(struct parser *p)
{
	struct config *c = p->cfg;

	check_memory_limits(p);
	for (size_t i = 0; i < c->n_probes; i++) {
		struct probe_config *pc = &c->probes[i];

		if (pc->interval_usec == 0) {
			pc->interval_usec = c->probe_interval_usec;
		}
		if (pc->runtime_usec > pc->interval_usec) {
			char a[32], b[32];

			add_error(p, pc->line, "[%s]: runtime=%s is longer than interval=%s: a probe must finish before its next run",
				  pc->name, format_duration(a, sizeof(a), pc->runtime_usec),
				  format_duration(b, sizeof(b), pc->interval_usec));
		}
	}
	for (size_t i = 0; i < c->n_devices; i++) {
		struct device_config *dc = &c->devices[i];
		bool any = dc->burst_iops || dc->burst_credits || dc->credit_rate > 0;
		bool all = dc->burst_iops && dc->burst_credits && dc->credit_rate > 0;

		if (any && !all) {
			add_error(p, dc->line, "[device %s]: burst_iops, burst_credits and credit_rate go together: set all three or none",
				  dc->name);
		}
		if (dc->ceiling_threshold == 0.0) {
			dc->ceiling_threshold = c->ceiling_threshold;
		}
	}
}

static int load(const char *name, const char *text, struct config_errors *errs, struct config **ret)
{
	struct parser p = {.file = name, .errs = errs, .text = text};
	struct config *c = NULL;
	int r;

	r = config_new_defaults(name, &c);
	if (r < 0) {
		return r;
	}
	p.cfg = c;
	probe_defaults_init(&p.defaults);

	r = ini_parse_stream(reader, &p, handler, &p);
	end_section(&p);
	if (r > 0) {
		add_error(&p, (unsigned)r, "syntax error: expected [section], key=value or a comment");
	} else if (r < 0) {
		add_error(&p, 0, "failed to parse: out of memory");
	}
	finish_config(&p);
	free(p.defaults.directory);
	free(p.defaults.filename);

	if (error_count(&p) > 0) {
		config_free(c);
		return -EINVAL;
	}
	*ret = c;
	return 0;
}

int config_load_string(const char *name, const char *text, struct config_errors *errs,
		       struct config **ret)
{
	struct config_errors local = {0};
	int r;

	r = load(name, text, errs ? errs : &local, ret);
	config_errors_clear(&local);
	return r;
}

int config_load_file(const char *path, struct config_errors *errs, struct config **ret)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	size_t n, cap = 0, len = 0;

	f = fopen(path, "re");
	if (!f) {
		return -errno;
	}
	for (;;) {
		if (cap - len < 4096) {
			char *t;

			if (cap > (1u << 20)) {
				return -EFBIG;
			}
			cap = cap ? cap * 2 : 8192;
			t = realloc(text, cap + 1);
			if (!t) {
				return -ENOMEM;
			}
			text = t;
		}
		n = fread(text + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			break;
		}
	}
	if (ferror(f)) {
		return -EIO;
	}
	if (memchr(text, '\0', len)) {
		struct parser p = {.file = path, .errs = errs};

		add_error(&p, 0, "file contains a NUL byte: not a text configuration");
		return -EINVAL;
	}
	text[len] = '\0';
	return config_load_string(path, text, errs, ret);
}

int config_load_builtin(struct config **ret)
{
	struct config *c;
	int r;

	r = config_load_string("(built-in default)", config_builtin_text, NULL, &c);
	if (r < 0) {
		return r;
	}
	c->is_builtin = true;
	*ret = c;
	return 0;
}

const struct device_config *config_find_device(const struct config *c, const char *name)
{
	for (size_t i = 0; i < c->n_devices; i++) {
		if (strcmp(c->devices[i].name, name) == 0) {
			return &c->devices[i];
		}
	}
	return NULL;
}

int config_summary(const struct config *c, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s: %zu probe%s, %zu device limit%s, listen %s, sample every %" PRIu64 "ms",
			 c->path, c->n_probes, c->n_probes == 1 ? "" : "s", c->n_devices,
			 c->n_devices == 1 ? "" : "s", c->listen_address,
			 c->sample_interval_usec / USEC_PER_MSEC);
	return n < 0 ? -EINVAL : n;
}
