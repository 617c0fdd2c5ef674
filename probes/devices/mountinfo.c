/* The mountinfo parser. See mountinfo.h. */
#include "mountinfo.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

size_t mountinfo_unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

static void mountinfo_entry_done(struct mountinfo_entry *e)
{
	free(e->root);
	free(e->mountpoint);
	free(e->fstype);
	free(e->source);
}

void mountinfo_free(struct mountinfo_entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++) {
		mountinfo_entry_done(&e[i]);
	}
	free(e);
}

static char *dup_unescaped(const char *s)
{
	char *d = strdup(s);

	if (d) {
		mountinfo_unescape(d);
	}
	return d;
}

static bool parse_devnum(const char *s, unsigned *ret_major, unsigned *ret_minor)
{
	unsigned long long major, minor;
	char *end;

	if (*s < '0' || *s > '9') {
		return false;
	}
	errno = 0;
	major = strtoull(s, &end, 10);
	if (errno != 0 || *end != ':' || major > UINT32_MAX || end[1] < '0' || end[1] > '9') {
		return false;
	}
	minor = strtoull(end + 1, &end, 10);
	if (errno != 0 || *end != '\0' || minor > UINT32_MAX) {
		return false;
	}
	*ret_major = (unsigned)major;
	*ret_minor = (unsigned)minor;
	return true;
}

/* One line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE
 * SOURCE SUPEROPTS". Returns 0, -EINVAL for a malformed line, -ENOMEM. */
static int mountinfo_parse_line(char *line, struct mountinfo_entry *ret)
{
	char *fields[64], *save = NULL, *tok;
	size_t n = 0, sep = 0;
	struct mountinfo_entry e = {0};

	for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (n == ELEMENTSOF(fields)) {
			return -EINVAL;
		}
		if (sep == 0 && n >= 6 && strcmp(tok, "-") == 0) {
			sep = n;
		}
		fields[n++] = tok;
	}
	if (sep == 0 || n < sep + 3) {
		return -EINVAL;
	}
	if (!parse_devnum(fields[2], &e.major, &e.minor)) {
		return -EINVAL;
	}
	e.root = dup_unescaped(fields[3]);
	e.mountpoint = dup_unescaped(fields[4]);
	e.fstype = dup_unescaped(fields[sep + 1]);
	e.source = dup_unescaped(fields[sep + 2]);
	if (!e.root || !e.mountpoint || !e.fstype || !e.source) {
		mountinfo_entry_done(&e);
		return -ENOMEM;
	}
	*ret = e;
	return 0;
}

int mountinfo_parse(const char *buf, struct mountinfo_entry **ret)
{
	_cleanup_free_ char *copy = strdup(buf);
	struct mountinfo_entry *entries = NULL;
	size_t n = 0, cap = 0;
	char *line, *save = NULL;

	if (!copy) {
		return -ENOMEM;
	}
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct mountinfo_entry e;
		int r;

		r = mountinfo_parse_line(line, &e);
		if (r == -EINVAL) {
			continue;
		}
		if (r < 0) {
			mountinfo_free(entries, n);
			return r;
		}
		if (n == cap) {
			size_t c = cap ? cap * 2 : 32;
			struct mountinfo_entry *a = reallocarray(entries, c, sizeof(*a));

			if (!a) {
				mountinfo_entry_done(&e);
				mountinfo_free(entries, n);
				return -ENOMEM;
			}
			entries = a;
			cap = c;
		}
		entries[n++] = e;
	}
	if (n > INT_MAX) {
		mountinfo_free(entries, n);
		return -E2BIG;
	}
	*ret = entries;
	return (int)n;
}
