/* How often the shared-ceiling detector names a group where there is none:
 * N disks that nothing caps, each wandering at random on its own by +-J
 * (about normally) around 1000 IOPS with its queue full, their demand
 * rising from quiet over and over (14 s of load after 8 s idle: every
 * start an onset the sum's onset test judges, too short for the window
 * test), fed to ceiling_set_update() and shared_ceiling_update() as the
 * daemon feeds them. Prints, for 2 and 3 disks and each amplitude, the
 * onsets taken for a shared ceiling by the detector as it ships, then
 * with the onset test over each other length given (ONSET_SEC, seconds).
 * Figures in bench/README.md, "Shared ceilings".
 * Run: build/bench/bench-shared-noise 20000 [ONSET_SEC ...] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "shared_ceiling.h"

static uint64_t rng_state = 42;

static double noise(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(rng_state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

static const char *const names[] = {"vdb", "vdc", "vdd"};

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

/* One second of n disks, each at iops[i] (0: idle). */
static void feed(struct ceiling_set *set, struct shared_ceiling *sc, const double *iops, size_t n)
{
	struct shared_ceiling_device devs[3];
	struct device_ceiling out;

	for (size_t i = 0; i < n; i++) {
		struct device_rates r =
		    iops[i] > 0 ? busy(iops[i]) : (struct device_rates){.valid = true, .interval_sec = 1.0};

		ceiling_set_update(set, names[i], NULL, &r, NULL, false, &out);
	}
	ceiling_set_end_sample(set);
	for (size_t i = 0; i < n; i++) {
		devs[i] = (struct shared_ceiling_device){names[i], ceiling_set_find(set, names[i]), 0};
	}
	shared_ceiling_update(sc, devs, n);
}

/* Onsets of n disks wandering by jitter, out of `onsets`, in which the
 * detector with shared parameters sp named a throttled group. */
static unsigned long false_groups(const struct shared_ceiling_params *sp, size_t n, double jitter,
				  unsigned long onsets)
{
	struct ceiling_set *set = NULL;
	struct shared_ceiling *sc = NULL;
	unsigned long found = 0;

	rng_state = 42;
	if (ceiling_set_new(NULL, &set) < 0 || shared_ceiling_new(NULL, sp, &sc) < 0) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (unsigned long o = 0; o < onsets; o++) {
		double x[3] = {0};
		bool is_found = false;

		for (unsigned t = 0; t < 8; t++) {
			feed(set, sc, x, n);
		}
		for (unsigned t = 0; t < 14; t++) {
			const struct shared_ceiling_group *groups;

			for (size_t i = 0; i < n; i++) {
				double z = noise() + noise() + noise();

				x[i] = 1000 * (1 + jitter * z / 1.7);
			}
			feed(set, sc, x, n);
			is_found |= shared_ceiling_groups(sc, &groups) > 0 && groups[0].is_throttled;
		}
		for (size_t i = 0; i < n; i++) {
			x[i] = 0;
		}
		found += is_found;
	}
	shared_ceiling_free(sc);
	ceiling_set_free(set);
	return found;
}

int main(int argc, char **argv)
{
	static const double jitters[] = {0.01, 0.02, 0.03, 0.05};
	struct shared_ceiling_params sp;
	unsigned long onsets;

	if (argc < 2) {
		fprintf(stderr, "usage: %s ONSETS [ONSET_SEC ...]\n", argv[0]);
		return 2;
	}
	onsets = strtoul(argv[1], NULL, 10);
	shared_ceiling_params_default(&sp);
	printf("%-4s %-5s %5s %6s %14s\n", "sec", "ratio", "disks", "jitter", "false groups");
	for (int a = 1; a < argc; a++) {
		if (a > 1) {
			char *end;

			sp.onset_sec = strtod(argv[a], &end);
			if (*end == ':') {
				sp.onset_max_variance_ratio = strtod(end + 1, NULL);
			}
		}
		for (size_t n = 2; n <= 3; n++) {
			for (size_t j = 0; j < sizeof(jitters) / sizeof(jitters[0]); j++) {
				unsigned long f = false_groups(&sp, n, jitters[j], onsets);

				printf("%-4g %-5g %5zu %5.0f%% %7lu in %lu\n", sp.onset_sec,
				       sp.onset_max_variance_ratio, n, jitters[j] * 100, f, onsets);
				fflush(stdout);
			}
		}
	}
	return 0;
}
