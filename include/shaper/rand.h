/*
 * The one pseudo-random generator of the project, for draws that must be
 * cheap and reproducible from a seed rather than unpredictable: cake's
 * quantum dither and BLUE draws, the emulator's loss and jitter, the
 * classifier's hash key. xorshift64* steps a 64-bit state; splitmix64
 * spreads a seed (small, or close to another) over a whole word.
 * Changing either changes the sequences the simulations were tuned with.
 */
#ifndef SHAPER_RAND_H
#define SHAPER_RAND_H

#include <stdint.h>

/* splitmix64's increment (2^64 / golden ratio); also a nonzero default state. */
#define SH_RAND_GAMMA 0x9e3779b97f4a7c15ULL

/* Advance *x by one splitmix64 step and return the mixed word. */
static inline uint64_t
sh_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += SH_RAND_GAMMA);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Next 64 random bits from a xorshift64* state, which must not be 0. */
static inline uint64_t
sh_rand64(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* The high 32 bits of sh_rand64 (the better ones). */
static inline uint32_t
sh_rand32(uint64_t *state)
{
	return (uint32_t)(sh_rand64(state) >> 32);
}

#endif
