/* Ceiling detection and declared-limit accounting, one device at a time.
 * See ceiling.h and iopsd(8), CEILING DETECTION. */
#include "ceiling.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "name_index.h"
#include "plateau.h"
#include "provider_units.h"

void ceiling_params_default(struct ceiling_params *ret)
{
	*ret = (struct ceiling_params){
	    .window_sec = 20.0,
	    .onset_quiet_sec = 3.0,
	    .onset_horizon_sec = 12.0,
	    .onset_sec = 5.0,
	    .onset_tolerance = 0.001,
	    .onset_slack_ios = 3.0,
	    .onset_slack_max = 0.003,
	    .onset_quick_sec = 4.0,
	    .onset_quick_ios = 500.0,
	    .onset_sum_sec = 8.0,
	    .onset_sum_spread = 1.5,
	    .onset_sum_jitter_sec = 0.0075,
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
	    .exceeded_sec = 2.0,
	    .exceeded_share = 0.9,
	    .contradict_factor = 1.10,
	    .contradict_samples = 3,
	    .saturation = 0.95,
	};
	burst_params_default(&ret->burst);
	pulse_params_default(&ret->pulse);
}

unsigned ceiling_params_window(const struct ceiling_params *p, double interval_sec)
{
	double n = interval_sec > 0 ? p->window_sec / interval_sec : p->window_sec;

	return n >= CEILING_WINDOW_MAX ? CEILING_WINDOW_MAX : (unsigned)fmax(lround(n), 0);
}

void ceiling_state_init(struct ceiling_state *st)
{
	*st = (struct ceiling_state){0};
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
	       plateau_band(p, b->is_throughput ? RESOURCE_THROUGHPUT : RESOURCE_IOPS, b->base, s);
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
	is_held = ceiling_sample_is_queueing(p, s) && rate <= b.base * 1.1;
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
	    .exceeded_iops_sec = st->pending_exceeded_iops_sec,
	    .exceeded_throughput_sec = st->pending_exceeded_throughput_sec,
	};
	st->pending_own_ops = 0.0;
	st->pending_exceeded_iops_sec = 0.0;
	st->pending_exceeded_throughput_sec = 0.0;
	st->head = (st->head + 1) % CEILING_WINDOW_MAX;
	if (st->n < CEILING_WINDOW_MAX) {
		st->n++;
	}
	return s;
}

/* The burst gate. A burst is not the ceiling: while a bucket (declared, or
 * learned from a burst seen to run out) has credits and the device runs
 * near its burst rate, the flat top is the burst, no plateau is taken from
 * it, and the estimate stays at the base. When a burst is seen to run out,
 * the level it settled to is the ceiling at once, without waiting for a
 * window of it. Returns true when the gate decided the sample, false when
 * the plateau tests are to judge it. */
static bool burst_gate(struct ceiling_state *st, const struct ceiling_params *p,
		       const struct device_config *dc, const struct ceiling_sample *s)
{
	struct burst_sample bs = {s->interval_sec, s->iops, s->bytes_per_sec,
				  ceiling_sample_is_queueing(p, s), s->queue_depth >= p->min_queue};
	const struct burst_model *m = &st->burst.model;
	bool is_bursting;

	if (burst_tracker_update(&st->burst, &p->burst, &bs, st->now_usec)) {
		plateau_found(&st->iops, m->base_iops, CEILING_STAGE_BURST);
		plateau_found(&st->throughput, m->base_bytes_per_sec, CEILING_STAGE_BURST);
		if (st->peak_iops >= 0.8 * m->burst_iops) {
			/* the highest plateau was the burst */
			st->peak_iops = m->base_iops;
		}
		return true;
	}
	if (st->has_burst_balance) {
		is_bursting = is_declared_burst(st, dc, s);
	} else {
		is_bursting = burst_tracker_is_bursting(&st->burst, s->iops);
	}
	if (is_bursting) {
		st->iops.is_active = st->throughput.is_active = false;
		st->iops.n_above = st->throughput.n_above = 0;
	}
	return is_bursting;
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

const char *ceiling_stage_name(enum ceiling_stage stage)
{
	switch (stage) {
	case CEILING_STAGE_ONSET:
		return "onset";
	case CEILING_STAGE_WINDOW:
		return "window";
	case CEILING_STAGE_BURST:
		return "burst";
	case CEILING_STAGE_PROBE:
		return "probe";
	case CEILING_STAGE_PROVIDER:
		return "provider";
	case CEILING_STAGE_PULSE:
		return "pulse";
	case CEILING_STAGE_NONE:
		break;
	}
	return NULL;
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
		/* the stages: the burst gate, then the provider's count, the
		 * onset test, the window test and the hold (plateau.h) */
		if (!burst_gate(st, p, dc, s)) {
			plateau_detect(st, p);
		}
		if (!ceiling_state_wants_fine_reads(st, p)) {
			st->n_fine = 0;
		} else if (st->n_fine > 0) {
			st->fine[st->n_fine - 1].is_before_sample = true;
		}
		ret->is_throttled = st->iops.is_active || st->throughput.is_active;
		ret->is_saturated = r->utilization >= p->saturation;
	}
	ret->at_ceiling_iops_seconds = st->at_ceiling_iops_sec;
	ret->at_ceiling_throughput_seconds = st->at_ceiling_throughput_sec;
	ret->iops_ceiling_estimate = st->iops.estimate;
	ret->throughput_ceiling_estimate = st->throughput.estimate;
	ret->found_by =
	    ceiling_stage_name(st->iops.estimate > 0 ? st->iops.found_by : st->throughput.found_by);
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
		st->iops.found_by = CEILING_STAGE_PROBE;
	}
	if (bytes_per_sec > 0) {
		st->throughput.estimate = bytes_per_sec;
		st->throughput.n_above = 0;
		st->throughput.found_by = CEILING_STAGE_PROBE;
	}
}

void ceiling_state_note_own_ops(struct ceiling_state *st, double ops)
{
	if (ops > 0) {
		st->pending_own_ops += ops;
	}
}

void ceiling_state_note_exceeded(struct ceiling_state *st, double iops_sec, double throughput_sec)
{
	st->pending_exceeded_iops_sec += fmax(iops_sec, 0.0);
	st->pending_exceeded_throughput_sec += fmax(throughput_sec, 0.0);
}

bool ceiling_state_is_quiet(const struct ceiling_state *st, double seconds, double max_iops)
{
	double covered = 0.0, ops = 0.0;

	for (unsigned i = 0; i < st->n && covered < seconds - 1e-6; i++) {
		const struct ceiling_sample *s = ceiling_state_recent(st, i);

		covered += s->interval_sec;
		ops += s->iops * s->interval_sec - s->own_ops;
	}
	if (covered < seconds - 1e-6 || covered <= 0) {
		return false;
	}
	return fmax(ops, 0.0) / covered <= max_iops;
}

bool ceiling_state_wants_fine_reads(const struct ceiling_state *st, const struct ceiling_params *p)
{
	const struct ceiling_sample *latest = ceiling_state_recent(st, 0);

	return p->pulse.slice_sec > 0 && latest &&
	       ceiling_state_onset_samples(st, p, latest->interval_sec) > 0;
}

void ceiling_state_note_fine_read(struct ceiling_state *st, uint64_t monotonic_usec, uint64_t ios)
{
	if (st->n_fine == CEILING_FINE_MAX) {
		memmove(st->fine, st->fine + 1, (CEILING_FINE_MAX - 1) * sizeof(st->fine[0]));
		st->n_fine--;
	}
	st->fine[st->n_fine++] = (struct pulse_read){.monotonic_usec = monotonic_usec, .ios = ios};
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

size_t ceiling_set_fine_wanted(const struct ceiling_set *s, const char **ret_names, size_t max,
			       uint64_t *ret_period_usec)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n && n < max; i++) {
		if (ceiling_state_wants_fine_reads(&s->entries[i]->state, &s->params)) {
			ret_names[n++] = s->entries[i]->name;
		}
	}
	*ret_period_usec = (uint64_t)llround(s->params.pulse.slice_sec / 2 * 1e6);
	return n;
}

void ceiling_set_note_fine_read(struct ceiling_set *s, const char *name, uint64_t monotonic_usec,
				uint64_t ios)
{
	struct ceiling_entry *e = lookup(s, name);

	if (e && ceiling_state_wants_fine_reads(&e->state, &s->params)) {
		ceiling_state_note_fine_read(&e->state, monotonic_usec, ios);
	}
}
