/* Ceiling detection and declared-limit accounting, one device at a time.
 * See ceiling.h and iopsd(8), CEILING DETECTION. */
#include "ceiling.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "name_index.h"
#include "provider_units.h"

void ceiling_params_default(struct ceiling_params *ret)
{
	*ret = (struct ceiling_params){
	    .window = 20,
	    .plateau_tolerance = 0.015,
	    .plateau_slack_ios = 2.5,
	    .plateau_fraction = 0.8,
	    .member_plateau_fraction = 0.3,
	    .max_outliers = 3,
	    .max_made_up = 3,
	    .outlier_fraction = 0.0,
	    .member_outlier_fraction = 0.25,
	    .min_queue = 0.9,
	    .min_utilization = 0.8,
	    .min_iops = 10.0,
	    .contradict_factor = 1.10,
	    .contradict_samples = 3,
	    .saturation = 0.95,
	};
	burst_params_default(&ret->burst);
}

void ceiling_state_init(struct ceiling_state *st)
{
	*st = (struct ceiling_state){0};
}

enum resource {
	RESOURCE_IOPS,
	RESOURCE_THROUGHPUT,
};

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
static double band_for(const struct ceiling_params *p, enum resource res, double level,
		       const struct ceiling_sample *s)
{
	double slack = p->plateau_slack_ios / (s->interval_sec > 0 ? s->interval_sec : 1.0);

	if (res == RESOURCE_THROUGHPUT) {
		slack *= s->iops > 0 ? s->bytes_per_sec / s->iops : 0.0;
	}
	return fmax(p->plateau_tolerance * level, slack);
}

static bool is_queueing(const struct ceiling_params *p, const struct ceiling_sample *s)
{
	return s->queue_depth >= p->min_queue && s->utilization >= p->min_utilization;
}

/* The median of v[0..n-1], n > 0, sorting v in place. An insertion sort:
 * this runs twice per device and tick on a window of p->window (20) values,
 * where qsort's merge sort and indirect comparisons cost more than the rest
 * of the ceiling update. */
static double median_of(double *v, unsigned n)
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
	unsigned window = p->window < CEILING_WINDOW_MAX ? p->window : CEILING_WINDOW_MAX;
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
	median = median_of(values, n_q);
	band = band_for(p, res, median, latest);
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

static void detect(struct ceiling_state *st, const struct ceiling_params *p, enum resource res)
{
	struct ceiling_detector *d = res == RESOURCE_IOPS ? &st->iops : &st->throughput;
	const struct ceiling_sample *latest = recent(st, 0);
	double x = sample_value(latest, res), level;
	bool latest_in_band = false;

	if (find_plateau(st, p, res, &level, &latest_in_band)) {
		if (latest_in_band) {
			d->estimate = level;
			d->is_active = true;
			d->n_above = 0;
			return;
		}
		/* one of the few seconds that fall short: the plateau holds if
		 * it was already established */
		if (d->is_active) {
			return;
		}
	}
	/* Hysteresis: once found, the plateau holds while the device stays on
	 * the estimate with requests queued, even if the window's make-up
	 * changed. */
	if (d->is_active && fabs(x - d->estimate) <= band_for(p, res, d->estimate, latest) &&
	    is_queueing(p, latest)) {
		return;
	}
	d->is_active = false;
	/* A device that sustains more than the estimate proves it wrong (the
	 * limit was raised, or the plateau was the workload's own). */
	if (d->estimate > 0 && x > d->estimate * p->contradict_factor) {
		if (++d->n_above >= p->contradict_samples) {
			d->estimate = 0.0;
			d->n_above = 0;
		}
	} else {
		d->n_above = 0;
	}
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

bool ceiling_sample_is_queueing(const struct ceiling_params *p, const struct ceiling_sample *s)
{
	return is_queueing(p, s);
}

double ceiling_band(const struct ceiling_params *p, double level, const struct ceiling_sample *s)
{
	return band_for(p, RESOURCE_IOPS, level, s);
}

/* A declared bucket in its own credits: gp2's (and a [device]'s
 * burst_iops=, burst_credits=, credit_rate=) in I/Os of the provider's unit,
 * st1's and sc1's in bytes of throughput. */
struct bucket {
	bool is_throughput;
	double burst, base, credits; /* credits per second, per second, in all */
};

static bool declared_bucket(const struct device_config *dc, struct bucket *ret)
{
	if (dc && dc->burst_iops > 0 && dc->burst_credits > 0 && dc->credit_rate > 0) {
		*ret = (struct bucket){false, (double)dc->burst_iops, dc->credit_rate,
				       (double)dc->burst_credits};
		return true;
	}
	if (dc && dc->burst_throughput > 0 && dc->burst_throughput_credits > 0 && dc->throughput_limit > 0) {
		*ret = (struct bucket){true, (double)dc->burst_throughput, (double)dc->throughput_limit,
				       (double)dc->burst_throughput_credits};
		return true;
	}
	return false;
}

/* The interval's spending of bucket b: I/Os in units, or bytes. */
static double bucket_rate(const struct bucket *b, const struct ceiling_sample *s, double counted_iops)
{
	return b->is_throughput ? s->bytes_per_sec : counted_iops;
}

/* A credit's worth: one I/O, or a MiB of throughput (the providers' HDD unit). */
static double bucket_grain(const struct bucket *b)
{
	return b->is_throughput ? 1024.0 * 1024.0 : 1.0;
}

/* The declared bucket starts full when the model appears and goes away
 * with it. */
static void declare_bucket(struct ceiling_state *st, const struct device_config *dc)
{
	struct bucket b;
	bool has = declared_bucket(dc, &b);

	if (has && !st->has_burst_balance) {
		/* A volume starts with a full bucket (gp2 does); iopsd cannot
		 * know what was spent before it started. */
		st->burst_balance = b.credits;
		st->has_burst_balance = true;
	} else if (!has) {
		st->has_burst_balance = false;
	}
}

/* gp2, st1 and QEMU alike: credits accrue at the baseline rate and every
 * I/O (st1: every byte) spends its share; the bucket holds at most its
 * credits. A device held at its
 * baseline with requests waiting has an empty bucket, whatever the count
 * says, since the count drifts from what the provider accounts: at once
 * when the count is within its last percent, and otherwise after
 * CEILING_BASE_HELD_SAMPLES held near the base whose mean is on it (the
 * mean, not each second: the base may be completed unevenly). How a QEMU
 * throttle and a TCG guest behave there: bench/README.md, "The bucket at
 * its base". */
static bool is_held_at_base(struct ceiling_state *st, const struct ceiling_params *p, const struct bucket *b,
			    double rate, const struct ceiling_sample *s, bool is_held)
{
	const unsigned n = CEILING_BASE_HELD_SAMPLES;
	double sum = 0.0;

	if (!is_held) {
		st->n_held = 0;
		return false;
	}
	/* the last n, oldest first */
	memmove(st->held_iops, st->held_iops + 1, (n - 1) * sizeof(st->held_iops[0]));
	st->held_iops[n - 1] = rate;
	if (st->n_held < n && ++st->n_held < n) {
		return false;
	}
	for (unsigned i = 0; i < n; i++) {
		sum += st->held_iops[i];
	}
	return fabs(sum / n - b->base) <=
	       band_for(p, b->is_throughput ? RESOURCE_THROUGHPUT : RESOURCE_IOPS, b->base, s);
}

static void spend_declared_bucket(struct ceiling_state *st, const struct ceiling_params *p,
				  const struct device_config *dc, const struct ceiling_sample *s,
				  double counted, struct device_ceiling *ret)
{
	struct bucket b;
	bool is_held, is_at_base;
	double rate;

	if (!st->has_burst_balance || !declared_bucket(dc, &b)) {
		return;
	}
	rate = bucket_rate(&b, s, counted);
	st->burst_balance += (b.base - rate) * s->interval_sec;
	st->burst_balance = fmin(fmax(st->burst_balance, 0.0), b.credits);
	is_held = is_queueing(p, s) && rate <= b.base * 1.1;
	is_at_base = is_held_at_base(st, p, &b, rate, s, is_held);
	if (is_held && (st->burst_balance < 0.01 * b.credits || is_at_base)) {
		st->burst_balance = 0.0;
	}
	if (!b.is_throughput && ret->iops_limit == 0) {
		/* No fixed limit: the limit now is the burst rate while
		 * credits last, the baseline once they are spent. */
		ret->iops_limit =
		    st->burst_balance >= 1.0 ? dc->burst_iops : (uint64_t)llround(dc->credit_rate);
	}
}

/* Whether the interval is the declared bucket's burst: credits left, above
 * the base and near the burst rate. */
static bool is_declared_burst(const struct ceiling_state *st, const struct device_config *dc,
			      const struct ceiling_sample *s)
{
	struct bucket b;
	double rate;

	if (!declared_bucket(dc, &b)) {
		return false;
	}
	rate = bucket_rate(&b, s, s->iops * fmax(st->units_per_io, 1.0));
	return st->burst_balance >= bucket_grain(&b) && rate > b.base * 1.1 && rate >= 0.8 * b.burst;
}

/* The interval's I/Os as the provider counts them: weighted by their size
 * in units of the declared iops_unit (provider_units.h), else as they are. */
static double counted_iops(const struct device_config *dc, const struct device_rates *r)
{
	if (!dc || !dc->provider.iops_unit) {
		return r->read_iops + r->write_iops;
	}
	return provider_units_rw(r->read_iops, r->read_bytes_per_sec, r->write_iops, r->write_bytes_per_sec,
				 dc->provider.iops_unit);
}

static void count_at_limit(struct ceiling_state *st, const struct device_config *dc,
			   const struct ceiling_sample *s, double counted, struct device_ceiling *ret)
{
	double threshold = dc && dc->ceiling_threshold > 0 ? dc->ceiling_threshold : 0.95;

	if (ret->iops_limit > 0) {
		ret->iops_limit_ratio = counted / (double)ret->iops_limit;
		if (ret->iops_limit_ratio >= threshold) {
			st->at_ceiling_iops_sec += s->interval_sec;
			ret->is_at_limit = true;
		}
	}
	if (ret->throughput_limit > 0) {
		ret->throughput_limit_ratio = s->bytes_per_sec / (double)ret->throughput_limit;
		if (ret->throughput_limit_ratio >= threshold) {
			st->at_ceiling_throughput_sec += s->interval_sec;
			ret->is_at_limit = true;
		}
	}
}

/* Store the interval in the window; NULL for a gap (the window restarts,
 * estimates and counters stay). */
static const struct ceiling_sample *push_sample(struct ceiling_state *st, const struct device_rates *r)
{
	struct ceiling_sample *s;

	if (!r->valid || !(r->interval_sec > 0)) {
		st->n = 0;
		return NULL;
	}
	s = &st->ring[st->head];
	*s = (struct ceiling_sample){
	    .interval_sec = r->interval_sec,
	    .iops = r->read_iops + r->write_iops,
	    .bytes_per_sec = r->read_bytes_per_sec + r->write_bytes_per_sec,
	    .queue_depth = r->queue_depth,
	    .utilization = r->utilization,
	    .own_ops = st->pending_own_ops,
	};
	st->pending_own_ops = 0.0;
	st->head = (st->head + 1) % CEILING_WINDOW_MAX;
	if (st->n < CEILING_WINDOW_MAX) {
		st->n++;
	}
	return s;
}

/* A burst is not the ceiling. While a bucket (declared, or learned from a
 * burst seen to run out) has credits and the device runs near its burst
 * rate, the flat top is the burst: no plateau is taken from it, and the
 * estimate stays at the base. When a burst is seen to run out, the level
 * it settled to is the ceiling at once, without waiting for a window of
 * it. Otherwise the plateau test runs. */
static void judge_plateaus(struct ceiling_state *st, const struct ceiling_params *p,
			   const struct device_config *dc, const struct ceiling_sample *s)
{
	struct burst_sample bs = {s->interval_sec, s->iops, s->bytes_per_sec, is_queueing(p, s),
				  s->queue_depth >= p->min_queue};
	const struct burst_model *m = &st->burst.model;
	bool is_bursting;

	if (burst_tracker_update(&st->burst, &p->burst, &bs, st->now_usec)) {
		st->iops = (struct ceiling_detector){.estimate = m->base_iops, .is_active = true};
		st->throughput =
		    (struct ceiling_detector){.estimate = m->base_bytes_per_sec, .is_active = true};
		if (st->peak_iops >= 0.8 * m->burst_iops) {
			/* the highest plateau was the burst */
			st->peak_iops = m->base_iops;
		}
		return;
	}
	if (st->has_burst_balance) {
		is_bursting = is_declared_burst(st, dc, s);
	} else {
		is_bursting = burst_tracker_is_bursting(&st->burst, s->iops);
	}
	if (is_bursting) {
		st->iops.is_active = st->throughput.is_active = false;
		st->iops.n_above = st->throughput.n_above = 0;
		return;
	}
	detect(st, p, RESOURCE_IOPS);
	detect(st, p, RESOURCE_THROUGHPUT);
}

static void fill_burst(const struct ceiling_state *st, const struct device_config *dc,
		       struct device_ceiling *ret)
{
	const struct burst_model *m = &st->burst.model;
	struct bucket b;

	if (st->has_burst_balance && declared_bucket(dc, &b)) {
		ret->has_burst_model = true;
		ret->burst_balance_ratio = st->burst_balance / b.credits;
	} else if (m->is_known && m->credits > 0) {
		ret->has_burst_model = true;
		ret->burst_balance_ratio = m->balance / m->credits;
	}
	if (m->is_known) {
		ret->has_learned_burst = true;
		ret->burst_iops_estimate = m->burst_iops;
		ret->burst_base_iops_estimate = m->base_iops;
		ret->burst_credits_estimate = m->credits;
		ret->burst_duration_seconds = m->duration_sec;
		ret->burst_exhausted_realtime_usec = m->exhausted_usec;
	}
}

void ceiling_update(struct ceiling_state *st, const struct ceiling_params *p, const struct device_config *dc,
		    const struct device_rates *r, struct device_ceiling *ret)
{
	const struct ceiling_sample *s;
	double counted;

	*ret = (struct device_ceiling){
	    .iops_limit = dc ? dc->iops_limit : 0,
	    .throughput_limit = dc ? dc->throughput_limit : 0,
	    .iops_limit_ratio = NAN,
	    .throughput_limit_ratio = NAN,
	};
	declare_bucket(st, dc);
	s = push_sample(st, r);
	if (s) {
		counted = counted_iops(dc, r);
		/* units per I/O of the latest interval: the estimate is in I/Os */
		st->units_per_io = s->iops > 0 ? counted / s->iops : st->units_per_io;
		spend_declared_bucket(st, p, dc, s, counted, ret);
		count_at_limit(st, dc, s, counted, ret);
		judge_plateaus(st, p, dc, s);
		ret->is_throttled = st->iops.is_active || st->throughput.is_active;
		ret->is_saturated = r->utilization >= p->saturation;
	}
	ret->at_ceiling_iops_seconds = st->at_ceiling_iops_sec;
	ret->at_ceiling_throughput_seconds = st->at_ceiling_throughput_sec;
	ret->iops_ceiling_estimate = st->iops.estimate;
	ret->throughput_ceiling_estimate = st->throughput.estimate;
	st->peak_iops = fmax(st->peak_iops, st->iops.estimate);
	ret->iops_ceiling_limit_ratio =
	    dc && dc->iops_limit && st->iops.estimate > 0
		? st->iops.estimate * fmax(st->units_per_io, 1.0) / (double)dc->iops_limit
		: 0.0;
	ret->throughput_ceiling_limit_ratio = dc && dc->throughput_limit && st->throughput.estimate > 0
						  ? st->throughput.estimate / (double)dc->throughput_limit
						  : 0.0;
	fill_burst(st, dc, ret);
}

void ceiling_state_measured(struct ceiling_state *st, double iops, double bytes_per_sec)
{
	const struct burst_model *m = &st->burst.model;

	if (m->is_known && iops >= 0.8 * m->burst_iops) {
		/* a quiet volume with credits bursts: this measured the
		 * burst, which is not the ceiling */
		return;
	}
	if (iops > 0) {
		st->iops.estimate = iops;
		st->iops.n_above = 0;
	}
	if (bytes_per_sec > 0) {
		st->throughput.estimate = bytes_per_sec;
		st->throughput.n_above = 0;
	}
}

void ceiling_state_note_own_ops(struct ceiling_state *st, double ops)
{
	if (ops > 0) {
		st->pending_own_ops += ops;
	}
}

bool ceiling_state_is_quiet(const struct ceiling_state *st, double seconds, double max_iops)
{
	double covered = 0.0, ops = 0.0;

	for (unsigned i = 0; i < st->n && covered < seconds - 1e-6; i++) {
		const struct ceiling_sample *s = recent(st, i);

		covered += s->interval_sec;
		ops += s->iops * s->interval_sec - s->own_ops;
	}
	if (covered < seconds - 1e-6 || covered <= 0) {
		return false;
	}
	return fmax(ops, 0.0) / covered <= max_iops;
}

/* The set ------------------------------------------------------------------ */

struct ceiling_entry {
	char name[DISKSTATS_NAME_MAX];
	bool is_seen; /* updated during the current sample */
	struct ceiling_state state;
};

struct ceiling_set {
	struct ceiling_params params;
	uint64_t now_usec; /* ceiling_set_start_sample() */
	struct ceiling_entry **entries;
	size_t n, allocated;
	struct name_index index;
	bool is_index_stale;
};

static const char *entry_name(const void *base, size_t i)
{
	return ((struct ceiling_entry *const *)base)[i]->name;
}

int ceiling_set_new(const struct ceiling_params *p, struct ceiling_set **ret)
{
	struct ceiling_set *s = calloc(1, sizeof(*s));

	if (!s) {
		return -ENOMEM;
	}
	if (p) {
		s->params = *p;
	} else {
		ceiling_params_default(&s->params);
	}
	*ret = s;
	return 0;
}

struct ceiling_set *ceiling_set_free(struct ceiling_set *s)
{
	if (!s) {
		return NULL;
	}
	for (size_t i = 0; i < s->n; i++) {
		free(s->entries[i]);
	}
	free(s->entries);
	name_index_done(&s->index);
	free(s);
	return NULL;
}

static int reindex(struct ceiling_set *s)
{
	int r;

	if (!s->is_index_stale) {
		return 0;
	}
	r = name_index_build(&s->index, s->entries, s->n, entry_name);
	if (r < 0) {
		return r;
	}
	s->is_index_stale = false;
	return 0;
}

static struct ceiling_entry *lookup(struct ceiling_set *s, const char *name)
{
	size_t i;

	if (reindex(s) < 0) {
		/* Without an index, a linear search still answers. */
		for (i = 0; i < s->n; i++) {
			if (strcmp(s->entries[i]->name, name) == 0) {
				return s->entries[i];
			}
		}
		return NULL;
	}
	i = name_index_find(&s->index, s->entries, entry_name, name);
	return i == SIZE_MAX ? NULL : s->entries[i];
}

struct ceiling_state *ceiling_set_find(struct ceiling_set *s, const char *name)
{
	struct ceiling_entry *e = lookup(s, name);

	return e ? &e->state : NULL;
}

static struct ceiling_entry *add(struct ceiling_set *s, const char *name)
{
	struct ceiling_entry *e;

	if (strlen(name) >= DISKSTATS_NAME_MAX) {
		return NULL;
	}
	if (s->n == s->allocated) {
		size_t n = s->allocated ? s->allocated * 2 : 16;
		struct ceiling_entry **a = reallocarray(s->entries, n, sizeof(*a));

		if (!a) {
			return NULL;
		}
		s->entries = a;
		s->allocated = n;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		return NULL;
	}
	strcpy(e->name, name);
	ceiling_state_init(&e->state);
	s->entries[s->n++] = e;
	if (s->is_index_stale || name_index_add(&s->index, s->entries, s->n, entry_name) < 0) {
		s->is_index_stale = true;
	}
	return e;
}

int ceiling_set_update(struct ceiling_set *s, const char *name, const struct device_config *dc,
		       const struct device_rates *r, const struct device_rates *member, bool is_array_member,
		       struct device_ceiling *ret)
{
	struct ceiling_entry *e = lookup(s, name);
	struct device_rates x = *r;
	struct ceiling_params p = s->params;

	if (!e) {
		e = add(s, name);
	}
	if (!e) {
		*ret = (struct device_ceiling){
		    .iops_limit = dc ? dc->iops_limit : 0,
		    .throughput_limit = dc ? dc->throughput_limit : 0,
		    .iops_limit_ratio = NAN,
		    .throughput_limit_ratio = NAN,
		};
		return -ENOMEM;
	}
	if (member && member->valid) {
		x.queue_depth = fmax(x.queue_depth, member->queue_depth);
		x.utilization = fmax(x.utilization, member->utilization);
	}
	if (is_array_member) {
		/* Two members capped alike: whichever is behind holds the
		 * array's queue for a few seconds, then the other; each is at
		 * its cap whenever it queues, but queues half the time. */
		p.plateau_fraction = p.member_plateau_fraction;
		p.max_outliers = 0;
		p.outlier_fraction = p.member_outlier_fraction;
	}
	e->is_seen = true;
	e->state.now_usec = s->now_usec;
	ceiling_update(&e->state, &p, dc, &x, ret);
	return 0;
}

void ceiling_set_start_sample(struct ceiling_set *s, uint64_t realtime_usec)
{
	s->now_usec = realtime_usec;
}

bool ceiling_set_is_queueing(const struct ceiling_set *s, const struct device_rates *r)
{
	return r->valid && r->queue_depth >= s->params.min_queue &&
	       r->utilization >= s->params.min_utilization;
}

void ceiling_set_end_sample(struct ceiling_set *s)
{
	size_t j = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct ceiling_entry *e = s->entries[i];

		if (e->is_seen) {
			e->is_seen = false;
			s->entries[j++] = e;
		} else {
			free(e);
		}
	}
	if (j != s->n) {
		s->n = j;
		s->is_index_stale = true;
	}
}
