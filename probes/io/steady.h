/* fio's steady state (ss=, ss_dur=, ss_ramp=): once a second the run's IOPS
 * and bandwidth; the job ends when the last ss_dur seconds are within the
 * limit (mean deviation, or slope), as fio's steadystate.c decides. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

/* ss_dur's longest window, in seconds. */
#define STEADY_MAX_SECONDS 300

struct steady {
	bool is_enabled;
	bool is_iops;  /* iops or bw */
	bool is_slope; /* slope, else the mean deviation */
	bool is_pct;   /* the limit in percent of the mean */
	double limit;
	unsigned dur; /* seconds in the window */
	unsigned n;   /* seconds collected, up to dur */
	unsigned head;
	uint64_t iops[STEADY_MAX_SECONDS], bw[STEADY_MAX_SECONDS]; /* bw in bytes/s */
	double criterion, deviation, slope;
	bool is_attained;
};

/* Set *ret up from the probe's ss keys (disabled without ss=). */
void steady_init(struct steady *ret, const struct probe_workload *wl);
/* One second's figures; true when the window is full and within the limit. */
bool steady_add(struct steady *s, uint64_t iops, uint64_t bw);
/* The window's values in time order (oldest first): the i-th. */
uint64_t steady_value(const struct steady *s, bool is_iops, unsigned i);
