#include "dit_rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t dit_rng_u64(uint64_t seed, uint64_t stream, uint64_t i)
{
	return splitmix64(splitmix64(seed ^ splitmix64(stream)) + i);
}

static double unit_open(uint64_t u)
{
	return ((double)(u >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
}

double dit_rng_normal(uint64_t seed, uint64_t stream, uint64_t i)
{
	double u1 = unit_open(dit_rng_u64(seed, stream, 2 * i));
	double u2 = unit_open(dit_rng_u64(seed, stream, 2 * i + 1));
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void dit_rng_fill_normal(float *dst, int64_t n, uint64_t seed, uint64_t stream, double scale,
                         double shift)
{
	for (int64_t i = 0; i < n; i++)
		dst[i] = (float)(scale * dit_rng_normal(seed, stream, (uint64_t)i) + shift);
}

uint64_t dit_rng_stream(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *name; name++) {
		h ^= (unsigned char)*name;
		h *= 0x100000001b3ull;
	}
	return h;
}
