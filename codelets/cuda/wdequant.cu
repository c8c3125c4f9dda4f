/* Compact weights (dit_wdt.h) widened to bf16 on the device: the tile a GEMM reads when
 * a block matrix stays in the checkpoint's fp16, float8 (times its scale) or Q8_0. Each
 * value is the fp32 number the CPU kernels widen it to, rounded once to bf16 (what the
 * bf16 weights of --weight-dtype bf16 hold for the same checkpoint). */
#include <stdint.h>

#include "dit_cuda_common.cuh"

/* binary16 bits to fp32, exact */
__device__ static inline float wd_f16(uint32_t h)
{
	uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
	if (exp == 0x1fu)
		return __uint_as_float(sign | 0x7f800000u | (mant << 13));
	if (exp != 0u)
		return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
	float v = __fmul_rn((float)mant, 5.9604644775390625e-8f); /* mant x 2^-24 */
	return sign ? -v : v;
}

/* float8 e4m3fn bits to fp32, exact (S.1111.111 is NaN) */
__device__ static inline float wd_e4m3(uint32_t b)
{
	uint32_t sign = (b & 0x80u) << 24, exp = (b >> 3) & 0xfu, mant = b & 0x7u;
	if (exp == 0xfu && mant == 0x7u)
		return __uint_as_float(sign | 0x7fc00000u);
	if (exp != 0u)
		return __uint_as_float(sign | ((exp + 120u) << 23) | (mant << 20));
	float v = __fmul_rn((float)mant, 0.001953125f); /* mant x 2^-9 */
	return sign ? -v : v;
}

/* dst[i] = bf16(element i of w), i < n; wdt 2 fp16, 3 e4m3fn, 4 e5m2, 5 q8_0 */
__global__ void dit_wdt_bf16_kernel(uint16_t *dst, const uint8_t *w, int wdt, const float *scale,
                                    int64_t n)
{
	float s = scale ? *scale : 1.0f;
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		float v;
		if (wdt == 2) {
			v = wd_f16((uint32_t)w[2 * i] | ((uint32_t)w[2 * i + 1] << 8));
		} else if (wdt == 3) {
			v = __fmul_rn(wd_e4m3(w[i]), s);
		} else if (wdt == 4) {
			v = __fmul_rn(wd_f16((uint32_t)w[i] << 8), s);
		} else {
			const uint8_t *blk = w + i / 32 * 34;
			float d = wd_f16((uint32_t)blk[0] | ((uint32_t)blk[1] << 8));
			v = __fmul_rn((float)(int8_t)blk[2 + i % 32], d);
		}
		dst[i] = dit_f32_to_bf16_bits(v);
	}
}

extern "C" int dit_cuda_wdt_to_bf16(cudaStream_t s, uint16_t *dst, const void *w, int wdt,
                                    const float *scale, int64_t n)
{
	if (n <= 0)
		return 0;
	if (wdt < 2 || wdt > 5)
		return (int)cudaErrorInvalidValue;
	dit_wdt_bf16_kernel<<<dit_cuda_blocks(n), DIT_CUDA_THREADS, 0, s>>>(
	    dst, (const uint8_t *)w, wdt, scale, n);
	return dit_cuda_last_error();
}
