/* The loader's state while it reads one file, shared by the steps that
 * make up config.c's load: the INI reader (ini.c), value expansion
 * (expand.c), sections (sections.c), key values (values.c) and the checks
 * across the file (checks.c). Internal to config/. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "keys.h"
#include "macro.h"

/* A probe's size= when it sets none: per file. */
#define DEFAULT_PROBE_SIZE (64ULL << 20)

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
	const char *job_directory; /* --once's working directory; NULL: the daemon's load */

	/* reader state */
	const char *text;
	size_t pos;
	unsigned line; /* line number of the line last handed to inih */

	/* current section */
	enum section_kind kind;
	char section[128];
	unsigned section_line;
	unsigned n_keys;	/* keys set in this section so far */
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

/* Record "FILE:LINE: message" (line 0: no line). */
void parser_error(struct parser *p, unsigned line, const char *fmt, ...) _printf_(3, 4);
/* Errors recorded so far, those dropped past CONFIG_MAX_ERRORS included. */
size_t parser_error_count(const struct parser *p);

/* Feed p->text to inih, line by line; inih's result (0, or the first line
 * it could not parse, or -1 out of memory). */
int config_ini_read(struct parser *p);

/* `value` with ${NAME} and fio's $pagesize, $ncpus, $mb_memory expanded:
 * the value itself, a string in *ret_buf (the caller frees), or NULL with
 * an error recorded. */
const char *config_expand_value(struct parser *p, const char *key, const char *value, char **ret_buf);

/* A "[name]" line opens a section; the previous one is finished first. */
void config_section_begin(struct parser *p, const char *name, unsigned line);
/* fio reads [instance] as a job named instance: an [instance] section
 * whose first key is a job's (not one of [instance]'s) becomes one. Returns
 * whether it did. */
bool config_section_instance_as_job(struct parser *p);
/* Finish the current section (a probe's target, conflicts and layout). */
void config_section_end(struct parser *p);

/* Apply key=value (k: its config_keys[] entry) to the current section. */
void config_value_set(struct parser *p, const struct config_key *k, const char *key, const char *value);
/* Report a key the section does not take, naming those it does. */
void config_value_unknown_key(struct parser *p, const char *key);

/* Checks across the whole file, once every section is known; fills in
 * what probes and devices inherit. */
void config_checks_run(struct parser *p);
