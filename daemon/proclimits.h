/* What a configuration's probes need at once against the process's own
 * limits: file descriptors (the unit's LimitNOFILE) and tasks (TasksMax,
 * the cgroup's pids.max). */
#pragma once

#include <stdint.h>

#include "config.h"

/* File descriptors and tasks a configuration may hold at once, beyond a
 * base for the daemon itself. */
#define LIMITS_BASE_FDS	  64
#define LIMITS_BASE_TASKS 16

/* Log "FILE:LINE: ..." for the probe at which the sum passes a limit and
 * return -EINVAL; 0 when everything fits (or a limit cannot be read). */
int limits_check(const struct config *cfg);

/* limits_check() against the given limits (0: none): LimitNOFILE and
 * pids.max as the process has them. */
int limits_check_against(const struct config *cfg, uint64_t nofile, uint64_t pids);

/* Where the pids.max of the cgroup named in `proc_cgroup` (the text of
 * /proc/self/cgroup) is, under `root` (/sys/fs/cgroup): v1's pids
 * hierarchy (ROOT/CONTROLLERS/PATH) where it is mounted, else v2's
 * (ROOT/PATH). Returns a new string, or NULL (none, or out of memory). */
char *limits_pids_max_path(const char *proc_cgroup, const char *root);

/* The limit in pids.max's text; 0 for "max" (none) or garbage. */
uint64_t limits_parse_pids_max(const char *text);

/* pids.max of the cgroup that the file at `proc_cgroup_path` (the
 * process's /proc/self/cgroup) names, under `root`; 0 when there is none
 * or it cannot be read. */
uint64_t limits_read_pids_max(const char *proc_cgroup_path, const char *root);
