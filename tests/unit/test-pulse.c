/* The pulse test over reads the lab recorded every 50 ms (bench/fine-counts):
 * a cgroup's cap is found in every 2 s of them at its level, the volume
 * uncapped or at a cap it cannot hold never; synthetic busy devices never,
 * and reads that came late are not judged. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ceiling.h"
#include "macro.h"
#include "pulse.h"

/* The lab's volume under a cgroup's cap of 20000 (bench/fine-counts --step 0.05), 4 s of reads: bursts of
 * 2000 I/Os every 100 ms, split across two reads. */
static const struct pulse_read cgroup_20000[] = {
    {0, 0},	      {49982, 1733},	{100000, 2000},	  {150033, 3677},   {200037, 4000},
    {249986, 5708},   {300046, 6000},	{349996, 7721},	  {399991, 8000},   {449994, 9668},
    {500001, 10000},  {550019, 11681},	{600029, 12000},  {650011, 13688},  {700051, 14000},
    {750001, 15651},  {800035, 16000},	{850012, 17643},  {900004, 18000},  {950006, 19584},
    {1000008, 20000}, {1050015, 21621}, {1100058, 22000}, {1150026, 23683}, {1200027, 24000},
    {1250013, 25596}, {1300020, 26000}, {1350030, 27594}, {1400043, 28000}, {1450039, 29640},
    {1500038, 30000}, {1550026, 31822}, {1600095, 32000}, {1650025, 33651}, {1700058, 34000},
    {1750014, 35523}, {1800065, 36000}, {1850009, 37618}, {1900039, 38000}, {1950040, 39638},
    {2000046, 40000}, {2050140, 41652}, {2100053, 42000}, {2150056, 43663}, {2200035, 44000},
    {2250057, 45704}, {2300065, 46000}, {2350061, 47725}, {2400004, 48000}, {2450056, 49680},
    {2500016, 50000}, {2550018, 51783}, {2600024, 52000}, {2650080, 53715}, {2700032, 54000},
    {2750028, 55541}, {2800034, 56000}, {2849987, 57759}, {2899996, 58000}, {2949970, 59802},
    {3000003, 60000}, {3050041, 61668}, {3100016, 62002}, {3149969, 63690}, {3199996, 64002},
    {3250025, 65541}, {3300007, 66002}, {3349971, 67908}, {3399974, 68002}, {3450011, 69644},
    {3499989, 70002}, {3550062, 71646}, {3600008, 72002}, {3650030, 73731}, {3700065, 74002},
    {3750022, 75702}, {3800038, 76002}, {3850034, 77692}, {3900052, 78002}, {3950023, 79492},
    {4000035, 80002},
};

/* The same cap, another run, read by a script every 50 ms to within 3 ms: every burst inside one read. */
static const struct pulse_read cgroup_20000_late[] = {
    {0, 0},	      {49923, 2000},	{99994, 2000},	  {149922, 4000},   {199992, 4000},
    {249936, 6000},   {299977, 6000},	{349940, 8000},	  {400011, 8000},   {449938, 10000},
    {499982, 10000},  {549933, 12000},	{599964, 12000},  {649935, 14000},  {699931, 14000},
    {749939, 16000},  {799995, 16000},	{849958, 18000},  {900002, 18000},  {949967, 20000},
    {1000034, 20000}, {1049949, 22000}, {1100047, 22000}, {1149924, 24000}, {1200002, 24000},
    {1249917, 26000}, {1299981, 26000}, {1350059, 27901}, {1400014, 28000}, {1449925, 30000},
    {1500068, 30000}, {1549964, 32000}, {1599945, 32000}, {1649960, 34000}, {1699995, 34000},
    {1749982, 35985}, {1800061, 36000}, {1849961, 37623}, {1900013, 38000}, {1949935, 40000},
    {1999943, 40000}, {2049929, 42000}, {2099967, 42000}, {2149928, 44000}, {2199953, 44000},
    {2249919, 46000}, {2299963, 46000}, {2349926, 48000}, {2399957, 48000}, {2449915, 50000},
    {2499877, 50000}, {2549904, 52002}, {2599904, 52002}, {2649901, 54002}, {2699955, 54002},
    {2749936, 56002}, {2799929, 56002}, {2849915, 58002}, {2899948, 58002}, {2949880, 60002},
    {2999944, 60002}, {3049932, 62002}, {3099911, 62002}, {3149888, 64002}, {3199904, 64002},
    {3249922, 66002}, {3299907, 66002}, {3349920, 68002}, {3399923, 68002}, {3449924, 70002},
    {3499914, 70002}, {3549915, 72002}, {3599938, 72002}, {3649917, 74002}, {3699942, 74002},
    {3749914, 76002}, {3799954, 76002}, {3849941, 78002}, {3899916, 78002}, {3949894, 80002},
    {3999913, 80002},
};

/* The same volume uncapped, fio QD16 flat out at about 51000 IOPS. */
static const struct pulse_read uncapped_51000[] = {
    {0, 0},
    {50048, 2644},
    {100077, 4975},
    {149986, 7482},
    {199969, 10168},
    {249975, 12809},
    {299973, 15339},
    {349978, 17669},
    {400180, 20247},
    {450015, 22719},
    {499970, 25214},
    {549949, 27735},
    {599955, 30371},
    {649954, 32991},
    {699958, 35585},
    {749964, 38175},
    {799965, 40814},
    {849953, 43504},
    {899996, 46254},
    {949978, 48913},
    {999987, 51711},
    {1049975, 54285},
    {1099975, 56928},
    {1149957, 59648},
    {1199960, 62009},
    {1249966, 64555},
    {1299967, 66963},
    {1349974, 69551},
    {1399957, 71923},
    {1449981, 74557},
    {1500023, 77067},
    {1549962, 79730},
    {1599975, 82357},
    {1650013, 84931},
    {1699954, 87493},
    {1749978, 89810},
    {1800001, 92473},
    {1849961, 95302},
    {1899953, 98022},
    {1949969, 100746},
    {1999969, 103235},
    {2049963, 105837},
    {2099970, 108495},
    {2149970, 111152},
    {2199980, 113699},
    {2250047, 116039},
    {2299997, 118583},
    {2349976, 121005},
    {2400002, 123435},
    {2450014, 125974},
    {2499972, 128334},
    {2549968, 130927},
    {2599986, 133453},
    {2649984, 135983},
    {2699972, 138405},
    {2749960, 141009},
    {2800116, 143548},
    {2850030, 146185},
    {2900052, 148688},
    {2950026, 151276},
    {2999997, 153873},
    {3049988, 156350},
    {3100073, 158595},
    {3150046, 160944},
    {3199981, 163439},
    {3250020, 165967},
    {3299997, 168008},
    {3349981, 170339},
    {3400103, 172945},
    {3449983, 175566},
    {3500011, 178061},
    {3549977, 180665},
    {3599982, 182948},
    {3650365, 185618},
    {3699981, 188252},
    {3749984, 190636},
    {3799975, 192987},
    {3850071, 195340},
    {3900036, 197974},
    {3949983, 200505},
    {3999985, 203110},
};

/* Under a cap of 50000, which the volume cannot hold (it tops out at 48000 to 55000): a busy device's wander.
 */
static const struct pulse_read cap_50000_not_held[] = {
    {0, 0},
    {50060, 2278},
    {99972, 4803},
    {149981, 7397},
    {199973, 10117},
    {249980, 12220},
    {300009, 14644},
    {349990, 17189},
    {400005, 19854},
    {450048, 22495},
    {500015, 25102},
    {549985, 27206},
    {599977, 29713},
    {649974, 32536},
    {700062, 35348},
    {749959, 37434},
    {799999, 40326},
    {850029, 42395},
    {900095, 45179},
    {950037, 47379},
    {1000040, 50118},
    {1050020, 52477},
    {1099962, 55133},
    {1149957, 57327},
    {1199941, 59933},
    {1249970, 62238},
    {1299967, 64867},
    {1349936, 67335},
    {1399967, 69913},
    {1449968, 71912},
    {1500004, 74669},
    {1549953, 77391},
    {1599954, 79980},
    {1649969, 82371},
    {1699956, 85225},
    {1749941, 87453},
    {1799951, 90399},
    {1849948, 92438},
    {1900023, 95226},
    {1949998, 97343},
    {1999966, 100024},
    {2049962, 102230},
    {2099999, 105030},
    {2149971, 107050},
    {2199958, 109621},
    {2249957, 112119},
    {2299983, 114660},
    {2349946, 117194},
    {2399955, 119694},
    {2449944, 122516},
    {2499945, 125180},
    {2549961, 127176},
    {2599964, 129634},
    {2649950, 132227},
    {2699972, 135019},
    {2749958, 137329},
    {2799952, 140027},
    {2850057, 142437},
    {2899977, 145204},
    {2949958, 147431},
    {2999942, 150112},
    {3049962, 152280},
    {3099943, 155053},
    {3149956, 157330},
    {3199960, 160130},
    {3249937, 162319},
    {3299964, 164945},
    {3349944, 167364},
    {3399947, 170066},
    {3450004, 172296},
    {3499964, 174973},
    {3549948, 177370},
    {3599951, 180152},
    {3649948, 182304},
    {3699935, 184941},
    {3749945, 187421},
    {3800038, 190068},
    {3849958, 192498},
    {3899953, 195409},
    {3949972, 197342},
    {3999946, 200002},
};

/* The windows of 2 s in reads[0..n-1] that the pulse test finds, and the
 * lowest and highest level it gives. */
static unsigned count_found(const struct pulse_read *reads, size_t n, double *ret_min, double *ret_max)
{
	struct pulse_params p;
	unsigned found = 0;

	pulse_params_default(&p);
	*ret_min = INFINITY;
	*ret_max = 0;
	for (size_t end = pulse_reads_needed(&p); end <= n; end++) {
		double iops;

		if (pulse_test(reads, end, &p, &iops)) {
			found++;
			*ret_min = fmin(*ret_min, iops);
			*ret_max = fmax(*ret_max, iops);
		}
	}
	return found;
}

static void check_found_everywhere(const struct pulse_read *reads, size_t n, double cap)
{
	struct pulse_params p;
	double lo, hi;
	unsigned found;

	pulse_params_default(&p);
	found = count_found(reads, n, &lo, &hi);
	print_message("found in %u of %zu windows, %.1f to %.1f\n", found, n + 1 - pulse_reads_needed(&p), lo,
		      hi);
	assert_int_equal(found, n + 1 - pulse_reads_needed(&p));
	assert_true(fabs(lo - cap) <= 0.005 * cap && fabs(hi - cap) <= 0.005 * cap);
}

static void test_a_cgroup_cap_is_found_in_every_two_seconds(void **state)
{
	check_found_everywhere(cgroup_20000, ELEMENTSOF(cgroup_20000), 20000);
	check_found_everywhere(cgroup_20000_late, ELEMENTSOF(cgroup_20000_late), 20000);
}

static void test_a_busy_volume_is_never_found(void **state)
{
	double lo, hi;

	assert_int_equal(count_found(uncapped_51000, ELEMENTSOF(uncapped_51000), &lo, &hi), 0);
	assert_int_equal(count_found(cap_50000_not_held, ELEMENTSOF(cap_50000_not_held), &lo, &hi), 0);
}

/* Deterministic noise in [-1, 1). */
static double noise(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

/* n reads every 50 ms of a device completing `iops` a second, each half
 * slice's count wandering by `amp` of it, rounded; pulses: the count of
 * each slice dealt in its first half. */
static void synthesize(struct pulse_read *r, size_t n, double iops, double amp, bool is_pulsed, uint64_t *rng)
{
	double ios = 0;

	for (size_t i = 0; i < n; i++) {
		r[i] = (struct pulse_read){.monotonic_usec = 50000 * i, .ios = (uint64_t)ios};
		if (is_pulsed) {
			ios += i % 2 == 0 ? iops / 10 : 0;
		} else {
			ios += round(iops / 20 * (1 + amp * noise(rng)));
		}
	}
}

/* Busy devices that wander by 0.5 to 3% each 50 ms, and by at least 2
 * I/Os (a count steadier than that is a level, which the onset test flags
 * too), at 1000 to 200000 IOPS: 1000 runs of 2 s each, never found. */
static void test_busy_devices_are_never_found(void **state)
{
	static const double levels[] = {1000, 20000, 200000}, amps[] = {0.005, 0.01, 0.03};
	uint64_t rng = 5;
	struct pulse_params p;
	struct pulse_read r[41];
	double iops;

	pulse_params_default(&p);
	assert_int_equal(pulse_reads_needed(&p), ELEMENTSOF(r));
	for (size_t l = 0; l < ELEMENTSOF(levels); l++) {
		for (size_t a = 0; a < ELEMENTSOF(amps); a++) {
			for (unsigned run = 0; run < 1000; run++) {
				synthesize(r, ELEMENTSOF(r), levels[l], fmax(amps[a], 2 / (levels[l] / 20)),
					   false, &rng);
				if (pulse_test(r, ELEMENTSOF(r), &p, &iops)) {
					fail_msg("%g IOPS wandering by %g%%: found at %g", levels[l],
						 amps[a] * 100, iops);
				}
			}
		}
	}
}

/* A cap of 1000 deals 100 I/Os a slice: found, at 1000. Too few I/Os a
 * slice (a cap of 400: 40) say nothing: not judged. */
static void test_slices_of_enough_ios_are_found(void **state)
{
	struct pulse_params p;
	struct pulse_read r[41];
	uint64_t rng = 1;
	double iops = 0;

	pulse_params_default(&p);
	synthesize(r, ELEMENTSOF(r), 1000, 0, true, &rng);
	assert_true(pulse_test(r, ELEMENTSOF(r), &p, &iops));
	assert_true(fabs(iops - 1000) < 1e-6);
	synthesize(r, ELEMENTSOF(r), 400, 0, true, &rng);
	assert_false(pulse_test(r, ELEMENTSOF(r), &p, &iops));
	/* too few reads */
	synthesize(r, ELEMENTSOF(r), 1000, 0, true, &rng);
	assert_false(pulse_test(r, ELEMENTSOF(r) - 1, &p, &iops));
}

/* A read 15 ms late (the reader short of CPU) moves a window's edge into
 * a burst: those reads are not judged, a cap or not. */
static void test_late_reads_are_not_judged(void **state)
{
	struct pulse_params p;
	struct pulse_read r[ELEMENTSOF(cgroup_20000)];
	double iops;

	pulse_params_default(&p);
	memcpy(r, cgroup_20000, sizeof(r));
	assert_true(pulse_test(r, 41, &p, &iops));
	r[20].monotonic_usec += 15000;
	assert_false(pulse_test(r, 41, &p, &iops));
	/* a counter that went back (a reset) */
	memcpy(r, cgroup_20000, sizeof(r));
	r[30].ios = r[29].ios - 1;
	assert_false(pulse_test(r, 41, &p, &iops));
}

/* The detector fed as the daemon feeds it: a demand at a cgroup's cap of
 * 20000 whose seconds wander by 1 to 2% (each second's edge inside a
 * burst), with the reads every 50 ms that the device asks for while it is
 * in the first seconds of its demand. */
struct fed {
	struct ceiling_state st;
	struct ceiling_params p;
	struct device_ceiling out;
	uint64_t usec;	  /* the monotonic clock of the reads */
	uint64_t ios;	  /* the device's count */
	unsigned n_reads; /* the reads noted */
};

static void feed_second(struct fed *f, double iops, bool with_reads)
{
	struct device_rates r = {.valid = true, .interval_sec = 1.0};

	if (iops > 0) {
		r.read_iops = iops;
		r.read_bytes_per_sec = iops * 4096;
		r.queue_depth = 14;
		r.utilization = 0.98;
	}
	ceiling_update(&f->st, &f->p, NULL, &r, &f->out);
	for (unsigned i = 0; i < 20; i++) {
		/* a burst of 2000 every 100 ms, split 1700 and 300 across two reads */
		f->usec += 50000;
		f->ios += i % 2 == 0 ? 1700 : 300;
		if (with_reads && ceiling_state_wants_fine_reads(&f->st, &f->p)) {
			ceiling_state_note_fine_read(&f->st, f->usec, f->ios);
			f->n_reads++;
		}
	}
}

static const double wandering_20000[] = {19911, 19831, 19886, 20076, 19810,
					 20258, 19819, 19792, 20453, 20009};

/* The first queueing second asks for reads; the test wants 41 of them (2
 * s), so the demand's 4th second flags it, at the cap, by the pulse
 * test. Without the reads, its seconds say nothing within 10 s. */
static void test_the_detector_flags_a_cgroup_cap_by_its_pulses(void **state)
{
	struct fed f = {0}, g = {0};
	int first = -1;

	ceiling_params_default(&f.p);
	ceiling_state_init(&f.st);
	g = f;
	for (unsigned t = 0; t < 5; t++) {
		feed_second(&f, 0, true);
		feed_second(&g, 0, false);
		assert_false(ceiling_state_wants_fine_reads(&f.st, &f.p));
	}
	assert_int_equal(f.n_reads, 0);
	for (unsigned t = 0; t < ELEMENTSOF(wandering_20000); t++) {
		feed_second(&f, wandering_20000[t], true);
		feed_second(&g, wandering_20000[t], false);
		if (first < 0 && f.out.is_throttled) {
			first = (int)t;
			assert_string_equal(f.out.found_by, "pulse");
			assert_true(fabs(f.out.iops_ceiling_estimate - 20000) <= 0.005 * 20000);
		}
		assert_false(g.out.is_throttled);
	}
	print_message("flagged at the demand's second %d, %u reads\n", first + 1, f.n_reads);
	assert_int_equal(first, 3);
	assert_true(f.out.is_throttled);
}

/* Reads are wanted only in the first onset_horizon_sec of a demand, and
 * dropped after. */
static void test_reads_stop_after_the_onset(void **state)
{
	struct fed f = {0};

	ceiling_params_default(&f.p);
	ceiling_state_init(&f.st);
	for (unsigned t = 0; t < 5; t++) {
		feed_second(&f, 0, true);
	}
	for (unsigned t = 0; t < 20; t++) {
		feed_second(&f, 20000, true);
	}
	assert_false(ceiling_state_wants_fine_reads(&f.st, &f.p));
	assert_int_equal(f.st.n_fine, 0);
	assert_int_equal(f.n_reads, 20 * (unsigned)f.p.onset_horizon_sec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_cgroup_cap_is_found_in_every_two_seconds),
	    cmocka_unit_test(test_a_busy_volume_is_never_found),
	    cmocka_unit_test(test_busy_devices_are_never_found),
	    cmocka_unit_test(test_slices_of_enough_ios_are_found),
	    cmocka_unit_test(test_late_reads_are_not_judged),
	    cmocka_unit_test(test_the_detector_flags_a_cgroup_cap_by_its_pulses),
	    cmocka_unit_test(test_reads_stop_after_the_onset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
