/* The plateau tests of ceiling detection, in the order they run: the
 * onset test, the window test, the hold (plateau.h, iopsd(8), CEILING
 * DETECTION). */
#include "plateau.h"

#include <math.h>

static double sample_value(const struct ceiling_sample *s, enum resource res)
{
	return res == RESOURCE_IOPS ? s->iops : s->bytes_per_sec;
}

/* The i-th most recent sample (0 = latest). */
static const struct ceiling_sample *recent(const struct ceiling_state *st, unsigned i)
{
	return &st->ring[(st->head + CEILING_WINDOW_MAX - 1 - i) % CEILING_WINDOW_MAX];
}

/* Half-width of the plateau band around `level`: relative, but never
 * narrower than plateau_slack_ios whole I/Os per interval, so that a cap
 * of 100 IOPS is not missed because one I/O fell into the next second. */
static double band_of(double tolerance, double slack_ios, enum resource res, double level,
		      const struct ceiling_sample *s)
{
	double slack = slack_ios / (s->interval_sec > 0 ? s->interval_sec : 1.0);

	if (res == RESOURCE_THROUGHPUT) {
		slack *= s->iops > 0 ? s->bytes_per_sec / s->iops : 0.0;
	}
	return fmax(tolerance * level, slack);
}

double plateau_band(const struct ceiling_params *p, enum resource res, double level,
		    const struct ceiling_sample *s)
{
	return band_of(p->plateau_tolerance, p->plateau_slack_ios, res, level, s);
}

static bool is_queueing(const struct ceiling_params *p, const struct ceiling_sample *s)
{
	return s->queue_depth >= p->min_queue && s->utilization >= p->min_utilization;
}

/* The median of v[0..n-1], n > 0, sorting v in place. An insertion sort:
 * this runs twice per device and tick on a window of p->window (20) values,
 * where qsort's merge sort and indirect comparisons cost more than the rest
 * of the ceiling update. */
double ceiling_median(double *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		double x = v[i];
		unsigned j = i;

		for (; j > 0 && v[j - 1] > x; j--) {
			v[j] = v[j - 1];
		}
		v[j] = x;
	}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Whether queueing sample s, below the band, and the next queueing one
 * (find_plateau() steps over one sample without a queue), above, are one
 * cap's two seconds: a token bucket keeps what a second left
 * unspent (a client short of CPU, completions counted late) and the next
 * second spends it, so the two together sit on the level, to within half
 * the band. The order matters: a bucket cannot give first and take back. */
static bool is_made_up(const struct ceiling_params *p, enum resource res, const struct ceiling_sample *s,
		       const struct ceiling_sample *next, double level, double band)
{
	double a = sample_value(s, res), b = sample_value(next, res),
	       t = s->interval_sec + next->interval_sec;

	if (!is_queueing(p, s) || !is_queueing(p, next) || a >= level - band || b <= level + band || t <= 0) {
		return false;
	}
	return fabs((a * s->interval_sec + b * next->interval_sec) / t - level) <= band / 2;
}

/* The values of `res` in the queueing samples of the last `window`, into
 * values[]; their count. */
static unsigned queueing_values(const struct ceiling_state *st, const struct ceiling_params *p,
				enum resource res, unsigned window, double *values)
{
	unsigned n = 0;

	for (unsigned i = 0; i < window; i++) {
		const struct ceiling_sample *s = recent(st, i);

		if (is_queueing(p, s)) {
			values[n++] = sample_value(s, res);
		}
	}
	return n;
}

/* The sample that may make up for the i-th most recent (i > 0) when that one
 * fell short (is_made_up()): the next one, or the one after it when the next
 * has no queue. */
static unsigned made_up_partner(const struct ceiling_state *st, const struct ceiling_params *p, unsigned i)
{
	unsigned j = i - 1;

	if (!is_queueing(p, recent(st, j)) && j > 0) {
		j--; /* neither for nor against (find_plateau()) */
	}
	return j;
}

/* The plateau test over the last p->window samples. A token bucket holds
 * every second in which requests wait at the same level, to within an I/O
 * or two (a second now and then falls short when the machine is busy); a
 * busy device that is not capped wanders by several percent at the same
 * queue depth. So: most of the window must be queueing (requests waiting,
 * device busy), and all but max_outliers of those queueing samples must
 * sit within a narrow band around their median, or make up, with the
 * next queueing second, for a second that fell short (is_made_up(), at
 * most max_made_up pairs). Samples without a queue
 * (the workload paused) are neither evidence for nor against. On success
 * returns true, the level (the mean of the samples in the band) and
 * whether the latest sample is one of them. */
static bool find_plateau(const struct ceiling_state *st, const struct ceiling_params *p, enum resource res,
			 double *ret_level, bool *ret_latest_in_band)
{
	unsigned window = st->n ? ceiling_params_window(p, recent(st, 0)->interval_sec) : 0;
	double values[CEILING_WINDOW_MAX], median, band, sum = 0.0, ios = 0.0;
	unsigned n_q = 0, n_in = 0, n_made_up = 0;
	const struct ceiling_sample *latest;
	bool latest_in = false;

	if (window == 0 || st->n < window) {
		return false;
	}
	latest = recent(st, 0);
	if (!is_queueing(p, latest)) {
		return false;
	}
	n_q = queueing_values(st, p, res, window, values);
	if (n_q < (unsigned)ceil(p->plateau_fraction * window - 1e-9)) {
		return false;
	}
	median = ceiling_median(values, n_q);
	band = plateau_band(p, res, median, latest);
	/* oldest first: a short second is made up by the next queueing one */
	for (unsigned i = window; i-- > 0;) {
		const struct ceiling_sample *s = recent(st, i);
		double x = sample_value(s, res);
		bool in = is_queueing(p, s) && fabs(x - median) <= band;
		unsigned j = i;

		if (!in && i > 0) {
			j = made_up_partner(st, p, i);
			if (n_made_up < p->max_made_up &&
			    is_made_up(p, res, s, recent(st, j), median, band)) {
				n_made_up++;
				n_in++;
				sum += x;
				ios += s->iops;
				s = recent(st, j);
				x = sample_value(s, res);
				in = true;
				i = j;
			}
		}
		if (in) {
			n_in++;
			sum += x;
			ios += s->iops;
			latest_in = latest_in || i == 0;
		}
	}
	if (n_in == 0 || n_q - n_in > fmax(p->max_outliers, floor(p->outlier_fraction * n_q)) ||
	    ios / n_in < p->min_iops) {
		return false;
	}
	*ret_level = sum / n_in;
	*ret_latest_in_band = latest_in;
	return true;
}

/* The demand the latest sample belongs to: the samples in a row up to it
 * with requests waiting, how long they last, and whether the demand began
 * after onset_quiet_sec without a queue or when the window began (iopsd
 * started watching, or a gap restarted the window). */
struct demand {
	unsigned n;
	double sec;
	bool is_onset;
};

static struct demand current_demand(const struct ceiling_state *st, const struct ceiling_params *p)
{
	struct demand dm = {0};
	double quiet = 0.0;
	unsigned i = 0;

	for (; i < st->n && is_queueing(p, recent(st, i)); i++) {
		dm.n++;
		dm.sec += recent(st, i)->interval_sec;
	}
	for (; i < st->n && quiet < p->onset_quiet_sec - 1e-6; i++) {
		if (is_queueing(p, recent(st, i))) {
			return dm; /* a queue came and went: not a demand rising from quiet */
		}
		quiet += recent(st, i)->interval_sec;
	}
	dm.is_onset = dm.n > 0;
	return dm;
}

/* The most recent samples that span `seconds`; 0 when fewer than n are
 * there. */
static unsigned samples_spanning(const struct ceiling_state *st, double seconds, unsigned n)
{
	double sec = 0.0;
	unsigned k = 0;

	while (k < n && sec < seconds - 0.5 * recent(st, 0)->interval_sec) {
		sec += recent(st, k++)->interval_sec;
	}
	return sec >= seconds - 0.5 * recent(st, 0)->interval_sec ? k : 0;
}

/* The samples an onset test judges: the last `seconds` of a demand that
 * rose from quiet at most onset_horizon_sec ago; 0 when there is none. */
static unsigned onset_samples(const struct ceiling_state *st, const struct ceiling_params *p,
			      const struct demand *dm, double seconds)
{
	if (!dm->is_onset || dm->sec > p->onset_horizon_sec + 1e-6) {
		return 0;
	}
	return samples_spanning(st, seconds, dm->n);
}

/* An onset band around level: onset_tolerance of it, widened to slack_ios
 * I/Os per interval (the slack of a hypervisor's timer, a few I/Os either
 * side of a sample's edge) but never past slack_max of it, so that a slow
 * busy device wandering by percents does not enter it by chance. */
static double onset_band_of(const struct ceiling_params *p, double slack_ios, double slack_max,
			    enum resource res, double level, const struct ceiling_sample *s)
{
	return fmin(band_of(p->onset_tolerance, slack_ios, res, level, s),
		    fmax(slack_max, p->onset_tolerance) * level);
}

static double onset_band(const struct ceiling_params *p, enum resource res, double level,
			 const struct ceiling_sample *s)
{
	return onset_band_of(p, p->onset_slack_ios, p->onset_slack_max, res, level, s);
}

/* Whether the last k samples are a demand an onset test may flag: not
 * idling, and not iopsd's own (the ceiling probe's burst is measured,
 * ceiling_state_measured(), not flagged). */
static bool is_others_demand(const struct ceiling_state *st, const struct ceiling_params *p, unsigned k)
{
	double ios = 0.0, own = 0.0;

	for (unsigned i = 0; i < k; i++) {
		ios += recent(st, i)->iops;
		own += recent(st, i)->own_ops / recent(st, i)->interval_sec;
	}
	return ios / k >= p->min_iops && own <= 0.5 * ios;
}

/* The onset test. A cap holds a demand that rose from quiet at one level
 * from its first full second: a cgroup's token bucket gives each second
 * the same count to within an I/O (600.00, 1000.0 and 20000 r/s, second
 * after second), a hypervisor's to within a few (QEMU's own count at 1000
 * wandered by 3, its timer releasing I/Os either side of a second's edge),
 * while a device that is merely busy wanders by percents. So in the first
 * onset_horizon_sec of such a demand, the last `seconds` of it all within
 * an onset band of their median, much narrower than the window test's, is
 * the plateau, found there and then. Only the few seconds after an onset
 * are looked at, so a device busy all day is judged by the window test
 * alone, as before. */
static bool flat_onset(const struct ceiling_state *st, const struct ceiling_params *p, enum resource res,
		       const struct demand *dm, double seconds, double slack_ios, double slack_max,
		       double min_requests, double *ret_level)
{
	double values[CEILING_WINDOW_MAX], median, band, sum = 0.0, requests = 0.0;
	unsigned k;

	k = seconds > 0 ? onset_samples(st, p, dm, seconds) : 0;
	if (k == 0 || !is_others_demand(st, p, k)) {
		return false;
	}
	for (unsigned i = 0; i < k; i++) {
		values[i] = sample_value(recent(st, i), res);
		requests += recent(st, i)->iops * recent(st, i)->interval_sec;
	}
	if (requests / k < min_requests) {
		return false;
	}
	median = ceiling_median(values, k);
	band = onset_band_of(p, slack_ios, slack_max, res, median, recent(st, 0));
	for (unsigned i = 0; i < k; i++) {
		double x = sample_value(recent(st, i), res);

		if (fabs(x - median) > band) {
			return false;
		}
		sum += x;
	}
	*ret_level = sum / k;
	return true;
}

/* The onset test in its two forms: the quick one, onset_quick_sec within
 * onset_tolerance of their median (no slack: a cgroup's cap, flagged a
 * second sooner), then onset_sec within the onset band (3 I/Os: a
 * hypervisor's). The quick form judges only seconds of at least
 * onset_quick_ios requests: in fewer, one request is more than its band,
 * and a busy device's whole counts agree four seconds running by chance
 * (128 a second wandering by 3: flagged at 49 onsets in 1000 without that
 * floor, 20 with it, tests/unit/test-ceiling.c). */
static bool onset_test(const struct ceiling_state *st, const struct ceiling_params *p, enum resource res,
		       const struct demand *dm, double *ret_level)
{
	if (p->onset_sec <= 0) {
		return false;
	}
	return flat_onset(st, p, res, dm, p->onset_quick_sec, 0.0, 0.0, p->onset_quick_ios, ret_level) ||
	       flat_onset(st, p, res, dm, p->onset_sec, p->onset_slack_ios, p->onset_slack_max, 0.0,
			  ret_level);
}

/* The sum test, the onset test's second form. A token bucket keeps what a
 * second left unspent and the next spends it, so a cap's seconds may each
 * sit off its level by a request or more (a guest's clock and the
 * hypervisor's disagree on where a second ends; 128 requests of 128 KiB a
 * second are each 0.8% of it, wider than any band the onset test can
 * afford), but their running sum never strays from the level by more than
 * the bucket's rounding: a request, or the onset band. A busy device's
 * seconds wander independently, and their running sum wanders with them.
 * So in the first onset_horizon_sec of a demand that rose from quiet,
 * onset_sum_sec of it whose every second is within onset_sum_spread bands
 * of their mean and whose running sum is within one band (never less than
 * a request, nor than onset_sum_jitter_sec at the level: a guest's seconds
 * end a few ms either side of the hypervisor's) of the mean's are the
 * plateau. Longer than the onset test,
 * because a request-wide band lets a slow busy device in more often: at
 * 8 s, a device of 128 whole requests a second wandering by 3 (2.3%) is
 * flagged at 15 more onsets in 1000, where the window test calls it
 * throttled for half its seconds anyway (bench/README.md, "The sum
 * test"). */
static bool sum_test(const struct ceiling_state *st, const struct ceiling_params *p, enum resource res,
		     const struct demand *dm, double *ret_level)
{
	unsigned k =
	    p->onset_sec > 0 && p->onset_sum_sec > 0 ? onset_samples(st, p, dm, p->onset_sum_sec) : 0;
	double count = 0.0, sec = 0.0, level, band, request, off = 0.0;
	const struct ceiling_sample *latest;

	if (k == 0 || !is_others_demand(st, p, k)) {
		return false;
	}
	latest = recent(st, 0);
	for (unsigned i = 0; i < k; i++) {
		count += sample_value(recent(st, i), res) * recent(st, i)->interval_sec;
		sec += recent(st, i)->interval_sec;
	}
	level = count / sec;
	/* a request, in the unit of res */
	request = res == RESOURCE_IOPS ? 1.0 : latest->iops > 0 ? latest->bytes_per_sec / latest->iops : 0.0;
	band = fmax(fmax(onset_band(p, res, level, latest), request), p->onset_sum_jitter_sec * level);
	/* oldest first: the running sum against the level's */
	for (unsigned i = k; i-- > 0;) {
		const struct ceiling_sample *s = recent(st, i);
		double x = sample_value(s, res);

		if (fabs(x - level) > p->onset_sum_spread * band) {
			return false;
		}
		off += (x - level) * s->interval_sec;
		if (fabs(off) > band) {
			return false;
		}
	}
	*ret_level = level;
	return true;
}

/* The provider test. Where the provider counts the time a volume's demand
 * was over its limits (EBS NVMe's "exceeded" counters, read every sample),
 * a second it counts whole was a second at the cap: the last exceeded_sec,
 * each counted over the limit for at least exceeded_share of it, are the
 * plateau, their mean its level, whatever the queue or the spread (the
 * provider's word is better evidence than either). */
static bool provider_test(const struct ceiling_state *st, const struct ceiling_params *p, enum resource res,
			  double *ret_level)
{
	unsigned k = st->n ? samples_spanning(st, p->exceeded_sec, st->n) : 0;
	double sum = 0.0;

	if (k == 0) {
		return false;
	}
	for (unsigned i = 0; i < k; i++) {
		const struct ceiling_sample *s = recent(st, i);
		double exceeded = res == RESOURCE_IOPS ? s->exceeded_iops_sec : s->exceeded_throughput_sec;

		if (exceeded < p->exceeded_share * s->interval_sec || s->iops < p->min_iops) {
			return false;
		}
		sum += sample_value(s, res);
	}
	*ret_level = sum / k;
	return true;
}

/* The pulse test (pulse.h) on the reads taken since the demand began, in
 * its first onset_horizon_sec: a slice throttle's windows of 100 ms all
 * hold the same count, where its seconds may not (a second's edge inside
 * a burst moves its count by the burst's rate). The level it gives must
 * agree with the latest second to a few plateau bands, as the hold asks
 * of a second that falls off the estimate. */
static bool pulse_stage(const struct ceiling_state *st, const struct ceiling_params *p,
			const struct demand *dm, double *ret_level)
{
	const struct ceiling_sample *latest = recent(st, 0);
	double level;

	if (p->pulse.slice_sec <= 0 || onset_samples(st, p, dm, latest->interval_sec) == 0 ||
	    !is_others_demand(st, p, 1) || !pulse_test(st->fine, st->n_fine, &p->pulse, &level)) {
		return false;
	}
	if (fabs(latest->iops - level) > 4 * plateau_band(p, RESOURCE_IOPS, level, latest)) {
		return false;
	}
	*ret_level = level;
	return true;
}

/* The window test (find_plateau()): whether its plateau takes the latest
 * sample, holds one that fell short, or is not there. */
enum window_verdict {
	WINDOW_NONE,
	WINDOW_LATEST_IN,
	WINDOW_LATEST_SHORT,
};

static enum window_verdict window_test(const struct ceiling_state *st, const struct ceiling_params *p,
				       enum resource res, double *ret_level)
{
	bool latest_in_band = false;

	if (!find_plateau(st, p, res, ret_level, &latest_in_band)) {
		return WINDOW_NONE;
	}
	return latest_in_band ? WINDOW_LATEST_IN : WINDOW_LATEST_SHORT;
}

/* The hold: once found, the plateau holds while the device stays on the
 * estimate with requests queued, even if the window's make-up changed. One
 * the onset test found, with no window of it yet to fall back on, gives a
 * second off it (a busy machine completes a second short, or late) the
 * next: the two together back on the estimate, it holds. */
static bool holds(const struct ceiling_state *st, const struct ceiling_params *p, enum resource res,
		  struct ceiling_detector *d)
{
	const struct ceiling_sample *latest = recent(st, 0), *prev = st->n > 1 ? recent(st, 1) : NULL;
	double band = plateau_band(p, res, d->estimate, latest);

	if (!d->is_active || !is_queueing(p, latest)) {
		return false;
	}
	if (fabs(sample_value(latest, res) - d->estimate) <= band) {
		d->n_off = 0;
		return true;
	}
	if (d->found_by != CEILING_STAGE_ONSET && d->found_by != CEILING_STAGE_PULSE) {
		return false; /* the window test has its own (WINDOW_LATEST_SHORT) */
	}
	if (++d->n_off == 1) {
		/* short or long by a few bands: a stall to nothing is no
		 * second of the cap's */
		return fabs(sample_value(latest, res) - d->estimate) <= 4 * band;
	}
	d->n_off = 0;
	return prev &&
	       fabs((sample_value(latest, res) + sample_value(prev, res)) / 2 - d->estimate) <= band / 2;
}

void plateau_found(struct ceiling_detector *d, double level, enum ceiling_stage stage)
{
	*d = (struct ceiling_detector){.estimate = level, .is_active = true, .found_by = stage};
}

/* No plateau: a device that sustains more than the estimate proves it wrong
 * (the limit was raised, or the plateau was the workload's own). */
static void release(struct ceiling_detector *d, const struct ceiling_params *p, double x)
{
	d->is_active = false;
	if (d->estimate > 0 && x > d->estimate * p->contradict_factor) {
		if (++d->n_above >= p->contradict_samples) {
			*d = (struct ceiling_detector){0};
		}
	} else {
		d->n_above = 0;
	}
}

/* The provider test, the pulse test (IOPS), the onset test, the window
 * test and the hold, in that order, for one resource. */
static void detect(struct ceiling_state *st, const struct ceiling_params *p, enum resource res,
		   const struct demand *dm)
{
	struct ceiling_detector *d = res == RESOURCE_IOPS ? &st->iops : &st->throughput;
	const struct ceiling_sample *latest = recent(st, 0);
	double level;

	if (provider_test(st, p, res, &level)) {
		plateau_found(d, level, CEILING_STAGE_PROVIDER);
		return;
	}
	if (res == RESOURCE_IOPS && pulse_stage(st, p, dm, &level)) {
		plateau_found(d, level, CEILING_STAGE_PULSE);
		return;
	}
	if (onset_test(st, p, res, dm, &level) || sum_test(st, p, res, dm, &level)) {
		plateau_found(d, level, CEILING_STAGE_ONSET);
		return;
	}
	switch (window_test(st, p, res, &level)) {
	case WINDOW_LATEST_IN:
		plateau_found(d, level, CEILING_STAGE_WINDOW);
		return;
	case WINDOW_LATEST_SHORT:
		/* one of the few seconds that fall short: the plateau holds if
		 * it was already established */
		if (d->is_active) {
			return;
		}
		break;
	case WINDOW_NONE:
		break;
	}
	if (!holds(st, p, res, d)) {
		release(d, p, sample_value(latest, res));
	}
}

/* The onset test, the window test and the hold, for IOPS and throughput. */
void plateau_detect(struct ceiling_state *st, const struct ceiling_params *p)
{
	struct demand dm = current_demand(st, p);

	detect(st, p, RESOURCE_IOPS, &dm);
	detect(st, p, RESOURCE_THROUGHPUT, &dm);
}

const struct ceiling_sample *ceiling_state_recent(const struct ceiling_state *st, unsigned i)
{
	return i < st->n ? recent(st, i) : NULL;
}

bool ceiling_state_iops_plateau(const struct ceiling_state *st, const struct ceiling_params *p,
				double *ret_level)
{
	bool latest_in_band;

	return find_plateau(st, p, RESOURCE_IOPS, ret_level, &latest_in_band) && latest_in_band;
}

unsigned ceiling_state_onset_samples(const struct ceiling_state *st, const struct ceiling_params *p,
				     double seconds)
{
	struct demand dm;

	if (st->n == 0) {
		return 0;
	}
	dm = current_demand(st, p);
	return onset_samples(st, p, &dm, seconds);
}

bool ceiling_sample_is_queueing(const struct ceiling_params *p, const struct ceiling_sample *s)
{
	return is_queueing(p, s);
}

double ceiling_band(const struct ceiling_params *p, double level, const struct ceiling_sample *s)
{
	return plateau_band(p, RESOURCE_IOPS, level, s);
}
