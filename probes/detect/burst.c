/* Learning a burst bucket from the per-second samples. See burst.h and
 * iopsd(8), BURST BUCKETS. */
#include "burst.h"

#include <math.h>
#include <string.h>

#include "macro.h"

void burst_params_default(struct burst_params *ret)
{
	*ret = (struct burst_params){
	    .drop_ratio = 0.2,
	    .settle_samples = 5,
	    .settle_tolerance = 0.02,
	    .min_burst_samples = 10,
	    .calm_samples = 3,
	    .give_up_samples = 30,
	    .size_tolerance = 0.25,
	};
}

/* The i-th most recent sample (0 = latest); i < n_recent. */
static const struct burst_sample *recent(const struct burst_tracker *bt, unsigned i)
{
	return &bt->recent[bt->n_recent - 1 - i];
}

static void push_recent(struct burst_tracker *bt, const struct burst_sample *s)
{
	if (bt->n_recent == BURST_RECENT_MAX) {
		memmove(bt->recent, bt->recent + 1, (BURST_RECENT_MAX - 1) * sizeof(bt->recent[0]));
		bt->n_recent--;
	}
	bt->recent[bt->n_recent++] = *s;
}

/* The learned bucket, as QEMU's and gp2's run: credits come back at the
 * base rate and every I/O spends one, between empty and full; held at its
 * base with requests waiting, the device has none left. */
static void run_bucket(struct burst_model *m, const struct burst_sample *s)
{
	if (!m->is_known) {
		return;
	}
	m->balance += (m->base_iops - s->iops) * s->interval_sec;
	m->balance = fmin(fmax(m->balance, 0.0), m->credits);
	if (m->balance < 0.01 * m->credits && s->has_demand && s->iops <= m->base_iops * 1.1) {
		m->balance = 0.0;
	}
}

static void begin_demand(struct burst_tracker *bt)
{
	bt->is_in_demand = true;
	bt->is_first_phase = true;
	bt->is_done = false;
	bt->n_demand = bt->n_low = bt->n_high = 0;
	bt->high_n = bt->high_iops = bt->high_bytes = 0.0;
	bt->phase_sec = bt->phase_ios = bt->high_end_sec = bt->high_end_ios = 0.0;
	bt->start_balance = bt->model.balance;
}

static void add_high(struct burst_tracker *bt, const struct burst_params *p, const struct burst_sample *s)
{
	const struct burst_model *m = &bt->model;

	bt->high_n += 1;
	bt->high_iops += s->iops;
	bt->high_bytes += s->bytes_per_sec;
	bt->high_end_sec = bt->phase_sec;
	bt->high_end_ios = bt->phase_ios;
	bt->n_low = bt->n_high = 0;
	/* The learned bucket was well filled when this demand began, yet the
	 * device runs at its base: what looked like a burst running out was
	 * a cap that was lowered. */
	if (bt->high_n == p->settle_samples && m->is_known && bt->start_balance >= 0.5 * m->credits &&
	    bt->high_iops / bt->high_n <= m->base_iops * (1 + p->drop_ratio / 2)) {
		bt->model = (struct burst_model){0};
		bt->start_balance = 0.0;
	}
}

/* The level went up and stayed there. At the start of a demand that is a
 * ramp: the first phase starts over from the higher level. Later it is a
 * cap that was raised, and what follows is not a burst from the start. */
static void rise(struct burst_tracker *bt, const struct burst_params *p)
{
	unsigned n = bt->n_high;

	if (bt->high_n > p->settle_samples) {
		bt->is_done = true;
		return;
	}
	bt->high_n = bt->high_iops = bt->high_bytes = 0.0;
	for (unsigned i = n; i-- > 0;) {
		if (recent(bt, i)->has_demand) {
			add_high(bt, p, recent(bt, i));
		}
	}
}

static double bytes_per_io(double bytes, double iops)
{
	return iops > 0 ? bytes / iops : 0.0;
}

/* The last settle_samples samples hold one level below the first phase
 * (mean `high`), with requests of the same size: on success the level and
 * its throughput. */
static bool settled_level(const struct burst_tracker *bt, const struct burst_params *p, double high,
			  double *ret_iops, double *ret_bytes)
{
	double sum = 0.0, bytes = 0.0, level, size_high, size_low;

	if (bt->n_recent < p->settle_samples) {
		return false;
	}
	for (unsigned i = 0; i < p->settle_samples; i++) {
		const struct burst_sample *s = recent(bt, i);

		if (!s->has_demand || s->iops >= high * (1 - p->drop_ratio)) {
			return false;
		}
		sum += s->iops;
		bytes += s->bytes_per_sec;
	}
	level = sum / p->settle_samples;
	for (unsigned i = 0; i < p->settle_samples; i++) {
		if (fabs(recent(bt, i)->iops - level) > p->settle_tolerance * level) {
			return false;
		}
	}
	size_high = bytes_per_io(bt->high_bytes, bt->high_iops);
	size_low = bytes_per_io(bytes, sum);
	if (size_high > 0 && fabs(size_low - size_high) > p->size_tolerance * size_high) {
		return false;
	}
	*ret_iops = level;
	*ret_bytes = bytes / p->settle_samples;
	return true;
}

/* The burst ran out n_low samples ago, within the sample right after the
 * first phase for the share of it that still ran at the burst rate. The
 * bucket is what the burst spent over the base, as QEMU's and gp2's count:
 * every I/O from the start of the demand, less the base's rate. */
static void learn(struct burst_tracker *bt, double base, double base_bytes, uint64_t now_usec)
{
	struct burst_model *m = &bt->model;
	double high = bt->high_iops / bt->high_n, since = 0.0, partial = 0.0, duration, credits;
	unsigned n = bt->n_low < bt->n_recent ? bt->n_low : bt->n_recent;
	const struct burst_sample *first_low = recent(bt, n - 1);

	for (unsigned i = 0; i < n; i++) {
		since += recent(bt, i)->interval_sec;
	}
	if (first_low->iops > base && first_low->iops < high) {
		partial = first_low->interval_sec * (first_low->iops - base) / (high - base);
	}
	duration = bt->high_end_sec + partial;
	credits = bt->high_end_ios - base * bt->high_end_sec + (high - base) * partial;
	if (m->is_known && bt->start_balance < 0.95 * m->credits) {
		/* the demand began with a bucket the model thought part
		 * empty: what it spent says only that the bucket is this big */
		credits = fmax(credits, m->credits);
	}
	*m = (struct burst_model){
	    .is_known = true,
	    .burst_iops = high,
	    .base_iops = base,
	    .base_bytes_per_sec = base_bytes,
	    .credits = credits,
	    .balance = 0.0,
	    .duration_sec = duration,
	    .exhausted_usec = now_usec > (uint64_t)((since - partial) * 1e6)
				  ? now_usec - (uint64_t)llround((since - partial) * 1e6)
				  : 0,
	};
	bt->is_done = true;
}

/* A sample of the demand: part of the first phase, above it, or below it
 * (where the burst may have run out). */
static bool follow_first_phase(struct burst_tracker *bt, const struct burst_params *p,
			       const struct burst_sample *s, uint64_t now_usec)
{
	double high = bt->high_n > 0 ? bt->high_iops / bt->high_n : 0.0, level, bytes;

	if (bt->high_n == 0 || s->iops >= high * (1 - p->drop_ratio)) {
		if (bt->high_n > 0 && s->iops > high * (1 + p->drop_ratio)) {
			if (++bt->n_high >= p->settle_samples) {
				rise(bt, p);
			}
			return false;
		}
		add_high(bt, p, s);
		return false;
	}
	bt->n_high = 0;
	bt->n_low++;
	if (bt->n_low < p->settle_samples) {
		return false;
	}
	if (bt->high_n >= p->min_burst_samples && settled_level(bt, p, high, &level, &bytes)) {
		learn(bt, level, bytes, now_usec);
		return true;
	}
	if (bt->n_low >= p->give_up_samples) {
		/* lower, but not one level: the demand changed */
		bt->is_done = true;
	}
	return false;
}

bool burst_tracker_update(struct burst_tracker *bt, const struct burst_params *p,
			  const struct burst_sample *s, uint64_t now_usec)
{
	run_bucket(&bt->model, s);
	push_recent(bt, s);
	if (bt->is_in_demand) {
		bt->phase_sec += s->interval_sec;
		bt->phase_ios += s->iops * s->interval_sec;
	}
	if (!s->has_demand) {
		if (bt->is_in_demand && bt->n_low > 0) {
			bt->n_low++;
		}
		if (++bt->n_calm >= p->calm_samples) {
			bt->is_in_demand = false;
		}
		return false;
	}
	bt->n_calm = 0;
	if (!bt->is_in_demand) {
		begin_demand(bt);
		bt->phase_sec = s->interval_sec;
		bt->phase_ios = s->iops * s->interval_sec;
	}
	bt->n_demand++;
	if (bt->is_done) {
		return false;
	}
	/* a partial first second that falls short is left behind by rise() */
	return follow_first_phase(bt, p, s, now_usec);
}

bool burst_tracker_is_bursting(const struct burst_tracker *bt, double iops)
{
	const struct burst_model *m = &bt->model;
	bool is_still_first;

	if (!m->is_known || iops <= m->base_iops * 1.1 || iops < 0.8 * m->burst_iops) {
		return false;
	}
	is_still_first = bt->is_in_demand && !bt->is_done && bt->high_n > 0 &&
			 bt->high_iops / bt->high_n >= 0.8 * m->burst_iops &&
			 bt->high_end_sec <= 2 * m->duration_sec + 10;
	return m->balance >= 1.0 || is_still_first;
}
