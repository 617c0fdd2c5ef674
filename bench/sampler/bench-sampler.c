/* bench-sampler: the cost of one device sample for 1..4096 devices, on a
 * synthetic procfs/sysfs tree (disks, and md arrays over pairs of them):
 *   parse+derive  diskstats_parse_into() + diskstats_derive() on a buffer
 *                 already in memory (the pure per-tick work);
 *   sample        sampler_sample(): pread of PROCFS/diskstats, parse,
 *                 derive, md member aggregates, filter, ceiling hook, PSI,
 *                 and the snapshot the registry receives.
 * The counters change between samples (two alternating diskstats files);
 * the topology is built once before timing, as in steady state.
 * Usage: bench-sampler [N...]   (default 1 64 1024 4096) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "sampler.h"
#include "diskstats.h"
#include "macro.h"

struct fake_clock {
	uint64_t mono, real;
};

static uint64_t fake_now(clockid_t clock, void *userdata)
{
	struct fake_clock *c = userdata;

	return clock == CLOCK_MONOTONIC ? c->mono : c->real;
}

static uint64_t now_nsec(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (!f) {
		return -errno;
	}
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -errno;
}

/* mkdir -p ROOT/SUB */
static int mkdirs(const char *root, const char *sub)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", root, sub);
	for (char *p = path + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			if (mkdir(path, 0755) < 0 && errno != EEXIST) {
				return -errno;
			}
			*p = '/';
		}
	}
	return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

static int attr(const char *root, const char *name, const char *file, const char *value)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/sys/block/%s/%s", root, name, file);
	return write_file(path, value);
}

/* Device i: "nvmeXn1" disks; every 8th an "mdX" RAID0 over the two disks
 * before it (sysfs slaves/, as the kernel has them). */
static void device_name(size_t i, char *buf, size_t len)
{
	if (i % 8 == 7) {
		snprintf(buf, len, "md%zu", i / 8);
	} else {
		snprintf(buf, len, "nvme%zun1", i);
	}
}

static int make_tree(const char *root, size_t n)
{
	char name[64], member[64], path[4096];
	int r;

	r = mkdirs(root, "proc/self");
	if (r < 0) {
		return r;
	}
	r = mkdirs(root, "proc/pressure");
	if (r < 0) {
		return r;
	}
	snprintf(path, sizeof(path), "%s/proc/self/mountinfo", root);
	r = write_file(path, "22 1 259:0 / / rw,noatime - ext4 /dev/nvme0n1 rw\n"
			     "23 22 0:21 / /proc rw - proc proc rw\n");
	if (r < 0) {
		return r;
	}
	snprintf(path, sizeof(path), "%s/proc/pressure/io", root);
	r = write_file(path, "some avg10=0.00 avg60=0.00 avg300=0.00 total=1234\n"
			     "full avg10=0.00 avg60=0.00 avg300=0.00 total=567\n");
	if (r < 0) {
		return r;
	}
	for (size_t i = 0; i < n; i++) {
		device_name(i, name, sizeof(name));
		snprintf(path, sizeof(path), "sys/block/%s/queue", name);
		r = mkdirs(root, path);
		if (r < 0) {
			return r;
		}
		if (attr(root, name, "size", "2097152\n") < 0 ||
		    attr(root, name, "queue/logical_block_size", "512\n") < 0 ||
		    attr(root, name, "queue/rotational", "0\n") < 0) {
			return -EIO;
		}
		if (i % 8 == 7) {
			snprintf(path, sizeof(path), "sys/block/%s/slaves", name);
			r = mkdirs(root, path);
			if (r < 0) {
				return r;
			}
			for (size_t k = i - 2; k < i; k++) {
				device_name(k, member, sizeof(member));
				snprintf(path, sizeof(path), "%s/sys/block/%s/slaves/%s", root, name, member);
				if (mkdir(path, 0755) < 0 && errno != EEXIST) {
					return -errno;
				}
			}
			snprintf(path, sizeof(path), "%s/sys/block/%s/md", root, name);
			if (mkdir(path, 0755) < 0 && errno != EEXIST) {
				return -errno;
			}
		}
	}
	return 0;
}

/* A 20-field /proc/diskstats of n devices after `tick` seconds of load. */
static char *make_diskstats(size_t n, uint64_t tick)
{
	char *buf = NULL, name[64];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t base = 1000000 + i * 1000, r = base + tick * 3000, w = base + tick * 1000;

		device_name(i, name, sizeof(name));
		fprintf(f,
			"%4u %7zu %s %" PRIu64 " 12 %" PRIu64 " %" PRIu64 " %" PRIu64 " 40 %" PRIu64
			" %" PRIu64 " 2 %" PRIu64 " %" PRIu64 " 10 0 2048 3 %" PRIu64 " %" PRIu64 "\n",
			i % 8 == 7 ? 9U : 259U, i, name, r, r * 8, r / 2, w, w * 8, w, base + tick * 800,
			r / 2 + w, 500 + tick * 10, 300 + tick * 5);
	}
	fclose(f);
	return buf;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median and mean of the per-iteration times, in microseconds. */
static void report(const char *what, size_t n, uint64_t *ns, size_t iters, uint64_t cpu_ns)
{
	uint64_t sum = 0;

	qsort(ns, iters, sizeof(*ns), cmp_u64);
	for (size_t i = 0; i < iters; i++) {
		sum += ns[i];
	}
	printf("%-14s %6zu devices: median %9.1f us  mean %9.1f us  p99 %9.1f us  cpu/sample %9.1f us  "
	       "(%.0f ns/device, %zu runs)\n",
	       what, n, (double)ns[iters / 2] / 1e3, (double)sum / (double)iters / 1e3,
	       (double)ns[iters * 99 / 100] / 1e3, (double)cpu_ns / (double)iters / 1e3,
	       (double)ns[iters / 2] / (double)n, iters);
}

static int bench_pure(size_t n, size_t iters)
{
	_cleanup_free_ uint64_t *ns = calloc(iters, sizeof(*ns));
	_cleanup_free_ struct device_rates *rates = calloc(n, sizeof(*rates));
	struct diskstats_raw *prev = NULL, *cur = NULL;
	size_t prev_cap = 0, cur_cap = 0, n_valid = 0;
	uint64_t cpu = 0;
	int r = -ENOMEM;
	char *text;

	text = make_diskstats(n, 0);
	if (ns && rates && text) {
		r = diskstats_parse_into(text, &prev, &prev_cap, NULL);
	}
	free(text);
	for (size_t it = 0; r >= 0 && it < iters; it++) {
		struct diskstats_raw *swap;
		uint64_t t0, c0;
		size_t swap_cap;

		/* counters move on every tick, as they do under load */
		text = make_diskstats(n, it + 1);
		if (!text) {
			r = -ENOMEM;
			break;
		}
		c0 = now_nsec(CLOCK_PROCESS_CPUTIME_ID);
		t0 = now_nsec(CLOCK_MONOTONIC);
		r = diskstats_parse_into(text, &cur, &cur_cap, NULL);
		for (size_t i = 0; r >= 0 && i < (size_t)r; i++) {
			diskstats_derive(&prev[i], &cur[i], 1.0, &rates[i]);
		}
		ns[it] = now_nsec(CLOCK_MONOTONIC) - t0;
		cpu += now_nsec(CLOCK_PROCESS_CPUTIME_ID) - c0;
		free(text);
		swap = prev, prev = cur, cur = swap;
		swap_cap = prev_cap, prev_cap = cur_cap, cur_cap = swap_cap;
	}
	for (size_t i = 0; i < n; i++) {
		n_valid += rates[i].valid;
	}
	if (r >= 0 && n_valid != n) {
		fprintf(stderr, "only %zu of %zu devices derived valid rates\n", n_valid, n);
		r = -EINVAL;
	}
	if (r >= 0) {
		report("parse+derive", n, ns, iters, cpu);
	}
	free(prev);
	free(cur);
	return r < 0 ? r : 0;
}

static int bench_sampler(const char *root, size_t n, size_t iters)
{
	_cleanup_free_ uint64_t *ns = calloc(iters, sizeof(*ns));
	char proc[4096], sys[4096], path[4200];
	struct fake_clock clock = {.mono = 1000 * USEC_PER_SEC, .real = 1700000000 * USEC_PER_SEC};
	struct config *cfg = NULL;
	struct sampler *s = NULL;
	uint64_t cpu = 0;
	int r, fd;

	if (!ns) {
		return -ENOMEM;
	}
	snprintf(proc, sizeof(proc), "%s/proc", root);
	snprintf(sys, sizeof(sys), "%s/sys", root);
	snprintf(path, sizeof(path), "%s/diskstats", proc);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		return -errno;
	}
	r = config_load_builtin(&cfg);
	if (r >= 0) {
		r = sampler_new(proc, sys, cfg, &s);
	}
	if (r >= 0) {
		sampler_set_clock(s, fake_now, &clock);
	}
	/* two warm-up samples: the topology is read once, as in steady state */
	for (size_t it = 0; r >= 0 && it < iters + 2; it++) {
		_cleanup_free_ char *text = make_diskstats(n, it);
		struct sampler_snapshot *snap = NULL;
		uint64_t t0, c0;

		/* the next second's counters, rewritten in place outside the timing */
		if (!text || pwrite(fd, text, strlen(text), 0) != (ssize_t)strlen(text) ||
		    ftruncate(fd, (off_t)strlen(text)) < 0) {
			r = -EIO;
			break;
		}
		clock.mono += USEC_PER_SEC;
		clock.real += USEC_PER_SEC;
		c0 = now_nsec(CLOCK_PROCESS_CPUTIME_ID);
		t0 = now_nsec(CLOCK_MONOTONIC);
		r = sampler_sample(s, &snap);
		if (it >= 2) {
			ns[it - 2] = now_nsec(CLOCK_MONOTONIC) - t0;
			cpu += now_nsec(CLOCK_PROCESS_CPUTIME_ID) - c0;
		}
		if (r >= 0 && snap->n_devices != n) {
			fprintf(stderr, "expected %zu devices in the snapshot, got %zu\n", n,
				snap->n_devices);
			r = -EINVAL;
		}
		if (r >= 0 && it >= 2 &&
		    !(snap->devices[0].rates.valid && snap->devices[n - 1].rates.valid)) {
			fprintf(stderr, "rates not derived: the benchmark would not measure steady state\n");
			r = -EINVAL;
		}
		sampler_snapshot_unref(snap);
	}
	if (r >= 0) {
		report("sample", n, ns, iters, cpu);
	}
	close(fd);
	sampler_free(s);
	config_free(cfg);
	return r;
}

int main(int argc, char **argv)
{
	static const size_t defaults[] = {1, 64, 1024, 4096};
	size_t sizes[16], n_sizes = 0;
	int status = EXIT_SUCCESS;

	for (int i = 1; i < argc && n_sizes < ELEMENTSOF(sizes); i++) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(argv[i], &end, 10);
		if (errno != 0 || *end != '\0' || v == 0 || v > 65536) {
			fprintf(stderr, "usage: %s [DEVICES...] (1..65536)\n", argv[0]);
			return EXIT_FAILURE;
		}
		sizes[n_sizes++] = v;
	}
	if (n_sizes == 0) {
		memcpy(sizes, defaults, sizeof(defaults));
		n_sizes = ELEMENTSOF(defaults);
	}
	for (size_t k = 0; k < n_sizes; k++) {
		size_t n = sizes[k], iters = n <= 64 ? 20000 : n <= 1024 ? 2000 : 500;
		char root[] = "/tmp/iopsd-bench-sampler-XXXXXX", cmd[128];
		int r;

		if (!mkdtemp(root)) {
			perror("mkdtemp");
			return EXIT_FAILURE;
		}
		r = make_tree(root, n);
		if (r >= 0) {
			r = bench_pure(n, iters);
		}
		if (r >= 0) {
			r = bench_sampler(root, n, iters);
		}
		if (r < 0) {
			fprintf(stderr, "%zu devices: %s\n", n, strerror(-r));
			status = EXIT_FAILURE;
		}
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0) {
			fprintf(stderr, "could not remove %s\n", root);
		}
	}
	return status;
}
