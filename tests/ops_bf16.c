/* The bf16-activation cases of the codelet-level device tests (see ops_cases.h,
 * test_act_bf16): every buffer a block stores in bf16 with --act-dtype bf16 registered
 * with two-byte elements, the op on the device against the same codelet on the CPU,
 * both reading and writing bf16. The device's fp32 sums may round a result to the
 * neighbouring bf16 value: the tolerance is the backend's own for the op plus 8e-3
 * (two bf16 steps of the largest value); copy2d must give the CPU's bits. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "dit_bf16.h"
#include "dit_codelets.h"
#include "dit_cpu.h"
#include "ops_cases.h"

#define BF16_STEP_TOL 8e-3

/* n bf16 values of n random floats in [-mul, mul]. */
static uint16_t *rnd16(dit_ops *o, int64_t n, float mul)
{
	float *f = ops_rnd(o, n, mul);
	uint16_t *h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);
	if (!h) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	for (int64_t i = 0; i < n; i++)
		h[i] = dit_bf16_from_f32(f[i]);
	free(f);
	return h;
}

static uint16_t *dup16(const uint16_t *h, int64_t n)
{
	uint16_t *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
	if (!d) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	memcpy(d, h, (size_t)n * sizeof *d);
	return d;
}

static float *widen(const uint16_t *h, int64_t n)
{
	float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
	if (!f) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	for (int64_t i = 0; i < n; i++)
		f[i] = dit_bf16_to_f32(h[i]);
	return f;
}

/* Two device runs and the CPU's of cl, whose buffer out (n bf16 values) is written:
 * out[0], out[1] from the device, out[2] from the CPU, each from a copy of init (NULL:
 * zeros). b[out].data is set per run. */
static void run3(dit_ops *o, struct starpu_codelet *cl, const void *args, size_t size, int nb,
                 ops_buf *b, int out, const uint16_t *init, int64_t n, uint16_t *res[3])
{
	for (int r = 0; r < 3; r++) {
		res[r] = init ? dup16(init, n) : calloc((size_t)n, sizeof(uint16_t));
		b[out].data = res[r];
		ops_run(r < 2 ? o->be->where : STARPU_CPU, cl, args, size, nb, b);
	}
}

/* The checks of a bf16 result [rows, cols] (ld, off) of the three runs. */
static void check3(dit_ops *o, const char *op, int wbf16, int64_t hd, const char *what,
                   uint16_t *res[3], int64_t n, int64_t rows, int64_t cols, int64_t ld, int64_t off)
{
	float *f[3];
	for (int r = 0; r < 3; r++)
		f[r] = widen(res[r], n);
	char w[112];
	snprintf(w, sizeof w, "bf16 activations, %s", what);
	ops_check(o, op, o->be->tol(op, wbf16, hd) + BF16_STEP_TOL, w, f[0], f[1], f[2], rows, cols,
	          ld, off);
	for (int r = 0; r < 3; r++) {
		free(f[r]);
		free(res[r]);
	}
}

static void bf16_linear(dit_ops *o, int64_t m, int64_t n, int64_t k, int act, int wbf16)
{
	int64_t ldx = k + 2, ldy = n + 4, x_off = 6, y_off = 2;
	int64_t nx = x_off + m * ldx, ny = y_off + m * ldy;
	uint16_t *x = rnd16(o, nx, 1.0f);
	int64_t w_off = 5, b_off = w_off + n * k + 1, block = b_off + n + 3;
	float *slab = ops_rnd(o, block, 1.0f / sqrtf((float)k));
	if (wbf16) {
		uint16_t *w16 = (uint16_t *)(slab + w_off);
		for (int64_t i = 0; i < n * k; i++)
			w16[i] = dit_bf16_from_f32(slab[w_off + i]); /* reads ahead of writes */
	}
	dit_linear_args a = {.fp = {{m, n, k, act}},
	                     .m = m,
	                     .n = n,
	                     .k = k,
	                     .ldx = ldx,
	                     .ldy = ldy,
	                     .x_off = x_off,
	                     .y_off = y_off,
	                     .w_off = w_off,
	                     .b_off = b_off,
	                     .act = act,
	                     .wdt = wbf16 ? DIT_WDT_BF16 : DIT_WDT_F32};
	ops_buf b[4] = {
	    ops_buf_of(x, nx, 2, 0, STARPU_R), ops_buf_of(slab, block, sizeof(float), 0, STARPU_R),
	    ops_buf_of(NULL, ny, 2, 0, STARPU_RW),
	    ops_buf_of(NULL, dit_linear_scratch(m, k), sizeof(float), 0, STARPU_SCRATCH)};
	uint16_t *res[3];
	run3(o, &dit_cl_linear, &a, sizeof a, dit_linear_nbuf(wbf16, 1, 1), b, 2, NULL, ny, res);
	char what[64];
	snprintf(what, sizeof what, "%lldx%lldx%lld act %d%s", (long long)m, (long long)n,
	         (long long)k, act, wbf16 ? " bf16 weights" : "");
	check3(o, "linear", wbf16, 0, what, res, ny, m, n, ldy, y_off);
	free(x);
	free(slab);
}

/* x fp32 (the token stream) -> y bf16, adaptive modulation from a vector */
static void bf16_layernorm(dit_ops *o, int64_t rows, int64_t dim)
{
	float *x = ops_rnd(o, rows * dim, 2.0f), *vec = ops_rnd(o, 2 * dim, 0.5f);
	int64_t block = 2 * dim + 4;
	float *slab = ops_rnd(o, block, 0.5f);
	dit_layernorm_args a = {.fp = {{rows, dim, 1, 0}},
	                        .rows = rows,
	                        .dim = dim,
	                        .eps = 1e-6f,
	                        .mod = 1,
	                        .shift_off = 1,
	                        .scale_off = dim + 2,
	                        .vshift_off = 0,
	                        .vscale_off = dim};
	ops_buf b[4] = {ops_buf_of(x, rows * dim, sizeof(float), 0, STARPU_R),
	                ops_buf_of(NULL, rows * dim, 2, 0, STARPU_W),
	                ops_buf_of(slab, block, sizeof(float), 0, STARPU_R),
	                ops_buf_of(vec, 2 * dim, sizeof(float), 0, STARPU_R)};
	uint16_t *res[3];
	run3(o, &dit_cl_layernorm, &a, sizeof a, 4, b, 1, NULL, rows * dim, res);
	char what[48];
	snprintf(what, sizeof what, "%lld rows of %lld, modulated", (long long)rows,
	         (long long)dim);
	check3(o, "layernorm", 0, 0, what, res, rows * dim, rows, dim, dim, 0);
	free(x);
	free(vec);
	free(slab);
}

/* t bf16 in place, k of a [rows, 3 dim] buffer: RMSNorm over the row then RoPE */
static void bf16_qk_norm(dit_ops *o, int64_t f, int64_t h, int64_t wd, int64_t heads, int64_t hd)
{
	int64_t rows = f * h * wd, dim = heads * hd, ld = 3 * dim, nt = rows * ld;
	uint16_t *t0 = rnd16(o, nt, 3.0f);
	float *slab = ops_rnd(o, dim + 3, 1.0f);
	double *cs = malloc((size_t)(rows * hd) * sizeof *cs);
	if (!cs)
		exit(2);
	int64_t axes[3];
	dit_cpu_rope_axes_wan(hd, axes);
	dit_cpu_rope_table(cs, f, h, wd, hd, 10000.0, axes);
	dit_qknorm_args a = {.fp = {{rows, dim, 1, 0}},
	                     .rows = rows,
	                     .dim = dim,
	                     .ld = ld,
	                     .t_off = dim,
	                     .w_off = 2,
	                     .heads = heads,
	                     .head_dim = hd,
	                     .eps = 1e-6f,
	                     .rope = 1};
	ops_buf b[3] = {ops_buf_of(NULL, nt, 2, 0, STARPU_RW),
	                ops_buf_of(slab, dim + 3, sizeof(float), 0, STARPU_R),
	                ops_buf_of(cs, rows * hd, sizeof(double), 0, STARPU_R)};
	uint16_t *res[3];
	run3(o, &dit_cl_qk_norm, &a, sizeof a, 3, b, 0, t0, nt, res);
	char what[48];
	snprintf(what, sizeof what, "%lld rows %lld x %lld rope", (long long)rows, (long long)heads,
	         (long long)hd);
	check3(o, "qk_norm", 0, 0, what, res, nt, rows, ld, ld, 0);
	free(t0);
	free(slab);
	free(cs);
}

/* q, k/v and o bf16; cross: q [lq, D], kv [lk, 2D]; self: one qkv [L, 3D] */
static void bf16_attention(dit_ops *o, int64_t lq, int64_t lk, int64_t heads, int64_t hd, int cross)
{
	int64_t D = heads * hd, ldq = cross ? D : 3 * D, ldk = cross ? 2 * D : 3 * D;
	int64_t k_off = cross ? 0 : D, v_off = cross ? D : 2 * D;
	if (!cross)
		lk = lq;
	int64_t nq = lq * ldq, nkv = cross ? lk * ldk : 0, ldo = D + 2, no = lq * ldo;
	uint16_t *q = rnd16(o, nq, 2.0f), *kv = cross ? rnd16(o, nkv, 2.0f) : NULL;
	dit_attention_args a = {.fp = {{lq, lk, heads, hd}},
	                        .lq = lq,
	                        .lk = lk,
	                        .heads = heads,
	                        .hd = hd,
	                        .ldq = ldq,
	                        .k_off = k_off,
	                        .v_off = v_off,
	                        .ldk = ldk,
	                        .ldo = ldo,
	                        .cross = cross};
	ops_buf b[4];
	int nb = 0;
	b[nb++] = ops_buf_of(q, nq, 2, 0, STARPU_R);
	if (cross)
		b[nb++] = ops_buf_of(kv, nkv, 2, 0, STARPU_R);
	int out = nb;
	b[nb++] = ops_buf_of(NULL, no, 2, 0, STARPU_RW);
	b[nb++] = ops_buf_of(NULL, (int64_t)dit_cpu_attention_scratch(hd), sizeof(float), 0,
	                     STARPU_SCRATCH);
	uint16_t *res[3];
	run3(o, &dit_cl_attention, &a, sizeof a, nb, b, out, NULL, no, res);
	char what[64];
	snprintf(what, sizeof what, "%s lq %lld lk %lld, %lld x %lld", cross ? "cross" : "self",
	         (long long)lq, (long long)lk, (long long)heads, (long long)hd);
	check3(o, "attention", 0, hd, what, res, no, lq, D, ldo, 0);
	free(q);
	free(kv);
}

/* x fp32 (RW) += y bf16 * gate: the result fp32 */
static void bf16_residual(dit_ops *o, int64_t rows, int64_t dim)
{
	float *x0 = ops_rnd(o, rows * dim, 1.0f), *vec = ops_rnd(o, dim, 0.5f);
	float *slab = ops_rnd(o, dim + 1, 0.5f);
	uint16_t *y = rnd16(o, rows * dim, 1.0f);
	dit_residual_args a = {
	    .fp = {{rows, dim, 1, 0}}, .rows = rows, .dim = dim, .gate_off = 1, .vgate_off = 0};
	float *res[3];
	for (int r = 0; r < 3; r++) {
		res[r] = malloc((size_t)(rows * dim) * sizeof(float));
		if (!res[r])
			exit(2);
		memcpy(res[r], x0, (size_t)(rows * dim) * sizeof(float));
		ops_buf b[4] = {ops_buf_of(res[r], rows * dim, sizeof(float), 0, STARPU_RW),
		                ops_buf_of(y, rows * dim, 2, 0, STARPU_R),
		                ops_buf_of(slab, dim + 1, sizeof(float), 0, STARPU_R),
		                ops_buf_of(vec, dim, sizeof(float), 0, STARPU_R)};
		ops_run(r < 2 ? o->be->where : STARPU_CPU, &dit_cl_residual, &a, sizeof a, 4, b);
	}
	char what[64];
	snprintf(what, sizeof what, "bf16 activations, %lld rows of %lld, gated", (long long)rows,
	         (long long)dim);
	ops_check(o, "residual", o->be->tol("residual", 0, 0), what, res[0], res[1], res[2], rows,
	          dim, dim, 0);
	for (int r = 0; r < 3; r++)
		free(res[r]);
	free(x0);
	free(vec);
	free(slab);
	free(y);
}

/* o [rows, heads hd] bf16 (RW) times 2 sigmoid of the bf16 gate logits */
static void bf16_head_gate(dit_ops *o, int64_t rows, int64_t heads, int64_t hd)
{
	int64_t ldo = heads * hd + 3, ldg = heads + 1, no = rows * ldo, ng = rows * ldg;
	uint16_t *o0 = rnd16(o, no, 2.0f), *gl = rnd16(o, ng, 3.0f);
	dit_head_gate_args a = {.fp = {{rows, heads, hd, 0}},
	                        .rows = rows,
	                        .heads = heads,
	                        .hd = hd,
	                        .ldo = ldo,
	                        .ldg = ldg};
	ops_buf b[2] = {ops_buf_of(NULL, no, 2, 0, STARPU_RW), ops_buf_of(gl, ng, 2, 0, STARPU_R)};
	uint16_t *res[3];
	run3(o, &dit_cl_head_gate, &a, sizeof a, 2, b, 0, o0, no, res);
	char what[48];
	snprintf(what, sizeof what, "%lld rows %lld x %lld", (long long)rows, (long long)heads,
	         (long long)hd);
	check3(o, "head_gate", 0, 0, what, res, no, rows, heads * hd, ldo, 0);
	free(o0);
	free(gl);
}

/* rows of a bf16 buffer into another, bit for bit (the skip of LTX-2's STG) */
static void bf16_copy2d(dit_ops *o, int64_t count, int64_t len)
{
	int64_t src_ld = 3 * len, nsrc = count * src_ld, dst_ld = len + 5, ndst = count * dst_ld;
	uint16_t *src = rnd16(o, nsrc, 1.0f), *dst0 = rnd16(o, ndst, 1.0f);
	dit_copy2d_args a = {.fp = {{count, len, 0, 0}},
	                     .count = count,
	                     .len = len,
	                     .src_off = 2 * len,
	                     .src_ld = src_ld,
	                     .dst_off = 1,
	                     .dst_ld = dst_ld};
	ops_buf b[2] = {ops_buf_of(NULL, ndst, 2, 0, STARPU_RW),
	                ops_buf_of(src, nsrc, 2, 0, STARPU_R)};
	uint16_t *res[3];
	run3(o, &dit_cl_copy2d, &a, sizeof a, 2, b, 0, dst0, ndst, res);
	int same = !memcmp(res[0], res[2], (size_t)ndst * sizeof *res[0]);
	tap_add(o->tap, same, "copy2d bf16 activations, %lld rows of %lld: the CPU's bits",
	        (long long)count, (long long)len);
	check3(o, "copy2d", 0, 0, "copy2d rows", res, ndst, count, dst_ld, dst_ld, 0);
	free(src);
	free(dst0);
}

void test_act_bf16(dit_ops *o, int wbf16)
{
	bf16_linear(o, 37, 45, 33, DIT_ACT_GELU_TANH, wbf16);
	bf16_linear(o, 64, 128, 96, DIT_ACT_NONE, wbf16);
	bf16_layernorm(o, 19, 64);
	bf16_qk_norm(o, 2, 3, 4, 2, 16);
	bf16_attention(o, 23, 29, 2, 16, 1);
	bf16_attention(o, 70, 0, 2, 64, 0);
	bf16_attention(o, 150, 133, 1, 128, 1);
	bf16_residual(o, 17, 40);
	bf16_head_gate(o, 21, 3, 16);
	bf16_copy2d(o, 9, 24);
}
