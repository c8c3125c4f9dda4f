/* Deterministic random numbers addressed by (seed, stream, index): value i of a
 * stream does not depend on how many values were drawn before it or by which thread,
 * so noise and synthetic weights are the same on every machine and every run.
 *
 *   u64(seed, stream, i) = splitmix64(splitmix64(seed ^ splitmix64(stream)) + i)
 *   normal(seed, stream, i): Box-Muller on u1 = (u64(.., 2i) >> 11 + 0.5) / 2^53 and
 *   u2 likewise from 2i+1: sqrt(-2 ln u1) cos(2 pi u2). */
#ifndef DIT_RNG_H
#define DIT_RNG_H

#include <stdint.h>

uint64_t dit_rng_u64(uint64_t seed, uint64_t stream, uint64_t i);
double dit_rng_normal(uint64_t seed, uint64_t stream, uint64_t i);

/* dst[i] = scale * normal(seed, stream, i) + shift, rounded to fp32. */
void dit_rng_fill_normal(float *dst, int64_t n, uint64_t seed, uint64_t stream, double scale,
                         double shift);

/* A stream id from a name (FNV-1a 64). */
uint64_t dit_rng_stream(const char *name);

#endif
