/* The standard process_* figures (cpu, memory, fds, start time) from
 * /proc/self, read by the daemon on the main thread before each publish
 * (registry_set_process()), never by a scrape. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "registry.h" /* struct process_stats */

/* Parse /proc/self/stat text: cpu seconds, virtual and resident memory.
 * `ticks_per_sec` is sysconf(_SC_CLK_TCK), `page_size` in bytes. Also
 * returns the start time in ticks since boot in *ret_start_ticks (may be
 * NULL). Returns 0 or -EINVAL on malformed text. */
int process_stats_parse_stat(const char *text, long ticks_per_sec, uint64_t page_size,
			     struct process_stats *ret, uint64_t *ret_start_ticks);

/* Parse the "btime" line of /proc/stat (boot time, seconds since the epoch). */
int process_stats_parse_btime(const char *text, uint64_t *ret_btime);

/* The process start time in seconds since the epoch (reads /proc/self/stat
 * and /proc/stat once). */
int process_stats_start_time(double *ret_seconds);

/* Fill *ret from /proc/self (stat, fd/) and getrlimit; start_time_seconds
 * is left as it is. Returns 0 or -errno; on failure ret->available is false. */
int process_stats_read(struct process_stats *ret);
