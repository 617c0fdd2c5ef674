/* stderr logging with sd-daemon priority prefixes. */
#include "log.h"
#include "timeutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int log_max_level = LOG_INFO;

static const char *const level_names[] = {
	[LOG_EMERG] = "emerg", [LOG_ALERT] = "alert",     [LOG_CRIT] = "crit",
	[LOG_ERR] = "error",   [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info",   [LOG_DEBUG] = "debug",
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
	fprintf(stderr, "<%d>%s\n", level, buf);
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
