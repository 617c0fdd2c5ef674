/* Ceilings shared by several devices. See shared_ceiling.h and iopsd(8),
 * SHARED CEILINGS. */
#include "shared_ceiling.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* reads_agree() hands shared_fine_test() every member of a group */
_Static_assert(SHARED_CEILING_MAX_MEMBERS <= SHARED_FINE_MAX_MEMBERS,
	       "a group's members are more than the reads test takes");

struct shared_ceiling {
	struct ceiling_params cp;
	struct shared_ceiling_params p;
	struct burst_tracker total; /* the candidates' sum, as one volume's bucket is learned */
	double total_iops;	    /* that sum in the latest sample */
	struct shared_ceiling_group groups[SHARED_CEILING_MAX_GROUPS];
	size_t n_groups;
};

void shared_ceiling_params_default(struct shared_ceiling_params *ret)
{
	*ret = (struct shared_ceiling_params){
	    .max_variance_ratio = 0.25,
	    .onset_sec = 7.0,
	    .onset_tolerance = 0.01,
	    .onset_max_variance_ratio = 0.03,
	    .held_below = 0.87,
	    .min_members = 2,
	};
	shared_fine_params_default(&ret->fine);
}

int shared_ceiling_new(const struct ceiling_params *cp, const struct shared_ceiling_params *p,
		       struct shared_ceiling **ret)
{
	struct shared_ceiling *sc = calloc(1, sizeof(*sc));

	if (!sc) {
		return -ENOMEM;
	}
	if (cp) {
		sc->cp = *cp;
	} else {
		ceiling_params_default(&sc->cp);
	}
	if (p) {
		sc->p = *p;
	} else {
		shared_ceiling_params_default(&sc->p);
	}
	*ret = sc;
	return 0;
}

struct shared_ceiling *shared_ceiling_free(struct shared_ceiling *sc)
{
	free(sc);
	return NULL;
}

static unsigned window_of(const struct shared_ceiling *sc)
{
	return ceiling_params_window(&sc->cp, 1.0);
}

/* The samples members m[0..k-1] all have: a window, or fewer when one of
 * them was watched for less. */
static unsigned common_samples(const struct shared_ceiling *sc, const struct shared_ceiling_device *devs,
			       const size_t *m, size_t k)
{
	unsigned w = window_of(sc);

	for (size_t j = 0; j < k; j++) {
		w = devs[m[j]].st->n < w ? devs[m[j]].st->n : w;
	}
	return w;
}

/* What a set of devices did together over the seconds judged. */
struct evaluation {
	double level;	       /* of their flat sum */
	double variance_ratio; /* the sum's variance over the sum of its parts' */
	unsigned n_held;       /* members held below what they are known to do */
	enum ceiling_stage found_by;
	bool by_reads; /* the onset test judged fine.onset_sec, the reads between samples agreeing */
};

/* The sum of members m[0..k-1] over their last w samples as a series a
 * plateau can be looked for in: a second counts (queues) when at least
 * min_members of them queued in it. Fills tmp, and each member's IOPS per
 * second into x. */
static void sum_series(const struct shared_ceiling *sc, const struct shared_ceiling_device *devs,
		       const size_t *m, size_t k, unsigned w, struct ceiling_state *tmp,
		       double (*x)[SHARED_CEILING_MAX_MEMBERS])
{
	memset(tmp, 0, sizeof(*tmp));
	for (unsigned t = 0; t < w; t++) {
		struct ceiling_sample *sum = &tmp->ring[w - 1 - t];
		unsigned n_q = 0;

		for (size_t j = 0; j < k; j++) {
			const struct ceiling_sample *s = ceiling_state_recent(devs[m[j]].st, t);

			sum->interval_sec = s->interval_sec;
			sum->iops += s->iops;
			sum->bytes_per_sec += s->bytes_per_sec;
			x[t][j] = s->iops;
			n_q += ceiling_sample_is_queueing(&sc->cp, s);
		}
		sum->queue_depth = n_q >= sc->p.min_members ? sc->cp.min_queue : 0.0;
		sum->utilization = n_q >= sc->p.min_members ? 1.0 : 0.0;
	}
	tmp->head = w % CEILING_WINDOW_MAX;
	tmp->n = w;
}

/* The variance of the sum over its parts' over the last n seconds that
 * count, and the parts' variance: a shared cap deals the same total out
 * differently from second to second (the sum is flatter than its parts),
 * independent caps add their noise up (the ratio is about 1), and a
 * stripe's members move together (above 1). */
static double variance_ratio(const struct shared_ceiling *sc, const struct ceiling_state *tmp,
			     const double (*x)[SHARED_CEILING_MAX_MEMBERS], size_t k, unsigned n_sec,
			     double *ret_parts)
{
	double sum_x[SHARED_CEILING_MAX_MEMBERS] = {0}, sum_xx[SHARED_CEILING_MAX_MEMBERS] = {0};
	double s = 0.0, ss = 0.0, parts = 0.0, n = 0.0, var_sum;

	for (unsigned t = 0; t < n_sec; t++) {
		const struct ceiling_sample *sum = ceiling_state_recent(tmp, t);

		if (!ceiling_sample_is_queueing(&sc->cp, sum)) {
			continue;
		}
		n += 1;
		s += sum->iops;
		ss += sum->iops * sum->iops;
		for (size_t j = 0; j < k; j++) {
			sum_x[j] += x[t][j];
			sum_xx[j] += x[t][j] * x[t][j];
		}
	}
	if (n < 2) {
		*ret_parts = 0.0;
		return INFINITY;
	}
	for (size_t j = 0; j < k; j++) {
		parts += fmax(sum_xx[j] / n - (sum_x[j] / n) * (sum_x[j] / n), 0.0);
	}
	var_sum = fmax(ss / n - (s / n) * (s / n), 0.0);
	*ret_parts = parts;
	return parts > 0 ? var_sum / parts : INFINITY;
}

/* Member j's mean over the last n_sec seconds. */
static double member_mean(const double (*x)[SHARED_CEILING_MAX_MEMBERS], size_t j, unsigned n_sec)
{
	double mean = 0.0;

	for (unsigned t = 0; t < n_sec; t++) {
		mean += x[t][j] / n_sec;
	}
	return mean;
}

/* Members that ran, on average over the last n_sec seconds, below
 * held_below of what each is known to do on its own. */
static unsigned count_held(const struct shared_ceiling *sc, const struct shared_ceiling_device *devs,
			   const size_t *m, size_t k, const double (*x)[SHARED_CEILING_MAX_MEMBERS],
			   unsigned n_sec)
{
	unsigned n_held = 0;

	for (size_t j = 0; j < k; j++) {
		double mean = member_mean(x, j, n_sec);

		if (devs[m[j]].known_iops > 0 && mean <= sc->p.held_below * devs[m[j]].known_iops) {
			n_held++;
		}
	}
	return n_held;
}

/* The candidates' sum, fed to the tracker that learns a burst bucket of
 * theirs (an instance's burst: several volumes at a higher rate together,
 * then at a lower one under the same demand). */
static void track_total(struct shared_ceiling *sc, const struct shared_ceiling_device *devs, size_t n)
{
	struct burst_sample s = {0};
	unsigned n_q = 0, n_waiting = 0;
	uint64_t now = 0;

	for (size_t i = 0; i < n; i++) {
		const struct ceiling_sample *latest = ceiling_state_recent(devs[i].st, 0);

		if (!latest) {
			continue;
		}
		s.interval_sec = fmax(s.interval_sec, latest->interval_sec);
		s.iops += latest->iops;
		s.bytes_per_sec += latest->bytes_per_sec;
		n_q += ceiling_sample_is_queueing(&sc->cp, latest);
		n_waiting += latest->queue_depth >= sc->cp.min_queue;
		now = devs[i].st->now_usec;
	}
	if (s.interval_sec <= 0) {
		return;
	}
	/* demand as a volume's own tracker counts it (ceiling.c): requests
	 * waiting, busy or not, so that a starved guest's seconds do not end
	 * the demand and start the bucket's count over mid-burst */
	s.is_queueing = n_q >= sc->p.min_members;
	s.has_demand = n_waiting >= sc->p.min_members;
	sc->total_iops = s.iops;
	(void)burst_tracker_update(&sc->total, &sc->cp.burst, &s, now);
}

/* A level that is the base of the bucket learned from the sum. */
static bool is_learned_base(const struct shared_ceiling *sc, double level)
{
	const struct burst_model *m = &sc->total.model;

	return m->is_known && fabs(level - m->base_iops) <= 0.03 * m->base_iops;
}

/* The onset test for a sum: the last onset_sec of a demand that rose from
 * quiet all lie within onset_tolerance of their median. A group's cap holds
 * its sum to a few I/Os, but the first seconds of a demand deal its timer's
 * slack out unevenly (a QEMU group of 1500 let 1493 through one second and
 * 1507 the next), so the band is wider than a device's. That it is one cap
 * and not a set of busy disks is for the variance ratio to say: the sum at
 * most a thirtieth of its parts' variance (the lab's groups: 0.001-0.03),
 * which three independent disks show by chance in about 1 of 2000 onsets
 * over 7 seconds, and in 1 of 270 over 6 (iopsd(8), SHARED CEILINGS;
 * bench-shared-noise). */
static bool onset_plateau(const struct shared_ceiling *sc, const struct ceiling_state *tmp, unsigned n_sec,
			  double *ret_level)
{
	double v[CEILING_WINDOW_MAX], median, sum = 0.0;

	for (unsigned t = 0; t < n_sec; t++) {
		v[t] = ceiling_state_recent(tmp, t)->iops;
		sum += v[t];
	}
	median = ceiling_median(v, n_sec);
	if (v[0] < median * (1 - sc->p.onset_tolerance) ||
	    v[n_sec - 1] > median * (1 + sc->p.onset_tolerance) || sum / n_sec < sc->cp.min_iops) {
		return false;
	}
	*ret_level = sum / n_sec;
	return true;
}

/* The i-th most recent second of tmp's series (0: the latest). */
static struct ceiling_sample *sum_at(struct ceiling_state *tmp, unsigned i)
{
	return &tmp->ring[(tmp->head + CEILING_WINDOW_MAX - 1 - i) % CEILING_WINDOW_MAX];
}

/* The first made-up pair in the last n_sec seconds of the sum: a second
 * short of their median by more than onset_tolerance, the next over it by
 * as much, the two together on it to half the tolerance. A guest's second
 * that ends a few ms early counts I/Os of the next (QEMU's group held 1505
 * then 1497 where the guest read 1480 then 1522); a token bucket's short
 * second is made up by the next, never the other way round. The pair
 * becomes two seconds at its mean, each member's too, so that the onset
 * test judges what the cap dealt out, not where the guest's seconds
 * ended. Returns whether there was one. */
static bool make_up_pair(const struct shared_ceiling *sc, struct ceiling_state *tmp,
			 double (*x)[SHARED_CEILING_MAX_MEMBERS], size_t k, unsigned n_sec)
{
	double v[CEILING_WINDOW_MAX], median, tol;

	for (unsigned t = 0; t < n_sec; t++) {
		v[t] = sum_at(tmp, t)->iops;
	}
	median = ceiling_median(v, n_sec);
	tol = sc->p.onset_tolerance * median;
	/* oldest first: t is the earlier of the two */
	for (unsigned t = n_sec - 1; t >= 1; t--) {
		struct ceiling_sample *a = sum_at(tmp, t), *b = sum_at(tmp, t - 1);
		double mean = (a->iops + b->iops) / 2;

		if (a->iops < median - tol && b->iops > median + tol && fabs(mean - median) <= tol / 2) {
			a->iops = b->iops = mean;
			for (size_t j = 0; j < k; j++) {
				x[t][j] = x[t - 1][j] = (x[t][j] + x[t - 1][j]) / 2;
			}
			return true;
		}
	}
	return false;
}

/* Whether the last n_sec seconds of members m[0..k-1], whose sum held
 * e->level, show one ceiling: the sum is flatter than its parts (at most
 * max_ratio of their variance, the parts wandering by at least min_parts
 * between them for that to say anything), or at least two of them sit
 * below what they are known to do, or it is the base their sum's burst
 * settled to. */
static bool is_held_together(const struct shared_ceiling *sc, const struct shared_ceiling_device *devs,
			     const size_t *m, size_t k, const struct ceiling_state *tmp,
			     const double (*x)[SHARED_CEILING_MAX_MEMBERS], unsigned n_sec, double max_ratio,
			     double min_parts, struct evaluation *e)
{
	double parts;

	e->variance_ratio = variance_ratio(sc, tmp, x, k, n_sec, &parts);
	e->n_held = count_held(sc, devs, m, k, x, n_sec);
	return (e->variance_ratio <= max_ratio && parts >= min_parts) || e->n_held >= sc->p.min_members ||
	       is_learned_base(sc, e->level);
}

/* The least the parts must wander for the window test's ratio to say
 * anything: their variance at least a quarter of the plateau band's
 * square. */
static double window_min_parts(const struct shared_ceiling *sc, const struct ceiling_state *tmp, double level)
{
	double band = ceiling_band(&sc->cp, level, ceiling_state_recent(tmp, 0));

	return band * band / 4;
}

/* ... and for the onset test's: each part wandering by more than a device
 * of its own cap does in its first seconds (the onset band at its most,
 * onset_slack_max of its mean). A group's members wander by a percent of
 * their share while the sum holds (QEMU's group of 1500: 493 498 498 509
 * ..., the sum 1500 1500 1500 1499 1502); parts flatter than that are as
 * likely caps of their own, which the device's onset test finds. */
static double onset_min_parts(const struct shared_ceiling *sc, const double (*x)[SHARED_CEILING_MAX_MEMBERS],
			      size_t k, unsigned n_sec)
{
	double min_parts = 0.0;

	for (size_t j = 0; j < k; j++) {
		min_parts += pow(sc->cp.onset_slack_max * member_mean(x, j, n_sec), 2);
	}
	return min_parts;
}

/* The onset test's copy of the sum's series and its members'. */
struct onset_copy {
	struct ceiling_state st;
	double x[CEILING_WINDOW_MAX][SHARED_CEILING_MAX_MEMBERS];
};

/* The seconds the onset test judges, copied from tmp and x into *on: the
 * last `sec` of a demand that rose from quiet, their made-up pair merged
 * (make_up_pair()). A merged pair is one second's evidence, not two, so
 * the copy then spans a second more, and waits for the demand to be that
 * old: busy disks make such pairs by chance, and merged, their sum looks
 * as flat as a group's 8 times as often (bench/README.md, "Shared
 * ceilings"). Returns the seconds copied, 0 for none. */
static unsigned onset_copy(const struct shared_ceiling *sc, const struct ceiling_state *tmp,
			   const double (*x)[SHARED_CEILING_MAX_MEMBERS], size_t k, double sec,
			   struct onset_copy *on)
{
	unsigned n = ceiling_state_onset_samples(tmp, &sc->cp, sec);

	for (unsigned pass = 0; n > 1; pass++) {
		on->st = *tmp;
		memcpy(on->x, x, sizeof(on->x));
		if (!make_up_pair(sc, &on->st, on->x, k, n) || pass == 1) {
			return n;
		}
		n = ceiling_state_onset_samples(tmp, &sc->cp, sec + 1);
	}
	return 0;
}

/* The onset test over the last `sec` seconds of the demand: the sum's
 * seconds flat (onset_plateau()), the members held together
 * (is_held_together()). */
static bool onset_test(const struct shared_ceiling *sc, const struct shared_ceiling_device *devs,
		       const size_t *m, size_t k, const struct ceiling_state *tmp,
		       const double (*x)[SHARED_CEILING_MAX_MEMBERS], double sec, struct evaluation *e)
{
	struct onset_copy *on = malloc(sizeof(*on));
	unsigned n_on = on ? onset_copy(sc, tmp, x, k, sec, on) : 0;
	bool is_shared = false;

	if (n_on > 0 && onset_plateau(sc, &on->st, n_on, &e->level)) {
		const double(*ox)[SHARED_CEILING_MAX_MEMBERS] =
		    (const double(*)[SHARED_CEILING_MAX_MEMBERS])on->x;

		e->found_by = CEILING_STAGE_ONSET;
		is_shared =
		    is_held_together(sc, devs, m, k, &on->st, ox, n_on, sc->p.onset_max_variance_ratio,
				     onset_min_parts(sc, ox, k, n_on), e);
	}
	free(on);
	return is_shared;
}

/* Whether members m[0..k-1]'s reads between samples show their sum held
 * (shared_fine_test()): what lets the onset test judge fine.onset_sec
 * seconds instead of onset_sec. */
static bool reads_agree(const struct shared_ceiling *sc, const struct shared_ceiling_device *devs,
			const size_t *m, size_t k, struct evaluation *e)
{
	const struct pulse_read *reads[SHARED_CEILING_MAX_MEMBERS];
	size_t n[SHARED_CEILING_MAX_MEMBERS];
	double ratio;

	for (size_t j = 0; j < k; j++) {
		reads[j] = devs[m[j]].st->fine;
		n[j] = devs[m[j]].st->n_fine;
	}
	e->by_reads = shared_fine_test(reads, n, k, &sc->p.fine, &sc->cp.pulse, &ratio);
	return e->by_reads;
}

/* Whether members m[0..k-1] are held by one ceiling: the onset test on
 * their sum (over onset_sec, or fine.onset_sec when their reads between
 * samples agree), then the window test (a plateau over the window), each
 * with is_held_together(). */
static bool evaluate(const struct shared_ceiling *sc, const struct shared_ceiling_device *devs,
		     const size_t *m, size_t k, struct evaluation *ret)
{
	double x[CEILING_WINDOW_MAX][SHARED_CEILING_MAX_MEMBERS];
	const double(*cx)[SHARED_CEILING_MAX_MEMBERS] = (const double(*)[SHARED_CEILING_MAX_MEMBERS])x;
	struct ceiling_state *tmp = malloc(sizeof(*tmp));
	unsigned w = common_samples(sc, devs, m, k);
	struct evaluation e = {0};
	bool is_shared = false;

	if (!tmp) {
		return false;
	}
	sum_series(sc, devs, m, k, w, tmp, x);
	if (w > 0) {
		is_shared = onset_test(sc, devs, m, k, tmp, cx, sc->p.onset_sec, &e) ||
			    (sc->p.fine.onset_sec > 0 && sc->p.fine.onset_sec < sc->p.onset_sec &&
			     reads_agree(sc, devs, m, k, &e) &&
			     onset_test(sc, devs, m, k, tmp, cx, sc->p.fine.onset_sec, &e));
	}
	if (!is_shared && w == window_of(sc) && ceiling_state_iops_plateau(tmp, &sc->cp, &e.level)) {
		e.found_by = CEILING_STAGE_WINDOW;
		e.by_reads = false;
		is_shared = is_held_together(sc, devs, m, k, tmp, cx, w, sc->p.max_variance_ratio,
					     window_min_parts(sc, tmp, e.level), &e);
	}
	/* the learned bucket's burst is not the ceiling */
	is_shared = is_shared && !burst_tracker_is_bursting(&sc->total, e.level);
	free(tmp);
	if (is_shared) {
		*ret = e;
	}
	return is_shared;
}

/* The group in devs: the candidates that queue now, all of them or all but
 * one (an unrelated busy disk next to the group). Returns the members in
 * ret (indexes of devs), their count (0: none) and the evaluation. */
static size_t find_group(const struct shared_ceiling *sc, const struct shared_ceiling_device *devs, size_t n,
			 size_t *ret, struct evaluation *ret_e)
{
	size_t c[SHARED_CEILING_MAX_MEMBERS], k = 0, m[SHARED_CEILING_MAX_MEMBERS];

	for (size_t i = 0; i < n && k < ELEMENTSOF(c); i++) {
		const struct ceiling_sample *latest = ceiling_state_recent(devs[i].st, 0);

		if (latest && ceiling_sample_is_queueing(&sc->cp, latest)) {
			c[k++] = i;
		}
	}
	/* while the sum bursts, no part of it is a ceiling either (two of the
	 * three volumes of a bursting group are flat too, at two thirds of it) */
	if (k < sc->p.min_members || burst_tracker_is_bursting(&sc->total, sc->total_iops)) {
		return 0;
	}
	if (evaluate(sc, devs, c, k, ret_e)) {
		memcpy(ret, c, k * sizeof(*c));
		return k;
	}
	for (size_t skip = 0; k > sc->p.min_members && skip < k; skip++) {
		size_t j = 0;

		for (size_t i = 0; i < k; i++) {
			if (i != skip) {
				m[j++] = c[i];
			}
		}
		if (evaluate(sc, devs, m, j, ret_e)) {
			memcpy(ret, m, j * sizeof(*m));
			return j;
		}
	}
	return 0;
}

static bool shares_a_member(const struct shared_ceiling_group *g, const struct shared_ceiling_device *devs,
			    const size_t *m, size_t k)
{
	for (size_t j = 0; j < k; j++) {
		for (unsigned i = 0; i < g->n_members; i++) {
			if (strcmp(g->names[i], devs[m[j]].name) == 0) {
				return true;
			}
		}
	}
	return false;
}

/* A group found now replaces any that shares a member with it (the same
 * limit, seen with more or fewer devices under load). */
static void adopt(struct shared_ceiling *sc, const struct shared_ceiling_device *devs, const size_t *m,
		  size_t k, const struct evaluation *e)
{
	double level = e->level;
	struct shared_ceiling_group g = {.n_members = (unsigned)k,
					 .iops_estimate = level,
					 .is_throttled = true,
					 .found_by = e->found_by,
					 .by_reads = e->by_reads};
	const struct burst_model *bm = &sc->total.model;
	size_t j = 0;

	if (is_learned_base(sc, level)) {
		g.has_burst = true;
		g.burst_iops_estimate = bm->burst_iops;
		g.burst_base_iops_estimate = bm->base_iops;
		g.burst_credits_estimate = bm->credits;
		g.burst_exhausted_usec = bm->exhausted_usec;
	}
	for (size_t i = 0; i < k; i++) {
		snprintf(g.names[i], sizeof(g.names[i]), "%s", devs[m[i]].name);
	}
	for (size_t i = 0; i < sc->n_groups; i++) {
		if (!shares_a_member(&sc->groups[i], devs, m, k)) {
			sc->groups[j++] = sc->groups[i];
		}
	}
	if (j == SHARED_CEILING_MAX_GROUPS) {
		/* the oldest goes */
		memmove(sc->groups, sc->groups + 1, (j - 1) * sizeof(sc->groups[0]));
		j--;
	}
	sc->groups[j++] = g;
	sc->n_groups = j;
}

static const struct shared_ceiling_device *find_device(const struct shared_ceiling_device *devs, size_t n,
						       const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(devs[i].name, name) == 0) {
			return &devs[i];
		}
	}
	return NULL;
}

/* A known group between detections: it holds while its sum stays in the
 * band of the estimate with requests waiting; it goes when a member is
 * gone or the members sustain more together (contradict_* as for a
 * device). Returns false when it goes. */
static bool follow(struct shared_ceiling *sc, struct shared_ceiling_group *g,
		   const struct shared_ceiling_device *devs, size_t n)
{
	const struct ceiling_sample *latest = NULL;
	unsigned n_q = 0;

	g->iops = 0.0;
	for (unsigned i = 0; i < g->n_members; i++) {
		const struct shared_ceiling_device *d = find_device(devs, n, g->names[i]);

		latest = d ? ceiling_state_recent(d->st, 0) : NULL;
		if (!latest) {
			return false;
		}
		g->iops += latest->iops;
		n_q += ceiling_sample_is_queueing(&sc->cp, latest);
	}
	g->is_throttled =
	    g->is_throttled && n_q >= sc->p.min_members &&
	    fabs(g->iops - g->iops_estimate) <= ceiling_band(&sc->cp, g->iops_estimate, latest) &&
	    !burst_tracker_is_bursting(&sc->total, g->iops) &&
	    !burst_tracker_is_bursting(&sc->total, sc->total_iops);
	if (g->iops > g->iops_estimate * sc->cp.contradict_factor) {
		return ++g->n_above < sc->cp.contradict_samples;
	}
	g->n_above = 0;
	return true;
}

void shared_ceiling_update(struct shared_ceiling *sc, const struct shared_ceiling_device *devs, size_t n)
{
	size_t m[SHARED_CEILING_MAX_MEMBERS], k, j = 0;
	struct evaluation e;

	track_total(sc, devs, n);
	for (size_t i = 0; i < sc->n_groups; i++) {
		if (follow(sc, &sc->groups[i], devs, n)) {
			sc->groups[j++] = sc->groups[i];
		}
	}
	sc->n_groups = j;
	k = find_group(sc, devs, n, m, &e);
	if (k > 0) {
		adopt(sc, devs, m, k, &e);
		follow(sc, &sc->groups[sc->n_groups - 1], devs, n);
	}
}

size_t shared_ceiling_groups(const struct shared_ceiling *sc, const struct shared_ceiling_group **ret)
{
	*ret = sc->groups;
	return sc->n_groups;
}

size_t shared_ceiling_group_names(const struct shared_ceiling_group *g,
				  const char *ret[SHARED_CEILING_MAX_MEMBERS])
{
	size_t n = g->n_members < SHARED_CEILING_MAX_MEMBERS ? g->n_members : SHARED_CEILING_MAX_MEMBERS;

	for (size_t i = 0; i < n; i++) {
		ret[i] = g->names[i];
	}
	return n;
}

void shared_ceiling_account_instance(struct shared_ceiling_instance *acc, const struct instance_config *ic,
				     double default_threshold, double iops, double bytes_per_sec,
				     double interval_sec, bool is_valid, struct instance_state *ret)
{
	double threshold = ic->ceiling_threshold > 0 ? ic->ceiling_threshold : default_threshold;

	*ret = (struct instance_state){
	    .is_declared = ic->is_declared,
	    .iops_limit = ic->iops_limit,
	    .throughput_limit = ic->throughput_limit,
	    .iops = iops,
	    .bytes_per_sec = bytes_per_sec,
	    .iops_limit_ratio = NAN,
	    .throughput_limit_ratio = NAN,
	};
	if (is_valid && interval_sec > 0 && ic->iops_limit > 0) {
		ret->iops_limit_ratio = iops / (double)ic->iops_limit;
		if (ret->iops_limit_ratio >= threshold) {
			acc->at_ceiling_iops_sec += interval_sec;
			ret->is_at_limit = true;
		}
	}
	if (is_valid && interval_sec > 0 && ic->throughput_limit > 0) {
		ret->throughput_limit_ratio = bytes_per_sec / (double)ic->throughput_limit;
		if (ret->throughput_limit_ratio >= threshold) {
			acc->at_ceiling_throughput_sec += interval_sec;
			ret->is_at_limit = true;
		}
	}
	ret->at_ceiling_iops_seconds = acc->at_ceiling_iops_sec;
	ret->at_ceiling_throughput_seconds = acc->at_ceiling_throughput_sec;
}
