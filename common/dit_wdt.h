/* The dtype of a weight tensor in a slab (a chunk of blocks, host RAM, the chunk store,
 * device memory): fp32, or a block GEMM matrix kept narrower, either by choice
 * (--weight-dtype bf16) or as the checkpoint stores it (compact weights: bf16, fp16,
 * float8 e4m3fn / e5m2 with the tensor's scale, GGUF's Q8_0). Kernels read a compact
 * matrix as it is and widen it to fp32 a tile at a time (exact: every value below is
 * the fp32 number the loaders' widening gives).
 *
 * A slab counts fp32 slots (4 bytes). A tensor of n elements takes
 *   f32: n slots; bf16, f16: ceil(n / 2); f8: ceil(n / 4) then one fp32 slot holding the
 *   scale (value = f8 x scale, rounded to fp32); q8_0: ceil(34 n / 32 / 4) slots of
 *   blocks of 32 values along the rows (an fp16 scale d, then 32 int8 q: value q x d).
 * No dependencies: the loaders, the layouts and the kernels of every backend share it. */
#ifndef DIT_WDT_H
#define DIT_WDT_H

#include <stdint.h>
#include <string.h>

typedef enum dit_wdt {
	DIT_WDT_F32 = 0,
	DIT_WDT_BF16 = 1,
	DIT_WDT_F16 = 2,
	DIT_WDT_F8_E4M3 = 3,
	DIT_WDT_F8_E5M2 = 4,
	DIT_WDT_Q8_0 = 5,
	DIT_WDT_COUNT
} dit_wdt;

static inline const char *dit_wdt_name(int w)
{
	static const char *const names[DIT_WDT_COUNT] = {"f32",     "bf16",    "f16",
	                                                 "f8_e4m3", "f8_e5m2", "q8_0"};
	return w >= 0 && w < DIT_WDT_COUNT ? names[w] : "?";
}

/* Whether w is a float8 dtype (its scale slot follows the data). */
static inline int dit_wdt_is_f8(int w)
{
	return w == DIT_WDT_F8_E4M3 || w == DIT_WDT_F8_E5M2;
}

/* Bytes of n elements of dtype w (q8_0: n a multiple of 32). */
static inline int64_t dit_wdt_data_bytes(int w, int64_t n)
{
	switch (w) {
	case DIT_WDT_BF16:
	case DIT_WDT_F16: return 2 * n;
	case DIT_WDT_F8_E4M3:
	case DIT_WDT_F8_E5M2: return n;
	case DIT_WDT_Q8_0: return n / 32 * 34;
	default: return 4 * n;
	}
}

/* Slots of the data of n elements; the f8 scale is the slot right after them. */
static inline int64_t dit_wdt_data_slots(int w, int64_t n)
{
	return (dit_wdt_data_bytes(w, n) + 3) / 4;
}

/* Slots a tensor of n elements takes in a slab (data, and the f8 scale). */
static inline int64_t dit_wdt_slots(int w, int64_t n)
{
	return dit_wdt_data_slots(w, n) + (dit_wdt_is_f8(w) ? 1 : 0);
}

static inline float dit_wdt_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* IEEE binary16 to binary32, exact for every input. */
static inline float dit_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
	if (exp == 0x1f)
		return dit_wdt_bits_f32(sign | 0x7f800000u | (mant << 13));
	if (exp != 0)
		return dit_wdt_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
	/* subnormal: mant x 2^-24, exact in fp32 */
	float v = (float)mant * 5.9604644775390625e-8f;
	return sign ? -v : v;
}

/* float8 e4m3fn (no infinities; S.1111.111 is NaN) to binary32, exact. */
static inline float dit_e4m3_to_f32(uint8_t b)
{
	uint32_t sign = (uint32_t)(b & 0x80u) << 24;
	uint32_t exp = (b >> 3) & 0xfu, mant = b & 0x7u;
	if (exp == 0xf && mant == 0x7)
		return dit_wdt_bits_f32(sign | 0x7fc00000u);
	if (exp != 0)
		return dit_wdt_bits_f32(sign | ((exp + 120u) << 23) | (mant << 20));
	float v = (float)mant * 0.001953125f; /* mant x 2^-9 */
	return sign ? -v : v;
}

/* float8 e5m2 (IEEE-like: S.11111.00 is infinity) to binary32, exact: the upper byte
 * of a binary16. */
static inline float dit_e5m2_to_f32(uint8_t b)
{
	return dit_f16_to_f32((uint16_t)((uint16_t)b << 8));
}

/* The 256 fp32 values of an f8 dtype's bytes, each times scale (rounded to fp32). */
static inline void dit_f8_table(int w, float scale, float lut[256])
{
	for (int i = 0; i < 256; i++) {
		float v = w == DIT_WDT_F8_E4M3 ? dit_e4m3_to_f32((uint8_t)i)
		                               : dit_e5m2_to_f32((uint8_t)i);
		lut[i] = v * scale;
	}
}

/* The f8 scale of a tensor of n elements whose data starts at data. */
static inline float dit_f8_scale(const void *data, int64_t n)
{
	float s;
	memcpy(&s, (const char *)data + 4 * dit_wdt_data_slots(DIT_WDT_F8_E4M3, n), sizeof s);
	return s;
}

/* Elements [i0, i0 + n) of a tensor of dtype w (not bf16 or f32: the CPU kernels widen
 * those with their own vector code) at data, widened to fp32 into dst; q8_0: i0 and n
 * multiples of 32. lut: the f8 table (dit_f8_table), else unused. */
static inline void dit_wdt_widen(int w, const void *data, int64_t i0, int64_t n, const float *lut,
                                 float *dst)
{
	const uint8_t *p = data;
	switch (w) {
	case DIT_WDT_F16:
		for (int64_t i = 0; i < n; i++) {
			uint16_t h;
			memcpy(&h, p + 2 * (i0 + i), 2);
			dst[i] = dit_f16_to_f32(h);
		}
		break;
	case DIT_WDT_F8_E4M3:
	case DIT_WDT_F8_E5M2:
		for (int64_t i = 0; i < n; i++)
			dst[i] = lut[p[i0 + i]];
		break;
	case DIT_WDT_Q8_0:
		for (int64_t b = 0; b < n / 32; b++) {
			const uint8_t *blk = p + (i0 / 32 + b) * 34;
			uint16_t h;
			memcpy(&h, blk, 2);
			float d = dit_f16_to_f32(h);
			for (int j = 0; j < 32; j++)
				dst[32 * b + j] = (float)(int8_t)blk[2 + j] * d;
		}
		break;
	default: break;
	}
}

#endif
