/* How often the ceiling detector calls an uncapped device throttled: a
 * device whose IOPS wander at random by +-AMP from second to second around
 * 20000 while its queue stays full (queue 16, busy 100%), fed to
 * ceiling_update() for N seconds. With RUN and IDLE, the demand runs RUN
 * seconds and stops for IDLE (idle device), over and over: every start is
 * an onset the onset test looks at. Prints the seconds flagged, the
 * episodes (false alarms) and the episodes per device-day.
 * Run: build/bench/bench-ceiling-noise 0.04 200000 [RUN IDLE] */
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

static struct device_rates busy(double iops)
{
	return (struct device_rates){
	    .valid = true,
	    .interval_sec = 1.0,
	    .read_iops = iops,
	    .read_bytes_per_sec = iops * 4096,
	    .read_await_sec = 16 / iops,
	    .queue_depth = 16,
	    .utilization = 1.0,
	};
}

int main(int argc, char **argv)
{
	struct ceiling_state st;
	struct ceiling_params p;
	struct device_ceiling out;
	unsigned long n, run = 0, idle = 0, flagged = 0, episodes = 0, onsets = 0;
	double amp;
	bool was = false;

	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: %s AMPLITUDE SECONDS [RUN IDLE]\n", argv[0]);
		return 2;
	}
	amp = strtod(argv[1], NULL);
	n = strtoul(argv[2], NULL, 10);
	if (argc == 5) {
		run = strtoul(argv[3], NULL, 10);
		idle = strtoul(argv[4], NULL, 10);
	}
	ceiling_state_init(&st);
	ceiling_params_default(&p);
	for (unsigned long i = 0; i < n; i++) {
		bool is_idle = run && i % (run + idle) >= run;
		struct device_rates x = busy(20000 * (1 + amp * noise()));

		if (is_idle) {
			x = (struct device_rates){.valid = true, .interval_sec = 1.0};
		}
		onsets += !is_idle && (i == 0 || (run && i % (run + idle) == 0));
		ceiling_update(&st, &p, NULL, &x, &out);
		flagged += out.is_throttled;
		episodes += out.is_throttled && !was;
		was = out.is_throttled;
	}
	printf("+-%.1f%%: throttled %lu of %lu s, %lu episodes (%.2f per device-day), %lu onsets\n",
	       amp * 100, flagged, n, episodes, episodes * 86400.0 / n, onsets);
	return 0;
}
