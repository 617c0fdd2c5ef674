/* --check-config's account of the [device] sections' limits: what each
 * volume_type= derives for the volume's size on this host, and what the
 * section's own keys override. */
#pragma once

#include <stdio.h>

#include "config.h"

/* One line per [device] section to `out` (sizes from `sysfs`). Returns 0,
 * or -EINVAL when a preset cannot be derived for the size found (the
 * reason printed). */
int daemon_check_device_limits(const struct config *cfg, const char *sysfs, FILE *out);
