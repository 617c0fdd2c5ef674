/* Configuration loader: INI through inih, driven by the key table in keys.c
 * (fio's key names and classes), strict validation with FILE:LINE
 * messages. */
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
#include <unistd.h>

#include <ini.h>

#include "fio.h"
#include "keys.h"
#include "log.h"
#include "macro.h"
#include "netaddr.h"
#include "units.h"

#define DEFAULT_PROBE_SIZE (64ULL << 20)

const char config_builtin_text[] = "# Built-in default: sample every block device, one gentle probe.\n"
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
    [PROBE_RW_READ] = "read",		[PROBE_RW_WRITE] = "write", [PROBE_RW_RANDREAD] = "randread",
    [PROBE_RW_RANDWRITE] = "randwrite", [PROBE_RW_RW] = "rw",	    [PROBE_RW_RANDRW] = "randrw",
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
	return rw == PROBE_RW_READ || rw == PROBE_RW_RANDREAD || rw == PROBE_RW_RW || rw == PROBE_RW_RANDRW;
}

bool probe_rw_writes(enum probe_rw rw)
{
	return rw != PROBE_RW_READ && rw != PROBE_RW_RANDREAD;
}

bool probe_rw_is_random(enum probe_rw rw)
{
	return rw == PROBE_RW_RANDREAD || rw == PROBE_RW_RANDWRITE || rw == PROBE_RW_RANDRW;
}

enum section_kind {
	SECTION_NONE,
	SECTION_GLOBAL,
	SECTION_PROBE,
	SECTION_DEVICE,
	SECTION_INSTANCE,
};

/* Keys a probe inherits from [global] as "set" (the rwmix pair is checked
 * per section, the history keys are global only). */
#define INHERITED_SEEN (~(unsigned)(CONFIG_SEEN_RWMIXREAD | CONFIG_SEEN_RWMIXWRITE | CONFIG_SEEN_HISTORY))

struct parser {
	const char *file;
	struct config_errors *errs;
	struct config *cfg;

	/* reader state */
	const char *text;
	size_t pos;
	unsigned line; /* line number of the line last handed to inih */

	/* current section */
	enum section_kind kind;
	char section[128];
	unsigned section_line;
	unsigned seen;		/* CONFIG_SEEN_*: set in this section or inherited from [global] */
	unsigned explicit_seen; /* set in this section */
	unsigned rwmixwrite;
	unsigned rwmixwrite_line;
	unsigned history_line; /* last of history=, sample_interval=, max_history_memory= */
	unsigned *key_lines;   /* per config_keys[] entry: where this section set it, 0: not */
	char ignored[256];     /* the ignored fio keys of this section, for one notice */

	/* probe defaults set by [global] (fio semantics: apply to later jobs) */
	struct probe_config defaults;
	unsigned defaults_seen;
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

int config_add_notice(struct config *c, unsigned line, const char *fmt, ...)
{
	struct config_error *n, *items;
	va_list ap;
	int r;

	items = realloc(c->notices, (c->n_notices + 1) * sizeof(*items));
	if (!items) {
		return -ENOMEM;
	}
	c->notices = items;
	n = &items[c->n_notices];
	*n = (struct config_error){.file = strdup(c->path), .line = line};
	va_start(ap, fmt);
	r = vasprintf(&n->message, fmt, ap);
	va_end(ap);
	if (r < 0 || !n->file) {
		free(n->file);
		return -ENOMEM;
	}
	c->n_notices++;
	return 0;
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
	for (size_t i = 0; i < c->n_notices; i++) {
		free(c->notices[i].file);
		free(c->notices[i].message);
	}
	free(c->notices);
	free(c->path);
	free(c->listen_address);
	free(c->state_directory);
	free(c->web_config_file);
	free(c->device_include);
	free(c->device_exclude);
	free(c->instance.devices);
	free(c);
	return NULL;
}

static void probe_defaults_init(struct probe_config *pc)
{
	*pc = (struct probe_config){
	    .rw = PROBE_RW_RANDREAD,
	    .ioengine = PROBE_ENGINE_LIBAIO,
	    .bs = 4096,
	    .bs_rw = {4096, 4096},
	    .nrfiles = 1,
	    .iodepth = 1,
	    .numjobs = 1,
	    .rwmixread = 50,
	    .loops = 1,
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

/* Value helpers: each reports "FILE:LINE: invalid value for KEY: ..." */

static bool get_size(struct parser *p, const char *key, const char *value, uint64_t min, uint64_t max,
		     uint64_t *ret)
{
	uint64_t v;
	int r = parse_size(value, &v);

	if (r < 0) {
		add_error(p, p->line, "invalid value '%s' for %s: expected a size such as 4k, 100m, 64MiB",
			  value, key);
		return false;
	}
	if (v < min || v > max) {
		add_error(p, p->line,
			  "%s=%s is out of range: must be between %" PRIu64 " and %" PRIu64 " bytes", key,
			  value, min, max);
		return false;
	}
	*ret = v;
	return true;
}

static bool get_uint(struct parser *p, const char *key, const char *value, uint64_t min, uint64_t max,
		     uint64_t *ret)
{
	uint64_t v;
	int r = parse_uint64(value, &v);

	if (r == -EINVAL) {
		add_error(p, p->line,
			  "invalid value '%s' for %s: expected a whole number from %" PRIu64 " to %" PRIu64,
			  value, key, min, max);
		return false;
	}
	if (r < 0 || v < min || v > max) {
		add_error(p, p->line, "%s=%s is out of range: must be from %" PRIu64 " to %" PRIu64, key,
			  value, min, max);
		return false;
	}
	*ret = v;
	return true;
}

static bool get_duration(struct parser *p, const char *key, const char *value, uint64_t min, uint64_t max,
			 uint64_t *ret)
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
		add_error(p, p->line, "invalid value '%s' for %s: expected a number such as 0.95", value,
			  key);
		return false;
	}
	if (v <= 0.0 || v > 1.0) {
		add_error(p, p->line, "%s=%s is out of range: must be greater than 0 and at most 1", key,
			  value);
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
		add_error(p, p->line,
			  "invalid value '%s' for %s: not a valid extended regular expression (%s)", value,
			  key, msg);
		return false;
	}
	regfree(&re);
	return true;
}

/* Keys ------------------------------------------------------------------- */

/* What a key sets: the daemon's config, the current probe (or [global]'s
 * probe defaults) or the current device. */
static void *key_target(struct parser *p, const struct config_key *k)
{
	switch (k->scope) {
	case CONFIG_SCOPE_GLOBAL:
		return p->cfg;
	case CONFIG_SCOPE_PROBE:
		return p->kind == SECTION_GLOBAL ? &p->defaults : &p->cfg->probes[p->cfg->n_probes - 1];
	case CONFIG_SCOPE_DEVICE:
		return &p->cfg->devices[p->cfg->n_devices - 1];
	case CONFIG_SCOPE_INSTANCE:
		return &p->cfg->instance;
	default:
		return NULL;
	}
}

/* A value of a plain kind into the key's field. */
static bool set_generic(struct parser *p, const struct config_key *k, void *base, const char *key,
			const char *value)
{
	char *field = (char *)base + k->offset;
	uint64_t v;
	double d;
	bool b;

	switch (k->kind) {
	case CONFIG_KIND_BOOL:
		if (!get_bool(p, key, value, &b)) {
			return false;
		}
		*(bool *)field = b;
		return true;
	case CONFIG_KIND_UINT:
	case CONFIG_KIND_U64:
		if (!get_uint(p, key, value, k->min, k->max, &v)) {
			return false;
		}
		if (k->kind == CONFIG_KIND_UINT) {
			*(unsigned *)field = (unsigned)v;
		} else {
			*(uint64_t *)field = v;
		}
		return true;
	case CONFIG_KIND_SIZE:
	case CONFIG_KIND_DURATION:
		if (!(k->kind == CONFIG_KIND_SIZE ? get_size(p, key, value, k->min, k->max, &v)
						  : get_duration(p, key, value, k->min, k->max, &v))) {
			return false;
		}
		*(uint64_t *)field = v;
		return true;
	case CONFIG_KIND_RATIO:
		if (!get_ratio(p, key, value, &d)) {
			return false;
		}
		*(double *)field = d;
		return true;
	case CONFIG_KIND_STRING:
		return set_string((char **)field, value) == 0;
	default:
		return false;
	}
}

/* Report a fio parser's verdict. */
static bool fio_ok(struct parser *p, int r, const char *err)
{
	if (r < 0) {
		add_error(p, p->line, "%s", r == -ENOMEM ? "out of memory" : err);
		return false;
	}
	return true;
}

static bool set_directory(struct parser *p, struct probe_config *pc, const char *value)
{
	if (value[0] != '/') {
		add_error(p, p->line, "invalid value '%s' for directory: expected an absolute path", value);
		return false;
	}
	if (set_string(&pc->directory, value) < 0) {
		return false;
	}
	if (p->kind == SECTION_PROBE && !(p->explicit_seen & CONFIG_SEEN_FILENAME) && pc->filename &&
	    pc->filename[0] == '/') {
		/* a directory here replaces an absolute filename inherited from
		 * [global]; a relative one is a file in it, as in fio */
		free(pc->filename);
		pc->filename = NULL;
		p->seen &= ~(unsigned)CONFIG_SEEN_FILENAME;
	}
	return true;
}

static bool set_filename(struct parser *p, struct probe_config *pc, const char *value)
{
	if (!*value) {
		add_error(p, p->line, "invalid value '' for filename: expected a block device or a file");
		return false;
	}
	if (set_string(&pc->filename, value) < 0) {
		return false;
	}
	if (p->kind == SECTION_PROBE && !(p->explicit_seen & CONFIG_SEEN_DIRECTORY) && value[0] == '/') {
		/* an absolute filename here replaces a directory inherited from [global] */
		free(pc->directory);
		pc->directory = NULL;
		p->seen &= ~(unsigned)CONFIG_SEEN_DIRECTORY;
	}
	return true;
}

/* direct=1 and buffered=0 are what iopsd always does; the opposite is refused. */
static bool set_direct(struct parser *p, const char *key, const char *value, bool want)
{
	bool b;

	if (!get_bool(p, key, value, &b)) {
		return false;
	}
	if (b != want) {
		add_error(p, p->line,
			  "%s=%s is not supported: iopsd measures the device, never the page cache; use "
			  "%s=%d or remove the key",
			  key, value, key, want);
		return false;
	}
	return true;
}

static bool set_probe_special(struct parser *p, const struct config_key *k, struct probe_config *pc,
			      const char *key, const char *value)
{
	char err[512];
	uint64_t v;

	switch (k->special) {
	case CONFIG_SPECIAL_RW:
		return fio_ok(p, fio_parse_rw(key, value, pc, err, sizeof(err)), err);
	case CONFIG_SPECIAL_IOENGINE:
		return fio_ok(p, fio_parse_ioengine(value, &pc->ioengine, err, sizeof(err)), err);
	case CONFIG_SPECIAL_BS:
		return fio_ok(p, fio_parse_bs(key, value, pc->bs_rw, err, sizeof(err)), err);
	case CONFIG_SPECIAL_BSRANGE:
		return fio_ok(p, fio_parse_bsrange(key, value, pc->bsdir, err, sizeof(err)), err);
	case CONFIG_SPECIAL_BSSPLIT:
		return fio_ok(p, fio_parse_bssplit(key, value, pc->bsdir, err, sizeof(err)), err);
	case CONFIG_SPECIAL_WORKLOAD:
		return fio_ok(p, fio_parse_workload(k->name, key, value, &pc->wl, err, sizeof(err)), err);
	case CONFIG_SPECIAL_RANDOM_DISTRIBUTION:
		return fio_ok(p, fio_parse_random_distribution(key, value, pc->dist, err, sizeof(err)), err);
	case CONFIG_SPECIAL_RATE:
		return fio_ok(p, fio_parse_rate(key, value, false, &pc->rate_bytes, err, sizeof(err)), err);
	case CONFIG_SPECIAL_RATE_IOPS:
		return fio_ok(p, fio_parse_rate(key, value, true, &pc->rate_iops, err, sizeof(err)), err);
	case CONFIG_SPECIAL_DIRECTORY:
		return set_directory(p, pc, value);
	case CONFIG_SPECIAL_FILENAME:
		return set_filename(p, pc, value);
	case CONFIG_SPECIAL_DIRECT:
		return set_direct(p, key, value, true);
	case CONFIG_SPECIAL_BUFFERED:
		return set_direct(p, key, value, false);
	case CONFIG_SPECIAL_RWMIXWRITE:
		if (!get_uint(p, key, value, 0, 100, &v)) {
			return false;
		}
		p->rwmixwrite = (unsigned)v;
		p->rwmixwrite_line = p->line;
		return true;
	default:
		return false;
	}
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

static bool set_listen_address(struct parser *p, struct config *c, const char *key, const char *value)
{
	return valid_listen_address(p, key, value) && set_string(&c->listen_address, value) == 0;
}

static bool set_other_special(struct parser *p, const struct config_key *k, void *base, const char *key,
			      const char *value)
{
	struct config *c = base;
	double d;
	int r;

	switch (k->special) {
	case CONFIG_SPECIAL_LISTEN:
		return set_listen_address(p, c, key, value);
	case CONFIG_SPECIAL_STATE_DIRECTORY:
		if (value[0] != '/') {
			add_error(p, p->line,
				  "invalid value '%s' for state_directory: expected an absolute path", value);
			return false;
		}
		return set_string(&c->state_directory, value) == 0;
	case CONFIG_SPECIAL_LOG_LEVEL:
		r = log_level_from_string(value);
		if (r < 0) {
			add_error(p, p->line,
				  "invalid value '%s' for log_level: expected error, warning, info or debug",
				  value);
			return false;
		}
		c->log_level = r;
		return true;
	case CONFIG_SPECIAL_REGEX:
		return check_regex(p, key, value) &&
		       set_string((char **)((char *)base + k->offset), value) == 0;
	case CONFIG_SPECIAL_CREDIT_RATE:
		if (parse_double(value, &d) < 0 || d <= 0.0) {
			add_error(p, p->line,
				  "invalid value '%s' for credit_rate: expected a positive number of credits "
				  "per second",
				  value);
			return false;
		}
		((struct device_config *)base)->credit_rate = d;
		return true;
	default:
		return false;
	}
}

/* Remember where a probe's budget keys and interval were set. */
static void record_key_line(struct probe_config *pc, unsigned seen, unsigned line)
{
	static const struct {
		unsigned bit;
		size_t offset;
	} map[] = {
	    {CONFIG_SEEN_RUNTIME, offsetof(struct probe_key_lines, runtime)},
	    {CONFIG_SEEN_TIME_BASED, offsetof(struct probe_key_lines, time_based)},
	    {CONFIG_SEEN_LOOPS, offsetof(struct probe_key_lines, loops)},
	    {CONFIG_SEEN_NUMBER_IOS, offsetof(struct probe_key_lines, number_ios)},
	    {CONFIG_SEEN_RAMP, offsetof(struct probe_key_lines, ramp_time)},
	    {CONFIG_SEEN_STARTDELAY, offsetof(struct probe_key_lines, startdelay)},
	    {CONFIG_SEEN_INTERVAL, offsetof(struct probe_key_lines, interval)},
	};

	for (size_t i = 0; i < ELEMENTSOF(map); i++) {
		if (seen & map[i].bit) {
			*(unsigned *)((char *)&pc->lines + map[i].offset) = line;
		}
	}
}

static void note_ignored(struct parser *p, const char *key)
{
	size_t n = strlen(p->ignored);

	if (strstr(p->ignored, "...")) {
		return;
	}
	if (n + strlen(key) + 8 >= sizeof(p->ignored)) {
		snprintf(p->ignored + n, sizeof(p->ignored) - n, ", ...");
		return;
	}
	snprintf(p->ignored + n, sizeof(p->ignored) - n, "%s%s", n ? ", " : "", key);
}

static void handle_key(struct parser *p, const struct config_key *k, const char *key, const char *value)
{
	unsigned before = p->seen;
	void *base;
	bool ok;

	if (k->cls == CONFIG_KEY_IGNORED) {
		note_ignored(p, key);
		return;
	}
	if (k->cls == CONFIG_KEY_REFUSED) {
		if (!config_key_value_is_off(k, value)) {
			add_error(p, p->line, "%s=%s is refused: %s", key, value, k->text);
		}
		return;
	}
	base = key_target(p, k);
	if (k->kind != CONFIG_KIND_SPECIAL) {
		ok = set_generic(p, k, base, key, value);
	} else if (k->scope == CONFIG_SCOPE_PROBE) {
		ok = set_probe_special(p, k, base, key, value);
	} else {
		ok = set_other_special(p, k, base, key, value);
	}
	if (!ok) {
		return;
	}
	p->seen |= k->seen;
	if (p->kind == SECTION_PROBE) {
		p->explicit_seen |= p->seen & ~before;
	}
	if (k->seen & CONFIG_SEEN_HISTORY) {
		p->history_line = p->line;
	}
	if (k->scope == CONFIG_SCOPE_PROBE) {
		record_key_line(base, k->seen, p->line);
	}
}

/* The valid keys of `scope`, as one string the caller frees (NULL: no memory). */
static char *keys_list(enum config_key_scope scope)
{
	int n = config_keys_list(scope, NULL, 0);
	char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;

	if (s) {
		config_keys_list(scope, s, (size_t)n + 1);
	}
	return s;
}

/* "unknown key" with the keys that are valid where it was found. */
static void unknown_key(struct parser *p, const char *key)
{
	const struct config_key *elsewhere = config_key_find_any(key);
	_cleanup_free_ char *list = NULL, *probe = NULL;

	if (elsewhere && elsewhere->scope == CONFIG_SCOPE_GLOBAL) {
		add_error(p, p->line, "key '%s' belongs in [global], not in [%s]", key, p->section);
		return;
	}
	if (elsewhere && elsewhere->scope == CONFIG_SCOPE_DEVICE) {
		add_error(p, p->line, "key '%s' belongs in a [device NAME] section, not in [%s]", key,
			  p->section);
		return;
	}
	probe = keys_list(CONFIG_SCOPE_PROBE);
	if (p->kind == SECTION_GLOBAL) {
		list = keys_list(CONFIG_SCOPE_GLOBAL);
		add_error(p, p->line,
			  "unknown key '%s' in [global]: valid keys are the global keys (%s) and probe "
			  "defaults (%s)",
			  key, list ? list : "...", probe ? probe : "...");
	} else if (p->kind == SECTION_PROBE) {
		add_error(p, p->line,
			  "unknown key '%s' in probe [%s]: valid keys are %s; fio's reporting keys are "
			  "accepted and ignored, see iopsd.conf(5)",
			  key, p->section, probe ? probe : "...");
	} else {
		list = keys_list(p->kind == SECTION_INSTANCE ? CONFIG_SCOPE_INSTANCE : CONFIG_SCOPE_DEVICE);
		add_error(p, p->line, "unknown key '%s' in [%s]: valid keys are %s", key, p->section,
			  list ? list : "...");
	}
}

/* Section bookkeeping ------------------------------------------------------- */

/* Where the current section set probe key `name`, else `fallback`. */
static unsigned key_line(struct parser *p, const char *name, unsigned fallback)
{
	const struct config_key *k = config_key_find(name, CONFIG_SCOPE_PROBE);
	unsigned l = k ? p->key_lines[config_key_index(k)] : 0;

	return l ? l : fallback;
}

static const char *format_bytes(char *buf, size_t len, uint64_t v)
{
	static const char units[] = "tgmk";

	for (int i = 0; i < 4; i++) {
		uint64_t u = 1ULL << (10 * (4 - i));

		if (v >= u && v % u == 0) {
			snprintf(buf, len, "%" PRIu64 "%c", v / u, units[i]);
			return buf;
		}
	}
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

static void probe_file_names(const struct probe_config *pc, char *buf, size_t len)
{
	if (pc->nrfiles > 1) {
		snprintf(buf, len, "%s/.iopsd/%s.0.dat to %s.%u.dat", pc->directory, pc->name, pc->name,
			 pc->nrfiles - 1);
	} else {
		snprintf(buf, len, "%s/.iopsd/%s.dat", pc->directory, pc->name);
	}
}

/* filename=: a block device stays a raw, read-only target; a file becomes a
 * probe file of iopsd's own on the same filesystem, because iopsd writes
 * only its own files (a notice says so). Returns true for the latter. */
static bool resolve_filename(struct parser *p, struct probe_config *pc)
{
	_cleanup_free_ char *path = NULL, *given = NULL;
	unsigned line = key_line(p, "filename", pc->line);
	enum fio_target kind;
	char err[512], names[1024], *slash;
	int r;

	r = fio_resolve_filename(pc->directory, pc->filename, &path, &kind, err, sizeof(err));
	if (r < 0) {
		add_error(p, line, "[%s]: %s", pc->name, r == -ENOMEM ? "out of memory" : err);
		return false;
	}
	given = TAKE_PTR(pc->filename);
	free(pc->directory);
	pc->directory = NULL;
	if (kind == FIO_TARGET_DEVICE) {
		pc->filename = TAKE_PTR(path);
		return false;
	}
	slash = strrchr(path, '/');
	slash[slash == path] = '\0';
	pc->directory = TAKE_PTR(path);
	probe_file_names(pc, names, sizeof(names));
	config_add_notice(p->cfg, line,
			  "[%s]: filename=%s is not a block device; iopsd writes only files of its own, so "
			  "the probe uses %s, on the same filesystem",
			  pc->name, given, names);
	return true;
}

/* The target: a directory, a raw device, or a file turned into a probe
 * file. Returns true when the probe file came from filename=. */
static bool finish_target(struct parser *p, struct probe_config *pc, unsigned seen)
{
	bool from_filename = false;

	if ((seen & CONFIG_SEEN_DIRECTORY) && (seen & CONFIG_SEEN_FILENAME) && pc->filename &&
	    pc->filename[0] == '/') {
		add_error(
		    p, pc->line,
		    "[%s]: directory= and filename= conflict: set one target, a directory for a probe file "
		    "or filename= for a raw block device (a relative filename= is a file in directory=)",
		    pc->name);
		return false;
	}
	if (!pc->directory && !pc->filename) {
		add_error(p, pc->line,
			  "[%s]: missing target: set directory= (a mounted filesystem) or filename= (a block "
			  "device, read-only)",
			  pc->name);
		return false;
	}
	if (pc->filename) {
		from_filename = resolve_filename(p, pc);
	}
	if (pc->filename && probe_rw_writes(pc->rw)) {
		add_error(p, pc->line,
			  "[%s]: rw=%s writes, but filename=%s is a raw device: iopsd never writes a raw "
			  "device; use a read mode or directory=",
			  pc->name, probe_rw_to_string(pc->rw), pc->filename);
	}
	if (pc->filename && pc->nrfiles > 1) {
		add_error(p, key_line(p, "nrfiles", pc->line),
			  "[%s]: nrfiles=%u needs probe files: filename=%s is one raw device", pc->name,
			  pc->nrfiles, pc->filename);
	}
	return from_filename;
}

/* rwmixwrite= sets rwmixread to the rest; both must agree. */
static void apply_rwmixwrite(struct parser *p, struct probe_config *pc, unsigned seen)
{
	if (!(seen & CONFIG_SEEN_RWMIXWRITE)) {
		return;
	}
	if ((seen & CONFIG_SEEN_RWMIXREAD) && pc->rwmixread + p->rwmixwrite != 100) {
		add_error(p, p->rwmixwrite_line,
			  "rwmixread=%u and rwmixwrite=%u conflict: they must add up to 100", pc->rwmixread,
			  p->rwmixwrite);
	} else {
		pc->rwmixread = 100 - p->rwmixwrite;
	}
}

static void finish_conflicts(struct parser *p, struct probe_config *pc, unsigned seen)
{
	const char *where = pc->name;

	apply_rwmixwrite(p, pc, seen);
	if ((seen & (CONFIG_SEEN_RWMIXREAD | CONFIG_SEEN_RWMIXWRITE)) && pc->rw != PROBE_RW_RW &&
	    pc->rw != PROBE_RW_RANDRW) {
		add_error(p, pc->line,
			  "[%s]: rwmixread/rwmixwrite only apply to rw=rw or rw=randrw, not rw=%s", where,
			  probe_rw_to_string(pc->rw));
	}
	if ((seen & CONFIG_SEEN_FSYNC) && pc->fsync > 0 && !probe_rw_writes(pc->rw)) {
		add_error(p, pc->line, "[%s]: fsync=%u conflicts with rw=%s, which never writes", where,
			  pc->fsync, probe_rw_to_string(pc->rw));
	}
	if (pc->ceiling && (seen & (CONFIG_SEEN_RATE_IOPS | CONFIG_SEEN_RATE))) {
		add_error(p, pc->line,
			  "[%s]: ceiling=1 and rate_iops conflict: a ceiling probe runs unthrottled", where);
	}
	if ((pc->ioengine == PROBE_ENGINE_SYNC || pc->ioengine == PROBE_ENGINE_PSYNC) && pc->iodepth > 1) {
		add_error(
		    p, pc->line,
		    "[%s]: ioengine=%s is synchronous and conflicts with iodepth=%u; use ioengine=libaio",
		    where, probe_engine_to_string(pc->ioengine), pc->iodepth);
	}
	if (pc->offset % 512 != 0 || pc->offset_increment % 512 != 0) {
		add_error(p, key_line(p, "offset", key_line(p, "offset_increment", pc->line)),
			  "[%s]: offset= and offset_increment= must be multiples of 512 bytes (O_DIRECT)",
			  where);
	}
	if (pc->blockalign % 512 != 0) {
		add_error(p, key_line(p, "blockalign", pc->line),
			  "[%s]: blockalign=%" PRIu64 " is not a multiple of 512 bytes", where,
			  pc->blockalign);
	}
}

/* Block sizes, file sizes and regions. */
static void finish_layout(struct parser *p, struct probe_config *pc, unsigned seen)
{
	struct fio_layout l;
	char err[512];

	fio_resolve_bs(pc);
	if (seen & CONFIG_SEEN_FILESIZE) {
		/* fio: with filesize=, size= is only the default of io_size= */
		if ((seen & CONFIG_SEEN_SIZE) && !(seen & CONFIG_SEEN_IO_SIZE)) {
			pc->io_size = pc->size;
		}
		pc->size = pc->filesize * pc->nrfiles;
	}
	if (pc->directory && pc->size == 0) {
		pc->size = DEFAULT_PROBE_SIZE * pc->nrfiles;
	}
	if (pc->size && !pc->offset_increment && !(seen & CONFIG_SEEN_FILESIZE) &&
	    pc->size / pc->nrfiles < pc->bs * pc->numjobs) {
		add_error(p, pc->line,
			  "[%s]: size=%" PRIu64 " is smaller than bs*numjobs=%" PRIu64
			  "%s: each job needs at least one block",
			  pc->name, pc->size, pc->bs * pc->numjobs, pc->nrfiles > 1 ? " per file" : "");
		return;
	}
	if (pc->directory && fio_layout(pc, 0, &l, err, sizeof(err)) < 0) {
		add_error(p, pc->line, "[%s]: %s", pc->name, err);
	}
}

/* Where iopsd lays a job out differently from fio, say so. */
static void notice_sharing(struct parser *p, const struct probe_config *pc, unsigned seen, bool from_filename)
{
	bool is_seq = !probe_rw_is_random(pc->rw) && pc->rw != PROBE_RW_REWRITE;
	char a[32], b[32], c[32];

	if (pc->numjobs < 2 || pc->offset_increment) {
		return;
	}
	if (pc->directory && !from_filename && (seen & (CONFIG_SEEN_SIZE | CONFIG_SEEN_FILESIZE))) {
		config_add_notice(p->cfg, key_line(p, "size", key_line(p, "filesize", pc->line)),
				  "[%s]: size=%s is per job in fio (%u jobs lay out %s in all); iopsd's %u "
				  "jobs share the probe's %s%s",
				  pc->name, format_bytes(a, sizeof(a), pc->size), pc->numjobs,
				  format_bytes(b, sizeof(b), pc->size * pc->numjobs), pc->numjobs,
				  format_bytes(c, sizeof(c), pc->size),
				  is_seq ? ", each sequential job in its own part" : "");
	} else if (is_seq) {
		config_add_notice(
		    p->cfg, pc->line,
		    "[%s]: iopsd's %u sequential jobs each take their own part of the region; fio's would "
		    "all start at its beginning (offset_increment= makes the layout explicit)",
		    pc->name, pc->numjobs);
	}
}

static void finish_probe(struct parser *p, struct probe_config *pc, unsigned seen)
{
	size_t errors = error_count(p);
	bool from_filename = finish_target(p, pc, seen);

	finish_conflicts(p, pc, seen);
	if (!(seen & CONFIG_SEEN_RUNTIME) && !(seen & CONFIG_SEEN_NUMBER_IOS)) {
		pc->runtime_usec = pc->ceiling ? 5ULL * USEC_PER_SEC : USEC_PER_SEC;
	}
	if (error_count(p) == errors) {
		finish_layout(p, pc, seen);
	}
	if (error_count(p) == errors) {
		notice_sharing(p, pc, seen, from_filename);
	}
}

static void end_section(struct parser *p)
{
	struct config *c = p->cfg;

	if (p->ignored[0] && p->kind != SECTION_NONE) {
		config_add_notice(
		    c, p->section_line,
		    "[%s]: fio keys accepted and ignored (they do not change what is measured): %s",
		    p->section, p->ignored);
	}
	if (p->kind == SECTION_PROBE && c->n_probes > 0) {
		finish_probe(p, &c->probes[c->n_probes - 1], p->seen);
	} else if (p->kind == SECTION_GLOBAL) {
		apply_rwmixwrite(p, &p->defaults, p->seen);
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

static void begin_device(struct parser *p, const char *name, unsigned line)
{
	struct config *c = p->cfg;
	const char *dev = name + (name[6] ? 7 : 6);

	while (*dev == ' ') {
		dev++;
	}
	p->kind = SECTION_NONE;
	if (!*dev) {
		add_error(p, line,
			  "[device] needs a name: [device NAME] with a device name (nvme1n1) or a mount "
			  "point (/data)");
		return;
	}
	for (size_t i = 0; i < c->n_devices; i++) {
		if (strcmp(c->devices[i].name, dev) == 0) {
			add_error(p, line, "duplicate section [device %s]: first defined on line %u", dev,
				  c->devices[i].line);
			return;
		}
	}
	if (c->n_devices >= CONFIG_MAX_DEVICES) {
		add_error(p, line, "too many [device] sections: at most %d", CONFIG_MAX_DEVICES);
		return;
	}
	c->devices[c->n_devices++] = (struct device_config){.name = strdup(dev), .line = line};
	p->kind = SECTION_DEVICE;
}

static void begin_instance(struct parser *p, unsigned line)
{
	struct instance_config *ic = &p->cfg->instance;

	p->kind = SECTION_NONE;
	if (ic->is_declared) {
		add_error(p, line, "duplicate section [instance]: first defined on line %u", ic->line);
		return;
	}
	ic->is_declared = true;
	ic->line = line;
	p->kind = SECTION_INSTANCE;
}

static void begin_probe(struct parser *p, const char *name, unsigned line)
{
	struct config *c = p->cfg;
	struct probe_config *pc;

	p->kind = SECTION_NONE;
	if (!valid_probe_name(name)) {
		add_error(p, line, "invalid probe name [%s]: use 1 to 64 letters, digits, '-', '_' or '.'",
			  name);
		return;
	}
	for (size_t i = 0; i < c->n_probes; i++) {
		if (strcmp(c->probes[i].name, name) == 0) {
			add_error(p, line, "duplicate probe [%s]: first defined on line %u", name,
				  c->probes[i].line);
			return;
		}
	}
	if (c->n_probes >= CONFIG_MAX_PROBES) {
		add_error(p, line, "too many probes: at most %d", CONFIG_MAX_PROBES);
		return;
	}
	pc = &c->probes[c->n_probes++];
	*pc = p->defaults;
	pc->name = strdup(name);
	pc->line = line;
	pc->directory = p->defaults.directory ? strdup(p->defaults.directory) : NULL;
	pc->filename = p->defaults.filename ? strdup(p->defaults.filename) : NULL;
	p->seen = p->defaults_seen & INHERITED_SEEN;
	p->kind = SECTION_PROBE;
}

static void begin_section(struct parser *p, const char *name, unsigned line)
{
	end_section(p);
	snprintf(p->section, sizeof(p->section), "%s", name);
	p->section_line = line;
	p->seen = 0;
	p->explicit_seen = 0;
	p->rwmixwrite = 0;
	p->ignored[0] = '\0';
	memset(p->key_lines, 0, config_keys_count * sizeof(*p->key_lines));

	if (strcmp(name, "global") == 0) {
		p->kind = SECTION_GLOBAL;
		p->seen = p->defaults_seen;
	} else if (strncmp(name, "device ", 7) == 0 || strcmp(name, "device") == 0) {
		begin_device(p, name, line);
	} else if (strcmp(name, "instance") == 0) {
		begin_instance(p, line);
	} else {
		begin_probe(p, name, line);
	}
}

static const struct config_key *lookup_key(struct parser *p, const char *key)
{
	const struct config_key *k;

	switch (p->kind) {
	case SECTION_GLOBAL:
		k = config_key_find(key, CONFIG_SCOPE_GLOBAL);
		return k ? k : config_key_find(key, CONFIG_SCOPE_PROBE);
	case SECTION_PROBE:
		return config_key_find(key, CONFIG_SCOPE_PROBE);
	case SECTION_DEVICE:
		return config_key_find(key, CONFIG_SCOPE_DEVICE);
	case SECTION_INSTANCE:
		return config_key_find(key, CONFIG_SCOPE_INSTANCE);
	default:
		return NULL;
	}
}

/* fio's reserved keywords, as fio computes them */
static bool reserved_keyword(const char *name, size_t len, char *buf, size_t size)
{
	long v;

	if (len == 8 && strncmp(name, "pagesize", len) == 0) {
		v = sysconf(_SC_PAGESIZE);
	} else if (len == 5 && strncmp(name, "ncpus", len) == 0) {
		v = sysconf(_SC_NPROCESSORS_ONLN);
	} else if (len == 9 && strncmp(name, "mb_memory", len) == 0) {
		v = (long)((uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE) /
			   (1024 * 1024));
	} else {
		return false;
	}
	snprintf(buf, size, "%ld", v);
	return true;
}

/* A value as fio reads it: ${NAME} is the environment variable NAME, and
 * $pagesize, $ncpus and $mb_memory are fio's reserved keywords. fio reads
 * an unset variable as empty; here it is an error that names it, since an
 * empty filename or rate would only fail later, and less clearly. NULL
 * with an error recorded; the value itself when there is nothing to do. */
static const char *expand_value(struct parser *p, const char *key, const char *value, char **ret_buf)
{
	const char *s = value;
	bool has_error = false;
	size_t size;
	FILE *f;

	*ret_buf = NULL;
	if (!strchr(value, '$')) {
		return value;
	}
	f = open_memstream(ret_buf, &size);
	if (!f) {
		add_error(p, p->line, "out of memory");
		return NULL;
	}
	while (*s && !has_error) {
		const char *end;
		char num[32];
		size_t n;

		if (s[0] == '$' && s[1] == '{' && (end = strchr(s + 2, '}'))) {
			_cleanup_free_ char *name = strndup(s + 2, (size_t)(end - s - 2));
			const char *v = name && *name ? getenv(name) : NULL;

			if (!name) {
				add_error(p, p->line, "out of memory");
			} else if (!v) {
				add_error(p, p->line, "%s=%s: ${%s} is not set in iopsd's environment", key,
					  value, name);
			}
			has_error = !v;
			if (v) {
				fputs(v, f);
			}
			s = end + 1;
		} else if (s[0] == '$' && (n = strspn(s + 1, "abcdefghijklmnopqrstuvwxyz_")) > 0 &&
			   reserved_keyword(s + 1, n, num, sizeof(num))) {
			fputs(num, f);
			s += n + 1;
		} else {
			/* up to the next $ (a $ that starts neither is kept) */
			n = strcspn(s + 1, "$") + 1;
			fwrite(s, 1, n, f);
			s += n;
		}
	}
	if (fclose(f) != 0 && !has_error) {
		add_error(p, p->line, "out of memory");
		has_error = true;
	}
	if (has_error) {
		free(*ret_buf);
		*ret_buf = NULL;
		return NULL;
	}
	return *ret_buf;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct parser *p = user;
	const struct config_key *k;
	_cleanup_free_ char *expanded = NULL;
	size_t i;

	(void)section;
	if (p->kind == SECTION_NONE) {
		/* keys outside a section, or in a section already reported */
		if (p->section[0] == '\0') {
			add_error(p, p->line,
				  "key '%s' outside of a section: put it under [global] or a probe section",
				  key);
		}
		return 1;
	}
	k = lookup_key(p, key);
	if (!k) {
		unknown_key(p, key);
		return 1;
	}
	/* by table entry, so that bs= and blocksize= are one key however long
	 * the section */
	i = config_key_index(k);
	if (p->key_lines[i]) {
		add_error(p, p->line, "duplicate key '%s' in [%s]: first set on line %u", key, p->section,
			  p->key_lines[i]);
		return 1;
	}
	p->key_lines[i] = p->line;
	value = expand_value(p, key, value, &expanded);
	if (value) {
		handle_key(p, k, key, value);
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

uint64_t config_probe_file_bytes(const struct probe_config *pc)
{
	uint64_t files = pc->filename ? 1 : pc->nrfiles;

	/* the run's fd, and a read and a write position per job */
	return files * (sizeof(int) + 2 * sizeof(uint64_t) * pc->numjobs);
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
		add_error(p, p->history_line,
			  "history=%s at sample_interval=%s needs %.1f MiB per device, more than "
			  "max_history_memory=%.1f MiB",
			  format_duration(a, sizeof(a), c->history_usec),
			  format_duration(b, sizeof(b), interval), mib(ring), mib(c->max_history_memory));
	}
	for (size_t i = 0; i < c->n_probes; i++) {
		const struct probe_config *pc = &c->probes[i];

		/* every job holds iodepth buffers of bs bytes while it runs, and
		 * a run a descriptor per file and each job its positions in it */
		buffers += pc->bs * pc->iodepth * pc->numjobs + config_probe_file_bytes(pc);
		if (buffers > c->max_probe_memory) {
			add_error(
			    p, pc->line,
			    "[%s]: the probes up to here need %.1f MiB of I/O buffers and file state (bs * "
			    "iodepth * numjobs, and nrfiles * (4 + 16 * numjobs) bytes, summed), more than "
			    "max_probe_memory=%.1f MiB",
			    pc->name, mib(buffers), mib(c->max_probe_memory));
			break;
		}
	}
}

/* A probe that sets interval= itself must fit its run into it; one that
 * takes probe_interval's is fitted to it later (config_fit_schedule). */
static void check_interval(struct parser *p, const struct probe_config *pc)
{
	char a[32], b[32];

	if (pc->lines.interval == 0 || pc->runtime_usec + pc->ramp_usec <= pc->interval_usec) {
		return;
	}
	if (pc->ramp_usec) {
		char c[32];

		add_error(p, pc->line,
			  "[%s]: ramp_time=%s plus runtime=%s is longer than interval=%s: a probe must "
			  "finish before its next run",
			  pc->name, format_duration(c, sizeof(c), pc->ramp_usec),
			  format_duration(a, sizeof(a), pc->runtime_usec),
			  format_duration(b, sizeof(b), pc->interval_usec));
		return;
	}
	add_error(p, pc->line,
		  "[%s]: runtime=%s is longer than interval=%s: a probe must finish before its next run",
		  pc->name, format_duration(a, sizeof(a), pc->runtime_usec),
		  format_duration(b, sizeof(b), pc->interval_usec));
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
		check_interval(p, pc);
	}
	if (c->instance.is_declared && !c->instance.iops_limit && !c->instance.throughput_limit) {
		add_error(
		    p, c->instance.line,
		    "[instance] needs iops_limit or throughput_limit: the limits of the machine over all "
		    "its volumes");
	}
	for (size_t i = 0; i < c->n_devices; i++) {
		struct device_config *dc = &c->devices[i];
		bool any = dc->burst_iops || dc->burst_credits || dc->credit_rate > 0;
		bool all = dc->burst_iops && dc->burst_credits && dc->credit_rate > 0;

		if (any && !all) {
			add_error(p, dc->line,
				  "[device %s]: burst_iops, burst_credits and credit_rate go together: set "
				  "all three or none",
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
	p.key_lines = calloc(config_keys_count, sizeof(*p.key_lines));
	if (!p.key_lines) {
		config_free(c);
		return -ENOMEM;
	}
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
	free(p.key_lines);

	if (error_count(&p) > 0) {
		config_free(c);
		return -EINVAL;
	}
	*ret = c;
	return 0;
}

int config_load_string(const char *name, const char *text, struct config_errors *errs, struct config **ret)
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
	int n = snprintf(
	    buf, len, "%s: %zu probe%s, %zu device limit%s, listen %s, sample every %" PRIu64 "ms", c->path,
	    c->n_probes, c->n_probes == 1 ? "" : "s", c->n_devices, c->n_devices == 1 ? "" : "s",
	    c->listen_address, c->sample_interval_usec / USEC_PER_MSEC);
	return n < 0 ? -EINVAL : n;
}
