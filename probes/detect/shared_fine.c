/* The shared ceiling's reads between samples (shared_fine.h). */
#include "shared_fine.h"

#include <math.h>

void shared_fine_params_default(struct shared_fine_params *ret)
{
	*ret = (struct shared_fine_params){
	    .onset_sec = 5.0,
	    .window_sec = 0.2,
	    .test_sec = 3.0,
	    .max_variance_ratio = 0.15,
	    .min_wander = 0.01,
	};
}

/* Reads per window, 0 when the windows are shorter than a read's spacing. */
static size_t reads_per_window(const struct shared_fine_params *p, const struct pulse_params *pp)
{
	return pp->slice_sec > 0 ? (size_t)lround(p->window_sec / (pp->slice_sec / 2)) : 0;
}

size_t shared_fine_reads_needed(const struct shared_fine_params *p, const struct pulse_params *pp)
{
	return pp->slice_sec > 0 ? (size_t)lround(p->test_sec / (pp->slice_sec / 2)) + 1 : 0;
}

/* Member j's rate (I/Os per second) over the window of `per` reads from
 * r[j][i]: a rate, not a count, so that a read that came late does not
 * move the window's edge into the next (a busy guest's timer fires 10 to
 * 60 ms late now and then). */
static double window_rate(const struct pulse_read *const *r, size_t j, size_t i, size_t per)
{
	return (double)(r[j][i + per].ios - r[j][i].ios) * 1e6 /
	       (double)(r[j][i + per].monotonic_usec - r[j][i].monotonic_usec);
}

/* Whether the window of `per` reads from r[0][i] spans window_sec to
 * within half of it, with no sample taken inside. */
static bool is_whole_window(const struct pulse_read *const *r, size_t i, size_t per, double window_sec)
{
	double span = (double)(r[0][i + per].monotonic_usec - r[0][i].monotonic_usec) / 1e6;

	for (size_t e = i; e < i + per; e++) {
		if (r[0][e].is_before_sample) {
			return false;
		}
	}
	return fabs(span - window_sec) <= window_sec / 2;
}

/* The windows of one sample interval: each member's count, and the sum's
 * (x[.][k]). */
struct block {
	double x[SHARED_FINE_MAX_WINDOWS][SHARED_FINE_MAX_MEMBERS + 1];
	size_t m;
};

/* Adds a block's deviations from its means to *sum_dev, *parts_dev,
 * *min_parts and *dof (window_ratio()), and empties it. */
static void close_block(struct block *bl, size_t k, double min_wander, double *sum_dev, double *parts_dev,
			double *min_parts, double *dof)
{
	for (size_t j = 0; bl->m >= 2 && j <= k; j++) {
		double mean = 0.0, dev = 0.0;

		for (size_t w = 0; w < bl->m; w++) {
			mean += bl->x[w][j] / (double)bl->m;
		}
		for (size_t w = 0; w < bl->m; w++) {
			dev += pow(bl->x[w][j] - mean, 2);
		}
		*(j < k ? parts_dev : sum_dev) += dev;
		*min_parts += j < k ? (double)(bl->m - 1) * pow(min_wander * mean, 2) : 0.0;
	}
	*dof += bl->m >= 2 ? (double)(bl->m - 1) : 0.0;
	bl->m = 0;
}

/* The sum's deviations over its parts': the windows of `per` reads from
 * r[.][first] on (whole ones within `need`), each member's and the sum's
 * deviation from the mean of the windows of its sample interval, squared
 * and summed; a window with a sample inside is left out. How the samples
 * differ is the onset test's evidence already, and taken again here,
 * busy disks whose seconds add up flat by chance looked held 9 times as
 * often. INFINITY when fewer than 4 deviations are free, or the parts
 * wander by less than min_wander of their means. */
static double window_ratio(const struct pulse_read *const *r, size_t k, size_t need, size_t first, size_t per,
			   double window_sec, double min_wander)
{
	double sum_dev = 0.0, parts_dev = 0.0, min_parts = 0.0, dof = 0.0;
	struct block bl = {.m = 0};

	for (size_t i = first; i + per < need; i += per) {
		if (!is_whole_window(r, i, per, window_sec) || bl.m == SHARED_FINE_MAX_WINDOWS) {
			close_block(&bl, k, min_wander, &sum_dev, &parts_dev, &min_parts, &dof);
			continue;
		}
		bl.x[bl.m][k] = 0.0;
		for (size_t j = 0; j < k; j++) {
			bl.x[bl.m][j] = window_rate(r, j, i, per);
			bl.x[bl.m][k] += bl.x[bl.m][j];
		}
		bl.m++;
	}
	close_block(&bl, k, min_wander, &sum_dev, &parts_dev, &min_parts, &dof);
	if (dof < 4 || parts_dev <= 0 || parts_dev < min_parts) {
		return INFINITY;
	}
	return sum_dev / parts_dev;
}

/* Whether the last `need` reads of each member were taken at the same
 * instants, in order, their counters never going back; points r[j] at
 * them. */
static bool take_common_reads(const struct pulse_read *const *reads, const size_t *n, size_t k, size_t need,
			      const struct pulse_read **r)
{
	for (size_t j = 0; j < k; j++) {
		if (n[j] < need) {
			return false;
		}
		r[j] = reads[j] + (n[j] - need);
		for (size_t i = 0; i < need; i++) {
			if (r[j][i].monotonic_usec != r[0][i].monotonic_usec ||
			    (i > 0 && (r[j][i].monotonic_usec <= r[j][i - 1].monotonic_usec ||
				       r[j][i].ios < r[j][i - 1].ios))) {
				return false;
			}
		}
	}
	return true;
}

bool shared_fine_test(const struct pulse_read *const *reads, const size_t *n, size_t k,
		      const struct shared_fine_params *p, const struct pulse_params *pp, double *ret_ratio)
{
	const struct pulse_read *r[SHARED_FINE_MAX_MEMBERS];
	size_t per = reads_per_window(p, pp), need = shared_fine_reads_needed(p, pp);
	double best = INFINITY;

	*ret_ratio = INFINITY;
	if (p->onset_sec <= 0 || k < 2 || k > SHARED_FINE_MAX_MEMBERS || per < 2 || need < 3 * per + 1 ||
	    !take_common_reads(reads, n, k, need, r)) {
		return false;
	}
	/* cut from the first read, and from half a window on: a guest that
	 * counts a burst of completions late makes one window of the sum
	 * short and the next long (QEMU's group of 1500: 335 then 265 I/Os
	 * in 200 ms), which one of the cuts puts in a window whole. Busy
	 * disks whose seconds pass the 5-s onset test by chance pass this
	 * too in 0 to 3 onsets of 20000 (bench-shared-noise) */
	for (size_t first = 0; first <= per / 2; first += per / 2) {
		best = fmin(best, window_ratio(r, k, need, first, per, p->window_sec, p->min_wander));
	}
	*ret_ratio = best;
	return best <= p->max_variance_ratio;
}
