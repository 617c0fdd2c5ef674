/* The INI reader: inih, fed one line at a time so that lines are numbered,
 * empty sections seen and fio's bare flags read as key=1. */
#include "parser.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

#include <ini.h>

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
			parser_error(
			    p, p->line,
			    "key '%s' outside of a section: put it under [global] or a probe section", key);
		}
		return 1;
	}
	k = lookup_key(p, key);
	if (!k && config_key_find(key, CONFIG_SCOPE_PROBE) && config_section_instance_as_job(p)) {
		k = lookup_key(p, key);
	}
	if (!k) {
		config_value_unknown_key(p, key);
		return 1;
	}
	p->n_keys++;
	/* by table entry, so that bs= and blocksize= are one key however long
	 * the section */
	i = config_key_index(k);
	if (p->key_lines[i]) {
		parser_error(p, p->line, "duplicate key '%s' in [%s]: first set on line %u", key, p->section,
			     p->key_lines[i]);
		return 1;
	}
	p->key_lines[i] = p->line;
	value = config_expand_value(p, key, value, &expanded);
	if (value) {
		config_value_set(p, k, key, value);
	}
	return 1;
}

/* fio cuts every line at its first ';' or '#', in a value too ("numjobs=4 #
 * per volume", "rw=randread;x"): so does iopsd, so that a runbook's job
 * file means the same to both. The newline stays, for inih. */
static void strip_comment(char *line)
{
	char *c = line + strcspn(line, ";#");

	if (*c != '\0') {
		c[0] = '\n';
		c[1] = '\0';
	}
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
		parser_error(p, p->line, "line too long: at most %d characters", num - 2);
		p->pos += len;
		str[0] = '\n';
		str[1] = '\0';
		return str;
	}
	memcpy(str, start, len);
	str[len] = '\0';
	p->pos += len;
	p->line++;
	strip_comment(str);

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
			config_section_begin(p, name, p->line);
		}
	} else if (*s && *s != '\n' && *s != '\r' && !strchr(s, '=') && !strchr(s, ':') && s == str) {
		size_t l = strcspn(str, "\r\n");

		if (l + 3 <= max) {
			memcpy(str + l, "=1\n", 4);
		}
	}
	return str;
}

int config_ini_read(struct parser *p)
{
	return ini_parse_stream(reader, p, handler, p);
}
