/* Sections: [global], [device NAME], [instance] and probe sections opened
 * and finished (a probe's target, conflicting keys, file layout). */
#include "parser.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

#include "fio.h"
#include "units.h"

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
		parser_error(p, line, "[%s]: %s", pc->name, r == -ENOMEM ? "out of memory" : err);
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
			  "the probe uses %s, on the same filesystem%s",
			  pc->name, given, names, pc->is_scratch ? ", and removes it at the end" : "");
	return true;
}

/* --once, a job with no target: fio runs it in the working directory, and
 * so does iopsd, in a probe file of its own that the run removes. */
static bool target_working_directory(struct parser *p, struct probe_config *pc)
{
	char names[1024];

	pc->directory = strdup(p->job_directory);
	if (!pc->directory) {
		parser_error(p, pc->line, "out of memory");
		return false;
	}
	pc->is_scratch = true;
	probe_file_names(pc, names, sizeof(names));
	config_add_notice(p->cfg, pc->line,
			  "[%s]: no directory= or filename=: --once runs the job in the working directory, "
			  "as fio does; iopsd writes only %s there and removes it at the end",
			  pc->name, names);
	return true;
}

/* The target: a directory, a raw device, or a file turned into a probe
 * file. Returns true when the probe file came from filename=. */
static bool finish_target(struct parser *p, struct probe_config *pc, unsigned seen)
{
	bool from_filename = false;

	if (p->job_directory && !pc->directory && !pc->filename) {
		target_working_directory(p, pc);
		return false;
	}
	if (p->job_directory && !pc->directory && pc->filename[0] != '/') {
		/* a relative filename= is a file in the working directory */
		pc->directory = strdup(p->job_directory);
		if (!pc->directory) {
			parser_error(p, pc->line, "out of memory");
			return false;
		}
		pc->is_scratch = true;
	}

	if ((seen & CONFIG_SEEN_DIRECTORY) && (seen & CONFIG_SEEN_FILENAME) && pc->filename &&
	    pc->filename[0] == '/') {
		parser_error(
		    p, pc->line,
		    "[%s]: directory= and filename= conflict: set one target, a directory for a probe file "
		    "or filename= for a raw block device (a relative filename= is a file in directory=)",
		    pc->name);
		return false;
	}
	if (!pc->directory && !pc->filename) {
		parser_error(
		    p, pc->line,
		    "[%s]: missing target: set directory= (a mounted filesystem) or filename= (a block "
		    "device, read-only)",
		    pc->name);
		return false;
	}
	if (pc->filename) {
		from_filename = resolve_filename(p, pc);
	}
	if (pc->filename && probe_rw_writes(pc->rw)) {
		parser_error(p, pc->line,
			     "[%s]: rw=%s writes, but filename=%s is a raw device: iopsd never writes a raw "
			     "device; use a read mode or directory=",
			     pc->name, probe_rw_to_string(pc->rw), pc->filename);
	}
	if (pc->filename && pc->nrfiles > 1) {
		parser_error(p, key_line(p, "nrfiles", pc->line),
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
		parser_error(p, p->rwmixwrite_line,
			     "rwmixread=%u and rwmixwrite=%u conflict: they must add up to 100",
			     pc->rwmixread, p->rwmixwrite);
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
		/* fio ignores the mix of a job that does not mix */
		config_add_notice(p->cfg, key_line(p, "rwmixread", key_line(p, "rwmixwrite", pc->line)),
				  "[%s]: rwmixread/rwmixwrite ignored, as fio ignores them: rw=%s does not "
				  "mix reads and writes",
				  where, probe_rw_to_string(pc->rw));
	}
	if ((seen & CONFIG_SEEN_FSYNC) && pc->fsync > 0 && !probe_rw_writes(pc->rw)) {
		parser_error(p, pc->line, "[%s]: fsync=%u conflicts with rw=%s, which never writes", where,
			     pc->fsync, probe_rw_to_string(pc->rw));
	}
	if (pc->ceiling && (seen & (CONFIG_SEEN_RATE_IOPS | CONFIG_SEEN_RATE))) {
		parser_error(p, pc->line,
			     "[%s]: ceiling=1 and rate_iops conflict: a ceiling probe runs unthrottled",
			     where);
	}
	if ((pc->ioengine == PROBE_ENGINE_SYNC || pc->ioengine == PROBE_ENGINE_PSYNC) && pc->iodepth > 1) {
		parser_error(
		    p, pc->line,
		    "[%s]: ioengine=%s is synchronous and conflicts with iodepth=%u; use ioengine=libaio",
		    where, probe_engine_to_string(pc->ioengine), pc->iodepth);
	}
	if (pc->offset % 512 != 0 || pc->offset_increment % 512 != 0) {
		parser_error(p, key_line(p, "offset", key_line(p, "offset_increment", pc->line)),
			     "[%s]: offset= and offset_increment= must be multiples of 512 bytes (O_DIRECT)",
			     where);
	}
	if (pc->blockalign % 512 != 0) {
		parser_error(p, key_line(p, "blockalign", pc->line),
			     "[%s]: blockalign=%" PRIu64 " is not a multiple of 512 bytes", where,
			     pc->blockalign);
	}
}

/* fio lays out size= for each job, iopsd's jobs share it: where that is
 * less than a block per job (and file), grow it to one, which is never
 * more than fio's own size * numjobs. Below one block fio refuses too. */
static int fit_size_to_jobs(struct parser *p, struct probe_config *pc)
{
	uint64_t want = pc->bs * pc->numjobs * pc->nrfiles;
	unsigned line = key_line(p, "size", pc->line);
	char a[32], b[32], c[32];

	if (pc->size / pc->nrfiles < pc->bs) {
		parser_error(p, line,
			     "[%s]: size=%" PRIu64 " is smaller than bs=%" PRIu64
			     "%s: each job needs at least one block (fio refuses it too)",
			     pc->name, pc->size, pc->bs, pc->nrfiles > 1 ? " per file" : "");
		return -EINVAL;
	}
	config_add_notice(p->cfg, line,
			  "[%s]: size=%s fitted to %s: each of the %u jobs needs a block of its own%s "
			  "(fio lays out %s in all)",
			  pc->name, format_bytes(a, sizeof(a), pc->size), format_bytes(b, sizeof(b), want),
			  pc->numjobs, pc->nrfiles > 1 ? " in each file" : "",
			  format_bytes(c, sizeof(c), pc->size * pc->numjobs));
	pc->size = want;
	return 0;
}

/* Block sizes, file sizes and regions. True when size= was fitted (its
 * notice says how fio's layout differs). */
static bool finish_layout(struct parser *p, struct probe_config *pc, unsigned seen)
{
	bool is_fitted = false;
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
		if (fit_size_to_jobs(p, pc) < 0) {
			return false;
		}
		is_fitted = true;
	}
	if (pc->directory && fio_layout(pc, 0, &l, err, sizeof(err)) < 0) {
		parser_error(p, pc->line, "[%s]: %s", pc->name, err);
	}
	return is_fitted;
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
	size_t errors = parser_error_count(p);
	bool from_filename = finish_target(p, pc, seen), is_fitted = false;

	finish_conflicts(p, pc, seen);
	if (!(seen & CONFIG_SEEN_RUNTIME) && !(seen & CONFIG_SEEN_NUMBER_IOS)) {
		pc->runtime_usec = pc->ceiling ? 5ULL * USEC_PER_SEC : USEC_PER_SEC;
	}
	if (parser_error_count(p) == errors) {
		is_fitted = finish_layout(p, pc, seen);
	}
	if (parser_error_count(p) == errors && !is_fitted) {
		notice_sharing(p, pc, seen, from_filename);
	}
}

void config_section_end(struct parser *p)
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
	const char *dev = name + 7;

	while (*dev == ' ') {
		dev++;
	}
	p->kind = SECTION_NONE;
	for (size_t i = 0; i < c->n_devices; i++) {
		if (strcmp(c->devices[i].name, dev) == 0) {
			parser_error(p, line, "duplicate section [device %s]: first defined on line %u", dev,
				     c->devices[i].line);
			return;
		}
	}
	if (c->n_devices >= CONFIG_MAX_DEVICES) {
		parser_error(p, line, "too many [device] sections: at most %d", CONFIG_MAX_DEVICES);
		return;
	}
	c->devices[c->n_devices++] =
	    (struct device_config){.name = strdup(dev), .line = line, .provider = {.volume_type = -1}};
	p->kind = SECTION_DEVICE;
}

static void begin_instance(struct parser *p, unsigned line)
{
	struct instance_config *ic = &p->cfg->instance;

	p->kind = SECTION_NONE;
	if (ic->is_declared) {
		parser_error(p, line, "duplicate section [instance]: first defined on line %u", ic->line);
		return;
	}
	ic->is_declared = true;
	ic->line = line;
	p->kind = SECTION_INSTANCE;
}

static void begin_probe(struct parser *p, const char *name, unsigned line);

bool config_section_instance_as_job(struct parser *p)
{
	if (p->kind != SECTION_INSTANCE || p->n_keys > 0) {
		return false;
	}
	p->cfg->instance.is_declared = false;
	p->cfg->instance.line = 0;
	begin_probe(p, p->section, p->section_line);
	return p->kind == SECTION_PROBE;
}

static void begin_probe(struct parser *p, const char *name, unsigned line)
{
	struct config *c = p->cfg;
	struct probe_config *pc;

	p->kind = SECTION_NONE;
	if (!valid_probe_name(name)) {
		parser_error(p, line,
			     "invalid probe name [%s]: a probe's name is a metric label, an API argument "
			     "and the file DIR/.iopsd/NAME.dat: use 1 to 64 letters, digits, '-', '_' or '.'",
			     name);
		return;
	}
	for (size_t i = 0; i < c->n_probes; i++) {
		if (strcmp(c->probes[i].name, name) == 0) {
			parser_error(p, line, "duplicate probe [%s]: first defined on line %u", name,
				     c->probes[i].line);
			return;
		}
	}
	if (c->n_probes >= CONFIG_MAX_PROBES) {
		parser_error(p, line, "too many probes: at most %d", CONFIG_MAX_PROBES);
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

void config_section_begin(struct parser *p, const char *name, unsigned line)
{
	config_section_end(p);
	snprintf(p->section, sizeof(p->section), "%s", name);
	p->section_line = line;
	p->seen = 0;
	p->n_keys = 0;
	p->explicit_seen = 0;
	p->rwmixwrite = 0;
	p->ignored[0] = '\0';
	memset(p->key_lines, 0, config_keys_count * sizeof(*p->key_lines));

	/* fio: a section whose name starts with "global" is [global], every
	 * other one a job; iopsd's own are [device NAME] and [instance] (until
	 * a job's key says otherwise, config_section_instance_as_job()) */
	if (strncmp(name, "global", 6) == 0) {
		p->kind = SECTION_GLOBAL;
		p->seen = p->defaults_seen;
	} else if (strncmp(name, "device ", 7) == 0) {
		begin_device(p, name, line);
	} else if (strcmp(name, "instance") == 0) {
		begin_instance(p, line);
	} else {
		begin_probe(p, name, line);
	}
}
