/* The plateau tests of ceiling detection (ceiling.h), shared by ceiling.c
 * and plateau.c: a device's samples judged for a flat top with requests
 * waiting, by the onset test, the window test and the hold. Pure. */
#pragma once

#include <stdbool.h>

#include "ceiling.h"

enum resource {
	RESOURCE_IOPS,
	RESOURCE_THROUGHPUT,
};

/* Half-width of the window test's band around `level` for a sample like
 * `s` (plateau_tolerance, widened to plateau_slack_ios I/Os). */
double plateau_band(const struct ceiling_params *p, enum resource res, double level,
		    const struct ceiling_sample *s);

/* A plateau at `level` found by `stage`: the estimate, throttled now. */
void plateau_found(struct ceiling_detector *d, double level, enum ceiling_stage stage);

/* The latest sample (st->n > 0) judged for IOPS and for throughput: the
 * onset test, then the window test, then the hold; a device that
 * sustains more than an estimate proves it wrong. */
void plateau_detect(struct ceiling_state *st, const struct ceiling_params *p);
