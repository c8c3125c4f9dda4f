/* bfloat16, stored as uint16_t: the upper half of an IEEE binary32. Weights of the
 * block GEMMs may be kept in bf16 (half the bytes to store and move); the kernels
 * widen them back to fp32, which is exact. No dependencies: the loaders and the CPU
 * kernels share these. */
#ifndef DIT_BF16_H
#define DIT_BF16_H

#include <stdint.h>
#include <string.h>

/* Rounds to nearest, ties to even; a NaN stays a (quiet) NaN. */
static inline uint16_t dit_bf16_from_f32(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static inline float dit_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

#endif
