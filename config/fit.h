/* Fitting a job's budget keys to the probe schedule. A fio job file sets a
 * one-shot run's length (runtime=180, loops=5, startdelay=10); loaded into
 * the daemon, the same job runs every interval, with a budget that fits. */
#pragma once

#include "config.h"

/* Fit every probe of `c` for the daemon: a run (ramp_time + runtime) longer
 * than its interval gets the default run (1s, 5s for a ceiling probe) and
 * no ramp; loops and startdelay give way to the schedule; number_ios
 * without runtime also stops at the default run; every run is time based.
 * Adds one notice per fitted key, saying what it did. --once runs the
 * unfitted job. Returns 0 or -ENOMEM. */
int config_fit_schedule(struct config *c);
