/* Shared ceilings: a QEMU throttle group of 1500 IOPS over three volumes,
 * recorded by iopsd in the guest, is found and named; independent caps, a
 * stripe's members and busy disks are not taken for one; declared or
 * learned per-device ceilings tell equal shares apart; a group whose
 * members do more together is dropped. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ceiling.h"
#include "macro.h"
#include "shared_ceiling.h"

/* Recorded by iopsd in a QEMU guest (TCG): vdc, vdd, vde in
 * throttling.group=g1 with iops-total=1500, fio randread 4k QD16; per second
 * IOPS, aqu-sz, %util of each. */
/* fio QD16 on all three at once for 45 s */
static const double qemu_group_1500[][9] = {
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {299.2, 5.97, 43.8, 236.0, 5.83, 41.0, 256.0, 5.77, 41.4},
    {509.0, 15.04, 100.0, 484.0, 15.23, 100.0, 513.9, 15.23, 100.0},
    {470.3, 13.89, 97.7, 486.3, 14.12, 96.1, 543.6, 13.79, 96.5},
    {499.8, 14.63, 99.6, 506.8, 15.08, 100.0, 493.8, 14.83, 99.2},
    {519.3, 15.05, 99.3, 518.3, 14.96, 99.3, 455.5, 15.10, 99.3},
    {521.6, 14.67, 100.0, 480.5, 14.46, 100.0, 504.6, 14.75, 100.0},
    {512.3, 13.92, 98.1, 472.3, 14.85, 99.7, 516.3, 14.82, 99.7},
    {505.8, 14.01, 99.2, 485.8, 14.14, 100.0, 506.8, 13.40, 88.8},
    {491.1, 14.97, 99.6, 510.1, 14.87, 98.8, 500.1, 14.86, 99.6},
    {471.7, 15.17, 99.9, 492.7, 15.15, 99.9, 534.7, 14.95, 99.9},
    {489.6, 15.18, 100.0, 516.6, 14.95, 100.0, 493.6, 14.89, 100.0},
    {497.5, 15.13, 100.0, 532.5, 15.20, 100.0, 470.4, 15.13, 100.0},
    {493.4, 14.78, 98.5, 519.5, 14.98, 98.5, 487.4, 14.68, 98.5},
    {519.7, 15.58, 99.5, 494.7, 15.34, 99.5, 484.7, 15.56, 99.5},
    {499.0, 15.50, 100.0, 498.0, 15.41, 100.0, 500.0, 15.49, 100.0},
    {500.8, 15.51, 98.6, 509.9, 15.50, 97.8, 488.8, 15.44, 98.2},
    {503.0, 15.74, 100.0, 501.0, 15.52, 99.2, 501.0, 15.60, 100.0},
    {486.2, 15.82, 100.0, 510.2, 15.82, 100.0, 503.2, 15.78, 100.0},
    {506.1, 15.79, 100.0, 492.1, 15.81, 100.0, 502.1, 15.83, 100.0},
    {507.1, 15.81, 100.0, 510.1, 15.79, 100.0, 483.1, 15.82, 100.0},
    {498.7, 15.79, 99.9, 495.7, 15.76, 99.9, 505.6, 15.72, 99.9},
    {499.2, 15.84, 100.0, 499.2, 15.74, 100.0, 501.2, 15.80, 100.0},
    {492.1, 15.71, 100.0, 506.1, 15.85, 100.0, 501.1, 15.82, 100.0},
    {496.4, 15.86, 99.9, 490.4, 15.83, 99.9, 513.4, 15.74, 99.9},
    {507.2, 15.76, 100.0, 498.2, 15.73, 100.0, 494.2, 15.83, 100.0},
    {500.0, 15.75, 100.0, 499.0, 15.78, 100.0, 501.0, 15.74, 100.0},
    {487.2, 15.65, 100.0, 505.2, 14.84, 99.2, 508.2, 15.62, 100.0},
    {509.8, 15.50, 100.0, 492.8, 15.52, 100.0, 496.8, 15.42, 100.0},
    {497.1, 15.79, 100.0, 501.1, 15.74, 100.0, 503.1, 15.77, 100.0},
    {493.3, 15.83, 99.7, 506.3, 15.84, 99.7, 499.3, 15.81, 99.7},
    {508.9, 15.76, 100.0, 497.9, 15.78, 100.0, 492.9, 15.82, 100.0},
    {479.6, 15.41, 100.0, 546.5, 15.38, 100.0, 473.6, 15.54, 100.0},
    {511.8, 15.00, 100.0, 515.8, 15.64, 100.0, 469.9, 15.25, 100.0},
    {508.5, 15.46, 99.5, 481.6, 15.26, 99.5, 509.5, 15.52, 99.5},
    {521.2, 15.44, 100.0, 509.2, 15.44, 100.0, 471.1, 15.50, 100.0},
    {493.8, 15.56, 100.0, 483.8, 15.47, 100.0, 524.8, 15.45, 100.0},
    {496.1, 15.28, 99.6, 491.1, 15.51, 99.6, 512.1, 15.53, 99.6},
    {500.2, 15.75, 100.0, 503.2, 15.83, 100.0, 497.2, 15.71, 100.0},
    {504.5, 15.78, 100.0, 497.5, 15.65, 100.0, 497.5, 15.72, 100.0},
    {534.6, 15.08, 99.8, 479.4, 15.06, 99.4, 478.4, 15.14, 99.8},
    {463.6, 14.56, 100.0, 496.0, 14.16, 99.2, 535.5, 14.63, 98.8},
    {493.0, 14.67, 98.8, 474.1, 14.11, 98.8, 543.8, 14.40, 98.4},
    {550.5, 15.24, 99.8, 503.2, 15.06, 99.4, 447.8, 14.32, 99.4},
    {478.8, 15.25, 99.7, 488.8, 14.21, 99.7, 526.5, 14.43, 99.3},
    {522.4, 15.23, 100.0, 520.4, 15.34, 100.0, 463.1, 15.38, 100.0},
    {294.8, 9.07, 58.8, 294.8, 9.09, 59.2, 300.8, 9.22, 59.2},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
};

/* fio QD16 on vdc, vdd 12 s later, vde 12 s after that */
static const double qemu_group_1500_staggered[][9] = {
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {525.9, 4.61, 34.1, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1499.9, 14.76, 99.1, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1499.9, 15.22, 99.6, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1500.1, 14.94, 98.4, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1498.3, 15.34, 99.9, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1138.4, 11.21, 83.9, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1466.7, 10.73, 88.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1507.1, 15.15, 100.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1489.4, 14.21, 99.3, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1512.8, 14.39, 98.3, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1498.1, 13.17, 95.3, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {1502.1, 14.98, 100.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {916.4, 15.06, 99.7, 580.3, 12.18, 81.8, 0.0, 0.00, 0.0},
    {736.1, 15.21, 100.0, 766.2, 15.40, 100.0, 0.0, 0.00, 0.0},
    {798.1, 14.82, 99.9, 703.2, 14.86, 99.9, 0.0, 0.00, 0.0},
    {723.7, 14.23, 99.8, 773.9, 14.33, 97.4, 0.0, 0.00, 0.0},
    {720.0, 14.82, 98.0, 772.9, 14.49, 99.5, 0.0, 0.00, 0.0},
    {753.7, 13.51, 95.2, 755.7, 12.37, 97.2, 0.0, 0.00, 0.0},
    {721.6, 14.42, 99.6, 777.8, 14.01, 98.8, 0.0, 0.00, 0.0},
    {666.2, 13.63, 94.0, 834.3, 13.85, 99.6, 0.0, 0.00, 0.0},
    {747.4, 14.95, 99.9, 752.4, 15.10, 97.9, 0.0, 0.00, 0.0},
    {780.9, 14.52, 99.5, 708.8, 14.56, 99.5, 0.0, 0.00, 0.0},
    {759.3, 14.31, 100.0, 748.2, 13.95, 98.8, 0.0, 0.00, 0.0},
    {772.7, 12.92, 95.5, 730.6, 13.17, 96.7, 0.0, 0.00, 0.0},
    {614.1, 15.47, 99.4, 622.2, 15.70, 99.8, 264.5, 8.29, 54.9},
    {499.3, 15.86, 100.0, 498.3, 15.75, 100.0, 501.3, 15.78, 100.0},
    {497.8, 15.48, 99.8, 497.8, 15.23, 99.8, 499.8, 15.52, 99.8},
    {514.7, 15.03, 99.9, 498.7, 15.28, 99.1, 492.7, 15.26, 100.0},
    {503.5, 15.08, 100.0, 484.6, 15.16, 100.0, 510.5, 15.14, 99.9},
    {522.9, 15.21, 99.8, 506.8, 15.25, 99.8, 470.6, 15.06, 99.8},
    {514.7, 15.02, 99.9, 495.7, 15.13, 99.9, 489.7, 15.11, 99.9},
    {513.7, 15.37, 99.9, 487.7, 15.04, 99.9, 497.7, 15.24, 99.9},
    {495.5, 15.23, 100.0, 492.5, 15.27, 100.0, 512.5, 15.04, 100.0},
    {488.0, 15.27, 100.0, 513.0, 15.43, 100.0, 499.0, 15.13, 100.0},
    {501.7, 14.95, 100.0, 500.8, 14.93, 100.0, 490.8, 15.18, 100.0},
    {555.1, 15.15, 99.6, 469.0, 15.04, 100.0, 483.0, 15.12, 100.0},
    {512.3, 15.22, 100.0, 473.7, 15.06, 100.0, 513.3, 14.93, 100.0},
    {512.4, 14.93, 99.2, 490.2, 15.04, 99.2, 497.2, 15.05, 99.2},
    {453.3, 15.12, 100.0, 550.1, 14.90, 100.0, 497.2, 14.79, 100.0},
    {508.1, 15.23, 99.8, 482.1, 15.19, 99.8, 508.1, 14.62, 99.0},
    {482.2, 14.89, 99.4, 516.1, 14.79, 93.0, 501.2, 14.75, 98.6},
    {498.1, 15.01, 100.0, 504.1, 14.95, 100.0, 500.1, 14.90, 100.0},
    {525.3, 14.98, 99.9, 464.6, 14.49, 99.9, 492.4, 15.01, 99.9},
    {494.8, 14.45, 99.6, 525.9, 14.62, 97.6, 495.8, 14.33, 98.4},
    {490.2, 15.13, 100.0, 501.2, 14.87, 98.8, 510.2, 14.62, 99.6},
    {499.1, 14.67, 98.6, 532.0, 15.07, 99.4, 469.1, 14.70, 97.4},
    {520.8, 15.24, 100.0, 489.7, 15.23, 100.0, 488.7, 15.20, 100.0},
    {505.1, 14.99, 99.8, 485.1, 15.13, 99.8, 507.1, 14.85, 99.4},
    {501.6, 15.67, 99.9, 501.6, 15.53, 99.9, 500.6, 15.37, 99.9},
    {488.0, 15.49, 100.0, 518.0, 15.40, 100.0, 494.0, 15.28, 100.0},
    {503.0, 15.27, 99.8, 509.9, 15.24, 99.8, 483.3, 15.30, 99.8},
    {485.0, 15.13, 100.0, 512.5, 14.94, 100.0, 505.4, 15.17, 100.0},
    {492.7, 15.45, 99.7, 495.7, 15.12, 99.7, 511.7, 14.95, 99.7},
    {480.9, 15.20, 100.0, 490.9, 15.44, 100.0, 527.1, 15.33, 100.0},
    {480.0, 15.64, 100.0, 512.0, 15.53, 100.0, 510.0, 15.42, 100.0},
    {500.8, 15.50, 100.0, 483.8, 15.55, 100.0, 515.7, 15.38, 100.0},
    {494.9, 15.68, 100.0, 498.9, 15.60, 100.0, 505.9, 15.56, 100.0},
    {514.4, 15.80, 99.7, 480.4, 15.85, 99.7, 505.4, 15.80, 99.7},
    {511.8, 15.50, 100.0, 486.8, 15.62, 100.0, 500.8, 15.72, 100.0},
    {503.7, 15.84, 100.0, 499.7, 15.82, 100.0, 496.7, 15.74, 100.0},
    {540.2, 9.89, 62.8, 101.0, 3.14, 19.6, 306.1, 7.46, 46.8},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
    {0.0, 0.00, 0.0, 0.0, 0.00, 0.0, 0.0, 0.00, 0.0},
};

struct group_run {
	struct ceiling_set *set;
	struct shared_ceiling *sc;
	const char *names[SHARED_CEILING_MAX_MEMBERS];
	double known[SHARED_CEILING_MAX_MEMBERS];
	size_t n;
	unsigned t;
	int first_found; /* sample at which a group was first throttled, -1 never */
};

static struct device_rates rates(double iops, double queue, double util)
{
	return (struct device_rates){
	    .valid = true,
	    .interval_sec = 1.0,
	    .read_iops = iops,
	    .read_bytes_per_sec = iops * 4096,
	    .queue_depth = queue,
	    .utilization = util,
	};
}

static void group_init(struct group_run *g, const char *const *names, size_t n)
{
	memset(g, 0, sizeof(*g));
	assert_int_equal(ceiling_set_new(NULL, &g->set), 0);
	assert_int_equal(shared_ceiling_new(NULL, NULL, &g->sc), 0);
	for (size_t i = 0; i < n; i++) {
		g->names[i] = names[i];
	}
	g->n = n;
	g->first_found = -1;
}

static void group_done(struct group_run *g)
{
	ceiling_set_free(g->set);
	shared_ceiling_free(g->sc);
}

/* One second: x[3 * i .. 3 * i + 2] are device i's IOPS, aqu-sz, %util. */
static void group_feed(struct group_run *g, const double *x)
{
	struct shared_ceiling_device devs[SHARED_CEILING_MAX_MEMBERS];
	const struct shared_ceiling_group *groups;
	struct device_ceiling out;

	for (size_t i = 0; i < g->n; i++) {
		struct device_rates r = rates(x[3 * i], x[3 * i + 1], x[3 * i + 2] / 100);

		assert_int_equal(ceiling_set_update(g->set, g->names[i], NULL, &r, NULL, false, &out), 0);
	}
	ceiling_set_end_sample(g->set);
	for (size_t i = 0; i < g->n; i++) {
		devs[i] = (struct shared_ceiling_device){g->names[i], ceiling_set_find(g->set, g->names[i]),
							 g->known[i]};
	}
	shared_ceiling_update(g->sc, devs, g->n);
	if (g->first_found < 0 && shared_ceiling_groups(g->sc, &groups) > 0 && groups[0].is_throttled) {
		g->first_found = (int)g->t;
	}
	g->t++;
}

/* A device sampled for a while before the load. */
static void group_idle(struct group_run *g, unsigned seconds)
{
	double zero[3 * SHARED_CEILING_MAX_MEMBERS] = {0};

	for (unsigned i = 0; i < seconds; i++) {
		group_feed(g, zero);
	}
}

static const struct shared_ceiling_group *only_group(const struct group_run *g)
{
	const struct shared_ceiling_group *groups;

	assert_int_equal(shared_ceiling_groups(g->sc, &groups), 1);
	return &groups[0];
}

static void assert_near(double v, double want, double rel)
{
	if (fabs(v - want) > rel * want) {
		fail_msg("%g is not within %g%% of %g", v, rel * 100, want);
	}
}

static const char *const vdcde[] = {"vdc", "vdd", "vde"};

static void test_throttle_group_loaded_at_once_is_found_and_named(void **state)
{
	struct group_run g;
	const struct shared_ceiling_group *sg;

	group_init(&g, vdcde, 3);
	group_idle(&g, 20);
	for (size_t i = 0; i < ELEMENTSOF(qemu_group_1500); i++) {
		group_feed(&g, qemu_group_1500[i]);
		if (i == ELEMENTSOF(qemu_group_1500) - 6) {
			sg = only_group(&g);
			assert_true(sg->is_throttled);
			assert_near(sg->iops, 1500, 0.02);
		}
	}
	/* one window of load after fio started (2 samples in) */
	assert_true(g.first_found >= 20 + 2 + 15 && g.first_found <= 20 + 2 + 22);
	sg = only_group(&g);
	assert_string_equal(sg->devices, "vdc,vdd,vde");
	assert_near(sg->iops_estimate, 1500, 0.05);
	/* kept when the load is gone, no longer throttled */
	assert_false(sg->is_throttled);
	group_done(&g);
}

static void test_throttle_group_loaded_in_turn_is_found(void **state)
{
	struct group_run g;
	const struct shared_ceiling_group *sg;

	group_init(&g, vdcde, 3);
	group_idle(&g, 20);
	for (size_t i = 0; i < ELEMENTSOF(qemu_group_1500_staggered) - 5; i++) {
		group_feed(&g, qemu_group_1500_staggered[i]);
	}
	assert_true(g.first_found > 0);
	sg = only_group(&g);
	assert_string_equal(sg->devices, "vdc,vdd,vde");
	assert_near(sg->iops_estimate, 1500, 0.05);
	assert_true(sg->is_throttled);
	group_done(&g);
}

/* Deterministic noise in [-1, 1). */
static double noise(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

/* The first three devices of a second at `iops` each plus `jitter` times
 * noise, queueing. */
static void three_queueing(double *x, double iops, double jitter, uint64_t *rng)
{
	for (size_t i = 0; i < 3; i++) {
		x[3 * i] = iops + jitter * noise(rng);
		x[3 * i + 1] = 15.8;
		x[3 * i + 2] = 100;
	}
}

/* Three volumes each at its own cap of 500 (a second now and then an I/O
 * short or over, independently): their sum is flat too, but no flatter
 * than its parts. */
static void test_independent_caps_are_no_shared_ceiling(void **state)
{
	struct group_run g;
	uint64_t rng = 7;
	const struct shared_ceiling_group *groups;

	group_init(&g, vdcde, 3);
	group_idle(&g, 20);
	for (unsigned t = 0; t < 120; t++) {
		double x[9];

		three_queueing(x, 500, 2, &rng);
		group_feed(&g, x);
	}
	assert_int_equal(shared_ceiling_groups(g.sc, &groups), 0);
	group_done(&g);
}

/* An instance's burst (a QEMU throttle group with x-iops-total=1500,
 * x-iops-total-max=3000): three volumes of no cap of their own at 1000
 * each, then 500 each under the same demand. Each wanders on its own, so
 * the sum is no flatter than its parts: the bucket learned from the sum
 * names the base the shared ceiling, and a burst of it later is not one. */
static void test_instance_burst_is_learned_and_its_base_is_the_shared_ceiling(void **state)
{
	struct group_run g;
	uint64_t rng = 11;
	const struct shared_ceiling_group *groups;
	bool flagged_in_burst = false;

	group_init(&g, vdcde, 3);
	group_idle(&g, 20);
	for (unsigned t = 0; t < 70; t++) {
		double x[9];

		three_queueing(x, t < 40 ? 1000 : 500, 2, &rng);
		group_feed(&g, x);
		flagged_in_burst |=
		    t < 40 && shared_ceiling_groups(g.sc, &groups) > 0 && groups[0].is_throttled;
	}
	assert_false(flagged_in_burst);
	assert_true(only_group(&g)->is_throttled);
	assert_near(only_group(&g)->iops_estimate, 1500, 0.02);
	assert_true(only_group(&g)->has_burst);
	assert_near(only_group(&g)->burst_iops_estimate, 3000, 0.03);
	assert_near(only_group(&g)->burst_base_iops_estimate, 1500, 0.02);
	assert_near(only_group(&g)->burst_credits_estimate, 1500 * 40, 0.1);
	/* idle long enough to refill, then the same burst again */
	group_idle(&g, 45);
	for (unsigned t = 0; t < 20; t++) {
		double x[9];

		three_queueing(x, 1000, 2, &rng);
		group_feed(&g, x);
		flagged_in_burst |= shared_ceiling_groups(g.sc, &groups) > 0 && groups[0].is_throttled;
	}
	assert_false(flagged_in_burst);
	group_done(&g);
}

/* Busy disks that nothing caps wander; a stripe's members move together
 * (recorded: md RAID0 over two 500-IOPS volumes, numjobs=16). */
static void test_busy_disks_and_a_stripe_are_no_shared_ceiling(void **state)
{
	static const char *const two[] = {"vdg", "nvme0n1"};
	struct group_run g;
	uint64_t rng = 11;
	const struct shared_ceiling_group *groups;

	group_init(&g, two, 2);
	group_idle(&g, 20);
	for (unsigned t = 0; t < 120; t++) {
		double x[6] = {20000 * (1 + 0.04 * noise(&rng)), 16, 100,
			       21000 * (1 + 0.04 * noise(&rng)), 16, 100};

		group_feed(&g, x);
	}
	assert_int_equal(shared_ceiling_groups(g.sc, &groups), 0);
	group_done(&g);

	group_init(&g, two, 2);
	group_idle(&g, 20);
	for (unsigned t = 0; t < 120; t++) {
		/* the same 1000 dealt as 500 each, moving together with the
		 * array's demand by 5% */
		double d = 1 + 0.05 * noise(&rng);
		double x[6] = {500 * d, 15, 100, 500 * d, 15, 100};

		group_feed(&g, x);
	}
	assert_int_equal(shared_ceiling_groups(g.sc, &groups), 0);
	group_done(&g);
}

/* A limit dealt out in exactly equal shares (strict round robin) is
 * flat in every part: only what each volume is known to do on its own
 * (iops_limit, or a ceiling iopsd saw) tells. */
static void test_equal_shares_need_known_per_device_ceilings(void **state)
{
	struct group_run g;
	uint64_t rng = 3;
	const struct shared_ceiling_group *groups;
	double x[9];

	for (int known = 0; known <= 1; known++) {
		group_init(&g, vdcde, 3);
		for (size_t i = 0; i < 3; i++) {
			g.known[i] = known ? 1000 : 0;
		}
		group_idle(&g, 20);
		for (unsigned t = 0; t < 60; t++) {
			double total = 1500 + noise(&rng);

			for (size_t i = 0; i < 3; i++) {
				x[3 * i] = total / 3;
				x[3 * i + 1] = 15.8;
				x[3 * i + 2] = 100;
			}
			group_feed(&g, x);
		}
		assert_int_equal(shared_ceiling_groups(g.sc, &groups), known ? 1 : 0);
		if (known) {
			assert_near(groups[0].iops_estimate, 1500, 0.01);
		}
		group_done(&g);
	}
}

/* The group next to a busy disk that is not part of it is still found
 * without it; when its members do more together it is dropped. */
static void test_unrelated_disk_is_left_out_and_a_raised_limit_drops_the_group(void **state)
{
	static const char *const four[] = {"vdc", "vdd", "vde", "vdz"};
	struct group_run g;
	uint64_t rng = 5;
	const struct shared_ceiling_group *groups;
	double x[12];

	group_init(&g, four, 4);
	group_idle(&g, 20);
	for (size_t i = 0; i < ELEMENTSOF(qemu_group_1500) - 5; i++) {
		memcpy(x, qemu_group_1500[i], sizeof(qemu_group_1500[i]));
		x[9] = 8000 * (1 + 0.05 * noise(&rng));
		x[10] = 12;
		x[11] = 100;
		group_feed(&g, x);
	}
	assert_string_equal(only_group(&g)->devices, "vdc,vdd,vde");
	for (unsigned t = 0; t < 5; t++) {
		three_queueing(x, 900, 20, &rng);
		group_feed(&g, x);
	}
	assert_int_equal(shared_ceiling_groups(g.sc, &groups), 0);
	group_done(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_throttle_group_loaded_at_once_is_found_and_named),
	    cmocka_unit_test(test_throttle_group_loaded_in_turn_is_found),
	    cmocka_unit_test(test_independent_caps_are_no_shared_ceiling),
	    cmocka_unit_test(test_instance_burst_is_learned_and_its_base_is_the_shared_ceiling),
	    cmocka_unit_test(test_busy_disks_and_a_stripe_are_no_shared_ceiling),
	    cmocka_unit_test(test_equal_shares_need_known_per_device_ceilings),
	    cmocka_unit_test(test_unrelated_disk_is_left_out_and_a_raised_limit_drops_the_group),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
