/* Device helpers shared by the .cu files of codelets/cuda (not part of the kernel
 * interface): error plumbing, alignment tests, bf16 rounding, activations written
 * exactly as the CPU kernels (codelets/cpu/act.c, dit_cpu_exp.h). */
#ifndef DIT_CUDA_COMMON_CUH
#define DIT_CUDA_COMMON_CUH

#include <stdint.h>
#include <string.h>

#include <cuda_runtime.h>

#include "dit_cuda.h"

#define DIT_CUDA_THREADS    256       /* block size of the elementwise kernels */
#define DIT_CUDA_MAX_BLOCKS (1 << 20) /* grid-stride loops beyond this */

/* Status of the last launch as an int (0 = success). */
static inline int dit_cuda_last_error(void)
{
	return (int)cudaGetLastError();
}

static inline int dit_cuda_aligned16(const void *p)
{
	return ((uintptr_t)p & 15u) == 0;
}

/* Blocks for n work items of DIT_CUDA_THREADS, capped (grid-stride loops cover the
 * rest); depends on n only. */
static inline unsigned dit_cuda_blocks(int64_t n)
{
	int64_t b = (n + DIT_CUDA_THREADS - 1) / DIT_CUDA_THREADS;
	if (b < 1)
		b = 1;
	if (b > DIT_CUDA_MAX_BLOCKS)
		b = DIT_CUDA_MAX_BLOCKS;
	return (unsigned)b;
}

/* fp32 -> bf16 bits, round to nearest even, NaN stays (quiet) NaN. */
__host__ __device__ static inline uint16_t dit_f32_to_bf16_bits(float f)
{
#ifdef __CUDA_ARCH__
	uint32_t u = __float_as_uint(f);
#else
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
#endif
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

/* One element of an activation buffer, fp32 or bf16 (--act-dtype bf16): widened
 * exactly when read, rounded to nearest even when written. */
__device__ static inline float dit_ld1(const float *p)
{
	return *p;
}
__device__ static inline float dit_ld1(const uint16_t *p)
{
	return __uint_as_float((uint32_t)*p << 16);
}
__device__ static inline void dit_st1(float *p, float v)
{
	*p = v;
}
__device__ static inline void dit_st1(uint16_t *p, float v)
{
	*p = dit_f32_to_bf16_bits(v);
}

/* dit_cpu_exp_nonpos, operation for operation (every multiply and add rounded on its
 * own, as the CPU build does with -ffp-contract=off). */
__device__ static inline float dit_exp_nonpos(float x)
{
	uint32_t xb = __float_as_uint(x);
	uint32_t above = xb - (0xc2ae0000u + 1u);
	uint32_t in_range = above <= 0xff800000u - (0xc2ae0000u + 1u);
	uint32_t mask = 0u - in_range;
	xb = (xb & ~mask) | (0xc2ae0000u & mask);
	float xc = __uint_as_float(xb);
	float t = __fadd_rn(__fmul_rn(xc, 1.44269504088896341f), 12582912.0f);
	float nf = __fsub_rn(t, 12582912.0f);
	float r = __fsub_rn(__fsub_rn(xc, __fmul_rn(nf, 0.693145751953125f)),
	                    __fmul_rn(nf, 1.42860682030941723e-06f));
	float p = 1.0f / 5040.0f;
	p = __fadd_rn(__fmul_rn(p, r), 1.0f / 720.0f);
	p = __fadd_rn(__fmul_rn(p, r), 1.0f / 120.0f);
	p = __fadd_rn(__fmul_rn(p, r), 1.0f / 24.0f);
	p = __fadd_rn(__fmul_rn(p, r), 1.0f / 6.0f);
	p = __fadd_rn(__fmul_rn(p, r), 0.5f);
	p = __fadd_rn(__fmul_rn(p, r), 1.0f);
	p = __fadd_rn(__fmul_rn(p, r), 1.0f);
	uint32_t bits = (__float_as_uint(t) - 0x4b400000u + 127u) << 23;
	return __fmul_rn(p, __uint_as_float(bits));
}

/* dit_gelu_tanh1 of codelets/cpu/act.c, same operations in the same order. */
__device__ static inline float dit_gelu_tanh(float v)
{
	const float c = 0.7978845608028654f; /* sqrt(2/pi) */
	float v3 = __fmul_rn(__fmul_rn(__fmul_rn(0.044715f, v), v), v);
	float u = __fmul_rn(c, __fadd_rn(v, v3));
	float t = dit_exp_nonpos(__fmul_rn(-2.0f, fabsf(u)));
	float th = copysignf(__fdiv_rn(__fsub_rn(1.0f, t), __fadd_rn(1.0f, t)), u);
	return __fmul_rn(__fmul_rn(0.5f, v), __fadd_rn(1.0f, th));
}

/* v / (1 + exp(-v)); exp in float64 rounded to fp32 (close to glibc's expf). */
__device__ static inline float dit_silu(float v)
{
	float e = (float)exp(-(double)v);
	return __fdiv_rn(v, __fadd_rn(1.0f, e));
}

/* 0.5 v (1 + erf(v / sqrt(2))) in float64 rounded once, as codelets/cpu/act.c (CUDA's
 * erf is within 2 ulps of float64: the float result almost always the same). */
__device__ static inline float dit_gelu_erf(float v)
{
	double d = (double)v;
	return (float)(0.5 * d * (1.0 + erf(d / 1.4142135623730951)));
}

__device__ static inline float dit_act_apply(float v, dit_act act)
{
	switch (act) {
	case DIT_ACT_GELU_TANH: return dit_gelu_tanh(v);
	case DIT_ACT_SILU: return dit_silu(v);
	case DIT_ACT_GELU: return dit_gelu_erf(v);
	case DIT_ACT_NONE:
	default: return v;
	}
}

#endif
