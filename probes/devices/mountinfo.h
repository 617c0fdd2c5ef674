/* /proc/PID/mountinfo: its lines parsed (pure), for the topology's mount
 * points and where a probe target lives. */
#pragma once

#include <stddef.h>

/* One line of /proc/PID/mountinfo. */
struct mountinfo_entry {
	unsigned major, minor;
	char *root;	  /* root of the mount within its filesystem, unescaped */
	char *mountpoint; /* unescaped (\040 -> ' ' ...) */
	char *fstype;
	char *source; /* "/dev/sda1", "tmpfs" ... unescaped */
};

/* Parse a mountinfo buffer (pure). Malformed lines are skipped. Returns the
 * number of entries in a newly allocated *ret (free with mountinfo_free), or
 * -ENOMEM. */
int mountinfo_parse(const char *buf, struct mountinfo_entry **ret);
void mountinfo_free(struct mountinfo_entry *e, size_t n);

/* Undo mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134
 * backslash, any \ooo) in place. Returns the new length. */
size_t mountinfo_unescape(char *s);
