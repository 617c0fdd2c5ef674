/* How often the shared-ceiling detector names a group where there is none:
 * N disks that nothing caps, each wandering at random on its own by +-J
 * (about normally) around 1000 IOPS with its queue full, their demand
 * rising from quiet over and over (14 s of load after 8 s idle: every
 * start an onset the sum's onset test judges, too short for the window
 * test), fed to ceiling_set_update() and shared_ceiling_update() as the
 * daemon feeds them. Each disk is read every 50 ms between samples too, as
 * the daemon reads a demand's first seconds (each read's count wandering
 * by READS_JITTER around the second's rate, the second's total kept), or
 * not read (reads "none": the detector judges the seconds alone). Prints,
 * for 2 and 3 disks, each amplitude and both, the onsets taken for a
 * shared ceiling by the detector as it ships, then with the onset test
 * over each other length given (ONSET_SEC, seconds). Figures in
 * bench/README.md, "Shared ceilings".
 * Run: build/bench/bench-shared-noise 20000 [ONSET_SEC[:RATIO] ...] */
#include <math.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "shared_ceiling.h"

/* the seconds' noise, and the reads' on a stream of its own: the seconds
 * are the same with reads and without */
static uint64_t rng_state = 42, reads_rng_state = 43;

static double noise_of(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

static double noise(void)
{
	return noise_of(&rng_state);
}

static const char *const names[] = {"vdb", "vdc", "vdd"};

/* how much each 50-ms read's count wanders around the second's rate */
#define READS_JITTER  0.05
#define READS_PER_SEC 20

static uint64_t clock_usec = 1;
static double counted[3];

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

/* The reads of a second of n disks, each at iops[i]: READS_PER_SEC of
 * them, the last at the sample's time, as the daemon notes them. */
static void read_between(struct ceiling_set *set, const double *iops, size_t n)
{
	double share[3][READS_PER_SEC], total[3] = {0};

	for (size_t i = 0; i < n; i++) {
		for (unsigned s = 0; s < READS_PER_SEC; s++) {
			share[i][s] = 1 + READS_JITTER *
					      (noise_of(&reads_rng_state) + noise_of(&reads_rng_state) +
					       noise_of(&reads_rng_state)) /
					      1.7;
			total[i] += share[i][s];
		}
	}
	for (unsigned s = 0; s < READS_PER_SEC; s++) {
		uint64_t at = clock_usec + (s + 1) * (1000000 / READS_PER_SEC);

		for (size_t i = 0; i < n; i++) {
			counted[i] += iops[i] * share[i][s] / total[i];
			ceiling_set_note_fine_read(set, names[i], at, (uint64_t)llround(counted[i]));
		}
	}
}

/* One second of n disks, each at iops[i] (0: idle), read between samples
 * or not. */
static void feed(struct ceiling_set *set, struct shared_ceiling *sc, const double *iops, size_t n,
		 bool is_read)
{
	struct shared_ceiling_device devs[3];
	struct device_ceiling out;

	if (is_read) {
		read_between(set, iops, n);
	}
	clock_usec += 1000000;
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
				  unsigned long onsets, bool is_read)
{
	struct ceiling_set *set = NULL;
	struct shared_ceiling *sc = NULL;
	unsigned long found = 0;

	rng_state = 42;
	reads_rng_state = 43;
	if (ceiling_set_new(NULL, &set) < 0 || shared_ceiling_new(NULL, sp, &sc) < 0) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (unsigned long o = 0; o < onsets; o++) {
		double x[3] = {0};
		bool is_found = false;

		for (unsigned t = 0; t < 8; t++) {
			feed(set, sc, x, n, is_read);
		}
		for (unsigned t = 0; t < 14; t++) {
			const struct shared_ceiling_group *groups;

			for (size_t i = 0; i < n; i++) {
				double z = noise() + noise() + noise();

				x[i] = 1000 * (1 + jitter * z / 1.7);
			}
			feed(set, sc, x, n, is_read);
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
	printf("%-4s %-5s %5s %6s %6s %14s\n", "sec", "ratio", "disks", "jitter", "reads", "false groups");
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
				for (int is_read = 0; is_read <= 1; is_read++) {
					unsigned long f = false_groups(&sp, n, jitters[j], onsets, is_read);

					printf("%-4g %-5g %5zu %5.0f%% %6s %7lu in %lu\n", sp.onset_sec,
					       sp.onset_max_variance_ratio, n, jitters[j] * 100,
					       is_read ? "5%" : "none", f, onsets);
					fflush(stdout);
				}
			}
		}
	}
	return 0;
}
