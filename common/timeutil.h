/* Clock readings in the units the code works in. */
#pragma once

#include <pthread.h>
#include <stdint.h>
#include <time.h>

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

/* A condition variable whose timed waits take CLOCK_MONOTONIC deadlines. */
static inline void cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}
