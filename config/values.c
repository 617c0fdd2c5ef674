/* Key values: each key's text checked and stored, by the class the key
 * table gives it, with "invalid value" messages. */
#include "parser.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <regex.h>
#include <strings.h>
#include <syslog.h>

#include "fio.h"
#include "log.h"
#include "netaddr.h"
#include "units.h"

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
		parser_error(p, p->line, "invalid value '%s' for %s: expected a size such as 4k, 100m, 64MiB",
			     value, key);
		return false;
	}
	if (v < min || v > max) {
		parser_error(p, p->line,
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
		parser_error(p, p->line,
			     "invalid value '%s' for %s: expected a whole number from %" PRIu64
			     " to %" PRIu64,
			     value, key, min, max);
		return false;
	}
	if (r < 0 || v < min || v > max) {
		parser_error(p, p->line, "%s=%s is out of range: must be from %" PRIu64 " to %" PRIu64, key,
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
		parser_error(p, p->line,
			     "invalid value '%s' for %s: expected a duration such as 500ms, 10s, 1h", value,
			     key);
		return false;
	}
	if (v < min || v > max) {
		parser_error(p, p->line, "%s=%s is out of range: must be from %s to %s", key, value,
			     format_duration(a, sizeof(a), min), format_duration(b, sizeof(b), max));
		return false;
	}
	*ret = v;
	return true;
}

static bool get_bool(struct parser *p, const char *key, const char *value, bool *ret)
{
	if (parse_bool(value, ret) < 0) {
		parser_error(p, p->line, "invalid value '%s' for %s: expected 0 or 1", value, key);
		return false;
	}
	return true;
}

static bool get_ratio(struct parser *p, const char *key, const char *value, double *ret)
{
	double v;

	if (parse_double(value, &v) < 0) {
		parser_error(p, p->line, "invalid value '%s' for %s: expected a number such as 0.95", value,
			     key);
		return false;
	}
	if (v <= 0.0 || v > 1.0) {
		parser_error(p, p->line, "%s=%s is out of range: must be greater than 0 and at most 1", key,
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
		parser_error(p, p->line,
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
		parser_error(p, p->line, "%s", r == -ENOMEM ? "out of memory" : err);
		return false;
	}
	return true;
}

/* --once: a relative directory= is in the working directory, as in fio. */
static int set_job_directory(struct parser *p, struct probe_config *pc, const char *value)
{
	char *joined;

	while (value[0] == '.' && value[1] == '/') {
		value += 2;
	}
	if (value[0] == '\0' || strcmp(value, ".") == 0) {
		return set_string(&pc->directory, p->job_directory);
	}
	if (asprintf(&joined, "%s/%s", p->job_directory, value) < 0) {
		return -ENOMEM;
	}
	free(pc->directory);
	pc->directory = joined;
	return 0;
}

static bool set_directory(struct parser *p, struct probe_config *pc, const char *value)
{
	if (value[0] != '/' && !p->job_directory) {
		parser_error(p, p->line, "invalid value '%s' for directory: expected an absolute path",
			     value);
		return false;
	}
	if ((value[0] == '/' ? set_string(&pc->directory, value) : set_job_directory(p, pc, value)) < 0) {
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
		parser_error(p, p->line, "invalid value '' for filename: expected a block device or a file");
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
		parser_error(p, p->line,
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
	char err[NETADDR_HOST_MAX + 64];

	if (netaddr_parse_list_explain(value, &l, err, sizeof(err)) < 0) {
		parser_error(p, p->line, "invalid value '%s' for %s: %s", value, key, err);
		return false;
	}
	return true;
}

static bool set_listen_address(struct parser *p, struct config *c, const char *key, const char *value)
{
	return valid_listen_address(p, key, value) && set_string(&c->listen_address, value) == 0;
}

/* volume_type= (gp2 ... standard) and throughput= (the EBS CSI driver's
 * MiB/s when bare, else a size per second). */
static bool set_provider_special(struct parser *p, const struct config_key *k, void *base, const char *value)
{
	struct device_provider *pv = &((struct device_config *)base)->provider;
	uint64_t v;
	int r;

	if (k->special == CONFIG_SPECIAL_VOLUME_TYPE) {
		r = volume_type_from_string(value);
		if (r < 0) {
			parser_error(
			    p, p->line,
			    "invalid value '%s' for volume_type: expected gp2, gp3, io1, io2, st1, sc1 or "
			    "standard",
			    value);
			return false;
		}
		pv->volume_type = r;
		return true;
	}
	r = parse_size(value, &v);
	if (r == 0 && strspn(value, "0123456789") == strlen(value)) {
		r = v <= (1ULL << 30) ? 0 : -ERANGE;
		v *= 1024 * 1024;
	}
	if (r < 0 || v == 0) {
		parser_error(
		    p, p->line,
		    "invalid value '%s' for throughput: expected MiB/s (125, as the EBS CSI driver's "
		    "StorageClass) or a size per second (125m)",
		    value);
		return false;
	}
	pv->throughput = v;
	return true;
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
			parser_error(p, p->line,
				     "invalid value '%s' for state_directory: expected an absolute path",
				     value);
			return false;
		}
		return set_string(&c->state_directory, value) == 0;
	case CONFIG_SPECIAL_LOG_LEVEL:
		r = log_level_from_string(value);
		if (r < 0) {
			parser_error(
			    p, p->line,
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
			parser_error(
			    p, p->line,
			    "invalid value '%s' for credit_rate: expected a positive number of credits "
			    "per second",
			    value);
			return false;
		}
		((struct device_config *)base)->credit_rate = d;
		return true;
	case CONFIG_SPECIAL_VOLUME_TYPE:
	case CONFIG_SPECIAL_PROVISIONED_THROUGHPUT:
		return set_provider_special(p, k, base, value);
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

void config_value_set(struct parser *p, const struct config_key *k, const char *key, const char *value)
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
			parser_error(p, p->line, "%s=%s is refused: %s", key, value, k->text);
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
	if (strcmp(k->name, "listen_address") == 0) {
		/* the one setting a reload cannot apply (the web config and the
		 * connection limits it does) */
		(void)config_add_notice(p->cfg, p->line,
					"listen_address takes effect when iopsd starts: a reload keeps the "
					"addresses it serves on");
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
void config_value_unknown_key(struct parser *p, const char *key)
{
	const struct config_key *elsewhere = config_key_find_any(key);
	_cleanup_free_ char *list = NULL, *probe = NULL;

	if (elsewhere && elsewhere->scope == CONFIG_SCOPE_GLOBAL) {
		parser_error(p, p->line, "key '%s' belongs in [global], not in [%s]", key, p->section);
		return;
	}
	if (elsewhere && elsewhere->scope == CONFIG_SCOPE_DEVICE) {
		parser_error(p, p->line, "key '%s' belongs in a [device NAME] section, not in [%s]%s", key,
			     p->section,
			     strcmp(p->section, "device") == 0
				 ? ", which has no name: a job named device, as in fio; name the device "
				   "([device nvme1n1] or [device /data])"
				 : "");
		return;
	}
	probe = keys_list(CONFIG_SCOPE_PROBE);
	if (p->kind == SECTION_GLOBAL) {
		list = keys_list(CONFIG_SCOPE_GLOBAL);
		parser_error(p, p->line,
			     "unknown key '%s' in [global]: valid keys are the global keys (%s) and probe "
			     "defaults (%s)",
			     key, list ? list : "...", probe ? probe : "...");
	} else if (p->kind == SECTION_PROBE) {
		parser_error(p, p->line,
			     "unknown key '%s' in probe [%s]: valid keys are %s; fio's reporting keys are "
			     "accepted and ignored, see iopsd.conf(5)",
			     key, p->section, probe ? probe : "...");
	} else {
		list = keys_list(p->kind == SECTION_INSTANCE ? CONFIG_SCOPE_INSTANCE : CONFIG_SCOPE_DEVICE);
		parser_error(p, p->line, "unknown key '%s' in [%s]: valid keys are %s", key, p->section,
			     list ? list : "...");
	}
}

/* Section bookkeeping ------------------------------------------------------- */

/* Where the current section set probe key `name`, else `fallback`. */
