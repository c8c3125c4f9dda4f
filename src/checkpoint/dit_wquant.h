/* Compact weights written back (src/checkpoint/dit_wquant.c): a block matrix kept in its
 * checkpoint's compact dtype (common/dit_wdt.h) whose fp32 values changed (a LoRA merged
 * into it) is rounded to that dtype again, so that it stays compact on every link. */
#ifndef DIT_WQUANT_H
#define DIT_WQUANT_H

#include <stdint.h>

/* fp32 to IEEE binary16, to nearest even (beyond the range: infinity; NaN stays NaN). */
uint16_t dit_f16_from_f32(float x);
/* fp32 to float8 e4m3fn / e5m2, to nearest even, saturating at the largest finite
 * value (448, 57344; as torch's cast after ComfyUI's clamp); NaN to NaN. */
uint8_t dit_e4m3_from_f32(float x);
uint8_t dit_e5m2_from_f32(float x);
/* n values (a multiple of 32) to GGUF's Q8_0 blocks as ggml quantises them: d = amax /
 * 127 in fp32, stored as fp16, q = x / d rounded half away from zero. */
void dit_q8_0_from_f32(const float *x, int64_t n, uint8_t *dst);

/* w [n] into a slab's tensor of dtype wdt at dst (the dtype's slots, dit_wdt_slots):
 * bf16 and fp16 rounded, f8 as w / scale with scale in the slot after the codes, q8_0
 * requantised per block. */
void dit_wquant(int wdt, const float *w, int64_t n, float scale, void *dst);

#endif
