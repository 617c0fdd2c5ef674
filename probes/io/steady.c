/* fio's steady state criteria over a window of per-second figures. */
#include "steady.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void steady_init(struct steady *ret, const struct probe_workload *wl)
{
	uint64_t dur = wl->ss_dur_usec / 1000000;

	*ret = (struct steady){
	    .is_enabled = wl->has_ss && dur > 0,
	    .is_iops = wl->is_ss_iops,
	    .is_slope = wl->is_ss_slope,
	    .is_pct = wl->is_ss_pct,
	    .limit = wl->ss_limit,
	    .dur = (unsigned)(dur < STEADY_MAX_SECONDS ? dur : STEADY_MAX_SECONDS),
	};
}

uint64_t steady_value(const struct steady *s, bool is_iops, unsigned i)
{
	unsigned k = (s->head + i) % (s->dur ? s->dur : 1);

	return is_iops ? s->iops[k] : s->bw[k];
}

/* The criterion over a full window: the slope of a least-squares line
 * through it, or the largest distance from its mean; in percent of the
 * mean when the limit is. */
static void evaluate(struct steady *s)
{
	double mean = 0, sxy = 0, sxx = 0, xm = (s->dur - 1) / 2.0;

	for (unsigned i = 0; i < s->dur; i++) {
		mean += (double)steady_value(s, s->is_iops, i);
	}
	mean /= s->dur;
	s->deviation = 0;
	for (unsigned i = 0; i < s->dur; i++) {
		double y = (double)steady_value(s, s->is_iops, i);

		sxy += (i - xm) * (y - mean);
		sxx += (i - xm) * (i - xm);
		s->deviation = fabs(y - mean) > s->deviation ? fabs(y - mean) : s->deviation;
	}
	s->slope = sxx > 0 ? sxy / sxx : 0;
	s->criterion = s->is_slope ? s->slope : s->deviation;
	if (s->is_pct) {
		s->criterion = mean > 0 ? 100.0 * s->criterion / mean : INFINITY;
	}
}

bool steady_add(struct steady *s, uint64_t iops, uint64_t bw)
{
	unsigned tail;

	if (!s->is_enabled || s->dur == 0) {
		return false;
	}
	if (s->n < s->dur) {
		tail = s->n++;
	} else {
		tail = s->head;
		s->head = (s->head + 1) % s->dur;
	}
	s->iops[tail] = iops;
	s->bw[tail] = bw;
	if (s->n < s->dur) {
		return false;
	}
	evaluate(s);
	s->is_attained = fabs(s->criterion) < s->limit;
	return s->is_attained;
}
