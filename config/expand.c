/* Values as fio reads them: ${NAME} and fio's reserved keywords. */
#include "parser.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
const char *config_expand_value(struct parser *p, const char *key, const char *value, char **ret_buf)
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
		parser_error(p, p->line, "out of memory");
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
				parser_error(p, p->line, "out of memory");
			} else if (!v) {
				parser_error(p, p->line, "%s=%s: ${%s} is not set in iopsd's environment",
					     key, value, name);
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
		parser_error(p, p->line, "out of memory");
		has_error = true;
	}
	if (has_error) {
		free(*ret_buf);
		*ret_buf = NULL;
		return NULL;
	}
	return *ret_buf;
}
