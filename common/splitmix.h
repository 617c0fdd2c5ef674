/* SplitMix64 (Steele, Lea, Flood 2014): a fast, well-mixed 64-bit
 * generator for I/O offsets and probe-file contents. Header only. */
#pragma once

#include <stdint.h>

#define SPLITMIX64_GOLDEN 0x9e3779b97f4a7c15ULL

/* The output function: a bijection that spreads every input bit. */
static inline uint64_t splitmix64_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Advance *state and return the next value. */
static inline uint64_t splitmix64_next(uint64_t *state)
{
	return splitmix64_mix(*state += SPLITMIX64_GOLDEN);
}
