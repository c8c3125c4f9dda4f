/* Standalone checks of the fp32 CPU kernels (codelets/cpu) against naive float64
 * references written here straight from the math. No StarPU. Output is TAP; the
 * exit status is 0 only when every check passes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_bf16.h"
#include "dit_cpu.h"
#include "dit_wdt.h"

#define DIT_TEST_MAX 512
#define DIT_LINE_MAX 320
#define DIT_TOL_ELEM 2e-6 /* elementwise ops, relative to max |reference| */
#define DIT_TOL_GEMM 1e-5 /* GEMM and attention sized reductions */
#define DIT_SENTINEL -12345.0f
#define DIT_PI       3.14159265358979323846

#include "dit_tap.h"

/* ---- deterministic random numbers (splitmix64) ---- */

typedef struct dit_rng {
	uint64_t s;
} dit_rng;

static uint64_t dit_rng_next(dit_rng *rng)
{
	uint64_t z = (rng->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in [-1, 1] */
static float dit_rng_uniform(dit_rng *rng)
{
	return (float)((double)(dit_rng_next(rng) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static void dit_rng_fill(dit_rng *rng, float *x, int64_t n, float mul, float add)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = add + mul * dit_rng_uniform(rng);
}

/* ---- small utilities ---- */

static void *dit_mem_alloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

static float *dit_floats_alloc(int64_t n)
{
	return dit_mem_alloc((size_t)n * sizeof(float));
}

static double *dit_doubles_alloc(int64_t n)
{
	return dit_mem_alloc((size_t)n * sizeof(double));
}

static void dit_floats_set(float *x, int64_t n, float v)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = v;
}

/* max |got - ref| / max |ref| over a [rows, cols] block; got has stride ldg, ref is
 * dense. Falls back to the absolute error when the reference is all zero. NaN in
 * got gives NaN. */
static double dit_err_rel(const float *got, int64_t ldg, const double *ref, int64_t rows,
                          int64_t cols)
{
	double emax = 0.0, rmax = 0.0;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++) {
			double g = got[r * ldg + c], e = fabs(g - ref[r * cols + c]);
			if (isnan(g))
				return NAN;
			emax = e > emax ? e : emax;
			rmax = fabs(ref[r * cols + c]) > rmax ? fabs(ref[r * cols + c]) : rmax;
		}
	return rmax > 0.0 ? emax / rmax : emax;
}

/* Number of padding elements (columns [cols, ld) of each row but the last) that no
 * longer hold DIT_SENTINEL. */
static int64_t dit_pad_count_changed(const float *x, int64_t ld, int64_t rows, int64_t cols)
{
	int64_t bad = 0;
	for (int64_t r = 0; r + 1 < rows; r++)
		for (int64_t c = cols; c < ld; c++)
			bad += x[r * ld + c] != DIT_SENTINEL;
	return bad;
}

static const char *dit_act_name(dit_act act)
{
	switch (act) {
	case DIT_ACT_GELU_TANH: return "gelu_tanh";
	case DIT_ACT_SILU: return "silu";
	case DIT_ACT_GELU: return "gelu";
	case DIT_ACT_NONE:
	default: return "none";
	}
}

/* ---- float64 references ---- */

static double dit_ref_act(double x, dit_act act)
{
	switch (act) {
	case DIT_ACT_GELU_TANH:
		return 0.5 * x * (1.0 + tanh(sqrt(2.0 / DIT_PI) * (x + 0.044715 * x * x * x)));
	case DIT_ACT_SILU: return x / (1.0 + exp(-x));
	case DIT_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
	case DIT_ACT_NONE:
	default: return x;
	}
}

/* y[m, n] = act(x[m, k] w[n, k]^T + b[n]) */
static void dit_ref_linear(double *y, const float *x, int64_t ldx, const float *w, const float *b,
                           int64_t m, int64_t n, int64_t k, dit_act act)
{
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double s = b ? b[j] : 0.0;
			for (int64_t p = 0; p < k; p++)
				s += (double)x[i * ldx + p] * w[j * k + p];
			y[i * n + j] = dit_ref_act(s, act);
		}
}

/* Per row: (x - mean) / sqrt(var + eps), then * w + b, then * (1 + sa + sb) + ha + hb.
 * Null pointers are skipped (a null *_b counts as zero). */
static void dit_ref_layernorm(double *y, const float *x, int64_t ldx, int64_t rows, int64_t dim,
                              double eps, const float *w, const float *b, const float *ha,
                              const float *hb, const float *sa, const float *sb)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * ldx;
		double mean = 0.0, var = 0.0;
		for (int64_t i = 0; i < dim; i++)
			mean += xr[i];
		mean /= (double)dim;
		for (int64_t i = 0; i < dim; i++)
			var += (xr[i] - mean) * (xr[i] - mean);
		var /= (double)dim;
		for (int64_t i = 0; i < dim; i++) {
			double v = (xr[i] - mean) / sqrt(var + eps);
			if (w)
				v *= w[i];
			if (b)
				v += b[i];
			if (ha) {
				double sc = (double)sa[i] + (sb ? sb[i] : 0.0);
				double sh = (double)ha[i] + (hb ? hb[i] : 0.0);
				v = v * (1.0 + sc) + sh;
			}
			y[r * dim + i] = v;
		}
	}
}

static void dit_ref_rmsnorm(double *y, const float *x, int64_t ldx, int64_t rows, int64_t dim,
                            double eps, const float *w)
{
	for (int64_t r = 0; r < rows; r++) {
		double ms = 0.0;
		for (int64_t i = 0; i < dim; i++)
			ms += (double)x[r * ldx + i] * x[r * ldx + i];
		ms /= (double)dim;
		for (int64_t i = 0; i < dim; i++)
			y[r * dim + i] = x[r * ldx + i] / sqrt(ms + eps) * (w ? w[i] : 1.0);
	}
}

/* Wan rope_params split: real sizes d - 4*(d/6) (frame) and 2*(d/6) (row, col);
 * frequency of pair i on an axis of real size m is 10000^(-2i/m). angle[l, j] for
 * token l = (fi*h + hi)*w + wi, j < d/2. */
static void dit_ref_rope_angles(double *angle, int64_t f, int64_t h, int64_t w, int64_t d)
{
	int64_t mh = 2 * (d / 6), mt = d - 2 * mh; /* real sizes */
	for (int64_t fi = 0; fi < f; fi++)
		for (int64_t hi = 0; hi < h; hi++)
			for (int64_t wi = 0; wi < w; wi++) {
				double *a = angle + ((fi * h + hi) * w + wi) * (d / 2);
				int64_t j = 0;
				for (int64_t i = 0; i < mt / 2; i++)
					a[j++] = fi * exp(-(2.0 * i / mt) * log(10000.0));
				for (int64_t i = 0; i < mh / 2; i++)
					a[j++] = hi * exp(-(2.0 * i / mh) * log(10000.0));
				for (int64_t i = 0; i < mh / 2; i++)
					a[j++] = wi * exp(-(2.0 * i / mh) * log(10000.0));
			}
}

/* Softmax attention materialising every full score row in float64.
 * o [lq, heads*hd] dense. */
static void dit_ref_attention(double *o, const float *q, int64_t ldq, const float *k, int64_t ldk,
                              const float *v, int64_t ldv, int64_t lq, int64_t lk, int64_t heads,
                              int64_t hd, double scale)
{
	double *s = dit_doubles_alloc(lk);
	for (int64_t h = 0; h < heads; h++)
		for (int64_t i = 0; i < lq; i++) {
			double mx = -INFINITY, sum = 0.0;
			for (int64_t j = 0; j < lk; j++) {
				double d = 0.0;
				for (int64_t c = 0; c < hd; c++)
					d += (double)q[i * ldq + h * hd + c] *
					     k[j * ldk + h * hd + c];
				s[j] = d * scale;
				mx = s[j] > mx ? s[j] : mx;
			}
			for (int64_t j = 0; j < lk; j++) {
				s[j] = exp(s[j] - mx);
				sum += s[j];
			}
			for (int64_t c = 0; c < hd; c++) {
				double acc = 0.0;
				for (int64_t j = 0; j < lk; j++)
					acc += s[j] * v[j * ldv + h * hd + c];
				o[i * heads * hd + h * hd + c] = acc / sum;
			}
		}
	free(s);
}

/* ---- checks ---- */

static void dit_act_test(dit_tap *tap, dit_rng *rng)
{
	const dit_act acts[] = {DIT_ACT_GELU_TANH, DIT_ACT_SILU, DIT_ACT_NONE};
	const int64_t n = 1003;
	float *x = dit_floats_alloc(n);
	double *ref = dit_doubles_alloc(n);
	for (size_t a = 0; a < sizeof(acts) / sizeof(acts[0]); a++) {
		dit_rng_fill(rng, x, n, 8.0f, 0.0f);
		x[0] = 0.0f;
		x[1] = -20.0f;
		x[2] = 20.0f;
		x[3] = 1e-6f;
		for (int64_t i = 0; i < n; i++)
			ref[i] = dit_ref_act(x[i], acts[a]);
		dit_cpu_act(x, n, acts[a]);
		char name[96];
		snprintf(name, sizeof(name), "act %s n=%lld", dit_act_name(acts[a]), (long long)n);
		dit_tap_check(tap, name, dit_err_rel(x, n, ref, 1, n), DIT_TOL_ELEM);
	}
	free(x);
	free(ref);
}

static void dit_linear_test(dit_tap *tap, dit_rng *rng)
{
	static const struct {
		int64_t m, n, k, padx, pady;
		int bias;
		dit_act act;
	} cs[] = {
	    {1, 5, 3, 0, 0, 0, DIT_ACT_NONE},          {7, 13, 19, 3, 5, 1, DIT_ACT_GELU_TANH},
	    {33, 64, 45, 1, 0, 0, DIT_ACT_SILU},       {130, 17, 70, 7, 2, 1, DIT_ACT_NONE},
	    {33, 96, 257, 0, 3, 1, DIT_ACT_GELU_TANH}, {130, 40, 13, 2, 1, 1, DIT_ACT_SILU},
	};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t m = cs[c].m, n = cs[c].n, k = cs[c].k;
		int64_t ldx = k + cs[c].padx, ldy = n + cs[c].pady;
		float *x = dit_floats_alloc(m * ldx), *w = dit_floats_alloc(n * k);
		float *b = dit_floats_alloc(n), *y = dit_floats_alloc(m * ldy);
		double *ref = dit_doubles_alloc(m * n);
		dit_rng_fill(rng, x, m * ldx, 1.0f, 0.0f);
		dit_rng_fill(rng, w, n * k, 1.0f, 0.0f);
		dit_rng_fill(rng, b, n, 1.0f, 0.0f);
		dit_floats_set(y, m * ldy, DIT_SENTINEL);
		const float *bp = cs[c].bias ? b : NULL;
		dit_cpu_linear(y, ldy, x, ldx, w, bp, m, n, k, cs[c].act);
		dit_ref_linear(ref, x, ldx, w, bp, m, n, k, cs[c].act);
		char name[128];
		snprintf(name, sizeof(name),
		         "linear m=%lld n=%lld k=%lld ldx=%lld ldy=%lld bias=%d act=%s",
		         (long long)m, (long long)n, (long long)k, (long long)ldx, (long long)ldy,
		         cs[c].bias, dit_act_name(cs[c].act));
		double err = dit_err_rel(y, ldy, ref, m, n);
		if (dit_pad_count_changed(y, ldy, m, n))
			err = INFINITY;
		dit_tap_check(tap, name, err, DIT_TOL_GEMM);
		if (c == 4) {
			/* Determinism: a second run gives identical bytes. */
			float *y2 = dit_floats_alloc(m * ldy);
			dit_floats_set(y2, m * ldy, DIT_SENTINEL);
			dit_cpu_linear(y2, ldy, x, ldx, w, bp, m, n, k, cs[c].act);
			int same = !memcmp(y, y2, (size_t)(m * ldy) * sizeof(float));
			dit_tap_add(tap, same, "linear deterministic (bitwise)", same ? 0.0 : 1.0,
			            0.0);
			free(y2);
		}
		free(x);
		free(w);
		free(b);
		free(y);
		free(ref);
	}
}

/* bf16 rounding: nearest, ties to even, NaN stays NaN, widening exact. */
static void dit_bf16_test(dit_tap *tap)
{
	static const struct {
		uint32_t in;
		uint16_t want;
	} cs[] = {
	    {0x3f800000u, 0x3f80}, /* 1.0 */
	    {0x3f808000u, 0x3f80}, /* tie, even below */
	    {0x3f818000u, 0x3f82}, /* tie, even above */
	    {0x3f808001u, 0x3f81}, /* just above the tie */
	    {0x3f807fffu, 0x3f80}, /* just below the tie */
	    {0x7f7fffffu, 0x7f80}, /* the largest float rounds to inf */
	    {0xff800000u, 0xff80}, /* -inf */
	    {0x80000001u, 0x8000}, /* tiny negative denormal to -0 */
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
		float f;
		memcpy(&f, &cs[i].in, sizeof f);
		bad += dit_bf16_from_f32(f) != cs[i].want;
	}
	float nan_in;
	uint32_t nan_bits = 0x7f800001u; /* a NaN whose upper half alone would be inf */
	memcpy(&nan_in, &nan_bits, sizeof nan_in);
	bad += !isnan(dit_bf16_to_f32(dit_bf16_from_f32(nan_in)));
	for (uint32_t h = 0; h < 0x10000u; h += 7) /* widening then narrowing is exact */
		if (((h & 0x7f80u) != 0x7f80u) &&
		    dit_bf16_from_f32(dit_bf16_to_f32((uint16_t)h)) != h)
			bad++;
	dit_tap_add(tap, bad == 0, "bf16 rounding: nearest even, NaN kept, round trip exact",
	            (double)bad, 0.0);
}

/* linear with bf16 weights, tile by tile, against the double reference on the
 * widened weights; tiles of one row, a few rows and all rows. */
static void dit_linear_bf16_test(dit_tap *tap, dit_rng *rng)
{
	int64_t m = 33, n = 70, k = 45, ldx = 47, ldy = 73;
	float *x = dit_floats_alloc(m * ldx), *w = dit_floats_alloc(n * k);
	float *b = dit_floats_alloc(n), *y = dit_floats_alloc(m * ldy);
	float *tile = dit_floats_alloc(n * k);
	uint16_t *w16 = dit_mem_alloc((size_t)(n * k) * sizeof *w16);
	double *ref = dit_doubles_alloc(m * n);
	dit_rng_fill(rng, x, m * ldx, 1.0f, 0.0f);
	dit_rng_fill(rng, w, n * k, 1.0f, 0.0f);
	dit_rng_fill(rng, b, n, 1.0f, 0.0f);
	for (int64_t i = 0; i < n * k; i++) {
		w16[i] = dit_bf16_from_f32(w[i]);
		w[i] = dit_bf16_to_f32(w16[i]);
	}
	dit_ref_linear(ref, x, ldx, w, b, m, n, k, DIT_ACT_GELU_TANH);
	static const int64_t rows[] = {1, 9, 70};
	for (size_t c = 0; c < sizeof rows / sizeof rows[0]; c++) {
		dit_floats_set(y, m * ldy, DIT_SENTINEL);
		dit_cpu_linear_bf16w(y, ldy, x, ldx, w16, b, m, n, k, DIT_ACT_GELU_TANH, tile,
		                     (size_t)(rows[c] * k));
		double err = dit_err_rel(y, ldy, ref, m, n);
		if (dit_pad_count_changed(y, ldy, m, n))
			err = INFINITY;
		char name[96];
		snprintf(name, sizeof name,
		         "linear bf16 weights m=%lld n=%lld k=%lld tile %lld rows", (long long)m,
		         (long long)n, (long long)k, (long long)rows[c]);
		dit_tap_check(tap, name, err, DIT_TOL_GEMM);
	}
	free(x);
	free(w);
	free(b);
	free(y);
	free(tile);
	free(w16);
	free(ref);
}

/* A minifloat of ebits exponent and mbits mantissa bits (bias), from the formats'
 * definitions in double: IEEE-like (ieee: all-ones exponent is Inf/NaN) or e4m3fn
 * (only S.1111.111 is NaN). */
static double ref_minifloat(unsigned bits, int ebits, int mbits, int bias, int ieee)
{
	unsigned sign = (bits >> (ebits + mbits)) & 1u, emax = (1u << ebits) - 1;
	unsigned e = (bits >> mbits) & emax, mm = bits & ((1u << mbits) - 1);
	double v;
	if (ieee && e == emax)
		v = mm ? NAN : INFINITY;
	else if (!ieee && e == emax && mm == (1u << mbits) - 1)
		v = NAN;
	else if (e == 0)
		v = ldexp((double)mm, 1 - bias - mbits);
	else
		v = ldexp(1.0 + ldexp((double)mm, -mbits), (int)e - bias);
	return sign ? -v : v;
}

static int same_value(float got, double want)
{
	return isnan(want) ? isnan(got) : (double)got == want;
}

/* Every fp16, f8 e4m3fn and e5m2 code decoded as its definition says. */
static void dit_wdt_decode_test(dit_tap *tap)
{
	int bad = 0;
	for (unsigned h = 0; h < 0x10000u; h++)
		bad += !same_value(dit_f16_to_f32((uint16_t)h), ref_minifloat(h, 5, 10, 15, 1));
	dit_tap_add(tap, bad == 0, "fp16 decoding: all 65536 codes exact", (double)bad, 0.0);
	bad = 0;
	for (unsigned b = 0; b < 256u; b++) {
		bad += !same_value(dit_e4m3_to_f32((uint8_t)b), ref_minifloat(b, 4, 3, 7, 0));
		bad += !same_value(dit_e5m2_to_f32((uint8_t)b), ref_minifloat(b, 5, 2, 15, 1));
	}
	dit_tap_add(tap, bad == 0, "f8 e4m3fn and e5m2 decoding: all 256 codes exact", (double)bad,
	            0.0);
}

/* Random finite codes of dtype wdt for n weights (q8_0: n / 32 blocks) into data, and
 * their values (times scale for f8) decoded in double into dec. */
static void wdt_fill(dit_rng *rng, int wdt, int64_t n, float scale, uint8_t *data, float *dec)
{
	for (int64_t i = 0; i < n; i++) {
		unsigned r = (unsigned)dit_rng_next(rng);
		if (wdt == DIT_WDT_F16) { /* exponents 10..16: |w| in [2^-5, 4) */
			unsigned h = (r & 0x83ffu) | ((10u + r % 7u) << 10);
			memcpy(data + 2 * i, &h, 2);
			dec[i] = (float)ref_minifloat(h, 5, 10, 15, 1);
		} else if (wdt == DIT_WDT_F8_E4M3) {
			unsigned b = r & 0xffu;
			b = (b & 0x7fu) == 0x7fu ? b - 1 : b; /* not NaN */
			data[i] = (uint8_t)b;
			dec[i] = (float)(ref_minifloat(b, 4, 3, 7, 0) * scale);
		} else if (wdt == DIT_WDT_F8_E5M2) {
			unsigned b = r & 0xffu;
			b = (b & 0x7cu) == 0x7cu ? b & 0x83u : b; /* finite */
			data[i] = (uint8_t)b;
			dec[i] = (float)(ref_minifloat(b, 5, 2, 15, 1) * scale);
		} else { /* q8_0: a block's scale d (fp16, exponents 8..11), then 32 int8 */
			uint8_t *blk = data + i / 32 * 34;
			if (i % 32 == 0) {
				unsigned d = (r >> 8 & 0x3ffu) | ((8u + r % 4u) << 10);
				memcpy(blk, &d, 2);
			}
			uint16_t d;
			memcpy(&d, blk, 2);
			blk[2 + i % 32] = (uint8_t)(r >> 16);
			dec[i] = (float)((double)(int8_t)blk[2 + i % 32] *
			                 ref_minifloat(d, 5, 10, 15, 1));
		}
	}
}

/* linear with each compact weight dtype, tile by tile, against the double reference on
 * the decoded weights; tiles of one row, a few rows and all rows. */
static void dit_linear_wdt_test(dit_tap *tap, dit_rng *rng)
{
	int64_t m = 9, n = 40, k = 64, ldx = 67, ldy = 43;
	float *x = dit_floats_alloc(m * ldx), *w = dit_floats_alloc(n * k);
	float *b = dit_floats_alloc(n), *y = dit_floats_alloc(m * ldy);
	float *tile = dit_floats_alloc(n * k);
	uint8_t *data = dit_mem_alloc((size_t)(4 * n * k));
	double *ref = dit_doubles_alloc(m * n);
	dit_rng_fill(rng, x, m * ldx, 1.0f, 0.0f);
	dit_rng_fill(rng, b, n, 1.0f, 0.0f);
	static const int wdts[] = {DIT_WDT_F16, DIT_WDT_F8_E4M3, DIT_WDT_F8_E5M2, DIT_WDT_Q8_0};
	const float scale = 0.0123f;
	for (size_t d = 0; d < sizeof wdts / sizeof wdts[0]; d++) {
		wdt_fill(rng, wdts[d], n * k, scale, data, w);
		dit_ref_linear(ref, x, ldx, w, b, m, n, k, DIT_ACT_SILU);
		static const int64_t rows[] = {1, 7, 40};
		for (size_t c = 0; c < sizeof rows / sizeof rows[0]; c++) {
			dit_floats_set(y, m * ldy, DIT_SENTINEL);
			dit_cpu_linear_wdt(y, ldy, x, ldx, data, wdts[d], scale, b, m, n, k,
			                   DIT_ACT_SILU, tile, (size_t)(rows[c] * k));
			double err = dit_err_rel(y, ldy, ref, m, n);
			if (dit_pad_count_changed(y, ldy, m, n))
				err = INFINITY;
			char name[96];
			snprintf(name, sizeof name,
			         "linear %s weights m=%lld n=%lld k=%lld tile %lld rows",
			         dit_wdt_name(wdts[d]), (long long)m, (long long)n, (long long)k,
			         (long long)rows[c]);
			dit_tap_check(tap, name, err, DIT_TOL_GEMM);
		}
	}
	free(x);
	free(w);
	free(b);
	free(y);
	free(tile);
	free(data);
	free(ref);
}

static void dit_layernorm_test(dit_tap *tap, dit_rng *rng)
{
	/* mode: 0 plain, 1 affine, 2 modulation (two pairs), 3 modulation (first terms
	 * only), 4 affine and modulation */
	static const struct {
		int64_t rows, dim, pad;
		int mode, alias;
		float eps, xmul, xadd;
	} cs[] = {
	    {1, 5, 0, 0, 0, 1e-6f, 1.0f, 0.0f},      {7, 67, 3, 1, 0, 1e-6f, 2.0f, 3.0f},
	    {33, 130, 0, 2, 0, 1e-6f, 1.0f, -5.0f},  {130, 33, 5, 3, 0, 1e-6f, 1.0f, 0.5f},
	    {7, 1536, 1, 4, 0, 1e-6f, 1.0f, 100.0f}, {33, 67, 2, 2, 1, 1e-6f, 1.0f, 0.0f},
	    {7, 67, 0, 0, 1, 1e-2f, 0.03f, 1.0f},
	};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t rows = cs[c].rows, dim = cs[c].dim, ld = dim + cs[c].pad;
		int mode = cs[c].mode;
		float *x = dit_floats_alloc(rows * ld), *y = dit_floats_alloc(rows * ld);
		float *p = dit_floats_alloc(6 * dim);
		double *ref = dit_doubles_alloc(rows * dim);
		dit_rng_fill(rng, x, rows * ld, cs[c].xmul, cs[c].xadd);
		dit_rng_fill(rng, p, 6 * dim, 0.5f, 0.0f);
		const float *w = (mode == 1 || mode == 4) ? p : NULL;
		const float *b = (mode == 1 || mode == 4) ? p + dim : NULL;
		const float *ha = mode >= 2 ? p + 2 * dim : NULL;
		const float *hb = (mode == 2 || mode == 4) ? p + 3 * dim : NULL;
		const float *sa = mode >= 2 ? p + 4 * dim : NULL;
		const float *sb = (mode == 2 || mode == 4) ? p + 5 * dim : NULL;
		dit_ref_layernorm(ref, x, ld, rows, dim, cs[c].eps, w, b, ha, hb, sa, sb);
		float *out = y;
		if (cs[c].alias) {
			out = x;
		} else {
			dit_floats_set(y, rows * ld, DIT_SENTINEL);
		}
		dit_cpu_layernorm(out, ld, x, ld, rows, dim, cs[c].eps, w, b, ha, hb, sa, sb, 0, 0);
		double err = dit_err_rel(out, ld, ref, rows, dim);
		if (!cs[c].alias && dit_pad_count_changed(y, ld, rows, dim))
			err = INFINITY;
		char name[128];
		snprintf(name, sizeof(name),
		         "layernorm rows=%lld dim=%lld ld=%lld mode=%d eps=%g%s", (long long)rows,
		         (long long)dim, (long long)ld, mode, (double)cs[c].eps,
		         cs[c].alias ? " y==x" : "");
		dit_tap_check(tap, name, err, DIT_TOL_ELEM);
		free(x);
		free(y);
		free(p);
		free(ref);
	}
}

static void dit_rmsnorm_test(dit_tap *tap, dit_rng *rng)
{
	static const struct {
		int64_t rows, dim, pad;
		int weight;
		float eps, xmul;
	} cs[] = {
	    {1, 5, 0, 1, 1e-6f, 1.0f},    {7, 64, 3, 1, 1e-6f, 3.0f},
	    {33, 130, 1, 0, 1e-6f, 1.0f}, {130, 33, 0, 1, 1e-6f, 0.1f},
	    {7, 1536, 2, 1, 1e-6f, 1.0f}, {7, 67, 1, 1, 1e-2f, 0.05f},
	};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t rows = cs[c].rows, dim = cs[c].dim, ld = dim + cs[c].pad;
		float *x = dit_floats_alloc(rows * ld), *w = dit_floats_alloc(dim);
		double *ref = dit_doubles_alloc(rows * dim);
		dit_rng_fill(rng, x, rows * ld, cs[c].xmul, 0.0f);
		for (int64_t r = 0; r + 1 < rows; r++)
			for (int64_t i = dim; i < ld; i++)
				x[r * ld + i] = DIT_SENTINEL;
		dit_rng_fill(rng, w, dim, 1.0f, 0.5f);
		const float *wp = cs[c].weight ? w : NULL;
		dit_ref_rmsnorm(ref, x, ld, rows, dim, cs[c].eps, wp);
		dit_cpu_rmsnorm(x, ld, rows, dim, cs[c].eps, wp);
		double err = dit_err_rel(x, ld, ref, rows, dim);
		if (dit_pad_count_changed(x, ld, rows, dim))
			err = INFINITY;
		char name[128];
		snprintf(name, sizeof(name), "rmsnorm rows=%lld dim=%lld ld=%lld weight=%d eps=%g",
		         (long long)rows, (long long)dim, (long long)ld, cs[c].weight,
		         (double)cs[c].eps);
		dit_tap_check(tap, name, err, DIT_TOL_ELEM);
		free(x);
		free(w);
		free(ref);
	}
}

static void dit_rope_test(dit_tap *tap, dit_rng *rng)
{
	/* head_dim and the expected (frame, row, col) pair counts */
	static const struct {
		int64_t hd, nt, nh, nw;
	} cs[] = {{8, 2, 1, 1}, {16, 4, 2, 2}, {128, 22, 21, 21}};
	const int64_t f = 3, h = 4, w = 5, rows = f * h * w;
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t hd = cs[c].hd, np = hd / 2;
		double *tab = dit_doubles_alloc(rows * hd), *ang = dit_doubles_alloc(rows * np);
		int64_t axes[3];
		dit_cpu_rope_axes_wan(hd, axes);
		dit_cpu_rope_table(tab, f, h, w, hd, 10000.0, axes);
		dit_ref_rope_angles(ang, f, h, w, hd);
		double err = 0.0;
		for (int64_t i = 0; i < rows * np; i++) {
			double ec = fabs(tab[2 * i] - cos(ang[i]));
			double es = fabs(tab[2 * i + 1] - sin(ang[i]));
			err = ec > err ? ec : err;
			err = es > err ? es : err;
		}
		char name[128];
		snprintf(name, sizeof(name), "rope table hd=%lld grid=%lldx%lldx%lld",
		         (long long)hd, (long long)f, (long long)h, (long long)w);
		dit_tap_check(tap, name, err, 1e-12);
		int64_t bad_axes =
		    (axes[0] != cs[c].nt) + (axes[1] != cs[c].nh) + (axes[2] != cs[c].nw);
		snprintf(name, sizeof(name), "rope Wan axes hd=%lld: %lld/%lld/%lld", (long long)hd,
		         (long long)axes[0], (long long)axes[1], (long long)axes[2]);
		dit_tap_add(tap, bad_axes == 0, name, (double)bad_axes, 0.0);

		/* Axis split: token (1,0,0) turns only the frame pairs, (0,1,0) only the row
		 * pairs, (0,0,1) only the column pairs; each must be a contiguous block of
		 * the expected size at the expected place. */
		const int64_t tok[3] = {h * w, w, 1};
		const int64_t lo[3] = {0, cs[c].nt, cs[c].nt + cs[c].nh};
		const int64_t cnt[3] = {cs[c].nt, cs[c].nh, cs[c].nw};
		int64_t bad = 0;
		for (int a = 0; a < 3; a++)
			for (int64_t j = 0; j < np; j++) {
				int turned = tab[(tok[a] * np + j) * 2 + 1] != 0.0;
				int expect = j >= lo[a] && j < lo[a] + cnt[a];
				bad += turned != expect;
			}
		snprintf(name, sizeof(name), "rope axis split hd=%lld is %lld/%lld/%lld pairs",
		         (long long)hd, (long long)cs[c].nt, (long long)cs[c].nh,
		         (long long)cs[c].nw);
		dit_tap_add(tap, bad == 0, name, (double)bad, 0.0);

		for (int64_t heads = 1; heads <= 3; heads++) {
			int64_t ld = heads * hd + (heads == 2 ? 5 : 0);
			float *x = dit_floats_alloc(rows * ld);
			double *ref = dit_doubles_alloc(rows * heads * hd);
			dit_rng_fill(rng, x, rows * ld, 2.0f, 0.0f);
			for (int64_t r = 0; r + 1 < rows; r++)
				for (int64_t i = heads * hd; i < ld; i++)
					x[r * ld + i] = DIT_SENTINEL;
			for (int64_t r = 0; r < rows; r++)
				for (int64_t hh = 0; hh < heads; hh++)
					for (int64_t j = 0; j < np; j++) {
						const float *xp = x + r * ld + hh * hd + 2 * j;
						double a = ang[r * np + j];
						double *rp = ref + r * heads * hd + hh * hd + 2 * j;
						rp[0] = xp[0] * cos(a) - xp[1] * sin(a);
						rp[1] = xp[0] * sin(a) + xp[1] * cos(a);
					}
			dit_cpu_rope_apply(x, ld, rows, heads, hd, tab);
			err = dit_err_rel(x, ld, ref, rows, heads * hd);
			if (dit_pad_count_changed(x, ld, rows, heads * hd))
				err = INFINITY;
			snprintf(name, sizeof(name), "rope apply hd=%lld heads=%lld ld=%lld",
			         (long long)hd, (long long)heads, (long long)ld);
			dit_tap_check(tap, name, err, DIT_TOL_ELEM);
			free(x);
			free(ref);
		}
		free(tab);
		free(ang);
	}
}

/* The table with another theta and axis split, against angles written out directly:
 * pair j of axis a (pairs [lo_a, lo_a + n_a)) of token (fi, hi, wi) turns by
 * pos_a * theta^(-2 (j - lo_a) / (2 n_a)); pairs past a short split stay (1, 0). */
static void dit_rope_params_test(dit_tap *tap)
{
	static const struct {
		int64_t hd;
		double theta;
		int64_t axes[3];
	} cs[] = {{256, 256.0, {16, 56, 56}}, {64, 500.0, {12, 10, 8}}, {32, 10000.0, {4, 6, 4}}};
	const int64_t f = 3, h = 5, w = 4, rows = f * h * w;
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t hd = cs[c].hd, np = hd / 2;
		const int64_t *ax = cs[c].axes;
		double *tab = dit_doubles_alloc(rows * hd);
		dit_cpu_rope_table(tab, f, h, w, hd, cs[c].theta, ax);
		double err = 0.0;
		for (int64_t fi = 0; fi < f; fi++)
			for (int64_t hi = 0; hi < h; hi++)
				for (int64_t wi = 0; wi < w; wi++) {
					const int64_t pos[3] = {fi, hi, wi};
					const double *t = tab + ((fi * h + hi) * w + wi) * hd;
					for (int64_t j = 0; j < np; j++) {
						int a = 0;
						int64_t lo = 0;
						while (a < 3 && j >= lo + ax[a])
							lo += ax[a++];
						double ang = 0.0;
						if (a < 3)
							ang = (double)pos[a] *
							      exp(-(2.0 * (double)(j - lo) /
							            (2.0 * (double)ax[a])) *
							          log(cs[c].theta));
						double ec = fabs(t[2 * j] - cos(ang));
						double es = fabs(t[2 * j + 1] - sin(ang));
						err = ec > err ? ec : err;
						err = es > err ? es : err;
					}
				}
		char name[128];
		snprintf(name, sizeof(name), "rope table hd=%lld theta=%g axes=%lld/%lld/%lld",
		         (long long)hd, cs[c].theta, (long long)ax[0], (long long)ax[1],
		         (long long)ax[2]);
		dit_tap_check(tap, name, err, 1e-12);
		free(tab);
	}
}

static void dit_attention_test(dit_tap *tap, dit_rng *rng)
{
	static const struct {
		int64_t lq, lk, heads, hd, pad;
		float qmul;
	} cs[] = {
	    {1, 1, 1, 8, 0, 1.0f},       {7, 255, 2, 16, 3, 4.0f},  {33, 257, 3, 64, 0, 2.0f},
	    {130, 600, 2, 128, 8, 1.0f}, {64, 256, 1, 32, 0, 1.0f}, {65, 1, 2, 16, 1, 1.0f},
	    {1, 600, 1, 128, 0, 3.0f},   {200, 70, 3, 8, 2, 30.0f}, {129, 513, 1, 16, 0, 8.0f},
	    {300, 257, 2, 16, 1, 2.0f},  {3, 1500, 1, 64, 0, 2.0f}, {90, 300, 2, 8, 0, 100.0f},
	};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t lq = cs[c].lq, lk = cs[c].lk, heads = cs[c].heads, hd = cs[c].hd;
		int64_t width = heads * hd;
		/* distinct strides for q, k, v and o */
		int64_t ldq = width + cs[c].pad, ldk = width + 2 * cs[c].pad;
		int64_t ldv = width + 3 * cs[c].pad, ldo = width + cs[c].pad + 1;
		float *q = dit_floats_alloc(lq * ldq), *k = dit_floats_alloc(lk * ldk);
		float *v = dit_floats_alloc(lk * ldv), *o = dit_floats_alloc(lq * ldo);
		size_t ns = dit_cpu_attention_scratch(hd);
		float *scratch = dit_floats_alloc((int64_t)ns);
		double *ref = dit_doubles_alloc(lq * width);
		float scale = (float)(1.0 / sqrt((double)hd));
		dit_rng_fill(rng, q, lq * ldq, cs[c].qmul, 0.0f);
		dit_rng_fill(rng, k, lk * ldk, 1.0f, 0.0f);
		dit_rng_fill(rng, v, lk * ldv, 1.0f, 0.0f);
		dit_floats_set(o, lq * ldo, DIT_SENTINEL);
		dit_floats_set(scratch, (int64_t)ns, NAN); /* results must not read stale scratch */
		dit_cpu_attention(o, ldo, q, ldq, k, ldk, v, ldv, lq, lk, heads, hd, scale,
		                  scratch);
		dit_ref_attention(ref, q, ldq, k, ldk, v, ldv, lq, lk, heads, hd, scale);
		double err = dit_err_rel(o, ldo, ref, lq, width);
		if (dit_pad_count_changed(o, ldo, lq, width))
			err = INFINITY;
		char name[160];
		snprintf(name, sizeof(name),
		         "attention lq=%lld lk=%lld heads=%lld hd=%lld ldq=%lld ldk=%lld ldv=%lld "
		         "ldo=%lld qmul=%g",
		         (long long)lq, (long long)lk, (long long)heads, (long long)hd,
		         (long long)ldq, (long long)ldk, (long long)ldv, (long long)ldo,
		         (double)cs[c].qmul);
		dit_tap_check(tap, name, err, DIT_TOL_GEMM);
		if (c == 3 || c == 8) {
			/* Determinism: second run, different stale scratch, identical bytes. */
			float *o2 = dit_floats_alloc(lq * ldo);
			dit_floats_set(o2, lq * ldo, DIT_SENTINEL);
			dit_floats_set(scratch, (int64_t)ns, 7.0f);
			dit_cpu_attention(o2, ldo, q, ldq, k, ldk, v, ldv, lq, lk, heads, hd, scale,
			                  scratch);
			int same = !memcmp(o, o2, (size_t)(lq * ldo) * sizeof(float));
			snprintf(name, sizeof(name),
			         "attention deterministic (bitwise) lq=%lld lk=%lld hd=%lld",
			         (long long)lq, (long long)lk, (long long)hd);
			dit_tap_add(tap, same, name, same ? 0.0 : 1.0, 0.0);
			free(o2);
		}
		free(q);
		free(k);
		free(v);
		free(o);
		free(scratch);
		free(ref);
	}
}

/* A NaN in one key of head 0 must make every output of head 0 NaN and leave head 1
 * finite (the softmax must not hide bad scores). */
static void dit_attention_nan_test(dit_tap *tap, dit_rng *rng)
{
	const int64_t lq = 40, lk = 300, heads = 2, hd = 16, width = heads * hd;
	float *q = dit_floats_alloc(lq * width), *k = dit_floats_alloc(lk * width);
	float *v = dit_floats_alloc(lk * width), *o = dit_floats_alloc(lq * width);
	float *scratch = dit_floats_alloc((int64_t)dit_cpu_attention_scratch(hd));
	dit_rng_fill(rng, q, lq * width, 1.0f, 0.0f);
	dit_rng_fill(rng, k, lk * width, 1.0f, 0.0f);
	dit_rng_fill(rng, v, lk * width, 1.0f, 0.0f);
	k[270 * width + 3] = -NAN; /* key 270 (second key tile), head 0 */
	dit_cpu_attention(o, width, q, width, k, width, v, width, lq, lk, heads, hd, 0.25f,
	                  scratch);
	int64_t bad = 0;
	for (int64_t i = 0; i < lq; i++)
		for (int64_t c = 0; c < width; c++)
			bad += c < hd ? !isnan(o[i * width + c]) : !isfinite(o[i * width + c]);
	dit_tap_add(tap, bad == 0, "attention NaN key propagates to its head only", (double)bad,
	            0.0);
	free(q);
	free(k);
	free(v);
	free(o);
	free(scratch);
}

/* Attention with only the first lk_valid of lk keys (the codelets pass lk_valid as
 * the key count): the rows of k and v past them are NaN, so a read of one shows; the
 * output must be the reference over the first lk_valid keys alone. */
static void dit_attention_valid_test(dit_tap *tap, dit_rng *rng)
{
	static const struct {
		int64_t lq, lk, valid, heads, hd;
	} cs[] = {
	    {40, 300, 77, 2, 16}, {7, 600, 256, 1, 64}, {130, 70, 1, 2, 8}, {33, 512, 257, 3, 32}};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t lq = cs[c].lq, lk = cs[c].lk, nv = cs[c].valid, heads = cs[c].heads;
		int64_t hd = cs[c].hd, width = heads * hd, ld = width + 3;
		float *q = dit_floats_alloc(lq * ld), *k = dit_floats_alloc(lk * ld);
		float *v = dit_floats_alloc(lk * ld), *o = dit_floats_alloc(lq * ld);
		float *scratch = dit_floats_alloc((int64_t)dit_cpu_attention_scratch(hd));
		double *ref = dit_doubles_alloc(lq * width);
		float scale = (float)(1.0 / sqrt((double)hd));
		dit_rng_fill(rng, q, lq * ld, 2.0f, 0.0f);
		dit_rng_fill(rng, k, lk * ld, 1.0f, 0.0f);
		dit_rng_fill(rng, v, lk * ld, 1.0f, 0.0f);
		dit_floats_set(k + nv * ld, (lk - nv) * ld, NAN);
		dit_floats_set(v + nv * ld, (lk - nv) * ld, NAN);
		dit_floats_set(o, lq * ld, DIT_SENTINEL);
		dit_cpu_attention(o, ld, q, ld, k, ld, v, ld, lq, nv, heads, hd, scale, scratch);
		dit_ref_attention(ref, q, ld, k, ld, v, ld, lq, nv, heads, hd, scale);
		double err = dit_err_rel(o, ld, ref, lq, width);
		if (dit_pad_count_changed(o, ld, lq, width))
			err = INFINITY;
		char name[128];
		snprintf(name, sizeof(name),
		         "attention lq=%lld lk=%lld, first %lld keys valid (others NaN) heads=%lld "
		         "hd=%lld",
		         (long long)lq, (long long)lk, (long long)nv, (long long)heads,
		         (long long)hd);
		dit_tap_check(tap, name, err, DIT_TOL_GEMM);
		free(q);
		free(k);
		free(v);
		free(o);
		free(scratch);
		free(ref);
	}
}

static void dit_residual_test(dit_tap *tap, dit_rng *rng)
{
	static const struct {
		int64_t rows, dim, padx, pady;
		int gates; /* 0: none, 1: gate_a only, 2: both */
	} cs[] = {{1, 5, 0, 0, 0}, {7, 33, 2, 5, 1}, {33, 130, 1, 0, 2}, {130, 64, 0, 3, 2}};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t rows = cs[c].rows, dim = cs[c].dim;
		int64_t ldx = dim + cs[c].padx, ldy = dim + cs[c].pady;
		float *x = dit_floats_alloc(rows * ldx), *y = dit_floats_alloc(rows * ldy);
		float *g = dit_floats_alloc(2 * dim);
		double *ref = dit_doubles_alloc(rows * dim);
		dit_rng_fill(rng, x, rows * ldx, 1.0f, 0.0f);
		for (int64_t r = 0; r + 1 < rows; r++)
			for (int64_t i = dim; i < ldx; i++)
				x[r * ldx + i] = DIT_SENTINEL;
		dit_rng_fill(rng, y, rows * ldy, 1.0f, 0.0f);
		dit_rng_fill(rng, g, 2 * dim, 1.0f, 0.0f);
		const float *ga = cs[c].gates >= 1 ? g : NULL;
		const float *gb = cs[c].gates >= 2 ? g + dim : NULL;
		for (int64_t r = 0; r < rows; r++)
			for (int64_t i = 0; i < dim; i++) {
				double gate = ga ? (double)ga[i] + (gb ? gb[i] : 0.0) : 1.0;
				ref[r * dim + i] = x[r * ldx + i] + (double)y[r * ldy + i] * gate;
			}
		dit_cpu_residual(x, ldx, y, ldy, rows, dim, ga, gb, 0, 0);
		double err = dit_err_rel(x, ldx, ref, rows, dim);
		if (dit_pad_count_changed(x, ldx, rows, dim))
			err = INFINITY;
		char name[128];
		snprintf(name, sizeof(name),
		         "residual rows=%lld dim=%lld ldx=%lld ldy=%lld gates=%d", (long long)rows,
		         (long long)dim, (long long)ldx, (long long)ldy, cs[c].gates);
		dit_tap_check(tap, name, err, DIT_TOL_ELEM);
		free(x);
		free(y);
		free(g);
		free(ref);
	}
}

/* Per-row modulation tables: the second terms of shift and scale are rows of a table
 * (mod_ld floats apart, the shift at 0 and the scale at dim within a row), row r of x
 * using table row r / mod_rows. Cases: one row per token, one per frame, uneven
 * groups, and mod_rows 0 with a nonzero mod_ld (one vector: the same bytes as
 * mod_ld 0). Each against the float64 reference fed row by row with its table row. */
static void dit_layernorm_table_test(dit_tap *tap, dit_rng *rng)
{
	static const struct {
		int64_t rows, dim, pad, mod_ld, mod_rows;
		int affine;
	} cs[] = {
	    {12, 67, 0, 6 * 67, 1, 0},        /* per token, e0-like rows [6, dim] */
	    {30, 130, 3, 2 * 130 + 5, 10, 0}, /* per frame of 10 tokens, padded rows */
	    {29, 64, 1, 2 * 64, 7, 1},        /* uneven groups, affine too */
	    {9, 33, 0, 77, 0, 0},             /* mod_rows 0: one vector */
	};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t rows = cs[c].rows, dim = cs[c].dim, ld = dim + cs[c].pad;
		int64_t mod_ld = cs[c].mod_ld, mr = cs[c].mod_rows;
		int64_t ntab = mr > 0 ? (rows + mr - 1) / mr : 1;
		float *x = dit_floats_alloc(rows * ld), *y = dit_floats_alloc(rows * ld);
		float *p = dit_floats_alloc(4 * dim), *tab = dit_floats_alloc(ntab * mod_ld);
		double *ref = dit_doubles_alloc(rows * dim);
		dit_rng_fill(rng, x, rows * ld, 1.5f, 0.25f);
		dit_rng_fill(rng, p, 4 * dim, 0.5f, 0.0f);
		dit_rng_fill(rng, tab, ntab * mod_ld, 0.5f, 0.0f);
		const float *w = cs[c].affine ? p + 2 * dim : NULL;
		const float *b = cs[c].affine ? p + 3 * dim : NULL;
		for (int64_t r = 0; r < rows; r++) {
			const float *t = tab + (mr > 0 ? r / mr : 0) * mod_ld; /* its row */
			dit_ref_layernorm(ref + r * dim, x + r * ld, ld, 1, dim, 1e-6, w, b, p, t,
			                  p + dim, t + dim);
		}
		dit_floats_set(y, rows * ld, DIT_SENTINEL);
		dit_cpu_layernorm(y, ld, x, ld, rows, dim, 1e-6f, w, b, p, tab, p + dim, tab + dim,
		                  mod_ld, mr);
		double err = dit_err_rel(y, ld, ref, rows, dim);
		if (dit_pad_count_changed(y, ld, rows, dim))
			err = INFINITY;
		char name[160];
		snprintf(name, sizeof(name),
		         "layernorm table rows=%lld dim=%lld ld=%lld mod_ld=%lld mod_rows=%lld "
		         "affine=%d",
		         (long long)rows, (long long)dim, (long long)ld, (long long)mod_ld,
		         (long long)mr, cs[c].affine);
		dit_tap_check(tap, name, err, DIT_TOL_ELEM);
		if (mr <= 0) {
			float *y0 = dit_floats_alloc(rows * ld);
			dit_floats_set(y0, rows * ld, DIT_SENTINEL);
			dit_cpu_layernorm(y0, ld, x, ld, rows, dim, 1e-6f, w, b, p, tab, p + dim,
			                  tab + dim, 0, 0);
			int same = !memcmp(y, y0, (size_t)(rows * ld) * sizeof(float));
			dit_tap_add(tap, same, "layernorm mod_rows 0: same bytes as one vector",
			            same ? 0.0 : 1.0, 0.0);
			free(y0);
		}
		free(x);
		free(y);
		free(p);
		free(tab);
		free(ref);
	}
}

/* The gate's second term as a table (rows mod_ld floats apart), as for layernorm. */
static void dit_residual_table_test(dit_tap *tap, dit_rng *rng)
{
	static const struct {
		int64_t rows, dim, pad, mod_ld, mod_rows;
	} cs[] = {
	    {12, 53, 0, 6 * 53, 1}, {40, 64, 3, 64 + 3, 8}, {23, 33, 1, 40, 5}, {7, 16, 0, 99, 0}};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t rows = cs[c].rows, dim = cs[c].dim, ld = dim + cs[c].pad;
		int64_t mod_ld = cs[c].mod_ld, mr = cs[c].mod_rows;
		int64_t ntab = mr > 0 ? (rows + mr - 1) / mr : 1;
		float *x = dit_floats_alloc(rows * ld), *y = dit_floats_alloc(rows * ld);
		float *ga = dit_floats_alloc(dim), *tab = dit_floats_alloc(ntab * mod_ld);
		double *ref = dit_doubles_alloc(rows * dim);
		dit_rng_fill(rng, x, rows * ld, 1.0f, 0.0f);
		for (int64_t r = 0; r + 1 < rows; r++)
			for (int64_t i = dim; i < ld; i++)
				x[r * ld + i] = DIT_SENTINEL;
		dit_rng_fill(rng, y, rows * ld, 1.0f, 0.0f);
		dit_rng_fill(rng, ga, dim, 1.0f, 0.0f);
		dit_rng_fill(rng, tab, ntab * mod_ld, 1.0f, 0.0f);
		for (int64_t r = 0; r < rows; r++) {
			const float *t = tab + (mr > 0 ? r / mr : 0) * mod_ld; /* its row */
			for (int64_t i = 0; i < dim; i++)
				ref[r * dim + i] =
				    x[r * ld + i] + (double)y[r * ld + i] * ((double)ga[i] + t[i]);
		}
		dit_cpu_residual(x, ld, y, ld, rows, dim, ga, tab, mod_ld, mr);
		double err = dit_err_rel(x, ld, ref, rows, dim);
		if (dit_pad_count_changed(x, ld, rows, dim))
			err = INFINITY;
		char name[160];
		snprintf(name, sizeof(name),
		         "residual gate table rows=%lld dim=%lld ld=%lld mod_ld=%lld mod_rows=%lld",
		         (long long)rows, (long long)dim, (long long)ld, (long long)mod_ld,
		         (long long)mr);
		dit_tap_check(tap, name, err, DIT_TOL_ELEM);
		free(x);
		free(y);
		free(ga);
		free(tab);
		free(ref);
	}
}

/* RMSNorm per run of group features (per head), weight [group] shared: against the
 * float64 reference applied to each run as a row of its own; group 0 and group = dim
 * give the same bytes as the whole-row kernel. */
static void dit_rmsnorm_group_test(dit_tap *tap, dit_rng *rng)
{
	static const struct {
		int64_t rows, dim, group, pad;
		int weight;
	} cs[] = {{7, 384, 128, 3, 1}, {33, 96, 16, 0, 1},
	          {5, 130, 26, 1, 0},  {4, 100, 30, 2, 1}, /* a last run of 10 */
	          {6, 64, 64, 0, 1},   {6, 64, 0, 5, 1}};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t rows = cs[c].rows, dim = cs[c].dim, group = cs[c].group;
		int64_t ld = dim + cs[c].pad, gl = group > 0 ? group : dim;
		float *x = dit_floats_alloc(rows * ld), *w = dit_floats_alloc(gl);
		float *x0 = dit_floats_alloc(rows * ld);
		double *ref = dit_doubles_alloc(rows * dim);
		dit_rng_fill(rng, x, rows * ld, 3.0f, 0.0f);
		for (int64_t r = 0; r + 1 < rows; r++)
			for (int64_t i = dim; i < ld; i++)
				x[r * ld + i] = DIT_SENTINEL;
		dit_rng_fill(rng, w, gl, 1.0f, 0.5f);
		memcpy(x0, x, (size_t)(rows * ld) * sizeof(float));
		const float *wp = cs[c].weight ? w : NULL;
		double *run = dit_doubles_alloc(gl);
		for (int64_t r = 0; r < rows; r++)
			for (int64_t g0 = 0; g0 < dim; g0 += gl) {
				int64_t n = dim - g0 < gl ? dim - g0 : gl;
				dit_ref_rmsnorm(run, x + r * ld + g0, n, 1, n, 1e-6, wp);
				memcpy(ref + r * dim + g0, run, (size_t)n * sizeof(double));
			}
		free(run);
		dit_cpu_rmsnorm_group(x, ld, rows, dim, group, 1e-6f, wp);
		double err = dit_err_rel(x, ld, ref, rows, dim);
		if (dit_pad_count_changed(x, ld, rows, dim))
			err = INFINITY;
		char name[128];
		snprintf(name, sizeof(name),
		         "rmsnorm group rows=%lld dim=%lld group=%lld ld=%lld weight=%d",
		         (long long)rows, (long long)dim, (long long)group, (long long)ld,
		         cs[c].weight);
		dit_tap_check(tap, name, err, DIT_TOL_ELEM);
		if (group == 0 || group == dim) {
			dit_cpu_rmsnorm(x0, ld, rows, dim, 1e-6f, wp);
			int same = !memcmp(x, x0, (size_t)(rows * ld) * sizeof(float));
			snprintf(name, sizeof(name),
			         "rmsnorm group=%lld: same bytes as the whole row",
			         (long long)group);
			dit_tap_add(tap, same, name, same ? 0.0 : 1.0, 0.0);
		}
		free(x);
		free(x0);
		free(w);
		free(ref);
	}
}

static void dit_timestep_test(dit_tap *tap)
{
	const double ts[] = {0.0, 1.0, 37.5, 500.0, 999.0, 1000.0};
	const int64_t dims[] = {256, 10};
	for (size_t d = 0; d < sizeof(dims) / sizeof(dims[0]); d++)
		for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
			int64_t fd = dims[d], half = fd / 2;
			float *out = dit_floats_alloc(fd);
			double *ref = dit_doubles_alloc(fd);
			for (int64_t k = 0; k < half; k++) {
				double a = ts[i] * exp(-((double)k / (double)half) * log(10000.0));
				ref[k] = cos(a);
				ref[half + k] = sin(a);
			}
			dit_cpu_timestep_embedding(out, ts[i], fd);
			char name[96];
			snprintf(name, sizeof(name), "timestep embedding freq_dim=%lld t=%g",
			         (long long)fd, ts[i]);
			dit_tap_check(tap, name, dit_err_rel(out, fd, ref, 1, fd), DIT_TOL_ELEM);
			free(out);
			free(ref);
		}
}

static void dit_patchify_test(dit_tap *tap)
{
	static const struct {
		int64_t c, f, h, w, pt, ph, pw;
	} cs[] = {{3, 4, 6, 10, 1, 2, 2}, {2, 4, 6, 10, 2, 3, 5}, {16, 1, 2, 2, 1, 2, 2}};
	for (size_t t = 0; t < sizeof(cs) / sizeof(cs[0]); t++) {
		int64_t c = cs[t].c, f = cs[t].f, h = cs[t].h, w = cs[t].w;
		int64_t pt = cs[t].pt, ph = cs[t].ph, pw = cs[t].pw;
		int64_t fp = f / pt, hp = h / ph, wp = w / pw, n = c * f * h * w;
		int64_t feat = c * pt * ph * pw, ntok = fp * hp * wp;
		float *x = dit_floats_alloc(n), *tok = dit_floats_alloc(ntok * feat);
		float *y = dit_floats_alloc(n);
		for (int64_t i = 0; i < n; i++)
			x[i] = (float)i;

		/* patchify: tok[row, col], row = (f', h', w'), col = (c, pt, ph, pw) */
		dit_cpu_patchify(tok, x, c, f, h, w, pt, ph, pw);
		int64_t bad = 0;
		for (int64_t row = 0; row < ntok; row++)
			for (int64_t col = 0; col < feat; col++) {
				int64_t wi = row % wp, hi = (row / wp) % hp, fi = row / (wp * hp);
				int64_t d = col % pw, b = (col / pw) % ph,
				        a = (col / (pw * ph)) % pt;
				int64_t ci = col / (pw * ph * pt);
				int64_t src =
				    ((ci * f + fi * pt + a) * h + hi * ph + b) * w + wi * pw + d;
				bad += tok[row * feat + col] != (float)src;
			}
		char name[128];
		snprintf(name, sizeof(name),
		         "patchify index c=%lld f=%lld h=%lld w=%lld patch=%lldx%lldx%lld",
		         (long long)c, (long long)f, (long long)h, (long long)w, (long long)pt,
		         (long long)ph, (long long)pw);
		dit_tap_add(tap, bad == 0, name, (double)bad, 0.0);

		/* unpatchify: col = (pt, ph, pw, c) with c innermost */
		for (int64_t i = 0; i < ntok * feat; i++)
			tok[i] = (float)i;
		dit_floats_set(y, n, DIT_SENTINEL);
		dit_cpu_unpatchify(y, tok, c, fp, hp, wp, pt, ph, pw);
		bad = 0;
		for (int64_t ci = 0; ci < c; ci++)
			for (int64_t ff = 0; ff < f; ff++)
				for (int64_t hh = 0; hh < h; hh++)
					for (int64_t ww = 0; ww < w; ww++) {
						int64_t row =
						    ((ff / pt) * hp + hh / ph) * wp + ww / pw;
						int64_t col =
						    (((ff % pt) * ph + hh % ph) * pw + ww % pw) *
						        c +
						    ci;
						float want = (float)(row * feat + col);
						bad += y[((ci * f + ff) * h + hh) * w + ww] != want;
					}
		snprintf(name, sizeof(name),
		         "unpatchify index c=%lld f'=%lld h'=%lld w'=%lld patch=%lldx%lldx%lld",
		         (long long)c, (long long)fp, (long long)hp, (long long)wp, (long long)pt,
		         (long long)ph, (long long)pw);
		dit_tap_add(tap, bad == 0, name, (double)bad, 0.0);
		free(x);
		free(tok);
		free(y);
	}
}

static void dit_lincomb_test(dit_tap *tap, dit_rng *rng)
{
	const int64_t ns[] = {1, 1000, 4099};
	for (size_t s = 0; s < sizeof(ns) / sizeof(ns[0]); s++)
		for (int nt = 1; nt <= 4; nt++)
			for (int mode = 0; mode < 2; mode++) {
				/* separate output, then out == in[alias] */
				int alias = mode ? (nt > 2 ? 1 : nt - 1) : -1;
				int64_t n = ns[s];
				float *buf[4], *out = dit_floats_alloc(n);
				double coef[4], *ref = dit_doubles_alloc(n);
				float *want = dit_floats_alloc(n);
				for (int t = 0; t < nt; t++) {
					buf[t] = dit_floats_alloc(n);
					dit_rng_fill(rng, buf[t], n, 1.0f, 0.0f);
					coef[t] = 2.0 * dit_rng_uniform(rng) + 1e-3 * t;
				}
				for (int64_t i = 0; i < n; i++) {
					double acc = 0.0;
					for (int t = 0; t < nt; t++)
						acc += coef[t] * (double)buf[t][i];
					ref[i] = acc;
					want[i] = (float)acc;
				}
				float *dst = alias >= 0 ? buf[alias] : out;
				const float *const in[4] = {buf[0], nt > 1 ? buf[1] : NULL,
				                            nt > 2 ? buf[2] : NULL,
				                            nt > 3 ? buf[3] : NULL};
				dit_cpu_lincomb(dst, n, nt, in, coef);
				double err = dit_err_rel(dst, n, ref, 1, n);
				int64_t bad = 0;
				for (int64_t i = 0; i < n; i++)
					bad += memcmp(&dst[i], &want[i], sizeof(float)) != 0;
				char name[128];
				snprintf(name, sizeof(name),
				         "lincomb n=%lld terms=%d %s, rounded once (%lld differ)",
				         (long long)n, nt,
				         alias >= 0 ? "out==in[i]" : "separate out",
				         (long long)bad);
				dit_tap_add(tap, err <= DIT_TOL_ELEM && bad == 0, name, err,
				            DIT_TOL_ELEM);
				for (int t = 0; t < nt; t++)
					free(buf[t]);
				free(out);
				free(ref);
				free(want);
			}
}

static void dit_cfg_test(dit_tap *tap, dit_rng *rng)
{
	const int64_t n = 1027;
	const float scales[] = {5.0f, 1.0f, 0.0f, 7.5f};
	for (size_t s = 0; s < sizeof(scales) / sizeof(scales[0]); s++)
		for (int alias = 0; alias < 3; alias++) {
			/* alias: 0 separate output, 1 out == cond, 2 out == uncond */
			float *cond = dit_floats_alloc(n), *unc = dit_floats_alloc(n);
			float *out = dit_floats_alloc(n), *want = dit_floats_alloc(n);
			double *ref = dit_doubles_alloc(n);
			dit_rng_fill(rng, cond, n, 1.0f, 0.0f);
			dit_rng_fill(rng, unc, n, 1.0f, 0.0f);
			float scale = scales[s];
			for (int64_t i = 0; i < n; i++) {
				/* fp32 in the official order; volatile keeps each rounding */
				volatile float d = cond[i] - unc[i];
				volatile float sd = scale * d;
				want[i] = unc[i] + sd;
				ref[i] = unc[i] + (double)scale * ((double)cond[i] - unc[i]);
			}
			float *dst = alias == 1 ? cond : alias == 2 ? unc : out;
			dit_cpu_cfg(dst, cond, unc, n, scale);
			double err = dit_err_rel(dst, n, ref, 1, n);
			int64_t bad = 0;
			for (int64_t i = 0; i < n; i++)
				bad += memcmp(&dst[i], &want[i], sizeof(float)) != 0;
			char name[128];
			snprintf(name, sizeof(name),
			         "cfg n=%lld scale=%g %s, fp32 official order (%lld differ)",
			         (long long)n, (double)scale,
			         alias == 1   ? "out==cond"
			         : alias == 2 ? "out==uncond"
			                      : "separate out",
			         (long long)bad);
			dit_tap_add(tap, err <= DIT_TOL_ELEM && bad == 0, name, err, DIT_TOL_ELEM);
			free(cond);
			free(unc);
			free(out);
			free(want);
			free(ref);
		}
}

/* Strided row copies, bit for bit, the rest of dst untouched: source values include
 * NaNs with payloads, -0, a denormal and inf (a float copy through arithmetic would
 * change some). count 1 (channel concatenation) and count C with ld = F*H*W (a frame
 * into every channel). */
static void dit_copy2d_test(dit_tap *tap, dit_rng *rng)
{
	static const struct {
		int64_t count, len, src_ld, dst_ld, src_n, dst_n;
	} cs[] = {
	    {1, 4 * 3 * 5 * 6, 0, 0, 4 * 3 * 5 * 6, 7 * 3 * 5 * 6},    /* 4 channels after 3 */
	    {16, 5 * 6, 5 * 6, 3 * 5 * 6, 16 * 5 * 6, 16 * 3 * 5 * 6}, /* frame 0 of [16,3,5,6] */
	    {5, 33, 40, 37, 5 * 40, 5 * 37 + 11},
	};
	static const uint32_t special[] = {0x7fc00001u, 0xffa00123u, 0x80000000u, 0x00000001u,
	                                   0x7f800000u};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t sn = cs[c].src_n, dn = cs[c].dst_n, src_off = c == 2 ? 3 : 0;
		int64_t dst_off = c == 0 ? 3 * 3 * 5 * 6 : c == 2 ? 5 : 0;
		float *src = dit_floats_alloc(sn + src_off), *dst = dit_floats_alloc(dn);
		float *want = dit_floats_alloc(dn);
		dit_rng_fill(rng, src, sn + src_off, 1.0f, 0.0f);
		dit_rng_fill(rng, dst, dn, 1.0f, 0.0f);
		for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
			memcpy(&src[src_off + (int64_t)i * 7 % cs[c].len], &special[i], 4);
		memcpy(want, dst, (size_t)dn * sizeof(float));
		for (int64_t i = 0; i < cs[c].count; i++)
			for (int64_t j = 0; j < cs[c].len; j++)
				memcpy(&want[dst_off + i * cs[c].dst_ld + j],
				       &src[src_off + i * cs[c].src_ld + j], sizeof(float));
		dit_cpu_copy2d(dst + dst_off, cs[c].dst_ld, src + src_off, cs[c].src_ld,
		               cs[c].count, cs[c].len);
		int64_t bad = 0;
		for (int64_t i = 0; i < dn; i++)
			bad += memcmp(&dst[i], &want[i], sizeof(float)) != 0;
		char name[128];
		snprintf(
		    name, sizeof(name),
		    "copy2d count=%lld len=%lld src_ld=%lld dst_ld=%lld: bit for bit, rest kept",
		    (long long)cs[c].count, (long long)cs[c].len, (long long)cs[c].src_ld,
		    (long long)cs[c].dst_ld);
		dit_tap_add(tap, bad == 0, name, (double)bad, 0.0);
		free(src);
		free(dst);
		free(want);
	}
}

/* The time embedding of nt timesteps: nt = 1 gives the bytes of the single-timestep
 * chain as codelets/time_embed.c ran it before (the same calls, written out here);
 * with nt = 5 distinct timesteps every row is the bytes of an nt = 1 run of its t and
 * matches the float64 reference (sinusoid, Linear-SiLU-Linear, SiLU, Linear). */
static void dit_time_embed_test(dit_tap *tap, dit_rng *rng)
{
	const int64_t dim = 24, freq = 32;
	const double ts[] = {999.0, 0.0, 250.5, 17.25, 700.0};
	const int64_t nt = 5;
	float *w0 = dit_floats_alloc(dim * freq), *b0 = dit_floats_alloc(dim);
	float *w2 = dit_floats_alloc(dim * dim), *b2 = dit_floats_alloc(dim);
	float *wp = dit_floats_alloc(6 * dim * dim), *bp = dit_floats_alloc(6 * dim);
	dit_rng_fill(rng, w0, dim * freq, 0.3f, 0.0f);
	dit_rng_fill(rng, b0, dim, 0.3f, 0.0f);
	dit_rng_fill(rng, w2, dim * dim, 0.3f, 0.0f);
	dit_rng_fill(rng, b2, dim, 0.3f, 0.0f);
	dit_rng_fill(rng, wp, 6 * dim * dim, 0.3f, 0.0f);
	dit_rng_fill(rng, bp, 6 * dim, 0.3f, 0.0f);
	float *scratch = dit_floats_alloc(nt * (freq + dim));
	float *e = dit_floats_alloc(nt * dim), *e0 = dit_floats_alloc(nt * 6 * dim);
	float *e1 = dit_floats_alloc(dim), *e01 = dit_floats_alloc(6 * dim);

	/* nt = 1 against the chain of before */
	float *sin_t = dit_floats_alloc(freq + dim), *hid = sin_t + freq;
	float *eo = dit_floats_alloc(dim), *e0o = dit_floats_alloc(6 * dim);
	dit_cpu_timestep_embedding(sin_t, ts[2], freq);
	dit_cpu_linear(hid, dim, sin_t, freq, w0, b0, 1, dim, freq, DIT_ACT_SILU);
	dit_cpu_linear(eo, dim, hid, dim, w2, b2, 1, dim, dim, DIT_ACT_NONE);
	memcpy(hid, eo, (size_t)dim * sizeof *hid);
	dit_cpu_act(hid, dim, DIT_ACT_SILU);
	dit_cpu_linear(e0o, 6 * dim, hid, dim, wp, bp, 1, 6 * dim, dim, DIT_ACT_NONE);
	dit_floats_set(scratch, nt * (freq + dim), NAN);
	dit_cpu_time_embed(e1, e01, ts + 2, 1, w0, b0, w2, b2, wp, bp, dim, freq, 0, scratch);
	int same = !memcmp(e1, eo, (size_t)dim * sizeof(float)) &&
	           !memcmp(e01, e0o, (size_t)(6 * dim) * sizeof(float));
	dit_tap_add(tap, same, "time_embed nt=1: the bytes of the single-timestep chain",
	            same ? 0.0 : 1.0, 0.0);

	/* nt = 5: rows against nt = 1 runs and the float64 reference */
	dit_cpu_time_embed(e, e0, ts, nt, w0, b0, w2, b2, wp, bp, dim, freq, 0, scratch);
	int64_t differ = 0;
	double err = 0.0;
	double *s64 = dit_doubles_alloc(freq), *h64 = dit_doubles_alloc(dim);
	double *e64 = dit_doubles_alloc(dim), *e064 = dit_doubles_alloc(6 * dim);
	for (int64_t i = 0; i < nt; i++) {
		dit_cpu_time_embed(e1, e01, ts + i, 1, w0, b0, w2, b2, wp, bp, dim, freq, 0,
		                   scratch);
		differ += memcmp(e1, e + i * dim, (size_t)dim * sizeof(float)) != 0;
		differ += memcmp(e01, e0 + i * 6 * dim, (size_t)(6 * dim) * sizeof(float)) != 0;
		int64_t half = freq / 2;
		for (int64_t k = 0; k < half; k++) {
			double a = ts[i] * exp(-((double)k / (double)half) * log(10000.0));
			s64[k] = cos(a);
			s64[half + k] = sin(a);
		}
		for (int64_t j = 0; j < dim; j++) {
			double acc = b0[j];
			for (int64_t k = 0; k < freq; k++)
				acc += (double)w0[j * freq + k] * s64[k];
			h64[j] = dit_ref_act(acc, DIT_ACT_SILU);
		}
		for (int64_t j = 0; j < dim; j++) {
			double acc = b2[j];
			for (int64_t k = 0; k < dim; k++)
				acc += (double)w2[j * dim + k] * h64[k];
			e64[j] = acc;
		}
		for (int64_t j = 0; j < 6 * dim; j++) {
			double acc = bp[j];
			for (int64_t k = 0; k < dim; k++)
				acc += (double)wp[j * dim + k] * dit_ref_act(e64[k], DIT_ACT_SILU);
			e064[j] = acc;
		}
		double er = dit_err_rel(e + i * dim, dim, e64, 1, dim);
		double er0 = dit_err_rel(e0 + i * 6 * dim, 6 * dim, e064, 1, 6 * dim);
		err = er > err || isnan(er) ? er : err;
		err = er0 > err || isnan(er0) ? er0 : err;
	}
	dit_tap_add(tap, differ == 0, "time_embed nt=5: every row the bytes of an nt=1 run",
	            (double)differ, 0.0);
	dit_tap_check(tap, "time_embed nt=5 distinct timesteps vs float64 reference", err,
	              DIT_TOL_GEMM);
	free(w0);
	free(b0);
	free(w2);
	free(b2);
	free(wp);
	free(bp);
	free(scratch);
	free(e);
	free(e0);
	free(e1);
	free(e01);
	free(sin_t);
	free(eo);
	free(e0o);
	free(s64);
	free(h64);
	free(e64);
	free(e064);
}

/* LayerNorm's RMS variant: y = x / sqrt(mean(x^2) + eps), then affine, then the
 * modulation (one vector, or a table row per mod_rows rows), against float64 written
 * from the math; also in place. */
static void dit_layernorm_rms_test(dit_tap *tap, dit_rng *rng)
{
	/* mode: 0 plain, 1 affine, 2 modulation pairs (one vector), 3 modulation pairs
	 * from a table, 4 first terms only, 5 affine and a table */
	static const struct {
		int64_t rows, dim, pad, mod_ld, mod_rows;
		int mode, alias;
		float eps, xadd;
	} cs[] = {
	    {1, 5, 0, 0, 0, 0, 0, 1e-6f, 0.0f},
	    {7, 67, 3, 0, 0, 1, 0, 1e-6f, 3.0f},
	    {33, 130, 0, 0, 0, 2, 0, 1e-6f, -5.0f},
	    {30, 128, 2, 2 * 128 + 5, 1, 3, 0, 1e-6f, 0.5f},
	    {29, 64, 1, 2 * 64, 7, 3, 1, 1e-6f, 0.0f},
	    {13, 33, 0, 0, 0, 4, 0, 1e-6f, 0.25f},
	    {12, 1536, 1, 2 * 1536, 5, 5, 0, 1e-6f, 1.0f},
	    {7, 67, 0, 0, 0, 0, 1, 1e-2f, 0.01f},
	};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t rows = cs[c].rows, dim = cs[c].dim, ld = dim + cs[c].pad;
		int64_t mr = cs[c].mod_rows, mld = cs[c].mod_ld;
		int64_t ntab = mr > 0 ? (rows + mr - 1) / mr : 1,
		        ntf = mr > 0 ? ntab * mld : 2 * dim;
		int mode = cs[c].mode;
		float *x = dit_floats_alloc(rows * ld), *y = dit_floats_alloc(rows * ld);
		float *p = dit_floats_alloc(4 * dim), *tab = dit_floats_alloc(ntf);
		double *ref = dit_doubles_alloc(rows * dim);
		dit_rng_fill(rng, x, rows * ld, 1.0f, cs[c].xadd);
		dit_rng_fill(rng, p, 4 * dim, 0.5f, 0.0f);
		dit_rng_fill(rng, tab, ntf, 0.5f, 0.0f);
		int aff = mode == 1 || mode == 5, mod = mode >= 2,
		    pair = mode == 2 || mode == 3 || mode == 5;
		const float *w = aff ? p : NULL, *b = aff ? p + dim : NULL;
		const float *ha = mod ? p + 2 * dim : NULL, *sa = mod ? p + 3 * dim : NULL;
		const float *hb = pair ? tab : NULL, *sb = pair ? tab + dim : NULL;
		for (int64_t r = 0; r < rows; r++) {
			const float *xr = x + r * ld;
			int64_t tr = mr > 0 ? (r / mr) * mld : 0; /* its table row */
			double ms = 0.0;
			for (int64_t i = 0; i < dim; i++)
				ms += (double)xr[i] * xr[i];
			ms /= (double)dim;
			for (int64_t i = 0; i < dim; i++) {
				double v = xr[i] / sqrt(ms + cs[c].eps);
				if (w)
					v = v * w[i] + b[i];
				if (mod) {
					double sc = (double)sa[i] + (sb ? sb[tr + i] : 0.0);
					double sh = (double)ha[i] + (hb ? hb[tr + i] : 0.0);
					v = v * (1.0 + sc) + sh;
				}
				ref[r * dim + i] = v;
			}
		}
		float *out = cs[c].alias ? x : y;
		if (!cs[c].alias)
			dit_floats_set(y, rows * ld, DIT_SENTINEL);
		dit_cpu_layernorm_rms(out, ld, x, ld, rows, dim, cs[c].eps, w, b, ha, hb, sa, sb,
		                      mr > 0 ? mld : 0, mr);
		double err = dit_err_rel(out, ld, ref, rows, dim);
		if (!cs[c].alias && dit_pad_count_changed(y, ld, rows, dim))
			err = INFINITY;
		char name[160];
		snprintf(name, sizeof(name),
		         "layernorm rms rows=%lld dim=%lld ld=%lld mode=%d mod_rows=%lld eps=%g%s",
		         (long long)rows, (long long)dim, (long long)ld, mode, (long long)mr,
		         (double)cs[c].eps, cs[c].alias ? " y==x" : "");
		dit_tap_check(tap, name, err, DIT_TOL_ELEM);
		free(x);
		free(y);
		free(p);
		free(tab);
		free(ref);
	}
}

/* The split RoPE table against LTX-2's precompute_freqs_cis (SPLIT, middle indices,
 * float64 grid) written out directly: frequency k of n = inner_dim / (2 naxes) is
 * exp(log(theta) k / (n - 1)) pi / 2, the angle of axis a is that times (2 mid / max_pos
 * - 1), laid out k-major after pad = inner_dim/2 - n naxes unrotated pairs, split into
 * heads of hd/2 pairs. Then the rotation of pairs (j, j + hd/2) by it, against float64;
 * the padded pairs must come out unchanged. */
static void dit_rope_split_test(dit_tap *tap, dit_rng *rng)
{
	static const struct {
		int64_t inner, heads;
		int naxes;
		double theta;
	} cs[] = {{64, 2, 3, 10000.0},
	          {32, 2, 1, 10000.0},
	          {8, 1, 3, 10000.0},
	          {48, 3, 3, 500.0},
	          {128, 4, 2, 10000.0}};
	const int64_t L = 11;
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t inner = cs[c].inner, heads = cs[c].heads, hd = inner / heads, np = hd / 2;
		int naxes = cs[c].naxes;
		int64_t n = inner / (2 * naxes), pad = inner / 2 - n * naxes;
		double *pos = dit_doubles_alloc(naxes * L * 2), max_pos[3] = {20.0, 2048.0, 2048.0};
		for (int a = 0; a < naxes; a++)
			for (int64_t l = 0; l < L; l++) { /* token bounds [start, end) */
				double st = (double)((l * (a + 3)) % 17) - (a == 0 ? 3.0 : 0.0);
				pos[(a * L + l) * 2] = st;
				pos[(a * L + l) * 2 + 1] = st + (double)(1 + a);
			}
		double *tab = dit_doubles_alloc(L * inner), *ang = dit_doubles_alloc(L * inner / 2);
		dit_cpu_rope_split_table(tab, pos, L, naxes, max_pos, cs[c].theta, inner, heads);
		double err = 0.0;
		int64_t bad_pad = 0;
		for (int64_t l = 0; l < L; l++)
			for (int64_t q = 0; q < inner / 2; q++) { /* padded index q = h np + j */
				double a = 0.0;
				if (q >= pad) {
					int64_t k = (q - pad) / naxes, ax = (q - pad) % naxes;
					double fk = (n > 1 ? exp(log(cs[c].theta) * (double)k /
					                         (double)(n - 1))
					                   : 1.0) *
					            DIT_PI / 2.0;
					double mid =
					    (pos[(ax * L + l) * 2] + pos[(ax * L + l) * 2 + 1]) /
					    2.0;
					a = fk * (2.0 * mid / max_pos[ax] - 1.0);
				} else {
					bad_pad += tab[(l * inner / 2 + q) * 2] != 1.0 ||
					           tab[(l * inner / 2 + q) * 2 + 1] != 0.0;
				}
				ang[l * inner / 2 + q] = a;
				double ec = fabs(tab[(l * inner / 2 + q) * 2] - cos(a));
				double es = fabs(tab[(l * inner / 2 + q) * 2 + 1] - sin(a));
				err = ec > err ? ec : err;
				err = es > err ? es : err;
			}
		char name[160];
		snprintf(
		    name, sizeof(name),
		    "rope split table inner=%lld heads=%lld naxes=%d theta=%g (n=%lld pad=%lld)",
		    (long long)inner, (long long)heads, naxes, cs[c].theta, (long long)n,
		    (long long)pad);
		/* angles reach theta pi/2 (1.6e4): exp(log) and pow differ by ulps of that */
		dit_tap_check(tap, name, bad_pad ? INFINITY : err, 1e-10);

		int64_t ld = inner + 3;
		float *x = dit_floats_alloc(L * ld);
		double *ref = dit_doubles_alloc(L * inner);
		dit_rng_fill(rng, x, L * ld, 2.0f, 0.0f);
		for (int64_t r = 0; r + 1 < L; r++)
			for (int64_t i = inner; i < ld; i++)
				x[r * ld + i] = DIT_SENTINEL;
		for (int64_t r = 0; r < L; r++)
			for (int64_t h = 0; h < heads; h++)
				for (int64_t j = 0; j < np; j++) {
					double a = ang[r * inner / 2 + h * np + j];
					double x1 = x[r * ld + h * hd + j],
					       x2 = x[r * ld + h * hd + j + np];
					ref[r * inner + h * hd + j] = x1 * cos(a) - x2 * sin(a);
					ref[r * inner + h * hd + j + np] =
					    x2 * cos(a) + x1 * sin(a);
				}
		float *x0 = dit_floats_alloc(L * ld);
		memcpy(x0, x, (size_t)(L * ld) * sizeof(float));
		dit_cpu_rope_split_apply(x, ld, L, heads, hd, tab);
		err = dit_err_rel(x, ld, ref, L, inner);
		if (dit_pad_count_changed(x, ld, L, inner))
			err = INFINITY;
		for (int64_t r = 0; r < L; r++) /* the unrotated pairs: head 0, j < pad */
			for (int64_t j = 0; j < pad && j < np; j++)
				if (x[r * ld + j] != x0[r * ld + j] ||
				    x[r * ld + j + np] != x0[r * ld + j + np])
					err = INFINITY;
		snprintf(name, sizeof(name), "rope split apply inner=%lld heads=%lld ld=%lld",
		         (long long)inner, (long long)heads, (long long)ld);
		dit_tap_check(tap, name, err, DIT_TOL_ELEM);
		free(pos);
		free(tab);
		free(ang);
		free(x);
		free(x0);
		free(ref);
	}
}

/* e0 of nproj * dim floats (LTX-2: 9 with cross-attention AdaLN): nproj 9 against
 * float64, nproj 6 the same bytes as nproj 0. */
static void dit_time_embed_nproj_test(dit_tap *tap, dit_rng *rng)
{
	const int64_t dim = 16, freq = 32, nt = 3, np = 9;
	const double ts[] = {999.0, 0.0, 250.5};
	float *w0 = dit_floats_alloc(dim * freq), *b0 = dit_floats_alloc(dim);
	float *w2 = dit_floats_alloc(dim * dim), *b2 = dit_floats_alloc(dim);
	float *wp = dit_floats_alloc(np * dim * dim), *bp = dit_floats_alloc(np * dim);
	dit_rng_fill(rng, w0, dim * freq, 0.3f, 0.0f);
	dit_rng_fill(rng, b0, dim, 0.3f, 0.0f);
	dit_rng_fill(rng, w2, dim * dim, 0.3f, 0.0f);
	dit_rng_fill(rng, b2, dim, 0.3f, 0.0f);
	dit_rng_fill(rng, wp, np * dim * dim, 0.3f, 0.0f);
	dit_rng_fill(rng, bp, np * dim, 0.3f, 0.0f);
	float *scratch = dit_floats_alloc(nt * (freq + dim));
	float *e = dit_floats_alloc(nt * dim), *e0 = dit_floats_alloc(nt * np * dim + 1);
	e0[nt * np * dim] = DIT_SENTINEL;
	dit_cpu_time_embed(e, e0, ts, nt, w0, b0, w2, b2, wp, bp, dim, freq, np, scratch);
	double err = e0[nt * np * dim] == DIT_SENTINEL ? 0.0 : INFINITY;
	double *s64 = dit_doubles_alloc(freq), *h64 = dit_doubles_alloc(dim);
	double *e64 = dit_doubles_alloc(dim), *e064 = dit_doubles_alloc(np * dim);
	for (int64_t i = 0; i < nt; i++) {
		int64_t half = freq / 2;
		for (int64_t k = 0; k < half; k++) {
			double a = ts[i] * exp(-((double)k / (double)half) * log(10000.0));
			s64[k] = cos(a);
			s64[half + k] = sin(a);
		}
		for (int64_t j = 0; j < dim; j++) {
			double acc = b0[j];
			for (int64_t k = 0; k < freq; k++)
				acc += (double)w0[j * freq + k] * s64[k];
			h64[j] = dit_ref_act(acc, DIT_ACT_SILU);
		}
		for (int64_t j = 0; j < dim; j++) {
			double acc = b2[j];
			for (int64_t k = 0; k < dim; k++)
				acc += (double)w2[j * dim + k] * h64[k];
			e64[j] = acc;
		}
		for (int64_t j = 0; j < np * dim; j++) {
			double acc = bp[j];
			for (int64_t k = 0; k < dim; k++)
				acc += (double)wp[j * dim + k] * dit_ref_act(e64[k], DIT_ACT_SILU);
			e064[j] = acc;
		}
		double er = dit_err_rel(e + i * dim, dim, e64, 1, dim);
		double er0 = dit_err_rel(e0 + i * np * dim, np * dim, e064, 1, np * dim);
		err = er > err || isnan(er) ? er : err;
		err = er0 > err || isnan(er0) ? er0 : err;
	}
	dit_tap_check(tap, "time_embed nproj=9 nt=3 vs float64 reference (e0 rows of 9 dim)", err,
	              DIT_TOL_GEMM);
	/* nproj 6 and 0: the same bytes */
	float *ea = dit_floats_alloc(nt * dim), *e0a = dit_floats_alloc(nt * 6 * dim);
	dit_cpu_time_embed(e, e0, ts, nt, w0, b0, w2, b2, wp, bp, dim, freq, 0, scratch);
	dit_cpu_time_embed(ea, e0a, ts, nt, w0, b0, w2, b2, wp, bp, dim, freq, 6, scratch);
	int same = !memcmp(e, ea, (size_t)(nt * dim) * sizeof(float)) &&
	           !memcmp(e0, e0a, (size_t)(nt * 6 * dim) * sizeof(float));
	dit_tap_add(tap, same, "time_embed nproj=6: the bytes of nproj=0", same ? 0.0 : 1.0, 0.0);
	free(w0);
	free(b0);
	free(w2);
	free(b2);
	free(wp);
	free(bp);
	free(scratch);
	free(e);
	free(e0);
	free(ea);
	free(e0a);
	free(s64);
	free(h64);
	free(e64);
	free(e064);
}

/* head_gate and add_rows against float64: o *= 2 / (1 + exp(-logit)) per head (logits
 * from -30 to 30, the padding kept), x[r] += v. */
static void dit_head_gate_test(dit_tap *tap, dit_rng *rng)
{
	static const struct {
		int64_t rows, heads, hd, pado, padg;
	} cs[] = {{1, 1, 1, 0, 0}, {7, 3, 16, 5, 2}, {33, 32, 128, 0, 1}, {130, 2, 7, 3, 0}};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t rows = cs[c].rows, heads = cs[c].heads, hd = cs[c].hd, w = heads * hd;
		int64_t ldo = w + cs[c].pado, ldg = heads + cs[c].padg;
		float *o = dit_floats_alloc(rows * ldo), *gl = dit_floats_alloc(rows * ldg);
		double *ref = dit_doubles_alloc(rows * w);
		dit_rng_fill(rng, o, rows * ldo, 2.0f, 0.0f);
		for (int64_t r = 0; r + 1 < rows; r++)
			for (int64_t i = w; i < ldo; i++)
				o[r * ldo + i] = DIT_SENTINEL;
		dit_rng_fill(rng, gl, rows * ldg, 30.0f, 0.0f);
		for (int64_t r = 0; r < rows; r++)
			for (int64_t i = 0; i < w; i++)
				ref[r * w + i] = o[r * ldo + i] * 2.0 /
				                 (1.0 + exp(-(double)gl[r * ldg + i / hd]));
		dit_cpu_head_gate(o, ldo, gl, ldg, rows, heads, hd);
		double err = dit_err_rel(o, ldo, ref, rows, w);
		if (dit_pad_count_changed(o, ldo, rows, w))
			err = INFINITY;
		char name[128];
		snprintf(name, sizeof(name),
		         "head_gate rows=%lld heads=%lld hd=%lld ldo=%lld ldg=%lld",
		         (long long)rows, (long long)heads, (long long)hd, (long long)ldo,
		         (long long)ldg);
		dit_tap_check(tap, name, err, DIT_TOL_ELEM);
		free(o);
		free(gl);
		free(ref);
	}
	/* one vector for every row (v_ld 0), then a table of rows (v_ld 43) */
	const int64_t rows = 9, dim = 37, ld = 41;
	for (int64_t v_ld = 0; v_ld <= 43; v_ld += 43) {
		float *x = dit_floats_alloc(rows * ld), *v = dit_floats_alloc(rows * 43);
		double *ref = dit_doubles_alloc(rows * dim);
		dit_rng_fill(rng, x, rows * ld, 1.0f, 0.0f);
		for (int64_t r = 0; r + 1 < rows; r++)
			for (int64_t i = dim; i < ld; i++)
				x[r * ld + i] = DIT_SENTINEL;
		dit_rng_fill(rng, v, rows * 43, 1.0f, 0.0f);
		for (int64_t r = 0; r < rows; r++)
			for (int64_t j = 0; j < dim; j++)
				ref[r * dim + j] = (double)x[r * ld + j] + v[r * v_ld + j];
		dit_cpu_add_rows(x, ld, v, v_ld, rows, dim);
		double err = dit_err_rel(x, ld, ref, rows, dim);
		if (dit_pad_count_changed(x, ld, rows, dim))
			err = INFINITY;
		dit_tap_check(tap,
		              v_ld ? "add_rows rows=9 dim=37 ld=41 v_ld=43"
		                   : "add_rows rows=9 dim=37 ld=41",
		              err, DIT_TOL_ELEM);
		free(x);
		free(v);
		free(ref);
	}
}

/* The exact (erf) GELU: act against float64 0.5 x erfc(-x / sqrt 2) (erfc: no
 * cancellation for negative x) within an fp32 rounding per element, and the linear
 * layer's fused GELU (fp32 and bf16 weights, with and without bias) against float64
 * and bitwise against linear without activation followed by dit_cpu_act. Its own
 * random stream, so that the inputs of the other checks stay as they were. */
static void dit_gelu_test(dit_tap *tap)
{
	dit_rng rng = {0x6e1e2025ull};
	const int64_t n = 1003;
	float *x = dit_floats_alloc(n);
	double *ref = dit_doubles_alloc(n);
	dit_rng_fill(&rng, x, n, 8.0f, 0.0f);
	static const float special[] = {0.0f,   -0.0f, 20.0f, -20.0f, 1e-6f, -1e-6f,
	                                1e-30f, 3.0f,  -3.0f, 0.5f,   -0.5f, -5.5f};
	for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
		x[i] = special[i];
	for (int64_t i = 0; i < n; i++)
		ref[i] = 0.5 * x[i] * erfc(-(double)x[i] / sqrt(2.0));
	dit_cpu_act(x, n, DIT_ACT_GELU);
	dit_tap_check(tap, "act gelu (erf) n=1003", dit_err_rel(x, n, ref, 1, n), DIT_TOL_ELEM);
	/* per element: one fp32 rounding (2^-24 |ref|) plus 1e-15 absolute: below x = -5
	 * the cancellation in 1 + erf costs float64 bits (~1e-16 |x|) */
	double worst = 0.0;
	for (int64_t i = 0; i < n; i++) {
		double e = fabs((double)x[i] - ref[i]) / (ldexp(fabs(ref[i]), -24) + 1e-15);
		worst = isnan(x[i]) ? INFINITY : e > worst ? e : worst;
	}
	dit_tap_check(tap, "act gelu (erf): |x - ref| <= 2^-24 |ref| + 1e-15 per element", worst,
	              1.0);
	free(x);
	free(ref);

	static const struct {
		int64_t m, n, k, padx, pady;
		int bias;
	} cs[] = {{1, 5, 3, 0, 0, 1},
	          {9, 37, 70, 2, 3, 1},
	          {40, 64, 31, 0, 0, 0},
	          {33, 96, 257, 1, 5, 1}};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t m = cs[c].m, nn = cs[c].n, k = cs[c].k;
		int64_t ldx = k + cs[c].padx, ldy = nn + cs[c].pady;
		float *xx = dit_floats_alloc(m * ldx), *w = dit_floats_alloc(nn * k);
		float *b = dit_floats_alloc(nn), *y = dit_floats_alloc(m * ldy);
		float *y2 = dit_floats_alloc(m * ldy), *tile = dit_floats_alloc(nn * k);
		uint16_t *w16 = dit_mem_alloc((size_t)(nn * k) * sizeof *w16);
		double *r = dit_doubles_alloc(m * nn);
		dit_rng_fill(&rng, xx, m * ldx, 1.0f, 0.0f);
		dit_rng_fill(&rng, w, nn * k, 1.0f, 0.0f);
		dit_rng_fill(&rng, b, nn, 1.0f, 0.0f);
		for (int64_t i = 0; i < nn * k; i++) { /* bf16-exact weights: both paths alike */
			w16[i] = dit_bf16_from_f32(w[i]);
			w[i] = dit_bf16_to_f32(w16[i]);
		}
		const float *bp = cs[c].bias ? b : NULL;
		dit_ref_linear(r, xx, ldx, w, bp, m, nn, k, DIT_ACT_GELU);
		char name[128];
		for (int bf = 0; bf < 2; bf++) {
			dit_floats_set(y, m * ldy, DIT_SENTINEL);
			if (bf)
				dit_cpu_linear_bf16w(y, ldy, xx, ldx, w16, bp, m, nn, k,
				                     DIT_ACT_GELU, tile, (size_t)(nn * k));
			else
				dit_cpu_linear(y, ldy, xx, ldx, w, bp, m, nn, k, DIT_ACT_GELU);
			double err = dit_err_rel(y, ldy, r, m, nn);
			if (dit_pad_count_changed(y, ldy, m, nn))
				err = INFINITY;
			snprintf(name, sizeof(name),
			         "linear%s m=%lld n=%lld k=%lld ldx=%lld ldy=%lld bias=%d act=gelu",
			         bf ? " bf16" : "", (long long)m, (long long)nn, (long long)k,
			         (long long)ldx, (long long)ldy, cs[c].bias);
			dit_tap_check(tap, name, err, DIT_TOL_GEMM);
		}
		/* fused epilogue == linear without activation, then act */
		dit_floats_set(y2, m * ldy, DIT_SENTINEL);
		dit_cpu_linear(y2, ldy, xx, ldx, w, bp, m, nn, k, DIT_ACT_NONE);
		for (int64_t i = 0; i < m; i++)
			dit_cpu_act(y2 + i * ldy, nn, DIT_ACT_GELU);
		dit_floats_set(y, m * ldy, DIT_SENTINEL);
		dit_cpu_linear(y, ldy, xx, ldx, w, bp, m, nn, k, DIT_ACT_GELU);
		int same = !memcmp(y, y2, (size_t)(m * ldy) * sizeof(float));
		snprintf(name, sizeof(name),
		         "linear m=%lld n=%lld k=%lld act=gelu is linear then act gelu (bitwise)",
		         (long long)m, (long long)nn, (long long)k);
		dit_tap_check(tap, name, same ? 0.0 : 1.0, 0.0);
		free(xx);
		free(w);
		free(b);
		free(y);
		free(y2);
		free(tile);
		free(w16);
		free(r);
	}
}

/* Cosmos-Predict2.5's RoPE table (dit_cpu_rope_cosmos_table) against the formula of
 * VideoRopePosition3DEmb written out here (the axis sizes given, exp/log powers), and
 * its rotation by dit_cpu_rope_split_apply (what qk_norm's rope_split runs) against
 * the rotate-half form out = x cos + cat(-x2, x1) sin with angles cat(ang, ang). */
static void dit_rope_cosmos_test(dit_tap *tap)
{
	static const struct {
		int64_t hd, heads, T, H, W, d[3]; /* d: real sizes of the t, h, w axes */
		double ratio[3];
	} cs[] = {{32, 2, 3, 4, 5, {12, 10, 10}, {1.0, 3.0, 3.0}},
	          {128, 3, 2, 7, 9, {44, 42, 42}, {1.0, 3.0, 3.0}},
	          {32, 1, 4, 3, 2, {12, 10, 10}, {2.0, 3.0, 1.5}}};
	dit_rng rng = {0x636f736d6f73ull};
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t hd = cs[c].hd, heads = cs[c].heads, half = hd / 2, dim = heads * hd;
		int64_t T = cs[c].T, H = cs[c].H, W = cs[c].W, L = T * H * W;
		double *tab = dit_doubles_alloc(L * dim), *ang = dit_doubles_alloc(L * half);
		for (int64_t i = 0; i < L * dim; i++)
			tab[i] = NAN; /* every entry must be written */
		dit_cpu_rope_cosmos_table(tab, T, H, W, hd, heads, cs[c].ratio);
		double err = 0.0;
		for (int64_t t = 0; t < T; t++)
			for (int64_t h = 0; h < H; h++)
				for (int64_t w = 0; w < W; w++) {
					int64_t l = (t * H + h) * W + w, pos[3] = {t, h, w}, j = 0;
					for (int a = 0; a < 3; a++) {
						double da = (double)cs[c].d[a];
						double lth = log(10000.0) +
						             log(cs[c].ratio[a]) * da / (da - 2.0);
						for (int64_t i = 0; i < cs[c].d[a] / 2; i++, j++)
							ang[l * half + j] =
							    (double)pos[a] *
							    exp(-(2.0 * (double)i / da) * lth);
					}
					if (j != half)
						err = INFINITY;
					for (int64_t hh = 0; hh < heads; hh++)
						for (j = 0; j < half; j++) {
							const double *e =
							    tab + ((l * heads + hh) * half + j) * 2;
							double a = ang[l * half + j];
							double ec = fabs(e[0] - cos(a)),
							       es = fabs(e[1] - sin(a));
							err = isnan(e[0]) || isnan(e[1]) ? INFINITY
							                                 : err;
							err = ec > err ? ec : err;
							err = es > err ? es : err;
						}
				}
		char name[160];
		snprintf(name, sizeof(name),
		         "rope cosmos table hd=%lld (t/h/w %lld/%lld/%lld) heads=%lld "
		         "grid=%lldx%lldx%lld "
		         "ratio=%g/%g/%g",
		         (long long)hd, (long long)cs[c].d[0], (long long)cs[c].d[1],
		         (long long)cs[c].d[2], (long long)heads, (long long)T, (long long)H,
		         (long long)W, cs[c].ratio[0], cs[c].ratio[1], cs[c].ratio[2]);
		dit_tap_check(tap, name, err, 1e-12);

		int64_t ld = dim + 3;
		float *x = dit_floats_alloc(L * ld);
		double *ref = dit_doubles_alloc(L * dim);
		dit_rng_fill(&rng, x, L * ld, 2.0f, 0.0f);
		for (int64_t r = 0; r + 1 < L; r++)
			for (int64_t i = dim; i < ld; i++)
				x[r * ld + i] = DIT_SENTINEL;
		for (int64_t r = 0; r < L; r++)
			for (int64_t hh = 0; hh < heads; hh++) {
				const float *xh = x + r * ld + hh * hd;
				for (int64_t k = 0; k < hd;
				     k++) { /* rotate-half, angles cat(a, a) */
					double a = ang[r * half + k % half];
					double rot =
					    k < half ? -(double)xh[k + half] : xh[k - half];
					ref[r * dim + hh * hd + k] = xh[k] * cos(a) + rot * sin(a);
				}
			}
		dit_cpu_rope_split_apply(x, ld, L, heads, hd, tab);
		err = dit_err_rel(x, ld, ref, L, dim);
		if (dit_pad_count_changed(x, ld, L, dim))
			err = INFINITY;
		snprintf(name, sizeof(name),
		         "rope cosmos split apply hd=%lld heads=%lld: x cos + cat(-x2, x1) sin",
		         (long long)hd, (long long)heads);
		dit_tap_check(tap, name, err, DIT_TOL_ELEM);
		free(tab);
		free(ang);
		free(x);
		free(ref);
	}
}

int main(void)
{
	dit_tap *tap = dit_mem_alloc(sizeof(*tap));
	dit_rng rng = {0x5eed2024ull};
	tap->n = 0;
	tap->failed = 0;
	dit_act_test(tap, &rng);
	dit_linear_test(tap, &rng);
	dit_bf16_test(tap);
	dit_linear_bf16_test(tap, &rng);
	dit_wdt_decode_test(tap);
	dit_linear_wdt_test(tap, &rng);
	dit_layernorm_test(tap, &rng);
	dit_rmsnorm_test(tap, &rng);
	dit_rope_test(tap, &rng);
	dit_rope_params_test(tap);
	dit_attention_test(tap, &rng);
	dit_attention_nan_test(tap, &rng);
	dit_residual_test(tap, &rng);
	dit_timestep_test(tap);
	dit_patchify_test(tap);
	dit_lincomb_test(tap, &rng);
	dit_cfg_test(tap, &rng);
	dit_layernorm_table_test(tap, &rng);
	dit_residual_table_test(tap, &rng);
	dit_rmsnorm_group_test(tap, &rng);
	dit_attention_valid_test(tap, &rng);
	dit_copy2d_test(tap, &rng);
	dit_time_embed_test(tap, &rng);
	dit_layernorm_rms_test(tap, &rng);
	dit_rope_split_test(tap, &rng);
	dit_time_embed_nproj_test(tap, &rng);
	dit_head_gate_test(tap, &rng);
	dit_gelu_test(tap);
	dit_rope_cosmos_test(tap);
	dit_tap_print(tap);
	int rc = tap->failed ? 1 : 0;
	free(tap);
	return rc;
}
