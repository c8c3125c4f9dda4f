/* Every vector ISA path of the CPU kernels this CPU runs (codelets/cpu/dit_cpu_isa.h)
 * against the scalar path on random inputs of awkward sizes: odd dims, lengths that
 * are not a multiple of any vector width, lk not a multiple of the key tile, lq below
 * the query tile, several heads, padded row strides (the padding must stay as it
 * was). Each op has a stated tolerance, max |isa - scalar| / max |scalar| over the
 * block (0: the same bytes); every path is also run twice on the same inputs with
 * different stale scratch and must give identical bytes. Paths the CPU (or the build)
 * cannot run are skipped with the reason. Output is TAP. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_bf16.h"
#include "dit_cpu_isa.h"

#define DIT_TEST_MAX 600
#define DIT_LINE_MAX 240
#define DIT_SENTINEL -12345.0f

/* the tolerances, relative to max |scalar| over the checked block */
/* tile sizes and the exp differ: fp32 sums in another order (2.5e-6 seen at lk 70) */
#define DIT_TOL_ATT  5e-6
#define DIT_TOL_NORM 1e-6 /* float64 statistics summed in another order: ~1 ulp */
#define DIT_TOL_ACT  2e-6 /* the exp with FMA, SiLU's formula for negative inputs */
#define DIT_TOL_SAME 0.0  /* the scalar path's own operations: the same bytes */

#include "dit_tap.h"

/* ---- random inputs (splitmix64), buffers ---- */

static uint64_t dit_rng_s = 0x15a2024ull;

static double dit_rng_uniform(void) /* [-1, 1] */
{
	uint64_t z = (dit_rng_s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static float *dit_floats(int64_t n)
{
	float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

/* x[rows, ld]: [rows, cols] uniform in [add - mul, add + mul], the padding
 * DIT_SENTINEL */
static float *dit_floats_rand(int64_t rows, int64_t cols, int64_t ld, double mul, double add)
{
	float *x = dit_floats(rows * ld);
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < ld; c++)
			x[r * ld + c] =
			    c < cols ? (float)(add + mul * dit_rng_uniform()) : DIT_SENTINEL;
	return x;
}

static float *dit_floats_copy(const float *x, int64_t n)
{
	float *y = dit_floats(n);
	memcpy(y, x, (size_t)n * sizeof(float));
	return y;
}

/* max |got - ref| / max |ref| over [rows, cols] (stride ld); infinity when a NaN
 * differs from ref's, the padding [cols, ld) changed or got is not bitwise ref while
 * tol is 0 */
static double dit_err(const float *got, const float *ref, int64_t rows, int64_t cols, int64_t ld,
                      double tol)
{
	double emax = 0.0, rmax = 0.0;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < ld; c++) {
			float g = got[r * ld + c], f = ref[r * ld + c];
			if (c >= cols) {
				if (memcmp(&g, &f, sizeof g))
					return INFINITY;
				continue;
			}
			if (isnan(g) || isnan(f)) {
				if (isnan(g) != isnan(f))
					return INFINITY;
				continue;
			}
			double e = fabs((double)g - (double)f);
			emax = e > emax ? e : emax;
			rmax = fabs((double)f) > rmax ? fabs((double)f) : rmax;
		}
	if (tol == 0.0)
		return memcmp(got, ref, (size_t)(rows * ld) * sizeof(float)) ? INFINITY : 0.0;
	return rmax > 0.0 ? emax / rmax : emax;
}

/* the check of one ISA path's result against scalar's, and of its second run */
static void dit_check(dit_tap *tap, const dit_cpu_isa_ops *ops, const char *what, const float *got,
                      const float *again, const float *ref, int64_t rows, int64_t cols, int64_t ld,
                      double tol)
{
	char name[DIT_LINE_MAX - 60];
	snprintf(name, sizeof name, "%s %s vs scalar", dit_cpu_isa_name(ops->isa), what);
	dit_tap_add(tap, dit_err(got, ref, rows, cols, ld, tol) <= tol, name,
	            dit_err(got, ref, rows, cols, ld, tol), tol);
	if (again) {
		int same = !memcmp(got, again, (size_t)(rows * ld) * sizeof(float));
		snprintf(name, sizeof name, "%s %s deterministic (bitwise)",
		         dit_cpu_isa_name(ops->isa), what);
		dit_tap_add(tap, same, name, same ? 0.0 : 1.0, 0.0);
	}
}

/* ---- the ops ---- */

static void dit_attention_case(dit_tap *tap, const dit_cpu_isa_ops *sc, const dit_cpu_isa_ops *ops,
                               int64_t lq, int64_t lk, int64_t heads, int64_t hd, int64_t pad,
                               double qmul)
{
	int64_t w = heads * hd, ldq = w + pad, ldk = w + 2 * pad, ldv = w + 3 * pad;
	int64_t ldo = w + pad + 1;
	float *q = dit_floats_rand(lq, w, ldq, qmul, 0.0);
	float *k = dit_floats_rand(lk, w, ldk, 1.0, 0.0);
	float *v = dit_floats_rand(lk, w, ldv, 1.0, 0.0);
	float *o0 = dit_floats_rand(lq, 0, ldo, 0.0, 0.0); /* all sentinel */
	float *o1 = dit_floats_copy(o0, lq * ldo), *o2 = dit_floats_copy(o0, lq * ldo);
	size_t ns = dit_cpu_attention_scratch(hd);
	float *s = dit_floats((int64_t)ns);
	float scale = (float)(1.0 / sqrt((double)hd));
	for (size_t i = 0; i < ns; i++)
		s[i] = NAN; /* nothing may read stale scratch */
	sc->attention(o0, ldo, q, ldq, k, ldk, v, ldv, lq, lk, heads, hd, scale, s);
	ops->attention(o1, ldo, q, ldq, k, ldk, v, ldv, lq, lk, heads, hd, scale, s);
	for (size_t i = 0; i < ns; i++)
		s[i] = 7.0f;
	ops->attention(o2, ldo, q, ldq, k, ldk, v, ldv, lq, lk, heads, hd, scale, s);
	char what[128];
	snprintf(what, sizeof what, "attention lq=%lld lk=%lld heads=%lld hd=%lld pad=%lld",
	         (long long)lq, (long long)lk, (long long)heads, (long long)hd, (long long)pad);
	dit_check(tap, ops, what, o1, o2, o0, lq, w, ldo, DIT_TOL_ATT);
	free(q);
	free(k);
	free(v);
	free(o0);
	free(o1);
	free(o2);
	free(s);
}

/* A NaN key of head 0 makes all of head 0 NaN and leaves head 1 finite. */
static void dit_attention_nan(dit_tap *tap, const dit_cpu_isa_ops *ops)
{
	const int64_t lq = 40, lk = 700, heads = 2, hd = 16, w = heads * hd;
	float *q = dit_floats_rand(lq, w, w, 1.0, 0.0), *k = dit_floats_rand(lk, w, w, 1.0, 0.0);
	float *v = dit_floats_rand(lk, w, w, 1.0, 0.0), *o = dit_floats(lq * w);
	float *s = dit_floats((int64_t)dit_cpu_attention_scratch(hd));
	k[600 * w + 3] = NAN; /* past the first key tile */
	ops->attention(o, w, q, w, k, w, v, w, lq, lk, heads, hd, 0.25f, s);
	int64_t bad = 0;
	for (int64_t i = 0; i < lq * w; i++)
		bad += i % w < hd ? !isnan(o[i]) : !isfinite(o[i]);
	char name[96];
	snprintf(name, sizeof name, "%s attention NaN key propagates to its head only",
	         dit_cpu_isa_name(ops->isa));
	dit_tap_add(tap, bad == 0, name, (double)bad, 0.0);
	free(q);
	free(k);
	free(v);
	free(o);
	free(s);
}

static void dit_attention_test(dit_tap *tap, const dit_cpu_isa_ops *sc, const dit_cpu_isa_ops *ops)
{
	static const struct {
		int64_t lq, lk, heads, hd, pad;
		double qmul;
	} cs[] = {
	    {1, 1, 1, 8, 0, 1.0},       {7, 255, 2, 16, 3, 4.0},     {33, 513, 3, 64, 1, 2.0},
	    {130, 600, 2, 128, 8, 1.0}, {200, 1100, 1, 128, 0, 1.0}, {5, 17, 3, 33, 2, 8.0},
	    {129, 512, 2, 127, 1, 2.0}, {300, 70, 2, 24, 0, 30.0},   {64, 1025, 1, 72, 5, 1.0},
	};
	for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++)
		dit_attention_case(tap, sc, ops, cs[c].lq, cs[c].lk, cs[c].heads, cs[c].hd,
		                   cs[c].pad, cs[c].qmul);
	dit_attention_nan(tap, ops);
}

/* LayerNorm: plain, affine, one modulation vector, pairs with a per-row table, in
 * place */
static void dit_layernorm_test(dit_tap *tap, const dit_cpu_isa_ops *sc, const dit_cpu_isa_ops *ops)
{
	static const int64_t dims[] = {1, 7, 33, 100, 1541};
	for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
		for (int mode = 0; mode < 4; mode++) {
			int64_t dim = dims[d], rows = 5, ld = dim + 3, mrows = 2, mld = dim + 1;
			float *x = dit_floats_rand(rows, dim, ld, 2.0, 0.7);
			float *y0 = dit_floats_rand(rows, 0, ld, 0.0, 0.0);
			float *wb = dit_floats_rand(2, dim, dim, 1.0, 0.0);
			float *md = dit_floats_rand(2 + 2 * 3, dim, dim, 0.5, 0.0);
			float *tb = dit_floats_rand(3, mld, mld, 0.5, 0.0); /* 3 table rows */
			const float *w = mode == 1 ? wb : NULL, *b = mode == 1 ? wb + dim : NULL;
			const float *sha = mode >= 2 ? md : NULL,
			            *sca = mode >= 2 ? md + dim : NULL;
			const float *shb = mode == 3 ? tb : NULL, *scb = mode == 3 ? tb + 1 : NULL;
			float *y1 = dit_floats_copy(y0, rows * ld),
			      *y2 = dit_floats_copy(y0, rows * ld);
			if (mode == 3) { /* in place */
				memcpy(y0, x, (size_t)(rows * ld) * sizeof(float));
				memcpy(y1, x, (size_t)(rows * ld) * sizeof(float));
				memcpy(y2, x, (size_t)(rows * ld) * sizeof(float));
			}
			sc->layernorm(y0, ld, mode == 3 ? y0 : x, ld, rows, dim, 1e-6f, w, b, sha,
			              shb, sca, scb, mld, mrows);
			ops->layernorm(y1, ld, mode == 3 ? y1 : x, ld, rows, dim, 1e-6f, w, b, sha,
			               shb, sca, scb, mld, mrows);
			ops->layernorm(y2, ld, mode == 3 ? y2 : x, ld, rows, dim, 1e-6f, w, b, sha,
			               shb, sca, scb, mld, mrows);
			static const char *const mname[] = {"plain", "affine", "modulation",
			                                    "modulation table, in place"};
			char what[96];
			snprintf(what, sizeof what, "layernorm dim=%lld %s", (long long)dim,
			         mname[mode]);
			dit_check(tap, ops, what, y1, y2, y0, rows, dim, ld, DIT_TOL_NORM);
			free(x);
			free(y0);
			free(y1);
			free(y2);
			free(wb);
			free(md);
			free(tb);
		}
}

static void dit_rmsnorm_test(dit_tap *tap, const dit_cpu_isa_ops *sc, const dit_cpu_isa_ops *ops)
{
	static const struct {
		int64_t dim, group;
		int weight;
	} cs[] = {{1, 0, 1},      {7, 0, 0},   {33, 0, 1},  {1541, 0, 1},
	          {1541, 128, 1}, {100, 7, 1}, {45, 16, 0}, {128, 128, 1}};
	for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
		int64_t dim = cs[c].dim, g = cs[c].group, rows = 4, ld = dim + 5;
		int64_t wn = g > 0 && g < dim ? g : dim;
		float *x0 = dit_floats_rand(rows, dim, ld, 3.0, 0.2);
		float *w = cs[c].weight ? dit_floats_rand(1, wn, wn, 1.0, 0.5) : NULL;
		float *x1 = dit_floats_copy(x0, rows * ld), *x2 = dit_floats_copy(x0, rows * ld);
		if (g) {
			sc->rmsnorm_group(x0, ld, rows, dim, g, 1e-6f, w);
			ops->rmsnorm_group(x1, ld, rows, dim, g, 1e-6f, w);
			ops->rmsnorm_group(x2, ld, rows, dim, g, 1e-6f, w);
		} else {
			sc->rmsnorm(x0, ld, rows, dim, 1e-6f, w);
			ops->rmsnorm(x1, ld, rows, dim, 1e-6f, w);
			ops->rmsnorm(x2, ld, rows, dim, 1e-6f, w);
		}
		char what[96];
		snprintf(what, sizeof what, "rmsnorm%s dim=%lld group=%lld%s", g ? "_group" : "",
		         (long long)dim, (long long)g, w ? "" : " no weight");
		dit_check(tap, ops, what, x1, x2, x0, rows, dim, ld, DIT_TOL_NORM);
		free(x0);
		free(x1);
		free(x2);
		free(w);
	}
}

static void dit_rope_test(dit_tap *tap, const dit_cpu_isa_ops *sc, const dit_cpu_isa_ops *ops)
{
	static const struct {
		int64_t rows, heads, hd;
	} cs[] = {{3, 1, 128}, {5, 3, 10}, {4, 2, 7}, {2, 12, 128}, {7, 2, 34}, {1, 1, 2}};
	for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
		int64_t rows = cs[c].rows, heads = cs[c].heads, hd = cs[c].hd;
		int64_t w = heads * hd, ld = w + 3;
		double *tab = malloc((size_t)(rows * hd) * sizeof(double));
		for (int64_t i = 0; i < rows * hd / 2; i++) {
			double a = 3.0 * dit_rng_uniform();
			tab[2 * i] = cos(a);
			tab[2 * i + 1] = sin(a);
		}
		float *x0 = dit_floats_rand(rows, w, ld, 2.0, 0.0);
		float *x1 = dit_floats_copy(x0, rows * ld), *x2 = dit_floats_copy(x0, rows * ld);
		sc->rope_apply(x0, ld, rows, heads, hd, tab);
		ops->rope_apply(x1, ld, rows, heads, hd, tab);
		ops->rope_apply(x2, ld, rows, heads, hd, tab);
		char what[96];
		snprintf(what, sizeof what, "rope_apply rows=%lld heads=%lld head_dim=%lld",
		         (long long)rows, (long long)heads, (long long)hd);
		dit_check(tap, ops, what, x1, x2, x0, rows, w, ld, DIT_TOL_SAME);
		free(tab);
		free(x0);
		free(x1);
		free(x2);
	}
}

/* LayerNorm's RMS variant (LTX-2): plain, affine, one modulation vector, pairs with a
 * per-row table in place */
static void dit_layernorm_rms_test(dit_tap *tap, const dit_cpu_isa_ops *sc,
                                   const dit_cpu_isa_ops *ops)
{
	static const int64_t dims[] = {7, 100, 1541};
	for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
		for (int mode = 0; mode < 4; mode++) {
			int64_t dim = dims[d], rows = 5, ld = dim + 3, mrows = 2, mld = dim + 1;
			float *x = dit_floats_rand(rows, dim, ld, 2.0, 0.7);
			float *y0 = dit_floats_rand(rows, 0, ld, 0.0, 0.0);
			float *wb = dit_floats_rand(2, dim, dim, 1.0, 0.0);
			float *md = dit_floats_rand(2, dim, dim, 0.5, 0.0);
			float *tb = dit_floats_rand(3, mld, mld, 0.5, 0.0); /* 3 table rows */
			const float *w = mode == 1 ? wb : NULL, *b = mode == 1 ? wb + dim : NULL;
			const float *sha = mode >= 2 ? md : NULL,
			            *sca = mode >= 2 ? md + dim : NULL;
			const float *shb = mode == 3 ? tb : NULL, *scb = mode == 3 ? tb + 1 : NULL;
			float *y1 = dit_floats_copy(y0, rows * ld),
			      *y2 = dit_floats_copy(y0, rows * ld);
			if (mode == 3) { /* in place */
				memcpy(y0, x, (size_t)(rows * ld) * sizeof(float));
				memcpy(y1, x, (size_t)(rows * ld) * sizeof(float));
				memcpy(y2, x, (size_t)(rows * ld) * sizeof(float));
			}
			sc->layernorm_rms(y0, ld, mode == 3 ? y0 : x, ld, rows, dim, 1e-6f, w, b,
			                  sha, shb, sca, scb, mld, mrows);
			ops->layernorm_rms(y1, ld, mode == 3 ? y1 : x, ld, rows, dim, 1e-6f, w, b,
			                   sha, shb, sca, scb, mld, mrows);
			ops->layernorm_rms(y2, ld, mode == 3 ? y2 : x, ld, rows, dim, 1e-6f, w, b,
			                   sha, shb, sca, scb, mld, mrows);
			static const char *const mname[] = {"plain", "affine", "modulation",
			                                    "modulation table, in place"};
			char what[96];
			snprintf(what, sizeof what, "layernorm_rms dim=%lld %s", (long long)dim,
			         mname[mode]);
			dit_check(tap, ops, what, y1, y2, y0, rows, dim, ld, DIT_TOL_NORM);
			free(x);
			free(y0);
			free(y1);
			free(y2);
			free(wb);
			free(md);
			free(tb);
		}
}

/* The split RoPE (pairs (j, j + head_dim/2), a table per head): the same bytes */
static void dit_rope_split_test(dit_tap *tap, const dit_cpu_isa_ops *sc, const dit_cpu_isa_ops *ops)
{
	static const struct {
		int64_t rows, heads, hd;
	} cs[] = {{3, 1, 128}, {5, 3, 10}, {4, 2, 34}, {2, 4, 64}, {1, 1, 2}, {3, 2, 36}};
	for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
		int64_t rows = cs[c].rows, heads = cs[c].heads, hd = cs[c].hd;
		int64_t w = heads * hd, ld = w + 3;
		double *tab = malloc((size_t)(rows * w) * sizeof(double));
		for (int64_t i = 0; i < rows * w / 2; i++) {
			double a = 3.0 * dit_rng_uniform();
			tab[2 * i] = cos(a);
			tab[2 * i + 1] = sin(a);
		}
		float *x0 = dit_floats_rand(rows, w, ld, 2.0, 0.0);
		float *x1 = dit_floats_copy(x0, rows * ld), *x2 = dit_floats_copy(x0, rows * ld);
		sc->rope_split_apply(x0, ld, rows, heads, hd, tab);
		ops->rope_split_apply(x1, ld, rows, heads, hd, tab);
		ops->rope_split_apply(x2, ld, rows, heads, hd, tab);
		char what[96];
		snprintf(what, sizeof what, "rope_split_apply rows=%lld heads=%lld head_dim=%lld",
		         (long long)rows, (long long)heads, (long long)hd);
		dit_check(tap, ops, what, x1, x2, x0, rows, w, ld, DIT_TOL_SAME);
		free(tab);
		free(x0);
		free(x1);
		free(x2);
	}
}

static void dit_act_test(dit_tap *tap, const dit_cpu_isa_ops *sc, const dit_cpu_isa_ops *ops)
{
	static const int64_t ns[] = {1, 7, 15, 16, 17, 33, 1000, 4099};
	/* (not -inf: SiLU(-inf) is NaN on the scalar path, -inf on the vector ones) */
	static const float special[] = {0.0f,   -0.0f,  100.0f,  -100.0f,  -87.5f, 44.0f,
	                                -44.0f, 1e-20f, -1e-20f, INFINITY, -1e30f, NAN};
	static const char *const aname[] = {"none", "gelu_tanh", "silu", "gelu"};
	for (int act = DIT_ACT_GELU_TANH; act <= DIT_ACT_GELU; act++)
		for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
			int64_t n = ns[c];
			float *x0 = dit_floats_rand(1, n, n, 10.0, 0.0);
			for (size_t s = 0;
			     s < sizeof special / sizeof special[0] && (int64_t)s < n / 4; s++)
				x0[4 * s + 1] = special[s];
			float *x1 = dit_floats_copy(x0, n), *x2 = dit_floats_copy(x0, n);
			sc->act(x0, n, (dit_act)act);
			ops->act(x1, n, (dit_act)act);
			ops->act(x2, n, (dit_act)act);
			char what[64];
			snprintf(what, sizeof what, "act %s n=%lld", aname[act], (long long)n);
			/* the erf GELU is the scalar path's on every ISA: the same bytes */
			dit_check(tap, ops, what, x1, x2, x0, 1, n, n,
			          act == DIT_ACT_GELU ? DIT_TOL_SAME : DIT_TOL_ACT);
			free(x0);
			free(x1);
			free(x2);
		}
}

/* the linear epilogue: y[m, n] (stride ldy) = act(y + b) */
static void dit_bias_act_test(dit_tap *tap, const dit_cpu_isa_ops *sc, const dit_cpu_isa_ops *ops)
{
	static const int64_t ns[] = {1, 19, 64, 1541};
	for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++)
		for (int act = DIT_ACT_NONE; act <= DIT_ACT_GELU; act++)
			for (int bias = 0; bias < 2; bias++) {
				int64_t m = 3, n = ns[c], ld = n + 2;
				float *y0 = dit_floats_rand(m, n, ld, 4.0, 0.0);
				float *b = bias ? dit_floats_rand(1, n, n, 1.0, 0.0) : NULL;
				float *y1 = dit_floats_copy(y0, m * ld);
				sc->bias_act(y0, ld, b, m, n, (dit_act)act);
				ops->bias_act(y1, ld, b, m, n, (dit_act)act);
				char what[64];
				snprintf(what, sizeof what, "bias_act n=%lld act=%d bias=%d",
				         (long long)n, act, bias);
				dit_check(tap, ops, what, y1, NULL, y0, m, n, ld,
				          act == DIT_ACT_NONE || act == DIT_ACT_GELU ? DIT_TOL_SAME
				                                                     : DIT_TOL_ACT);
				free(y0);
				free(y1);
				free(b);
			}
}

static void dit_widen_test(dit_tap *tap, const dit_cpu_isa_ops *sc, const dit_cpu_isa_ops *ops)
{
	static const int64_t ns[] = {1, 15, 16, 17, 100, 1031};
	for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
		int64_t n = ns[c];
		uint16_t *h = malloc((size_t)n * sizeof(uint16_t));
		for (int64_t i = 0; i < n; i++) /* every bit pattern: NaNs, infinities, denormals */
			h[i] =
			    (uint16_t)((uint64_t)((dit_rng_uniform() + 1.0) * 32768.0) & 0xffffu);
		float *y0 = dit_floats_rand(1, 0, n + 1, 0.0, 0.0);
		float *y1 = dit_floats_copy(y0, n + 1);
		sc->bf16_widen(y0, h, n);
		ops->bf16_widen(y1, h, n);
		int same = !memcmp(y0, y1, (size_t)(n + 1) * sizeof(float));
		char name[96];
		snprintf(name, sizeof name,
		         "%s bf16_widen n=%lld vs scalar (bitwise, end untouched)",
		         dit_cpu_isa_name(ops->isa), (long long)n);
		dit_tap_add(tap, same, name, same ? 0.0 : 1.0, 0.0);
		free(h);
		free(y0);
		free(y1);
	}
}

static void dit_residual_test(dit_tap *tap, const dit_cpu_isa_ops *sc, const dit_cpu_isa_ops *ops)
{
	static const int64_t dims[] = {1, 9, 33, 1541};
	for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
		for (int mode = 0; mode < 4; mode++) {
			int64_t dim = dims[d], rows = 5, ldx = dim + 2, ldy = dim + 4,
			        mld = dim + 3;
			float *x0 = dit_floats_rand(rows, dim, ldx, 1.0, 0.0);
			float *y = dit_floats_rand(rows, dim, ldy, 1.0, 0.0);
			float *ga = dit_floats_rand(1, dim, dim, 1.0, 0.0);
			float *gb = dit_floats_rand(3, mld, mld, 1.0, 0.0);
			float *x1 = dit_floats_copy(x0, rows * ldx);
			/* mode 0: x += y; 1: gate_a; 2: gate_a + gate_b; 3: gate_b a table */
			const float *a = mode ? ga : NULL, *b = mode >= 2 ? gb : NULL;
			int64_t tl = mode == 3 ? mld : 0, tr = mode == 3 ? 2 : 0;
			sc->residual(x0, ldx, y, ldy, rows, dim, a, b, tl, tr);
			ops->residual(x1, ldx, y, ldy, rows, dim, a, b, tl, tr);
			char what[96];
			snprintf(what, sizeof what, "residual dim=%lld mode=%d", (long long)dim,
			         mode);
			dit_check(tap, ops, what, x1, NULL, x0, rows, dim, ldx, DIT_TOL_SAME);
			free(x0);
			free(x1);
			free(y);
			free(ga);
			free(gb);
		}
}

/* the dispatch: names, tables, the active choice */
static void dit_dispatch_test(dit_tap *tap)
{
	dit_cpu_isa act = dit_cpu_isa_active();
	const dit_cpu_isa_ops *ops = dit_cpu_isa_ops_active();
	int ok = ops && ops->isa == act && dit_cpu_isa_table(act) == ops;
	char name[128];
	snprintf(name, sizeof name, "active ISA %s (DITSTAR_CPU_ISA=%s) has its table",
	         dit_cpu_isa_name(act), getenv("DITSTAR_CPU_ISA") ? getenv("DITSTAR_CPU_ISA") : "");
	dit_tap_add(tap, ok, name, ok ? 0.0 : 1.0, 0.0);
	ok = dit_cpu_isa_table(DIT_CPU_ISA_SCALAR) != NULL &&
	     !strcmp(dit_cpu_isa_name(DIT_CPU_ISA_SCALAR), "scalar") &&
	     !strcmp(dit_cpu_isa_name(DIT_CPU_ISA_AVX2), "avx2") &&
	     !strcmp(dit_cpu_isa_name(DIT_CPU_ISA_AVX512), "avx512") &&
	     !strcmp(dit_cpu_isa_name(DIT_CPU_ISA_COUNT), "?") &&
	     dit_cpu_isa_table(DIT_CPU_ISA_COUNT) == NULL;
	dit_tap_add(tap, ok, "ISA names; scalar always there; out of range NULL", ok ? 0.0 : 1.0,
	            0.0);
	/* the best runnable path is the default unless the environment overrides it */
	dit_cpu_isa best = DIT_CPU_ISA_SCALAR;
	for (int i = 0; i < DIT_CPU_ISA_COUNT; i++)
		if (dit_cpu_isa_table((dit_cpu_isa)i))
			best = (dit_cpu_isa)i;
	const char *env = getenv("DITSTAR_CPU_ISA");
	if (env && *env && strcmp(env, "auto")) {
		dit_tap_skip(tap, "default ISA is the widest runnable", "DITSTAR_CPU_ISA is set");
	} else {
		snprintf(name, sizeof name, "default ISA is the widest runnable (%s)",
		         dit_cpu_isa_name(best));
		dit_tap_add(tap, act == best, name, act == best ? 0.0 : 1.0, 0.0);
	}
}

int main(void)
{
	dit_tap *tap = malloc(sizeof *tap);
	if (!tap)
		return 2;
	tap->n = tap->failed = 0;
	dit_dispatch_test(tap);
	const dit_cpu_isa_ops *sc = dit_cpu_isa_table(DIT_CPU_ISA_SCALAR);
	for (int i = DIT_CPU_ISA_SCALAR + 1; i < DIT_CPU_ISA_COUNT; i++) {
		const dit_cpu_isa_ops *ops = dit_cpu_isa_table((dit_cpu_isa)i);
		if (!ops) {
			char name[64];
			snprintf(name, sizeof name, "%s path", dit_cpu_isa_name((dit_cpu_isa)i));
			dit_tap_skip(tap, name, "this build or CPU cannot run it");
			continue;
		}
		dit_attention_test(tap, sc, ops);
		dit_layernorm_test(tap, sc, ops);
		dit_rmsnorm_test(tap, sc, ops);
		dit_rope_test(tap, sc, ops);
		dit_act_test(tap, sc, ops);
		dit_bias_act_test(tap, sc, ops);
		dit_widen_test(tap, sc, ops);
		dit_residual_test(tap, sc, ops);
		dit_layernorm_rms_test(tap, sc, ops);
		dit_rope_split_test(tap, sc, ops);
	}
	dit_tap_print(tap);
	int rc = tap->failed ? 1 : 0;
	free(tap);
	return rc;
}
