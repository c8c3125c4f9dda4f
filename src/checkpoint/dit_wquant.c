/* Compact weights written back: fp32 values rounded to a compact weight dtype. */
#include "dit_wquant.h"

#include <math.h>
#include <string.h>

#include "dit_bf16.h"
#include "dit_wdt.h"

/* |x| (finite) as a minifloat of mbits mantissa bits, exponent bias bias, the smallest
 * normal exponent emin: the code's magnitude bits, to nearest even (ties to the even
 * code, as the mantissa's last bit); exact: only scalings by powers of two before the
 * rounding (rint, the default rounding mode). */
static unsigned mf_magnitude(float a, int mbits, int bias, int emin)
{
	if (a == 0.0f)
		return 0;
	int e;
	frexpf(a, &e); /* a = f 2^e, f in [0.5, 1): a's exponent is e - 1 */
	e -= 1;
	if (e < emin) /* subnormal: multiples of 2^(emin - mbits) */
		return (unsigned)rintf(ldexpf(a, mbits - emin));
	/* the mantissa's mbits bits after the leading one, rounded; a carry moves into the
	 * exponent field, as the codes are ordered */
	unsigned m = (unsigned)rintf(ldexpf(a, mbits - e)); /* in [2^mbits, 2^(mbits + 1)] */
	return ((unsigned)(e + bias) << mbits) + (m - (1u << mbits));
}

uint16_t dit_f16_from_f32(float x)
{
	uint16_t sign = signbit(x) ? 0x8000u : 0;
	if (isnan(x))
		return (uint16_t)(sign | 0x7e00u);
	float a = fabsf(x);
	if (a >= 65520.0f) /* 65504 plus half its ulp and beyond: infinity */
		return (uint16_t)(sign | 0x7c00u);
	return (uint16_t)(sign | mf_magnitude(a, 10, 15, -14));
}

/* An f8 code of x: mbits mantissa bits, bias, smallest normal exponent emin; from
 * maxval on (and up to the code past maxcode, which rounding can reach) the largest
 * finite code. */
static uint8_t f8_from_f32(float x, int mbits, int bias, int emin, float maxval, unsigned maxcode)
{
	uint8_t sign = signbit(x) ? 0x80u : 0;
	if (isnan(x))
		return (uint8_t)(sign | 0x7fu);
	float a = fabsf(x);
	if (a >= maxval)
		return (uint8_t)(sign | maxcode);
	unsigned m = mf_magnitude(a, mbits, bias, emin);
	return (uint8_t)(sign | (m > maxcode ? maxcode : m));
}

uint8_t dit_e4m3_from_f32(float x)
{
	return f8_from_f32(x, 3, 7, -6, 448.0f, 0x7eu); /* 464 would round to NaN's code */
}

uint8_t dit_e5m2_from_f32(float x)
{
	return f8_from_f32(x, 2, 15, -14, 57344.0f, 0x7bu);
}

void dit_q8_0_from_f32(const float *x, int64_t n, uint8_t *dst)
{
	for (int64_t b = 0; b < n / 32; b++) {
		const float *xb = x + 32 * b;
		uint8_t *blk = dst + 34 * b;
		float amax = 0.0f;
		for (int j = 0; j < 32; j++)
			amax = fabsf(xb[j]) > amax ? fabsf(xb[j]) : amax;
		float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
		uint16_t h = dit_f16_from_f32(d);
		memcpy(blk, &h, 2);
		for (int j = 0; j < 32; j++)
			blk[2 + j] = (uint8_t)(int8_t)roundf(xb[j] * id);
	}
}

void dit_wquant(int wdt, const float *w, int64_t n, float scale, void *dst)
{
	uint8_t *b = dst;
	uint16_t *h = dst;
	switch (wdt) {
	case DIT_WDT_BF16:
		for (int64_t i = 0; i < n; i++)
			h[i] = dit_bf16_from_f32(w[i]);
		break;
	case DIT_WDT_F16:
		for (int64_t i = 0; i < n; i++)
			h[i] = dit_f16_from_f32(w[i]);
		break;
	case DIT_WDT_F8_E4M3:
	case DIT_WDT_F8_E5M2:
		for (int64_t i = 0; i < n; i++)
			b[i] = wdt == DIT_WDT_F8_E4M3 ? dit_e4m3_from_f32(w[i] / scale)
			                              : dit_e5m2_from_f32(w[i] / scale);
		memcpy(b + 4 * dit_wdt_data_slots(wdt, n), &scale, sizeof scale);
		break;
	case DIT_WDT_Q8_0: dit_q8_0_from_f32(w, n, b); break;
	default: memcpy(dst, w, (size_t)n * sizeof *w);
	}
}
