/* What a configuration's probes need at once against the process's own
 * limits: file descriptors (the unit's LimitNOFILE) and tasks (TasksMax,
 * the cgroup's pids.max). */
#pragma once

#include "config.h"

/* File descriptors and tasks a configuration may hold at once, beyond a
 * base for the daemon itself. */
#define LIMITS_BASE_FDS	  64
#define LIMITS_BASE_TASKS 16

/* Log "FILE:LINE: ..." for the probe at which the sum passes a limit and
 * return -EINVAL; 0 when everything fits (or a limit cannot be read). */
int limits_check(const struct config *cfg);
