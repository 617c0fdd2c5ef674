/* Configuration loader: INI through inih (ini.c), driven by the key table in
 * keys.c (fio's key names and classes), strict validation with FILE:LINE
 * messages. This file holds the public API and the load's outline. */
#include "config.h"
#include "parser.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "macro.h"
#include "units.h"

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

void parser_error(struct parser *p, unsigned line, const char *fmt, ...)
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

size_t parser_error_count(const struct parser *p)
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
	c->max_history_points = 12000;
	*ret = c;
	return 0;
}

static int load(const char *name, const char *text, const char *job_directory, struct config_errors *errs,
		struct config **ret)
{
	struct parser p = {.file = name, .errs = errs, .text = text, .job_directory = job_directory};
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

	r = config_ini_read(&p);
	config_section_end(&p);
	if (r > 0) {
		parser_error(&p, (unsigned)r, "syntax error: expected [section], key=value or a comment");
	} else if (r < 0) {
		parser_error(&p, 0, "failed to parse: out of memory");
	}
	config_checks_run(&p);
	free(p.defaults.directory);
	free(p.defaults.filename);
	free(p.key_lines);

	if (parser_error_count(&p) > 0) {
		config_free(c);
		return -EINVAL;
	}
	*ret = c;
	return 0;
}

int config_load_job_string(const char *name, const char *text, const char *job_directory,
			   struct config_errors *errs, struct config **ret)
{
	struct config_errors local = {0};
	int r;

	r = load(name, text, job_directory, errs ? errs : &local, ret);
	config_errors_clear(&local);
	return r;
}

int config_load_string(const char *name, const char *text, struct config_errors *errs, struct config **ret)
{
	return config_load_job_string(name, text, NULL, errs, ret);
}

int config_load_file(const char *path, struct config_errors *errs, struct config **ret)
{
	return config_load_job_file(path, NULL, errs, ret);
}

int config_load_job_file(const char *path, const char *job_directory, struct config_errors *errs,
			 struct config **ret)
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

		parser_error(&p, 0, "file contains a NUL byte: not a text configuration");
		return -EINVAL;
	}
	text[len] = '\0';
	return config_load_job_string(path, text, job_directory, errs, ret);
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

bool config_probe_owns_file(const struct probe_config *pc, const char *stem)
{
	size_t n = strlen(pc->name);
	char *end;
	unsigned long k;

	if (pc->nrfiles <= 1) {
		return strcmp(pc->name, stem) == 0;
	}
	if (strncmp(stem, pc->name, n) != 0 || stem[n] != '.' || stem[n + 1] < '0' || stem[n + 1] > '9' ||
	    (stem[n + 1] == '0' && stem[n + 2] != '\0')) {
		return false;
	}
	k = strtoul(stem + n + 1, &end, 10);
	return *end == '\0' && k < pc->nrfiles;
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
