/* The encoders that write a merged (LoRA) tensor back into its compact dtype
 * (src/checkpoint/dit_wquant.c), against the formats' definitions: every finite fp16,
 * f8 e4m3fn and e5m2 code encodes its own value back; a value halfway between two
 * neighbouring codes goes to the even one, a value a little off the midpoint to the
 * nearer; beyond the largest finite value f8 saturates, fp16 becomes infinity; Q8_0
 * blocks as ggml's reference quantiser writes them (worked cases). TAP. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dit_wdt.h"
#include "dit_wquant.h"

static int n_test, n_failed;

static void ok(int pass, const char *what, long bad)
{
	n_test++;
	n_failed += !pass;
	printf("%s %d - %s (%ld wrong)\n", pass ? "ok" : "not ok", n_test, what, bad);
}

/* The codes 0 .. count-1 of a positive minifloat, decoded by dec, re-encoded by enc:
 * each code its own value, midpoints to the even code, nudged midpoints to the
 * nearer. */
static long check_codes(unsigned count, float (*dec)(unsigned), unsigned (*enc)(float))
{
	long bad = 0;
	for (unsigned c = 0; c < count; c++) {
		float v = dec(c);
		bad += enc(v) != c || enc(-v) != (c | 0x10000u);
		if (c + 1 == count)
			break;
		float w = dec(c + 1), mid = (float)(((double)v + w) / 2);
		unsigned even = c % 2 == 0 ? c : c + 1;
		bad += enc(mid) != even;
		bad += enc(nextafterf(mid, 0.0f)) != c || enc(nextafterf(mid, INFINITY)) != c + 1;
	}
	return bad;
}

/* sign as bit 16, so that check_codes can tell it apart from the magnitude */
static float dec_f16(unsigned c)
{
	return dit_f16_to_f32((uint16_t)c);
}
static unsigned enc_f16(float x)
{
	uint16_t h = dit_f16_from_f32(x);
	return (h & 0x7fffu) | (h & 0x8000u ? 0x10000u : 0);
}
static float dec_e4m3(unsigned c)
{
	return dit_e4m3_to_f32((uint8_t)c);
}
static unsigned enc_e4m3(float x)
{
	uint8_t b = dit_e4m3_from_f32(x);
	return (b & 0x7fu) | (b & 0x80u ? 0x10000u : 0);
}
static float dec_e5m2(unsigned c)
{
	return dit_e5m2_to_f32((uint8_t)c);
}
static unsigned enc_e5m2(float x)
{
	uint8_t b = dit_e5m2_from_f32(x);
	return (b & 0x7fu) | (b & 0x80u ? 0x10000u : 0);
}

int main(void)
{
	printf("1..5\n");
	long bad = check_codes(0x7c00u, dec_f16, enc_f16); /* every finite fp16 */
	bad += dit_f16_from_f32(65519.0f) != 0x7bffu || dit_f16_from_f32(65520.0f) != 0x7c00u;
	bad += dit_f16_from_f32(-1e9f) != 0xfc00u || !isnan(dit_f16_to_f32(dit_f16_from_f32(NAN)));
	ok(bad == 0, "fp16: codes, ties to even, the range's end to infinity", bad);

	bad = check_codes(0x7fu, dec_e4m3, enc_e4m3); /* 0x7f is NaN */
	bad += dit_e4m3_from_f32(460.0f) != 0x7eu || dit_e4m3_from_f32(1e9f) != 0x7eu;
	bad += dit_e4m3_from_f32(-1e9f) != 0xfeu || dit_e4m3_from_f32(NAN) != 0x7fu;
	ok(bad == 0, "f8 e4m3fn: codes, ties to even, saturating at 448", bad);

	bad = check_codes(0x7cu, dec_e5m2, enc_e5m2); /* 0x7c is infinity */
	bad += dit_e5m2_from_f32(60000.0f) != 0x7bu || dit_e5m2_from_f32(-1e9f) != 0xfbu;
	ok(bad == 0, "f8 e5m2: codes, ties to even, saturating at 57344", bad);

	/* Q8_0: amax 2.54 -> d = 0.02 (fp16 0x251f), q = round(x / d) half away from zero */
	float x[32];
	for (int j = 0; j < 32; j++)
		x[j] = (float)(j - 16) * 0.01f;
	x[31] = 2.54f;
	uint8_t blk[34];
	dit_q8_0_from_f32(x, 32, blk);
	uint16_t d;
	memcpy(&d, blk, 2);
	float df = 2.54f / 127.0f, id = 1.0f / df;
	bad = d != dit_f16_from_f32(df);
	for (int j = 0; j < 32; j++)
		bad += (int8_t)blk[2 + j] != (int8_t)roundf(x[j] * id);
	bad += (int8_t)blk[2 + 31] != 127 || (int8_t)blk[2 + 0] != -8;
	ok(bad == 0, "q8_0: d = amax / 127 in fp16, q rounded half away from zero", bad);

	/* a zero block: d 0, q 0 */
	memset(x, 0, sizeof x);
	dit_q8_0_from_f32(x, 32, blk);
	bad = 0;
	for (int j = 0; j < 34; j++)
		bad += blk[j] != 0;
	ok(bad == 0, "q8_0: a block of zeros", bad);
	return n_failed ? 1 : 0;
}
