/* A vectorisable fp32 exp for non-positive arguments, shared by the kernels whose
 * speed depends on it (softmax, GELU). Not part of the kernel interface. */
#ifndef DIT_CPU_EXP_H
#define DIT_CPU_EXP_H

#include <stdint.h>
#include <string.h>

#define DIT_EXP_MIN_BITS     0xc2ae0000u /* bit pattern of -87.0f */
#define DIT_EXP_NEG_INF_BITS 0xff800000u /* bit pattern of -inf */
#define DIT_EXP_ROUND_BITS   0x4b400000u /* bit pattern of 1.5 * 2^23 */

/* exp(x) for x <= 0 (scores minus their running max), free of floating-point
 * comparisons and float-to-int conversions so that the compiler can vectorise it:
 * x = n ln2 + r with |r| <= ln2/2, e^r by its degree-7 Taylor polynomial
 * (truncation below 1e-8 relative), 2^n from the exponent bits. x in [-inf, -87)
 * is clamped to -87 (e^-87 ~ 1.6e-38, which vanishes in any row sum holding a 1);
 * NaN stays NaN. */
static inline float dit_cpu_exp_nonpos(float x)
{
	/* Clamp on the bit pattern: for x <= 0 a larger unsigned pattern is a more
	 * negative value, up to -inf; larger patterns are NaN and are left alone. The
	 * range test (MIN, -inf] is one unsigned comparison. */
	uint32_t xb;
	memcpy(&xb, &x, sizeof(xb));
	uint32_t above = xb - (DIT_EXP_MIN_BITS + 1u);
	uint32_t in_range = above <= DIT_EXP_NEG_INF_BITS - (DIT_EXP_MIN_BITS + 1u);
	uint32_t mask = 0u - in_range; /* all ones when clamping */
	xb = (xb & ~mask) | (DIT_EXP_MIN_BITS & mask);
	float xc;
	memcpy(&xc, &xb, sizeof(xc));
	/* t = 1.5 * 2^23 + n with n = round(x / ln2) in [-126, 0]: the low bits of t
	 * hold n. */
	float t = xc * 1.44269504088896341f + 12582912.0f;
	float nf = t - 12582912.0f;
	/* r = x - n ln2, ln2 split in a part exact in fp32 and a remainder */
	float r = (xc - nf * 0.693145751953125f) - nf * 1.42860682030941723e-06f;
	float p = 1.0f / 5040.0f;
	p = p * r + 1.0f / 720.0f;
	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	uint32_t tb;
	memcpy(&tb, &t, sizeof(tb));
	uint32_t bits = (tb - DIT_EXP_ROUND_BITS + 127u) << 23; /* 2^n */
	float two_n;
	memcpy(&two_n, &bits, sizeof(two_n));
	return p * two_n;
}

#endif
