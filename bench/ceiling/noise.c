/* How often the ceiling detector calls an uncapped device throttled: a
 * device whose IOPS wander at random by +-AMP from second to second around
 * 20000 while its queue stays full (queue 16, busy 100%), fed to
 * ceiling_update() for N seconds, with the onset test and without it (the
 * window test alone, as before it). With RUN and IDLE, the demand runs RUN
 * seconds and stops for IDLE (idle device), over and over: every start is
 * an onset the onset test looks at. Prints the seconds flagged, the
 * episodes (false alarms) and the episodes per device-day. LEVEL (20000)
 * sets the IOPS the device wanders around; WHOLE (a request size in bytes)
 * makes each second's count a whole number of requests of that size, as a
 * slow device's are (128 a second of 128 KiB: 131072). Beside the
 * detector as it ships it prints the onset tests without the sum test and
 * without the onset test's quick form.
 * Run: build/bench/bench-ceiling-noise 0.04 200000 [RUN IDLE [LEVEL [WHOLE]]] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ceiling.h"

static uint64_t rng_state = 42;

static double noise(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng_state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

static double request_bytes = 4096;
static bool is_whole;

static struct device_rates busy(double iops)
{
	if (is_whole) {
		iops = round(iops);
	}
	return (struct device_rates){
	    .valid = true,
	    .interval_sec = 1.0,
	    .read_iops = iops,
	    .read_bytes_per_sec = iops * request_bytes,
	    .read_await_sec = 16 / iops,
	    .queue_depth = 16,
	    .utilization = 1.0,
	};
}

struct tally {
	unsigned long flagged, episodes, onsets;
};

/* n seconds of the wandering device (run and idle: the demand's on and off
 * seconds, 0 for always on) fed to a detector with parameters p. */
static struct tally replay(const struct ceiling_params *p, double amp, double level, unsigned long n,
			   unsigned long run, unsigned long idle)
{
	struct ceiling_state st;
	struct device_ceiling out;
	struct tally t = {0};
	bool was = false;

	rng_state = 42;
	ceiling_state_init(&st);
	for (unsigned long i = 0; i < n; i++) {
		bool is_idle = run && i % (run + idle) >= run;
		struct device_rates x = busy(level * (1 + amp * noise()));

		if (is_idle) {
			x = (struct device_rates){.valid = true, .interval_sec = 1.0};
		}
		t.onsets += !is_idle && (i == 0 || (run && i % (run + idle) == 0));
		ceiling_update(&st, p, NULL, &x, &out);
		t.flagged += out.is_throttled;
		t.episodes += out.is_throttled && !was;
		was = out.is_throttled;
	}
	return t;
}

int main(int argc, char **argv)
{
	struct ceiling_params p, window_only, no_sum, no_quick;
	unsigned long n, run = 0, idle = 0;
	double amp, level = 20000;
	struct tally a, b, c, d;

	if (argc != 3 && argc != 5 && argc != 6 && argc != 7) {
		fprintf(stderr, "usage: %s AMPLITUDE SECONDS [RUN IDLE [LEVEL [WHOLE]]]\n", argv[0]);
		return 2;
	}
	amp = strtod(argv[1], NULL);
	n = strtoul(argv[2], NULL, 10);
	if (argc >= 5) {
		run = strtoul(argv[3], NULL, 10);
		idle = strtoul(argv[4], NULL, 10);
	}
	if (argc >= 6) {
		level = strtod(argv[5], NULL);
	}
	if (argc == 7) {
		request_bytes = strtod(argv[6], NULL);
		is_whole = true;
	}
	ceiling_params_default(&p);
	window_only = p;
	window_only.onset_sec = 0;
	no_sum = p;
	no_sum.onset_sum_sec = 0;
	no_quick = p;
	no_quick.onset_quick_sec = 0;
	a = replay(&p, amp, level, n, run, idle);
	b = replay(&window_only, amp, level, n, run, idle);
	c = replay(&no_sum, amp, level, n, run, idle);
	d = replay(&no_quick, amp, level, n, run, idle);
	printf(
	    "%.0f IOPS +-%.1f%%%s, %lu onsets in %lu s: throttled %lu s, %lu episodes (%.2f per device-day); "
	    "the window test alone %lu s, %lu episodes (%.2f per device-day); without the sum test %lu s, "
	    "%lu episodes (%.2f per device-day); without the quick form %lu s, %lu episodes (%.2f per "
	    "device-day)\n",
	    level, amp * 100, is_whole ? " (whole requests)" : "", a.onsets, n, a.flagged, a.episodes,
	    a.episodes * 86400.0 / n, b.flagged, b.episodes, b.episodes * 86400.0 / n, c.flagged, c.episodes,
	    c.episodes * 86400.0 / n, d.flagged, d.episodes, d.episodes * 86400.0 / n);
	return 0;
}
