/* Reading procfs/sysfs files whole, from their start, into one buffer (see
 * systemd's fileio.c: these files are generated at read time and must not
 * be pieced together from reads at other times). */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Read all of `path`, from its start to its end, into a freshly allocated
 * NUL-terminated buffer of at most `max_size` bytes (a file larger than the
 * first buffer tried is read again whole into a larger one; a procfs seq
 * file such as mountinfo, which gives a page per read(), is read on to its
 * end). Returns the length, or -errno; -EFBIG when the file is larger. The
 * caller owns *ret_buf. */
int read_virtual_file(const char *path, size_t max_size, char **ret_buf);

/* Read from the start of fd into buf until the file's end or len bytes:
 * procfs's seq files (mountinfo, diskstats) give at most a page per
 * read(), whatever the size asked for. Each read ends on a record (a
 * line), so a file that changes meanwhile loses or repeats a line, never
 * tears one. The bytes read (len: there may be more), or -errno. */
ssize_t read_from_start(int fd, char *buf, size_t len);

/* Read a sysfs attribute into a buffer, stripping the trailing newline.
 * Returns the length or -errno. */
int read_one_line(const char *path, char *buf, size_t len);

/* Join two path components into a newly allocated string; NULL on ENOMEM. */
char *path_join(const char *a, const char *b);
