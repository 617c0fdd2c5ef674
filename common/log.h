/* Logging to stderr: with sd-daemon "<N>" priority prefixes when stderr is
 * the journal (journald files each line at its level), as "iopsd: LEVEL: ..."
 * on a terminal, a pipe or a file. The level and that choice are the only
 * global mutable state (set once at startup). */
#pragma once

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

extern int log_max_level;

/* Decide the line format from JOURNAL_STREAM and stderr. Call once at
 * startup, before any thread logs; until then lines are "iopsd: LEVEL: ". */
void log_open(void);

/* Whether fd is the stream that `journal_stream` (JOURNAL_STREAM's value,
 * "DEVICE:INODE" as systemd sets it for a service's stderr) names; false for
 * NULL or a malformed value. A child that inherited the variable but writes
 * elsewhere (a pipe, a terminal) is not the journal. */
bool log_fd_is_journal(int fd, const char *journal_stream);

/* "error", "warning", "info", "debug" -> LOG_*; -EINVAL otherwise. */
int log_level_from_string(const char *s);

/* Log at `level`; `%m` refers to `error` (a positive or negative errno), as
 * in systemd. Returns -abs(error), or -EIO when error is 0, so that callers
 * can `return log_error_errno(r, ...)`. */
int log_internal(int level, int error, const char *func, const char *fmt, ...) _printf_(4, 5);

#define log_full_errno(level, error, ...)                                                                    \
	({                                                                                                   \
		int _l_ = (level), _e_ = (error);                                                            \
		(log_max_level >= _l_) ? log_internal(_l_, _e_, __func__, __VA_ARGS__)                       \
				       : (_e_ > 0 ? -_e_ : (_e_ < 0 ? _e_ : -EIO));                          \
	})

#define log_debug(...)	 ((void)log_full_errno(LOG_DEBUG, 0, __VA_ARGS__))
#define log_info(...)	 ((void)log_full_errno(LOG_INFO, 0, __VA_ARGS__))
#define log_notice(...)	 ((void)log_full_errno(LOG_NOTICE, 0, __VA_ARGS__))
#define log_warning(...) ((void)log_full_errno(LOG_WARNING, 0, __VA_ARGS__))
#define log_error(...)	 ((void)log_full_errno(LOG_ERR, 0, __VA_ARGS__))

#define log_debug_errno(e, ...)	  log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...)	  log_full_errno(LOG_INFO, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...)	  log_full_errno(LOG_ERR, e, __VA_ARGS__)

/* A simple rate limiter: allow `burst` events per `interval_usec`. */
struct ratelimit {
	unsigned long long interval_usec;
	unsigned burst;
	unsigned long long begin_usec;
	unsigned num;
	unsigned suppressed;
};

#define RATELIMIT_INIT(interval, b) ((struct ratelimit){.interval_usec = (interval), .burst = (b)})

/* True when the event may be logged now. Thread-compatible, not thread-safe. */
bool ratelimit_below(struct ratelimit *rl);
