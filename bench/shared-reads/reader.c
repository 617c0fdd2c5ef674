/* Reads /proc/diskstats every STEP_MS ms for SECONDS s and prints, per
 * read, CLOCK_MONOTONIC in ns just before and just after it, then each
 * named device's reads + writes completed. Built static by
 * bench/shared-reads/run so that it runs in the lab's guest as it is.
 * Usage: reader STEP_MS SECONDS DEVICE... */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long ns(const struct timespec *t)
{
	return t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* The reads + writes completed of `name` in diskstats text `buf`, 0 when
 * it is not there. */
static unsigned long long ios_of(const char *buf, const char *name)
{
	for (const char *line = buf; line && *line;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		unsigned maj, min;
		char dev[64];
		unsigned long long f[5];

		if (sscanf(line, "%u %u %63s %llu %llu %llu %llu %llu", &maj, &min, dev, &f[0], &f[1], &f[2],
			   &f[3], &f[4]) == 8 &&
		    strcmp(dev, name) == 0) {
			return f[0] + f[4];
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static char buf[1 << 16];
	struct timespec due, before, after;
	long step_ns;
	long n;
	int fd;

	if (argc < 4) {
		fprintf(stderr, "usage: %s STEP_MS SECONDS DEVICE...\n", argv[0]);
		return 2;
	}
	step_ns = atol(argv[1]) * 1000000L;
	n = (long)(atof(argv[2]) * 1e9 / (double)step_ns);
	fd = open("/proc/diskstats", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || step_ns <= 0) {
		perror("/proc/diskstats");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &due);
	for (long i = 0; i < n; i++) {
		ssize_t r;

		due.tv_nsec += step_ns;
		while (due.tv_nsec >= 1000000000L) {
			due.tv_nsec -= 1000000000L;
			due.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL);
		clock_gettime(CLOCK_MONOTONIC, &before);
		r = pread(fd, buf, sizeof(buf) - 1, 0);
		clock_gettime(CLOCK_MONOTONIC, &after);
		buf[r > 0 ? r : 0] = '\0';
		printf("%lld %lld", ns(&before), ns(&after));
		for (int d = 3; d < argc; d++) {
			printf(" %llu", ios_of(buf, argv[d]));
		}
		printf("\n");
	}
	return 0;
}
