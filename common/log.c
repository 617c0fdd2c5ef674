/* stderr logging: sd-daemon priority prefixes for the journal, plain
 * "iopsd: LEVEL: " lines elsewhere. */
#include "log.h"
#include "timeutil.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

int log_max_level = LOG_INFO;
static bool log_to_journal;

static const char *const level_names[] = {
    [LOG_EMERG] = "emerg",     [LOG_ALERT] = "alert",	[LOG_CRIT] = "crit", [LOG_ERR] = "error",
    [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

int log_level_from_string(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(level_names); i++) {
		if (strcasecmp(s, level_names[i]) == 0) {
			return (int)i;
		}
	}
	if (strcasecmp(s, "warn") == 0) {
		return LOG_WARNING;
	}
	if (strcasecmp(s, "err") == 0) {
		return LOG_ERR;
	}
	return -EINVAL;
}

void log_open(void)
{
	log_to_journal = log_fd_is_journal(STDERR_FILENO, getenv("JOURNAL_STREAM"));
}

bool log_fd_is_journal(int fd, const char *journal_stream)
{
	unsigned long long dev, ino;
	struct stat st;
	char *end;

	if (!journal_stream || !isdigit((unsigned char)journal_stream[0])) {
		return false;
	}
	errno = 0;
	dev = strtoull(journal_stream, &end, 10);
	if (errno != 0 || *end != ':' || !isdigit((unsigned char)end[1])) {
		return false;
	}
	ino = strtoull(end + 1, &end, 10);
	if (errno != 0 || *end != '\0') {
		return false;
	}
	if (fstat(fd, &st) < 0) {
		return false;
	}
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

int log_internal(int level, int error, const char *func, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int saved = errno;

	(void)func;
	if (error < 0) {
		error = -error;
	}
	/* %m in fmt expands to strerror(errno): make it the caller's error. */
	errno = error;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (log_to_journal) {
		fprintf(stderr, "<%d>%s\n", level, buf);
	} else {
		fprintf(stderr, "iopsd: %s: %s\n", level_names[level & LOG_PRIMASK], buf);
	}
	errno = saved;
	return error > 0 ? -error : -EIO;
}

bool ratelimit_below(struct ratelimit *rl)
{
	unsigned long long now = now_usec(CLOCK_MONOTONIC);

	if (rl->begin_usec == 0 || now - rl->begin_usec >= rl->interval_usec) {
		rl->begin_usec = now;
		rl->num = 0;
	}
	if (rl->num < rl->burst) {
		rl->num++;
		return true;
	}
	rl->suppressed++;
	return false;
}
