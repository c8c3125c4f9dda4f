/* Checks of the CUDA kernels (codelets/cuda) against the fp32 CPU kernels
 * (codelets/cpu) on random inputs, with strided and odd-sized shapes. No StarPU.
 * Output is TAP; exit 0 when every check passes, 1 otherwise, 77 (skip) without a
 * CUDA device.
 *
 * Tolerances (relative to max |reference| unless said otherwise):
 * - elementwise ops (residual, act, cfg, lincomb, patchify, bf16 conversion,
 *   timestep embedding): 1e-6; most are expected bit-exact (same operations in the
 *   same order), SiLU and the timestep's float64 pow/cos/sin use different libm;
 * - norms (layernorm, rmsnorm + rope): 1e-5 (float64 statistics, other summation
 *   order);
 * - fp32 linear (pedantic fp32 GEMM) and the fp32 attention kernel: 1e-5;
 * - bf16 linear and tensor-core attention: max abs error <= 2e-2 max |reference| and
 *   mean abs error <= 2e-3 max |reference|;
 * - determinism: attention and bf16 linear run twice give the same bytes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "dit_cpu.h"
#include "dit_bf16.h"
#include "dit_cuda.h"

#define TOL_ELEM     1e-6
#define TOL_NORM     1e-5
#define TOL_F32_GEMM 1e-5
#define TOL_BF16_MAX 2e-2
#define TOL_BF16_AVG 2e-3

/* ---- TAP ---- */

static int tap_n, tap_failed;

static void tap(int ok, const char *name, double err, double tol)
{
	tap_n++;
	if (!ok)
		tap_failed++;
	printf("%s %d - %s (err=%.3g tol=%.3g)\n", ok ? "ok" : "not ok", tap_n, name, err, tol);
	fflush(stdout);
}

/* a NaN error fails */
static void tap_tol(const char *name, double err, double tol)
{
	tap(err <= tol, name, err, tol);
}

#define CK(call)                                                                                   \
	do {                                                                                       \
		int ck_e = (int)(call);                                                            \
		if (ck_e) {                                                                        \
			printf("Bail out! %s failed with %d at line %d\n", #call, ck_e, __LINE__); \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* ---- random numbers (splitmix64), uniform in [-1, 1] ---- */

static uint64_t rng_s = 0x1234567887654321ull;

static float rnd(void)
{
	uint64_t z = (rng_s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (float)((double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static float *h_alloc(int64_t n)
{
	float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
	if (!p) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
	return p;
}

static float *h_rand(int64_t n, float mul, float add)
{
	float *p = h_alloc(n);
	for (int64_t i = 0; i < n; i++)
		p[i] = add + mul * rnd();
	return p;
}

static void *d_alloc(size_t bytes)
{
	void *p = NULL;
	CK(cudaMalloc(&p, bytes ? bytes : 1));
	return p;
}

static float *d_upload(const float *h, int64_t n)
{
	float *d = d_alloc((size_t)n * sizeof(float));
	CK(cudaMemcpy(d, h, (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
	return d;
}

static void d_download(float *h, const float *d, int64_t n)
{
	CK(cudaMemcpy(h, d, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
}

/* max |got - ref| / max |ref| over rows x cols (strides ldg, ldr); absolute when
 * the reference is zero; NaN in got gives NaN. */
static double err_rel(const float *got, int64_t ldg, const float *ref, int64_t ldr, int64_t rows,
                      int64_t cols)
{
	double emax = 0.0, rmax = 0.0;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++) {
			double g = got[r * ldg + c], f = ref[r * ldr + c];
			if (isnan(g))
				return NAN;
			emax = fmax(emax, fabs(g - f));
			rmax = fmax(rmax, fabs(f));
		}
	return rmax > 0.0 ? emax / rmax : emax;
}

/* bf16-class check: max abs error and mean abs error, both over max |ref|. */
static void tap_bf16(const char *name, const float *got, int64_t ldg, const float *ref, int64_t ldr,
                     int64_t rows, int64_t cols)
{
	double emax = 0.0, esum = 0.0, rmax = 0.0;
	int nan = 0;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++) {
			double g = got[r * ldg + c], f = ref[r * ldr + c];
			nan |= isnan(g) || isinf(g);
			emax = fmax(emax, fabs(g - f));
			esum += fabs(g - f);
			rmax = fmax(rmax, fabs(f));
		}
	double emean = esum / (double)(rows * cols);
	if (rmax == 0.0)
		rmax = 1.0;
	char buf[256];
	snprintf(buf, sizeof buf, "%s max", name);
	tap(!nan && emax <= TOL_BF16_MAX * rmax, buf, emax / rmax, TOL_BF16_MAX);
	snprintf(buf, sizeof buf, "%s mean", name);
	tap(!nan && emean <= TOL_BF16_AVG * rmax, buf, emean / rmax, TOL_BF16_AVG);
}

static const char *act_name(dit_act act)
{
	return act == DIT_ACT_GELU_TANH ? "gelu_tanh" : act == DIT_ACT_SILU ? "silu" : "none";
}

/* ---- linear ---- */

/* ldx = k + xpad, ldy = n + ypad: pads that keep rows 16-byte aligned (with k, n
 * multiples of 4) take the float4 conversion and bias + activation kernels. */
static void test_linear_ld(cublasHandle_t hb, cudaStream_t s, int64_t m, int64_t n, int64_t k,
                           dit_act act, int with_bias, int64_t xpad, int64_t ypad)
{
	int64_t ldx = k + xpad, ldy = n + ypad;
	float *x = h_rand(m * ldx, 1.0f, 0.0f), *w = h_rand(n * k, 0.2f, 0.0f);
	float *b = h_rand(n, 0.5f, 0.0f), *ref = h_rand(m * ldy, 1.0f, 0.0f);
	float *got = h_alloc(m * ldy), *got2 = h_alloc(m * ldy);
	uint16_t *wb = malloc((size_t)(n * k) * sizeof(uint16_t));
	for (int64_t i = 0; i < n * k; i++)
		wb[i] = dit_bf16_from_f32(w[i]);
	float *dx = d_upload(x, m * ldx), *dw = d_upload(w, n * k), *db = d_upload(b, n);
	float *dy = d_upload(ref, m * ldy);
	uint16_t *dwb = d_alloc((size_t)(n * k) * sizeof(uint16_t));
	CK(cudaMemcpy(dwb, wb, (size_t)(n * k) * sizeof(uint16_t), cudaMemcpyHostToDevice));
	size_t scratch_elems = (size_t)(k * 16); /* 16-row tiles: several GEMMs */
	uint16_t *dscr = d_alloc(scratch_elems * sizeof(uint16_t));
	const float *bb = with_bias ? b : NULL, *dbb = with_bias ? db : NULL;
	char name[160], shape[128];
	snprintf(shape, sizeof shape, "m=%lld n=%lld k=%lld ldx=%lld ldy=%lld act=%s bias=%d",
	         (long long)m, (long long)n, (long long)k, (long long)ldx, (long long)ldy,
	         act_name(act), with_bias);

	/* fp32 weights */
	dit_cpu_linear(ref, ldy, x, ldx, w, bb, m, n, k, act);
	CK(dit_cuda_linear(hb, s, dy, ldy, dx, ldx, dw, 0, dbb, m, n, k, act, NULL, 0));
	CK(cudaStreamSynchronize(s));
	d_download(got, dy, m * ldy);
	snprintf(name, sizeof name, "linear fp32 %s", shape);
	tap_tol(name, err_rel(got, ldy, ref, ldy, m, n), TOL_F32_GEMM);

	/* bf16 weights: against the fp32 reference with the true weights */
	CK(dit_cuda_linear(hb, s, dy, ldy, dx, ldx, dwb, 1, dbb, m, n, k, act, dscr,
	                   scratch_elems));
	CK(cudaStreamSynchronize(s));
	d_download(got, dy, m * ldy);
	snprintf(name, sizeof name, "linear bf16 %s", shape);
	tap_bf16(name, got, ldy, ref, ldy, m, n);
	CK(dit_cuda_linear(hb, s, dy, ldy, dx, ldx, dwb, 1, dbb, m, n, k, act, dscr,
	                   scratch_elems));
	CK(cudaStreamSynchronize(s));
	d_download(got2, dy, m * ldy);
	snprintf(name, sizeof name, "linear bf16 deterministic m=%lld n=%lld k=%lld", (long long)m,
	         (long long)n, (long long)k);
	tap(memcmp(got, got2, (size_t)(m * ldy) * sizeof(float)) == 0, name, 0.0, 0.0);

	free(x), free(w), free(b), free(ref), free(got), free(got2), free(wb);
	cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dy), cudaFree(dwb), cudaFree(dscr);
}

static void test_linear(cublasHandle_t hb, cudaStream_t s, int64_t m, int64_t n, int64_t k,
                        dit_act act, int with_bias)
{
	test_linear_ld(hb, s, m, n, k, act, with_bias, 3, 5);
}

static void test_linear_scratch_check(cublasHandle_t hb, cudaStream_t s)
{
	float *dy = d_alloc(64 * sizeof(float)), *dx = d_alloc(64 * sizeof(float));
	uint16_t *dw = d_alloc(64 * sizeof(uint16_t)), *dscr = d_alloc(64 * sizeof(uint16_t));
	int e = dit_cuda_linear(hb, s, dy, 4, dx, 8, dw, 1, NULL, 2, 4, 8, DIT_ACT_NONE, dscr, 7);
	tap(e == (int)cudaErrorInvalidValue, "linear bf16 scratch < k rejected", (double)e, 0.0);
	cudaFree(dy), cudaFree(dx), cudaFree(dw), cudaFree(dscr);
}

/* ---- layernorm ---- */

/* ntab > 1: the second modulation terms are tables of ntab rows tld floats apart, row r
 * using row r / mod_rows (mod_rows 0: one vector). */
static void test_layernorm_tab(cudaStream_t s, int64_t rows, int64_t dim, int64_t pad, int affine,
                               int mod, int alias, int64_t ntab, int64_t tld, int64_t mod_rows)
{
	int64_t ld = dim + pad, nt = ntab > 1 ? (ntab - 1) * tld + dim : dim;
	float *x = h_rand(rows * ld, 2.0f, 0.5f), *wt = h_rand(dim, 0.5f, 1.0f);
	float *bi = h_rand(dim, 0.5f, 0.0f), *sha = h_rand(dim, 0.5f, 0.0f);
	float *shb = h_rand(nt, 0.5f, 0.0f), *sca = h_rand(dim, 0.5f, 0.0f);
	float *scb = h_rand(nt, 0.5f, 0.0f);
	float *ref = h_alloc(rows * ld), *got = h_alloc(rows * ld);
	memcpy(ref, x, (size_t)(rows * ld) * sizeof(float));
	float *dx = d_upload(x, rows * ld), *dy = alias ? dx : d_upload(x, rows * ld);
	float *dwt = d_upload(wt, dim), *dbi = d_upload(bi, dim), *dsha = d_upload(sha, dim);
	float *dshb = d_upload(shb, nt), *dsca = d_upload(sca, dim), *dscb = d_upload(scb, nt);
	int64_t mld = ntab > 1 ? tld : 0;
	/* mod: 0 none, 1 single pair member, 2 pairs */
	dit_cpu_layernorm(ref, ld, x, ld, rows, dim, 1e-6f, affine ? wt : NULL, affine ? bi : NULL,
	                  mod ? sha : NULL, mod == 2 ? shb : NULL, mod ? sca : NULL,
	                  mod == 2 ? scb : NULL, mld, mod_rows);
	CK(dit_cuda_layernorm(s, dy, ld, dx, ld, rows, dim, 1e-6f, affine ? dwt : NULL,
	                      affine ? dbi : NULL, mod ? dsha : NULL, mod == 2 ? dshb : NULL,
	                      mod ? dsca : NULL, mod == 2 ? dscb : NULL, mld, mod_rows));
	CK(cudaStreamSynchronize(s));
	d_download(got, dy, rows * ld);
	char name[160];
	snprintf(name, sizeof name,
	         "layernorm rows=%lld dim=%lld ld=%lld affine=%d mod=%d alias=%d", (long long)rows,
	         (long long)dim, (long long)ld, affine, mod, alias);
	if (ntab > 1)
		snprintf(name + strlen(name), sizeof name - strlen(name),
		         " table %lld x %lld / %lld rows", (long long)ntab, (long long)tld,
		         (long long)mod_rows);
	tap_tol(name, err_rel(got, ld, ref, ld, rows, dim), TOL_NORM);
	free(x), free(wt), free(bi), free(sha), free(shb), free(sca), free(scb), free(ref),
	    free(got);
	cudaFree(dx), cudaFree(dwt), cudaFree(dbi), cudaFree(dsha), cudaFree(dshb), cudaFree(dsca);
	cudaFree(dscb);
	if (!alias)
		cudaFree(dy);
}

static void test_layernorm(cudaStream_t s, int64_t rows, int64_t dim, int64_t pad, int affine,
                           int mod, int alias)
{
	test_layernorm_tab(s, rows, dim, pad, affine, mod, alias, 1, 0, 0);
}

/* ---- rmsnorm + rope ---- */

/* group > 0: the RMS per run of group features, against dit_cpu_rmsnorm_group. */
static void test_rmsnorm_rope_group(cudaStream_t s, int64_t f, int64_t h, int64_t w, int64_t heads,
                                    int64_t hd, int64_t pad, int rope, int weighted, int64_t group)
{
	int64_t rows = f * h * w, dim = heads * hd, ld = dim + pad;
	float *x = h_rand(rows * ld, 3.0f, 0.0f), *wt = h_rand(dim, 0.5f, 1.0f);
	float *ref = h_alloc(rows * ld), *got = h_alloc(rows * ld);
	double *cs = malloc((size_t)(rows * hd) * sizeof(double));
	int64_t axes[3];
	dit_cpu_rope_axes_wan(hd, axes);
	dit_cpu_rope_table(cs, f, h, w, hd, 10000.0, axes);
	memcpy(ref, x, (size_t)(rows * ld) * sizeof(float));
	if (group > 0)
		dit_cpu_rmsnorm_group(ref, ld, rows, dim, group, 1e-6f, weighted ? wt : NULL);
	else
		dit_cpu_rmsnorm(ref, ld, rows, dim, 1e-6f, weighted ? wt : NULL);
	if (rope)
		dit_cpu_rope_apply(ref, ld, rows, heads, hd, cs);
	float *dx = d_upload(x, rows * ld), *dwt = d_upload(wt, dim);
	double *dcs = d_alloc((size_t)(rows * hd) * sizeof(double));
	CK(cudaMemcpy(dcs, cs, (size_t)(rows * hd) * sizeof(double), cudaMemcpyHostToDevice));
	CK(dit_cuda_rmsnorm_rope(s, dx, ld, rows, dim, 1e-6f, weighted ? dwt : NULL,
	                         rope ? dcs : NULL, heads, hd, group));
	CK(cudaStreamSynchronize(s));
	d_download(got, dx, rows * ld);
	char name[160];
	snprintf(name, sizeof name,
	         "rmsnorm rows=%lld heads=%lld hd=%lld ld=%lld rope=%d weight=%d", (long long)rows,
	         (long long)heads, (long long)hd, (long long)ld, rope, weighted);
	if (group > 0)
		snprintf(name + strlen(name), sizeof name - strlen(name), " group=%lld",
		         (long long)group);
	tap_tol(name, err_rel(got, ld, ref, ld, rows, dim), TOL_NORM);
	free(x), free(wt), free(ref), free(got), free(cs);
	cudaFree(dx), cudaFree(dwt), cudaFree(dcs);
}

static void test_rmsnorm_rope(cudaStream_t s, int64_t f, int64_t h, int64_t w, int64_t heads,
                              int64_t hd, int64_t pad, int rope, int weighted)
{
	test_rmsnorm_rope_group(s, f, h, w, heads, hd, pad, rope, weighted, 0);
}

/* group must divide dim and be even with rope */
static void test_rmsnorm_group_check(cudaStream_t s)
{
	float *d = d_alloc(256 * sizeof(float));
	double *dcs = d_alloc(64 * sizeof(double));
	int e1 = dit_cuda_rmsnorm_rope(s, d, 64, 2, 64, 1e-6f, NULL, NULL, 2, 32, 24);
	int e2 = dit_cuda_rmsnorm_rope(s, d, 64, 2, 64, 1e-6f, NULL, dcs, 2, 32, 1);
	tap(e1 == (int)cudaErrorInvalidValue && e2 == (int)cudaErrorInvalidValue,
	    "rmsnorm group not dividing dim, odd group with rope: rejected", (double)(e1 + e2),
	    0.0);
	cudaFree(d), cudaFree(dcs);
}

/* ---- attention ---- */

/* q, k, v as slices of one packed [L, 3 heads hd (+ qpad)] buffer each (strides as
 * in a fused QKV projection); o with its own padded stride ldo = heads hd + opad (odd:
 * scalar stores). q is uniform in [-qamp, qamp]: qamp well above 1 gives peaked
 * softmax rows, whose running max moves from key tile to key tile. o starts as NaN
 * (0xff bytes), so an element left unwritten fails. fp32 = 1 expects the fp32 kernel
 * (tolerance 1e-5), else the bf16 tensor-core one. */
static void test_attention_ex(cudaStream_t s, int64_t lq, int64_t lk, int64_t heads, int64_t hd,
                              int64_t qoff, int fp32, int determinism, float qamp, int64_t opad)
{
	int64_t hw = heads * hd;
	int64_t ldq = 3 * hw + qoff, ldk = 3 * hw, ldv = 3 * hw, ldo = hw + opad;
	float *qb = h_rand(lq * ldq + qoff, qamp, 0.0f), *kvb = h_rand(lk * ldk, 1.0f, 0.0f);
	const float *q = qb + qoff, *k = kvb + hw, *v = kvb + 2 * hw;
	float *ref = h_alloc(lq * ldo), *got = h_alloc(lq * ldo), *got2 = h_alloc(lq * ldo);
	float *scr = h_alloc((int64_t)dit_cpu_attention_scratch(hd));
	float scale = 1.0f / sqrtf((float)hd);
	dit_cpu_attention(ref, ldo, q, ldq, k, ldk, v, ldv, lq, lk, heads, hd, scale, scr);
	float *dqb = d_upload(qb, lq * ldq + qoff), *dkvb = d_upload(kvb, lk * ldk);
	float *dob = d_alloc((size_t)(lq * ldo) * sizeof(float));
	CK(cudaMemset(dob, 0xff, (size_t)(lq * ldo) * sizeof(float)));
	CK(dit_cuda_attention(s, dob, ldo, dqb + qoff, ldq, dkvb + hw, ldk, dkvb + 2 * hw, ldv, lq,
	                      lk, heads, hd, scale));
	CK(cudaStreamSynchronize(s));
	d_download(got, dob, lq * ldo);
	char name[160];
	snprintf(name, sizeof name,
	         "attention %s lq=%lld lk=%lld heads=%lld hd=%lld ldo=%lld qamp=%g",
	         fp32 ? "fp32" : "bf16", (long long)lq, (long long)lk, (long long)heads,
	         (long long)hd, (long long)ldo, (double)qamp);
	if (fp32)
		tap_tol(name, err_rel(got, ldo, ref, ldo, lq, hw), TOL_F32_GEMM);
	else
		tap_bf16(name, got, ldo, ref, ldo, lq, hw);
	if (determinism) {
		CK(dit_cuda_attention(s, dob, ldo, dqb + qoff, ldq, dkvb + hw, ldk, dkvb + 2 * hw,
		                      ldv, lq, lk, heads, hd, scale));
		CK(cudaStreamSynchronize(s));
		d_download(got2, dob, lq * ldo);
		snprintf(name, sizeof name, "attention deterministic lq=%lld lk=%lld hd=%lld",
		         (long long)lq, (long long)lk, (long long)hd);
		tap(memcmp(got, got2, (size_t)(lq * ldo) * sizeof(float)) == 0, name, 0.0, 0.0);
	}
	free(qb), free(kvb), free(ref), free(got), free(got2), free(scr);
	cudaFree(dqb), cudaFree(dkvb), cudaFree(dob);
}

static void test_attention(cudaStream_t s, int64_t lq, int64_t lk, int64_t heads, int64_t hd,
                           int64_t qoff, int fp32, int determinism)
{
	test_attention_ex(s, lq, lk, heads, hd, qoff, fp32, determinism, 1.0f, 4);
}

static void test_attention_hd_limit(cudaStream_t s)
{
	float *d = d_alloc(4096 * sizeof(float));
	int e = dit_cuda_attention(s, d, 264, d, 264, d, 264, d, 264, 2, 2, 1, 264, 1.0f);
	tap(e == (int)cudaErrorInvalidValue, "attention hd > 256 rejected", (double)e, 0.0);
	cudaFree(d);
}

/* ---- elementwise ---- */

/* ntab > 1: gate_b is a table of ntab rows tld floats apart, row r using row
 * r / mod_rows. */
static void test_residual_tab(cudaStream_t s, int64_t rows, int64_t dim, int64_t pad, int gates,
                              int64_t ntab, int64_t tld, int64_t mod_rows)
{
	int64_t ld = dim + pad, nt = ntab > 1 ? (ntab - 1) * tld + dim : dim;
	float *x = h_rand(rows * ld, 1.0f, 0.0f), *y = h_rand(rows * ld, 1.0f, 0.0f);
	float *ga = h_rand(dim, 1.0f, 0.0f), *gb = h_rand(nt, 1.0f, 0.0f);
	float *got = h_alloc(rows * ld);
	float *dx = d_upload(x, rows * ld), *dy = d_upload(y, rows * ld);
	float *dga = d_upload(ga, dim), *dgb = d_upload(gb, nt);
	int64_t mld = ntab > 1 ? tld : 0;
	dit_cpu_residual(x, ld, y, ld, rows, dim, gates ? ga : NULL, gates == 2 ? gb : NULL, mld,
	                 mod_rows);
	CK(dit_cuda_residual(s, dx, ld, dy, ld, rows, dim, gates ? dga : NULL,
	                     gates == 2 ? dgb : NULL, mld, mod_rows));
	CK(cudaStreamSynchronize(s));
	d_download(got, dx, rows * ld);
	char name[160];
	snprintf(name, sizeof name, "residual rows=%lld dim=%lld ld=%lld gates=%d", (long long)rows,
	         (long long)dim, (long long)ld, gates);
	if (ntab > 1)
		snprintf(name + strlen(name), sizeof name - strlen(name),
		         " table %lld x %lld / %lld rows", (long long)ntab, (long long)tld,
		         (long long)mod_rows);
	tap_tol(name, err_rel(got, ld, x, ld, rows, dim), TOL_ELEM);
	free(x), free(y), free(ga), free(gb), free(got);
	cudaFree(dx), cudaFree(dy), cudaFree(dga), cudaFree(dgb);
}

static void test_residual(cudaStream_t s, int64_t rows, int64_t dim, int64_t pad, int gates)
{
	test_residual_tab(s, rows, dim, pad, gates, 1, 0, 0);
}

/* dit_cuda_copy2d against dit_cpu_copy2d, bit for bit over the whole dst (the rest
 * kept), NaNs with payloads and -0 in the source. */
static void test_copy2d(cudaStream_t s, int64_t count, int64_t len, int64_t src_ld, int64_t dst_ld)
{
	int64_t ns = (count - 1) * src_ld + len, nd = (count - 1) * dst_ld + len + 5;
	float *src = h_rand(ns, 1.0f, 0.0f), *dst = h_rand(nd, 1.0f, 0.0f), *got = h_alloc(nd);
	const uint32_t special[] = {0x7fc00001u, 0xffa00123u, 0x80000000u};
	for (int i = 0; i < 3; i++)
		memcpy(&src[i * 3 % len], &special[i], sizeof(float));
	float *ds = d_upload(src, ns), *dd = d_upload(dst, nd);
	dit_cpu_copy2d(dst, dst_ld, src, src_ld, count, len);
	CK(dit_cuda_copy2d(s, dd, dst_ld, ds, src_ld, count, len));
	CK(cudaStreamSynchronize(s));
	d_download(got, dd, nd);
	char name[160];
	snprintf(name, sizeof name, "copy2d count=%lld len=%lld ld %lld -> %lld, bit for bit",
	         (long long)count, (long long)len, (long long)src_ld, (long long)dst_ld);
	tap(memcmp(got, dst, (size_t)nd * sizeof(float)) == 0, name, 0.0, 0.0);
	free(src), free(dst), free(got);
	cudaFree(ds), cudaFree(dd);
}

static void test_act(cudaStream_t s, int64_t n, int64_t off, dit_act act)
{
	float *x = h_rand(n + off, 6.0f, 0.0f), *got = h_alloc(n + off);
	float *dx = d_upload(x, n + off);
	dit_cpu_act(x + off, n, act);
	CK(dit_cuda_act(s, dx + off, n, act));
	CK(cudaStreamSynchronize(s));
	d_download(got, dx, n + off);
	char name[160];
	snprintf(name, sizeof name, "act %s n=%lld offset=%lld", act_name(act), (long long)n,
	         (long long)off);
	tap_tol(name, err_rel(got + off, 0, x + off, 0, 1, n), TOL_ELEM);
	free(x), free(got);
	cudaFree(dx);
}

static void test_cfg(cudaStream_t s, int64_t n)
{
	float *c = h_rand(n, 1.0f, 0.0f), *u = h_rand(n, 1.0f, 0.0f), *ref = h_alloc(n);
	float *got = h_alloc(n);
	float *dc = d_upload(c, n), *du = d_upload(u, n);
	dit_cpu_cfg(ref, c, u, n, 5.0f);
	CK(dit_cuda_cfg(s, du, dc, du, n, 5.0f)); /* out aliases uncond */
	CK(cudaStreamSynchronize(s));
	d_download(got, du, n);
	char name[160];
	snprintf(name, sizeof name, "cfg n=%lld (out = uncond)", (long long)n);
	tap_tol(name, err_rel(got, 0, ref, 0, 1, n), TOL_ELEM);
	free(c), free(u), free(ref), free(got);
	cudaFree(dc), cudaFree(du);
}

static void test_lincomb(cudaStream_t s, int64_t n, int nterms)
{
	float *in[4], *din[4];
	const float *hin[4];
	const float *dinc[4];
	double coef[4] = {0.7, -1.3, 0.25, 3.1};
	for (int t = 0; t < nterms; t++) {
		in[t] = h_rand(n, 1.0f, 0.0f);
		din[t] = d_upload(in[t], n);
		hin[t] = in[t];
		dinc[t] = din[t];
	}
	float *ref = h_alloc(n), *got = h_alloc(n);
	dit_cpu_lincomb(ref, n, nterms, hin, coef);
	CK(dit_cuda_lincomb(s, din[0], n, nterms, dinc, coef)); /* out aliases in[0] */
	CK(cudaStreamSynchronize(s));
	d_download(got, din[0], n);
	char name[160];
	snprintf(name, sizeof name, "lincomb n=%lld nterms=%d (out = in[0])", (long long)n, nterms);
	tap_tol(name, err_rel(got, 0, ref, 0, 1, n), TOL_ELEM);
	for (int t = 0; t < nterms; t++) {
		free(in[t]);
		cudaFree(din[t]);
	}
	free(ref), free(got);
}

static void test_timestep(cudaStream_t s, double t, int64_t freq_dim)
{
	float *ref = h_alloc(freq_dim), *got = h_alloc(freq_dim);
	float *d = d_alloc((size_t)freq_dim * sizeof(float));
	dit_cpu_timestep_embedding(ref, t, freq_dim);
	CK(dit_cuda_timestep_embedding(s, d, t, freq_dim));
	CK(cudaStreamSynchronize(s));
	d_download(got, d, freq_dim);
	char name[160];
	snprintf(name, sizeof name, "timestep embedding t=%g dim=%lld", t, (long long)freq_dim);
	/* an odd freq_dim leaves the last element unwritten */
	tap_tol(name, err_rel(got, 0, ref, 0, 1, freq_dim / 2 * 2), TOL_ELEM);
	free(ref), free(got);
	cudaFree(d);
}

static void test_patchify(cudaStream_t s, int64_t c, int64_t f, int64_t h, int64_t w, int64_t pt,
                          int64_t ph, int64_t pw)
{
	int64_t fp = f / pt, hp = h / ph, wp = w / pw;
	int64_t ntok = fp * hp * wp * c * pt * ph * pw, nlat = c * f * h * w;
	int64_t nlat2 = c * fp * pt * hp * ph * wp * pw;
	float *x = h_rand(nlat, 1.0f, 0.0f), *ref = h_alloc(ntok), *got = h_alloc(ntok);
	float *ref2 = h_alloc(nlat2), *got2 = h_alloc(nlat2);
	float *dx = d_upload(x, nlat), *dt = d_alloc((size_t)ntok * sizeof(float));
	float *dy = d_alloc((size_t)nlat2 * sizeof(float));
	dit_cpu_patchify(ref, x, c, f, h, w, pt, ph, pw);
	CK(dit_cuda_patchify(s, dt, dx, c, f, h, w, pt, ph, pw));
	CK(cudaStreamSynchronize(s));
	d_download(got, dt, ntok);
	char name[160];
	snprintf(name, sizeof name, "patchify c=%lld f=%lld h=%lld w=%lld p=%lld,%lld,%lld",
	         (long long)c, (long long)f, (long long)h, (long long)w, (long long)pt,
	         (long long)ph, (long long)pw);
	tap(memcmp(got, ref, (size_t)ntok * sizeof(float)) == 0, name, 0.0, 0.0);
	/* tok as a head output [fp hp wp, pt ph pw c] */
	dit_cpu_unpatchify(ref2, ref, c, fp, hp, wp, pt, ph, pw);
	CK(dit_cuda_unpatchify(s, dy, dt, c, fp, hp, wp, pt, ph, pw));
	CK(cudaStreamSynchronize(s));
	d_download(got2, dy, nlat2);
	snprintf(name, sizeof name, "unpatchify c=%lld fp=%lld hp=%lld wp=%lld", (long long)c,
	         (long long)fp, (long long)hp, (long long)wp);
	tap(memcmp(got2, ref2, (size_t)nlat2 * sizeof(float)) == 0, name, 0.0, 0.0);
	free(x), free(ref), free(got), free(ref2), free(got2);
	cudaFree(dx), cudaFree(dt), cudaFree(dy);
}

static void test_first_nonfinite(cudaStream_t s)
{
	int64_t n = 100003;
	float *x = h_rand(n, 1.0f, 0.0f);
	float *dx = d_upload(x, n);
	int64_t *dtmp = d_alloc(sizeof(int64_t)), first = 0;
	CK(dit_cuda_first_nonfinite(s, dx, n, dtmp, &first));
	tap(first == -1, "first_nonfinite clean", (double)first, -1.0);
	x[77777] = INFINITY;
	x[99999] = NAN;
	x[77778] = NAN;
	CK(cudaMemcpy(dx, x, (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
	CK(dit_cuda_first_nonfinite(s, dx, n, dtmp, &first));
	tap(first == 77777, "first_nonfinite inf at 77777", (double)first, 77777.0);
	x[5] = -NAN;
	CK(cudaMemcpy(dx, x, (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
	CK(dit_cuda_first_nonfinite(s, dx, n, dtmp, &first));
	tap(first == 5, "first_nonfinite nan at 5", (double)first, 5.0);
	free(x);
	cudaFree(dx), cudaFree(dtmp);
}

static void test_f32_to_bf16(cudaStream_t s, int64_t rows, int64_t cols, int64_t lds, int64_t ldd)
{
	float *x = h_rand(rows * lds, 100.0f, 0.0f);
	const float special[] = {0.0f,        -0.0f,       INFINITY, -INFINITY, NAN,
	                         1.00390625f, 1.01171875f, 3.4e38f,  1e-40f,    -1.0f};
	for (size_t i = 0; i < sizeof special / sizeof special[0] && (int64_t)i < rows * lds; i++)
		x[i] = special[i];
	uint16_t *got = malloc((size_t)(rows * ldd) * sizeof(uint16_t));
	float *dx = d_upload(x, rows * lds);
	uint16_t *dd = d_alloc((size_t)(rows * ldd) * sizeof(uint16_t));
	CK(dit_cuda_f32_to_bf16(s, dd, ldd, dx, lds, rows, cols));
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(got, dd, (size_t)(rows * ldd) * sizeof(uint16_t), cudaMemcpyDeviceToHost));
	int64_t bad = 0;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++)
			bad += got[r * ldd + c] != dit_bf16_from_f32(x[r * lds + c]);
	char name[160];
	snprintf(name, sizeof name, "f32_to_bf16 %lldx%lld lds=%lld ldd=%lld", (long long)rows,
	         (long long)cols, (long long)lds, (long long)ldd);
	tap(bad == 0, name, (double)bad, 0.0);
	free(x), free(got);
	cudaFree(dx), cudaFree(dd);
}

int main(void)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("1..0 # SKIP no CUDA device\n");
		return 77;
	}
	cudaStream_t s;
	cublasHandle_t hb;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cublasCreate(&hb));
	CK(cublasSetStream(hb, s));

	test_linear(hb, s, 37, 70, 53, DIT_ACT_NONE, 0);
	test_linear(hb, s, 37, 70, 53, DIT_ACT_GELU_TANH, 1);
	test_linear(hb, s, 64, 128, 256, DIT_ACT_SILU, 1);
	test_linear(hb, s, 100, 96, 160, DIT_ACT_NONE, 1);
	test_linear_ld(hb, s, 37, 128, 64, DIT_ACT_GELU_TANH, 1, 0, 4); /* float4 paths */
	test_linear_ld(hb, s, 40, 96, 32, DIT_ACT_SILU, 0, 4, 0);
	test_linear_scratch_check(hb, s);

	test_layernorm(s, 7, 1000, 0, 0, 0, 0);
	test_layernorm(s, 7, 1000, 1, 1, 0, 0);
	test_layernorm(s, 9, 1024, 0, 1, 2, 1);
	test_layernorm(s, 5, 5120, 4, 0, 1, 0);
	test_layernorm(s, 3, 37, 2, 1, 2, 0);
	/* modulation tables: per token (float4 rows), per frame of 8 rows, odd row stride
	 * (scalar path) */
	test_layernorm_tab(s, 16, 1024, 0, 0, 2, 0, 16, 6 * 1024, 1);
	test_layernorm_tab(s, 24, 512, 4, 1, 2, 1, 3, 2 * 512 + 4, 8);
	test_layernorm_tab(s, 21, 256, 0, 0, 2, 0, 5, 256 + 3, 5);

	test_rmsnorm_rope(s, 2, 3, 4, 2, 128, 0, 1, 1);
	test_rmsnorm_rope(s, 1, 2, 3, 3, 64, 5, 1, 0);
	test_rmsnorm_rope(s, 2, 2, 2, 40, 128, 0, 1, 1);
	test_rmsnorm_rope(s, 1, 3, 3, 4, 32, 3, 0, 1);
	/* RMS per head, per half head, without rope */
	test_rmsnorm_rope_group(s, 2, 3, 4, 2, 128, 0, 1, 1, 128);
	test_rmsnorm_rope_group(s, 2, 2, 2, 40, 128, 3, 1, 1, 64);
	test_rmsnorm_rope_group(s, 1, 3, 3, 4, 32, 0, 0, 1, 32);
	test_rmsnorm_group_check(s);

	test_attention(s, 100, 100, 2, 16, 0, 0, 0);
	test_attention(s, 100, 100, 2, 32, 0, 0, 0);
	test_attention(s, 100, 100, 2, 64, 0, 0, 0);
	test_attention(s, 100, 100, 2, 128, 0, 0, 0);
	test_attention(s, 1000, 1000, 2, 128, 0, 0, 1);
	test_attention(s, 300, 77, 2, 128, 0, 0, 1);
	test_attention(s, 1, 5, 3, 64, 0, 0, 0);
	test_attention(s, 50, 70, 2, 40, 0, 1, 1);  /* other hd: fp32 kernel */
	test_attention(s, 50, 70, 2, 256, 0, 1, 0); /* largest hd */
	test_attention(s, 60, 90, 2, 64, 1, 1, 0);  /* unaligned q: fp32 kernel */
	/* key-tile (64) and query-tile (128) boundaries, one key, no key, scalar o stores,
	 * peaked softmax (running max rescaling) */
	test_attention_ex(s, 128, 64, 2, 128, 0, 0, 0, 6.0f, 4);
	test_attention_ex(s, 129, 65, 2, 64, 0, 0, 0, 6.0f, 4);
	test_attention_ex(s, 200, 128, 1, 32, 0, 0, 0, 6.0f, 1);
	test_attention_ex(s, 257, 193, 3, 128, 0, 0, 1, 6.0f, 1);
	test_attention_ex(s, 130, 1, 2, 16, 0, 0, 0, 1.0f, 4);
	test_attention_ex(s, 300, 512, 2, 128, 0, 0, 0, 6.0f, 4);
	test_attention_ex(s, 70, 0, 2, 128, 0, 1, 0, 1.0f, 4); /* o = 0 */
	test_attention_ex(s, 50, 130, 2, 40, 0, 1, 0, 6.0f, 1);
	test_attention_hd_limit(s);

	test_residual(s, 5, 203, 0, 0);
	test_residual(s, 5, 256, 4, 1);
	test_residual(s, 5, 256, 1, 2);
	test_residual(s, 70000, 8, 0, 2); /* more rows than grid.y */
	/* gate tables: per token (float4), per frame with an odd row stride (scalar), and
	 * more rows than grid.y */
	test_residual_tab(s, 12, 256, 0, 2, 12, 6 * 256, 1);
	test_residual_tab(s, 40, 256, 4, 2, 5, 256 + 1, 8);
	test_residual_tab(s, 70000, 8, 0, 2, 7, 8, 10000);

	test_copy2d(s, 1, 4 * 21 * 60 * 104, 0, 0);
	test_copy2d(s, 16, 60 * 104, 60 * 104, 21 * 60 * 104);
	test_copy2d(s, 70000, 3, 5, 4); /* more rows than grid.y */

	test_act(s, 1001, 0, DIT_ACT_GELU_TANH);
	test_act(s, 1001, 1, DIT_ACT_GELU_TANH);
	test_act(s, 1003, 0, DIT_ACT_SILU);

	test_cfg(s, 1001);
	test_lincomb(s, 1003, 1);
	test_lincomb(s, 1003, 2);
	test_lincomb(s, 1003, 4);

	test_timestep(s, 999.0, 256);
	test_timestep(s, 0.5, 257);

	test_patchify(s, 3, 5, 6, 8, 1, 2, 2);
	test_patchify(s, 2, 5, 4, 6, 2, 2, 3);

	test_first_nonfinite(s);

	test_f32_to_bf16(s, 7, 33, 35, 33);
	test_f32_to_bf16(s, 5, 64, 64, 68);

	printf("1..%d\n", tap_n);
	if (tap_failed)
		printf("# %d of %d checks failed\n", tap_failed, tap_n);
	cublasDestroy(hb);
	cudaStreamDestroy(s);
	return tap_failed ? 1 : 0;
}
