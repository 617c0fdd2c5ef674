/* Clock readings in the units the code works in. */
#pragma once

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "macro.h"

static inline uint64_t now_nsec(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t now_usec(clockid_t clock)
{
	return now_nsec(clock) / 1000ULL;
}

static inline struct timespec timespec_from_nsec(uint64_t nsec)
{
	return (struct timespec){.tv_sec = (time_t)(nsec / NSEC_PER_SEC),
				 .tv_nsec = (long)(nsec % NSEC_PER_SEC)};
}

static inline struct timespec timespec_from_usec(uint64_t usec)
{
	return timespec_from_nsec(usec * NSEC_PER_USEC);
}

static inline double usec_to_sec(uint64_t usec)
{
	return (double)usec / (double)USEC_PER_SEC;
}

/* A condition variable whose timed waits take CLOCK_MONOTONIC deadlines. */
static inline void cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}
