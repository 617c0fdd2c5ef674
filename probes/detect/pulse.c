/* The pulse test (pulse.h). */
#include "pulse.h"

#include <math.h>

#include "ceiling.h"
#include "macro.h"

void pulse_params_default(struct pulse_params *ret)
{
	*ret = (struct pulse_params){
	    .slice_sec = 0.1,
	    .test_sec = 2.0,
	    .tolerance = 0.001,
	    .slack_ios = 1.0,
	    .min_ios = 50.0,
	    .max_spacing_error = 0.2,
	};
}

size_t pulse_reads_needed(const struct pulse_params *p)
{
	return p->slice_sec > 0 ? (size_t)lround(2 * p->test_sec / p->slice_sec) + 1 : 0;
}

/* Whether the reads come every half slice, to within max_spacing_error of
 * it: a read that came late moves its window's edge into a burst. */
static bool is_evenly_spaced(const struct pulse_read *r, size_t n, const struct pulse_params *p)
{
	double half_usec = p->slice_sec * 1e6 / 2;

	for (size_t i = 1; i < n; i++) {
		double gap = (double)(r[i].monotonic_usec - r[i - 1].monotonic_usec);

		if (r[i].monotonic_usec < r[i - 1].monotonic_usec || r[i].ios < r[i - 1].ios ||
		    fabs(gap - half_usec) > p->max_spacing_error * half_usec) {
			return false;
		}
	}
	return true;
}

/* The windows of the pairing that starts at r[first]: every one of them
 * within the band of their median, of at least min_ios. */
static bool is_flat_pairing(const struct pulse_read *r, size_t n, size_t first, const struct pulse_params *p)
{
	double counts[CEILING_WINDOW_MAX * 2], sorted[CEILING_WINDOW_MAX * 2], median, band;
	size_t k = 0;

	for (size_t i = first; i + 2 < n && k < ELEMENTSOF(counts); i += 2) {
		counts[k] = sorted[k] = (double)(r[i + 2].ios - r[i].ios);
		k++;
	}
	if (k < 2) {
		return false;
	}
	median = ceiling_median(sorted, (unsigned)k);
	band = fmax(p->slack_ios, p->tolerance * median);
	if (median < p->min_ios) {
		return false;
	}
	for (size_t i = 0; i < k; i++) {
		if (fabs(counts[i] - median) > band) {
			return false;
		}
	}
	return true;
}

bool pulse_test(const struct pulse_read *reads, size_t n, const struct pulse_params *p, double *ret_iops)
{
	size_t need = pulse_reads_needed(p);
	const struct pulse_read *r;

	if (need < 3 || n < need) {
		return false;
	}
	r = reads + (n - need);
	if (!is_evenly_spaced(r, need, p)) {
		return false;
	}
	for (size_t first = 0; first < 2; first++) {
		/* the windows span r[first] to r[last], a whole number of slices */
		size_t last = first + (need - 1 - first) / 2 * 2;

		if (is_flat_pairing(r, last + 1, first, p) &&
		    r[last].monotonic_usec > r[first].monotonic_usec) {
			*ret_iops = (double)(r[last].ios - r[first].ios) * 1e6 /
				    (double)(r[last].monotonic_usec - r[first].monotonic_usec);
			return true;
		}
	}
	return false;
}
