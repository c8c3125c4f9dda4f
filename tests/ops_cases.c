/* The op cases shared by test_opencl_ops and test_cuda_ops: see ops_cases.h. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "dit_bf16.h"
#include "dit_codelets.h"
#include "dit_cpu.h"
#include "ops_cases.h"

#define DIT_NBUF 8

/* ---- TAP ---- */

void tap_add(dit_tap *tap, int ok, const char *fmt, ...)
{
	if (tap->n >= DIT_TEST_MAX) {
		fprintf(stderr, "too many checks\n");
		exit(2);
	}
	char msg[DIT_LINE_MAX - 24];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(tap->line[tap->n], DIT_LINE_MAX, "%s %d - %s", ok ? "ok" : "not ok", tap->n + 1,
	         msg);
	tap->n++;
	tap->failed += !ok;
}

/* ---- random inputs (splitmix64) ---- */

static float rng_uniform(dit_rng *r) /* in [-1, 1] */
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (float)((double)(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static void *xalloc(size_t bytes)
{
	void *p = calloc(1, bytes ? bytes : 1);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

/* n floats uniform in [-mul, mul]. */
static float *rnd(dit_rng *r, int64_t n, float mul)
{
	float *x = xalloc((size_t)n * sizeof *x);
	for (int64_t i = 0; i < n; i++)
		x[i] = mul * rng_uniform(r);
	return x;
}

static float *copy_of(const float *x, int64_t n)
{
	float *y = xalloc((size_t)n * sizeof *y);
	memcpy(y, x, (size_t)n * sizeof *y);
	return y;
}

/* ---- running one task on the device ---- */

typedef ops_buf tbuf;

static tbuf tb(void *data, int64_t nx, size_t elemsize, int part, enum starpu_data_access_mode mode)
{
	tbuf b = {data, (uint32_t)nx, elemsize, part, mode};
	return b;
}

ops_buf ops_buf_of(void *data, int64_t nx, size_t elemsize, int part,
                   enum starpu_data_access_mode mode)
{
	return tb(data, nx, elemsize, part, mode);
}

float *ops_rnd(dit_ops *o, int64_t n, float mul)
{
	return rnd(&o->rng, n, mul);
}

/* Runs cl on the buffers as one synchronous task that only the backend's workers may
 * take; the data come back to the host arrays. */
static void run_task(dit_ops *o, struct starpu_codelet *cl, const void *args, size_t args_size,
                     int n, tbuf *b)
{
	ops_run(o->be->where, cl, args, args_size, n, b);
}

void ops_run(uint32_t where, struct starpu_codelet *cl, const void *args, size_t args_size, int n,
             const ops_buf *b)
{
	starpu_data_handle_t h[DIT_NBUF];
	struct starpu_task *t = starpu_task_create();
	void *copy = xalloc(args_size);
	memcpy(copy, args, args_size);
	t->cl = cl;
	t->cl_arg = copy;
	t->cl_arg_size = args_size;
	t->cl_arg_free = 1;
	t->nbuffers = n;
	t->where = where;
	t->synchronous = 1;
	for (int i = 0; i < n; i++) {
		if (b[i].mode == STARPU_SCRATCH)
			starpu_vector_data_register(&h[i], -1, 0, b[i].nx, b[i].elemsize);
		else
			starpu_vector_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)b[i].data,
			                            b[i].nx, b[i].elemsize);
		t->handles[i] = h[i];
		if (b[i].part) {
			struct starpu_data_filter f = {.filter_func = starpu_vector_filter_block,
			                               .nchildren = 2};
			starpu_data_partition(h[i], &f);
			t->handles[i] = starpu_data_get_sub_data(h[i], 1, b[i].part - 1);
		}
		t->modes[i] = b[i].mode;
	}
	int ret = starpu_task_submit(t);
	if (ret != 0) {
		fprintf(stderr, "task %s refused (%d)\n", cl->name, ret);
		exit(1);
	}
	for (int i = 0; i < n; i++) {
		if (b[i].part)
			starpu_data_unpartition(h[i], STARPU_MAIN_RAM);
		starpu_data_unregister(h[i]);
	}
}

/* ---- comparisons ---- */

/* max |got - ref| / max |ref| over rows x cols at element off with stride ld; the
 * absolute error when ref is all zero; NaN when got holds a NaN. */
static double relerr(const float *got, const float *ref, int64_t rows, int64_t cols, int64_t ld,
                     int64_t off)
{
	double emax = 0.0, rmax = 0.0;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++) {
			double g = got[off + r * ld + c], f = ref[off + r * ld + c];
			if (isnan(g))
				return NAN;
			emax = fmax(emax, fabs(g - f));
			rmax = fmax(rmax, fabs(f));
		}
	return rmax > 0.0 ? emax / rmax : emax;
}

static int same_bytes(const float *a, const float *b, int64_t rows, int64_t cols, int64_t ld,
                      int64_t off)
{
	for (int64_t r = 0; r < rows; r++)
		if (memcmp(a + off + r * ld, b + off + r * ld, (size_t)cols * sizeof *a))
			return 0;
	return 1;
}

/* Two checks on a [rows, cols] region (stride ld, offset off): run 1 against the
 * CPU within the backend's tolerance for the op (wbf16, hd: see dit_backend), and run 1 against run
 * 2 byte for byte. */
static void check(dit_ops *o, const char *op, int wbf16, int64_t hd, const char *what,
                  const float *run1, const float *run2, const float *ref, int64_t rows,
                  int64_t cols, int64_t ld, int64_t off)
{
	ops_check(o, op, o->be->tol(op, wbf16, hd), what, run1, run2, ref, rows, cols, ld, off);
}

void ops_check(dit_ops *o, const char *op, double tol, const char *what, const float *run1,
               const float *run2, const float *ref, int64_t rows, int64_t cols, int64_t ld,
               int64_t off)
{
	dit_worst *w = &o->w;
	char name[32];
	snprintf(name, sizeof name, "%s%s", op, w->tag);
	for (int64_t rr = 0; rr < rows; rr++) {
		const unsigned char *p = (const unsigned char *)(run1 + off + rr * ld);
		for (size_t i = 0; i < (size_t)cols * sizeof *run1; i++)
			w->hash = (w->hash ^ p[i]) * 0x100000001b3ull;
	}
	double e = relerr(run1, ref, rows, cols, ld, off);
	tap_add(o->tap, e <= tol, "%s %s: max rel err %.3g <= %.0e", name, what, e, tol);
	tap_add(o->tap, same_bytes(run1, run2, rows, cols, ld, off), "%s %s: two runs, same bytes",
	        name, what);
	int i = 0;
	while (i < w->n && strcmp(w->op[i], name))
		i++;
	if (i == w->n && w->n < DIT_WORST_MAX) {
		snprintf(w->op[w->n], sizeof w->op[0], "%s", name);
		w->err[w->n++] = 0.0;
	}
	if (i < DIT_WORST_MAX && !(e <= w->err[i]))
		w->err[i] = e;
}

static const char *slab_name(int layout)
{
	return layout == SLAB_FLAT     ? "flat slab"
	       : layout == SLAB_BLOCKS ? "slab 2 x block"
	                               : "slab part 2";
}

static tbuf slab_buf(float *slab, int64_t block, int layout)
{
	if (layout == SLAB_FLAT)
		return tb(slab, 2 * block, sizeof(float), 0, STARPU_R);
	return tb(slab, 2, (size_t)block * sizeof(float), layout == SLAB_PART ? 2 : 0, STARPU_R);
}

/* What the op's element offsets into the slab add: block 1 unless the op is given
 * block 2 alone. */
static int64_t slab_skip(int64_t block, int layout)
{
	return layout == SLAB_PART ? 0 : block;
}

/* ---- the ops ---- */

void test_linear(dit_ops *o, int64_t m, int64_t n, int64_t k, int act, int bias, int layout,
                 int bf16)
{
	int64_t ldx = k + 3, ldy = n + 5, x_off = 7, y_off = 2;
	int64_t xh = x_off + m * ldx; /* floats per half of the x vector (the op reads half 2) */
	float *x = rnd(&o->rng, 2 * xh, 1.0f);
	int64_t w_off = 13, b_off = w_off + n * k + 1, block = b_off + n + 3;
	float *slab = rnd(&o->rng, 2 * block, 1.0f / sqrtf((float)k));
	if (bf16) { /* the weights of both slab copies as bf16 from w_off on */
		for (int h = 0; h < 2; h++) {
			float *s = slab + h * block;
			uint16_t *w16 = (uint16_t *)(s + w_off);
			for (int64_t i = 0; i < n * k; i++)
				w16[i] =
				    dit_bf16_from_f32(s[w_off + i]); /* reads ahead of writes */
		}
	}
	int64_t ny = y_off + m * ldy;
	float *y[2], *ref = xalloc((size_t)ny * sizeof *ref);
	int64_t skip = slab_skip(block, layout);
	dit_linear_args a = {.fp = {{m, n, k, act}},
	                     .m = m,
	                     .n = n,
	                     .k = k,
	                     .ldx = ldx,
	                     .ldy = ldy,
	                     .x_off = x_off,
	                     .y_off = y_off,
	                     .w_off = skip + w_off,
	                     .b_off = bias ? skip + b_off : -1,
	                     .act = act,
	                     .wdt = bf16 ? DIT_WDT_BF16 : DIT_WDT_F32};
	for (int run = 0; run < 2; run++) {
		y[run] = xalloc((size_t)ny * sizeof(float));
		/* with bf16 weights, the scratch of tasks/wan_block.c (CUDA's bf16 copy of x) */
		tbuf b[4] = {tb(x, 2 * xh, sizeof(float), 2, STARPU_R),
		             slab_buf(slab, block, layout),
		             tb(y[run], ny, sizeof(float), 0, STARPU_W),
		             tb(NULL, dit_linear_scratch(m, k), sizeof(float), 0, STARPU_SCRATCH)};
		run_task(o, &dit_cl_linear, &a, sizeof a, bf16 ? 4 : 3, b);
	}
	const float *s2 = slab + block;
	if (bf16) {
		float *tile = xalloc((size_t)(n * k) * sizeof *tile);
		dit_cpu_linear_bf16w(ref + y_off, ldy, x + xh + x_off, ldx,
		                     (const uint16_t *)(s2 + w_off), bias ? s2 + b_off : NULL, m, n,
		                     k, act, tile, (size_t)(n * k));
		free(tile);
	} else {
		dit_cpu_linear(ref + y_off, ldy, x + xh + x_off, ldx, s2 + w_off,
		               bias ? s2 + b_off : NULL, m, n, k, act);
	}
	char what[96];
	snprintf(what, sizeof what, "%lldx%lldx%lld act %d%s%s, %s", (long long)m, (long long)n,
	         (long long)k, act, bias ? " bias" : "", bf16 ? " bf16 weights" : "",
	         slab_name(layout));
	check(o, "linear", bf16, 0, what, y[0], y[1], ref, m, n, ldy, y_off);
	free(x);
	free(slab);
	free(y[0]);
	free(y[1]);
	free(ref);
}

void test_layernorm(dit_ops *o, int64_t rows, int64_t dim, int affine, int mod, int layout)
{
	test_layernorm_tab(o, rows, dim, affine, mod, layout, 0);
}

/* With mod_rows > 0 the modulation vector is a table of ceil(rows / mod_rows) rows of
 * 6 dim + 3 floats (e0 rows with a pad), row r of x using row r / mod_rows; the
 * reference runs the CPU kernel row by row on that row as a plain vector. */
void test_layernorm_tab(dit_ops *o, int64_t rows, int64_t dim, int affine, int mod, int layout,
                        int64_t mod_rows)
{
	test_layernorm_rms(o, rows, dim, affine, mod, layout, mod_rows, 0, 0);
}

/* With rms the RMS normalisation in place of LayerNorm; with row0 > 0 x is a row tile
 * whose row r is row row0 + r of the table's rows. */
void test_layernorm_rms(dit_ops *o, int64_t rows, int64_t dim, int affine, int mod, int layout,
                        int64_t mod_rows, int rms, int64_t row0)
{
	int64_t nx = rows * dim;
	float *x = rnd(&o->rng, 2 * nx, 2.0f);
	for (int64_t i = 0; i < 2 * nx; i++)
		x[i] += 0.5f; /* a nonzero mean */
	int64_t w_off = 5, b_off = w_off + dim + 1, sh_off = b_off + dim + 2,
	        sc_off = sh_off + dim + 3, block = sc_off + dim + 4;
	float *slab = rnd(&o->rng, 2 * block, 0.5f);
	int64_t mod_ld = 6 * dim + 3,
	        ntab = mod_rows > 0 ? (row0 + rows + mod_rows - 1) / mod_rows : 1;
	int64_t nvec = ntab * mod_ld, vsh_off = 3 + 2 * dim, vsc_off = 3 + 4 * dim;
	float *vec = rnd(&o->rng, nvec, 0.5f);
	float *y[2], *ref = xalloc((size_t)nx * sizeof *ref);
	int64_t skip = slab_skip(block, layout);
	dit_layernorm_args a = {.fp = {{rows, dim, mod, affine}},
	                        .rows = rows,
	                        .dim = dim,
	                        .eps = 1e-6f,
	                        .affine = affine,
	                        .mod = mod,
	                        .w_off = skip + w_off,
	                        .b_off = skip + b_off,
	                        .shift_off = skip + sh_off,
	                        .scale_off = skip + sc_off,
	                        .vshift_off = vsh_off,
	                        .vscale_off = vsc_off,
	                        .mod_ld = mod_rows > 0 ? mod_ld : 0,
	                        .mod_rows = mod_rows,
	                        .row0 = row0,
	                        .rms = rms};
	for (int run = 0; run < 2; run++) {
		y[run] = xalloc((size_t)nx * sizeof(float));
		tbuf b[4] = {tb(x, 2 * nx, sizeof(float), 2, STARPU_R),
		             tb(y[run], nx, sizeof(float), 0, STARPU_W),
		             slab_buf(slab, block, layout),
		             tb(vec, nvec, sizeof(float), 0, STARPU_R)};
		run_task(o, &dit_cl_layernorm, &a, sizeof a, mod ? 4 : 3, b);
	}
	const float *s2 = slab + block;
	for (int64_t r = 0; r < rows; r++) {
		const float *v =
		    vec + (mod_rows > 0 ? (row0 + r) / mod_rows : 0) * mod_ld; /* its row */
		(rms ? dit_cpu_layernorm_rms
		     : dit_cpu_layernorm)(ref + r * dim, dim, x + nx + r * dim, dim, 1, dim, 1e-6f,
		                          affine ? s2 + w_off : NULL, affine ? s2 + b_off : NULL,
		                          mod ? s2 + sh_off : NULL, mod ? v + vsh_off : NULL,
		                          mod ? s2 + sc_off : NULL, mod ? v + vsc_off : NULL, 0, 0);
	}
	char what[160];
	char tab[96] = "";
	if (mod_rows > 0)
		snprintf(tab, sizeof tab, ", %lld-row table / %lld rows%s", (long long)ntab,
		         (long long)mod_rows, row0 ? " from row0" : "");
	snprintf(what, sizeof what, "%lldx%lld%s%s%s%s, %s", (long long)rows, (long long)dim,
	         rms ? " rms" : "", affine ? " affine" : "", mod ? " mod" : "", tab,
	         slab_name(layout));
	check(o, "layernorm", 0, 0, what, y[0], y[1], ref, rows, dim, dim, 0);
	free(x);
	free(slab);
	free(vec);
	free(y[0]);
	free(y[1]);
	free(ref);
}

/* RMSNorm of the k slice of a qkv-like buffer [rows, 3 dim], then RoPE over a
 * (f, h, w) grid. */
void test_qk_norm(dit_ops *o, int64_t f, int64_t h, int64_t wd, int64_t heads, int64_t hd, int rope,
                  int layout)
{
	test_qk_norm_group(o, f, h, wd, heads, hd, rope, layout, 0);
}

/* With group > 0 the RMS is per run of group features (weight [group]); the reference
 * normalises each run as a row of its own with the whole-row kernel. */
void test_qk_norm_group(dit_ops *o, int64_t f, int64_t h, int64_t wd, int64_t heads, int64_t hd,
                        int rope, int layout, int64_t group)
{
	int64_t rows = f * h * wd, dim = heads * hd, ld = 3 * dim, t_off = dim, nt = rows * ld;
	float *t0 = rnd(&o->rng, nt, 3.0f);
	int64_t gl = group > 0 ? group : dim; /* features per RMS */
	int64_t w_off = 9, block = w_off + gl + 7;
	float *slab = rnd(&o->rng, 2 * block, 1.0f);
	int64_t ncs = rows * hd; /* the op reads the second half of a [2, rows, hd] vector */
	double *cs = xalloc((size_t)(2 * ncs) * sizeof *cs);
	int64_t axes[3];
	dit_cpu_rope_axes_wan(hd, axes);
	dit_cpu_rope_table(cs + ncs, f, h, wd, hd, 10000.0, axes);
	float *t[2], *ref = copy_of(t0, nt);
	int64_t skip = slab_skip(block, layout);
	dit_qknorm_args a = {.fp = {{rows, dim, rope, 0}},
	                     .rows = rows,
	                     .dim = dim,
	                     .ld = ld,
	                     .t_off = t_off,
	                     .w_off = skip + w_off,
	                     .heads = heads,
	                     .head_dim = hd,
	                     .eps = 1e-6f,
	                     .rope = rope,
	                     .group = group};
	for (int run = 0; run < 2; run++) {
		t[run] = copy_of(t0, nt);
		tbuf b[3] = {tb(t[run], nt, sizeof(float), 0, STARPU_RW),
		             slab_buf(slab, block, layout),
		             tb(cs, 2 * ncs, sizeof(double), 2, STARPU_R)};
		run_task(o, &dit_cl_qk_norm, &a, sizeof a, rope ? 3 : 2, b);
	}
	for (int64_t r = 0; r < rows; r++)
		for (int64_t g0 = 0; g0 < dim; g0 += gl) /* each run as a row */
			dit_cpu_rmsnorm(ref + t_off + r * ld + g0, gl, 1, gl, 1e-6f,
			                slab + block + w_off);
	if (rope)
		dit_cpu_rope_apply(ref + t_off, ld, rows, heads, hd, cs + ncs);
	char what[96];
	char grp[32] = "";
	if (group > 0)
		snprintf(grp, sizeof grp, " RMS per %lld", (long long)group);
	snprintf(what, sizeof what, "%lld rows %lld x %lld%s%s, %s", (long long)rows,
	         (long long)heads, (long long)hd, grp, rope ? " rope" : "", slab_name(layout));
	check(o, "qk_norm", 0, 0, what, t[0], t[1], ref, rows, ld, ld, 0); /* the whole buffer */
	free(t0);
	free(slab);
	free(cs);
	free(t[0]);
	free(t[1]);
	free(ref);
}

/* The split RoPE (LTX-2) after the RMSNorm (over the row, or per run of group
 * features): the table [rows, heads, hd/2, 2] from dit_cpu_rope_split_table on token
 * bounds over naxes axes (the second half of a bigger vector), t the k slice of a
 * qkv-like buffer [rows, 3 dim]. */
/* The table of test_qk_norm_split: LTX-2's from token bounds on naxes axes (naxes >
 * 0), or Cosmos-Predict2.5's for a grid[0] x grid[1] x grid[2] of rows tokens
 * (ratios 1, 3, 3), heads the heads it holds (Cosmos: one for all). */
static void split_table(double *cs, int64_t rows, int64_t heads, int64_t hd, int naxes,
                        const int64_t grid[3])
{
	int64_t dim = heads * hd;
	if (naxes <= 0) {
		static const double ratio[3] = {1.0, 3.0, 3.0};
		dit_cpu_rope_cosmos_table(cs, grid[0], grid[1], grid[2], hd, heads, ratio);
		return;
	}
	double *pos = xalloc((size_t)(naxes * rows * 2) * sizeof *pos);
	double max_pos[3] = {20.0, 2048.0, 2048.0};
	for (int a = 0; a < naxes; a++)
		for (int64_t l = 0; l < rows; l++) {
			double st = (double)((l * (2 * a + 5)) % 23) - (a == 0 ? 4.0 : 0.0);
			pos[(a * rows + l) * 2] = st;
			pos[(a * rows + l) * 2 + 1] = st + (double)(a + 1);
		}
	dit_cpu_rope_split_table(cs, pos, rows, naxes, max_pos, 10000.0, dim, heads);
	free(pos);
}

static void qk_norm_split_case(dit_ops *o, int64_t rows, int64_t heads, int64_t hd, int naxes,
                               const int64_t grid[3], int layout, int64_t group)
{
	int64_t dim = heads * hd, ld = 3 * dim, t_off = dim, nt = rows * ld;
	float *t0 = rnd(&o->rng, nt, 3.0f);
	int64_t gl = group > 0 ? group : dim; /* features per RMS */
	int64_t w_off = 9, block = w_off + gl + 7;
	float *slab = rnd(&o->rng, 2 * block, 1.0f);
	/* Cosmos: one table for the heads (rope_shared), group head_dim */
	int shared = naxes <= 0, th = shared ? 1 : heads;
	int64_t ncs = rows * th * hd; /* the op reads the second half of a [2, rows, th, hd] */
	double *cs = xalloc((size_t)(2 * ncs) * sizeof *cs);
	split_table(cs + ncs, rows, th, hd, naxes, grid);
	float *t[2], *ref = copy_of(t0, nt);
	int64_t skip = slab_skip(block, layout);
	dit_qknorm_args a = {.fp = {{rows, dim, 1, 1}},
	                     .rows = rows,
	                     .dim = dim,
	                     .ld = ld,
	                     .t_off = t_off,
	                     .w_off = skip + w_off,
	                     .heads = heads,
	                     .head_dim = hd,
	                     .eps = 1e-6f,
	                     .rope = 1,
	                     .group = group,
	                     .rope_split = 1,
	                     .rope_shared = shared};
	for (int run = 0; run < 2; run++) {
		t[run] = copy_of(t0, nt);
		tbuf b[3] = {tb(t[run], nt, sizeof(float), 0, STARPU_RW),
		             slab_buf(slab, block, layout),
		             tb(cs, 2 * ncs, sizeof(double), 2, STARPU_R)};
		run_task(o, &dit_cl_qk_norm, &a, sizeof a, 3, b);
	}
	for (int64_t r = 0; r < rows; r++)
		for (int64_t g0 = 0; g0 < dim; g0 += gl) /* each run as a row */
			dit_cpu_rmsnorm(ref + t_off + r * ld + g0, gl, 1, gl, 1e-6f,
			                slab + block + w_off);
	for (int64_t h = 0; h < (shared ? heads : 1); h++)
		dit_cpu_rope_split_apply(ref + t_off + h * hd, ld, rows, shared ? 1 : heads, hd,
		                         cs + ncs);
	char what[96];
	char grp[32] = "";
	if (group > 0)
		snprintf(grp, sizeof grp, " RMS per %lld", (long long)group);
	char rope[48];
	if (naxes > 0)
		snprintf(rope, sizeof rope, "split rope %d axes", naxes);
	else
		snprintf(rope, sizeof rope, "Cosmos rope %lldx%lldx%lld, one table",
		         (long long)grid[0], (long long)grid[1], (long long)grid[2]);
	snprintf(what, sizeof what, "%lld rows %lld x %lld%s %s, %s", (long long)rows,
	         (long long)heads, (long long)hd, grp, rope, slab_name(layout));
	check(o, "qk_norm", 0, 0, what, t[0], t[1], ref, rows, ld, ld, 0); /* the whole buffer */
	free(t0);
	free(slab);
	free(cs);
	free(t[0]);
	free(t[1]);
	free(ref);
}

void test_qk_norm_split(dit_ops *o, int64_t rows, int64_t heads, int64_t hd, int naxes, int layout,
                        int64_t group)
{
	static const int64_t none[3] = {0, 0, 0};
	qk_norm_split_case(o, rows, heads, hd, naxes, none, layout, group);
}

void test_qk_norm_cosmos(dit_ops *o, int64_t tf, int64_t th, int64_t tw, int64_t heads, int64_t hd,
                         int layout, int64_t group)
{
	const int64_t grid[3] = {tf, th, tw};
	qk_norm_split_case(o, tf * th * tw, heads, hd, 0, grid, layout, group);
}

void test_attention(dit_ops *o, int64_t lq, int64_t lk, int64_t heads, int64_t hd, int cross)
{
	test_attention_valid(o, lq, lk, 0, heads, hd, cross);
}

/* With lk_valid in [1, lk) the k and v rows from lk_valid on are NaN in the task's
 * input (any read of them shows), and the reference is the CPU kernel over the first
 * lk_valid keys. */
void test_attention_valid(dit_ops *o, int64_t lq, int64_t lk, int64_t lk_valid, int64_t heads,
                          int64_t hd, int cross)
{
	int64_t D = heads * hd;
	float scale = (float)(1.0 / sqrt((double)hd));
	int64_t nq, nkv, ldq, ldk, k_off, v_off;
	if (cross) {
		ldq = D;
		ldk = 2 * D;
		k_off = 0;
		v_off = D;
		nq = lq * ldq;
		nkv = lk * ldk;
	} else { /* one qkv buffer [L, 3D] */
		ldq = ldk = 3 * D;
		k_off = D;
		v_off = 2 * D;
		nq = lq * ldq;
		nkv = 0;
	}
	/* sub-vector inputs: the op reads the second half */
	float *q = rnd(&o->rng, 2 * nq, 2.0f), *kv = cross ? rnd(&o->rng, 2 * nkv, 2.0f) : NULL;
	int64_t keys = lk_valid > 0 && lk_valid < lk ? lk_valid : lk;
	for (int64_t j = keys; j < lk; j++) { /* the keys and values left out */
		float *row = (cross ? kv + nkv : q + nq) + j * ldk;
		for (int64_t c = 0; c < 2 * D; c++)
			row[k_off + c] = NAN; /* k and v: columns [k_off, k_off + 2 D) */
	}
	int64_t ldo = D + 3, no = lq * ldo;
	float *out[2], *ref = xalloc((size_t)no * sizeof *ref);
	int64_t nscr = (int64_t)dit_cpu_attention_scratch(hd);
	float *scr = xalloc((size_t)nscr * sizeof *scr);
	dit_attention_args a = {.fp = {{lq, lk, heads, hd}},
	                        .lq = lq,
	                        .lk = lk,
	                        .heads = heads,
	                        .hd = hd,
	                        .q_off = 0,
	                        .ldq = ldq,
	                        .k_off = k_off,
	                        .v_off = v_off,
	                        .ldk = ldk,
	                        .ldo = ldo,
	                        .cross = cross,
	                        .lk_valid = lk_valid};
	for (int run = 0; run < 2; run++) {
		out[run] = xalloc((size_t)no * sizeof(float));
		tbuf b[4];
		int nb = 0;
		b[nb++] = tb(q, 2 * nq, sizeof(float), 2, STARPU_R);
		if (cross)
			b[nb++] = tb(kv, 2 * nkv, sizeof(float), 2, STARPU_R);
		b[nb++] = tb(out[run], no, sizeof(float), 0, STARPU_W);
		b[nb++] = tb(NULL, nscr, sizeof(float), 0, STARPU_SCRATCH);
		run_task(o, &dit_cl_attention, &a, sizeof a, nb, b);
	}
	const float *q2 = q + nq, *kv2 = cross ? kv + nkv : q2;
	dit_cpu_attention(ref, ldo, q2, ldq, kv2 + k_off, ldk, kv2 + v_off, ldk, lq, keys, heads,
	                  hd, scale, scr);
	char what[96];
	char valid[32] = "";
	if (keys < lk)
		snprintf(valid, sizeof valid, " (%lld valid)", (long long)keys);
	snprintf(what, sizeof what, "%s lq %lld lk %lld%s, %lld x %lld", cross ? "cross" : "self",
	         (long long)lq, (long long)lk, valid, (long long)heads, (long long)hd);
	check(o, "attention", 0, hd, what, out[0], out[1], ref, lq, D, ldo, 0);
	free(q);
	free(kv);
	free(out[0]);
	free(out[1]);
	free(ref);
	free(scr);
}

void test_residual(dit_ops *o, int64_t rows, int64_t dim, int gated, int layout)
{
	test_residual_tab(o, rows, dim, gated, layout, 0);
}

/* With mod_rows > 0 the gate vector is a table of ceil(rows / mod_rows) rows of
 * 6 dim + 1 floats, row r of x using row r / mod_rows; the reference adds row by row
 * with that row as a plain vector. */
void test_residual_tab(dit_ops *o, int64_t rows, int64_t dim, int gated, int layout,
                       int64_t mod_rows)
{
	int64_t nx = rows * dim;
	float *x0 = rnd(&o->rng, nx, 1.0f), *y = rnd(&o->rng, 2 * nx, 1.0f);
	int64_t g_off = 17, block = g_off + dim + 5, vg_off = 2 * dim;
	int64_t mod_ld = mod_rows > 0 ? 6 * dim + 1 : 6 * dim;
	int64_t ntab = mod_rows > 0 ? (rows + mod_rows - 1) / mod_rows : 1, nvec = ntab * mod_ld;
	float *slab = rnd(&o->rng, 2 * block, 1.0f), *vec = rnd(&o->rng, nvec, 1.0f);
	float *x[2], *ref = copy_of(x0, nx);
	dit_residual_args a = {.fp = {{rows, dim, gated, 0}},
	                       .rows = rows,
	                       .dim = dim,
	                       .gate_off = gated ? slab_skip(block, layout) + g_off : -1,
	                       .vgate_off = vg_off,
	                       .mod_ld = mod_rows > 0 ? mod_ld : 0,
	                       .mod_rows = mod_rows};
	for (int run = 0; run < 2; run++) {
		x[run] = copy_of(x0, nx);
		tbuf b[4] = {tb(x[run], nx, sizeof(float), 0, STARPU_RW),
		             tb(y, 2 * nx, sizeof(float), 2, STARPU_R),
		             slab_buf(slab, block, layout),
		             tb(vec, nvec, sizeof(float), 0, STARPU_R)};
		run_task(o, &dit_cl_residual, &a, sizeof a, gated ? 4 : 2, b);
	}
	for (int64_t r = 0; r < rows; r++) {
		const float *v = vec + (mod_rows > 0 ? r / mod_rows : 0) * mod_ld; /* its row */
		dit_cpu_residual(ref + r * dim, dim, y + nx + r * dim, dim, 1, dim,
		                 gated ? slab + block + g_off : NULL, gated ? v + vg_off : NULL, 0,
		                 0);
	}
	char what[96];
	char tab[64] = "";
	if (mod_rows > 0)
		snprintf(tab, sizeof tab, ", %lld-row table / %lld rows", (long long)ntab,
		         (long long)mod_rows);
	snprintf(what, sizeof what, "%lldx%lld%s%s, %s", (long long)rows, (long long)dim,
	         gated ? " gated" : "", tab, slab_name(layout));
	check(o, "residual", 0, 0, what, x[0], x[1], ref, rows, dim, dim, 0);
	free(x0);
	free(y);
	free(slab);
	free(vec);
	free(x[0]);
	free(x[1]);
	free(ref);
}

void test_time_embed(dit_ops *o, int64_t dim, int64_t freq, double t, int layout)
{
	int64_t w0 = 3, b0 = w0 + dim * freq, w2 = b0 + dim + 1, b2 = w2 + dim * dim,
	        wp = b2 + dim + 2, bp = wp + 6 * dim * dim, block = bp + 6 * dim + 3;
	float *g = rnd(&o->rng, 2 * block, 1.0f / sqrtf((float)dim));
	float *e[2], *e0[2];
	int64_t skip = slab_skip(block, layout);
	dit_time_embed_args a = {.fp = {{dim, freq, 0, 0}},
	                         .dim = dim,
	                         .freq_dim = freq,
	                         .t = t,
	                         .w0 = skip + w0,
	                         .b0 = skip + b0,
	                         .w2 = skip + w2,
	                         .b2 = skip + b2,
	                         .wp = skip + wp,
	                         .bp = skip + bp};
	for (int run = 0; run < 2; run++) {
		e[run] = xalloc((size_t)dim * sizeof(float));
		e0[run] = xalloc((size_t)(6 * dim) * sizeof(float));
		tbuf b[4] = {slab_buf(g, block, layout),
		             tb(e[run], dim, sizeof(float), 0, STARPU_W),
		             tb(e0[run], 6 * dim, sizeof(float), 0, STARPU_W),
		             tb(NULL, freq + dim, sizeof(float), 0, STARPU_SCRATCH)};
		run_task(o, &dit_cl_time_embed, &a, sizeof a, 4, b);
	}
	/* as codelets/time_embed.c */
	const float *g2 = g + block;
	float *sin_t = xalloc((size_t)(freq + dim) * sizeof(float)), *hid = sin_t + freq;
	float *re = xalloc((size_t)dim * sizeof(float)),
	      *re0 = xalloc((size_t)(6 * dim) * sizeof(float));
	dit_cpu_timestep_embedding(sin_t, t, freq);
	dit_cpu_linear(hid, dim, sin_t, freq, g2 + w0, g2 + b0, 1, dim, freq, DIT_ACT_SILU);
	dit_cpu_linear(re, dim, hid, dim, g2 + w2, g2 + b2, 1, dim, dim, DIT_ACT_NONE);
	memcpy(hid, re, (size_t)dim * sizeof *hid);
	dit_cpu_act(hid, dim, DIT_ACT_SILU);
	dit_cpu_linear(re0, 6 * dim, hid, dim, g2 + wp, g2 + bp, 1, 6 * dim, dim, DIT_ACT_NONE);
	char what[96];
	snprintf(what, sizeof what, "dim %lld freq %lld t %g, %s: e", (long long)dim,
	         (long long)freq, t, slab_name(layout));
	check(o, "time_embed", 0, 0, what, e[0], e[1], re, 1, dim, dim, 0);
	snprintf(what, sizeof what, "dim %lld freq %lld t %g, %s: e0", (long long)dim,
	         (long long)freq, t, slab_name(layout));
	check(o, "time_embed", 0, 0, what, e0[0], e0[1], re0, 1, 6 * dim, 6 * dim, 0);
	free(g);
	free(sin_t);
	free(re);
	free(re0);
	for (int i = 0; i < 2; i++) {
		free(e[i]);
		free(e0[i]);
	}
}

/* nt timesteps ts into rows row0 .. row0 + nt - 1 of e and e0 buffers of row0 + nt + 1
 * rows holding other data (RW: kept): against the CPU chain per row; every row the
 * same bytes as a single-timestep task (nt 0) of that t on the same device; the rows
 * around untouched. */
void test_time_embed_rows(dit_ops *o, int64_t dim, int64_t freq, int64_t nt, const double *ts,
                          int64_t row0, int layout)
{
	test_time_embed_proj(o, dim, freq, nt, ts, row0, layout, 0);
}

/* The same with e0 rows of nproj * dim floats (0: 6 dim). */
void test_time_embed_proj(dit_ops *o, int64_t dim, int64_t freq, int64_t nt, const double *ts,
                          int64_t row0, int layout, int64_t nproj)
{
	int64_t P = (nproj > 0 ? nproj : 6) * dim; /* a row of e0 */
	int64_t w0 = 3, b0 = w0 + dim * freq, w2 = b0 + dim + 1, b2 = w2 + dim * dim,
	        wp = b2 + dim + 2, bp = wp + P * dim, block = bp + P + 3;
	float *g = rnd(&o->rng, 2 * block, 1.0f / sqrtf((float)dim));
	int64_t rows = row0 + nt + 1, ne = rows * dim, ne0 = rows * P;
	float *e_init = rnd(&o->rng, ne, 1.0f), *e0_init = rnd(&o->rng, ne0, 1.0f);
	float *e[2], *e0[2];
	int64_t skip = slab_skip(block, layout);
	dit_time_embed_args a = {.fp = {{dim, freq, nt, 0}},
	                         .dim = dim,
	                         .freq_dim = freq,
	                         .w0 = skip + w0,
	                         .b0 = skip + b0,
	                         .w2 = skip + w2,
	                         .b2 = skip + b2,
	                         .wp = skip + wp,
	                         .bp = skip + bp,
	                         .nt = nt,
	                         .row0 = row0,
	                         .nproj = nproj};
	for (int64_t i = 0; i < nt; i++)
		a.ts[i] = ts[i];
	for (int run = 0; run < 2; run++) {
		e[run] = copy_of(e_init, ne);
		e0[run] = copy_of(e0_init, ne0);
		tbuf b[4] = {slab_buf(g, block, layout),
		             tb(e[run], ne, sizeof(float), 0, STARPU_RW),
		             tb(e0[run], ne0, sizeof(float), 0, STARPU_RW),
		             tb(NULL, dit_time_embed_scratch(nt, freq, dim), sizeof(float), 0,
		                STARPU_SCRATCH)};
		run_task(o, &dit_cl_time_embed, &a, sizeof a, 4, b);
	}
	/* references: the CPU chain per row (as codelets/time_embed.c does for one t), and
	 * single-timestep tasks on the device */
	const float *g2 = g + block;
	float *re = copy_of(e_init, ne), *re0 = copy_of(e0_init, ne0);
	float *se = copy_of(e_init, ne), *se0 = copy_of(e0_init, ne0);
	float *sin_t = xalloc((size_t)(freq + dim) * sizeof(float)), *hid = sin_t + freq;
	float *e1 = xalloc((size_t)dim * sizeof(float)), *e01 = xalloc((size_t)(P) * sizeof(float));
	dit_time_embed_args a1 = a;
	a1.nt = 0;
	a1.row0 = 0;
	a1.fp.v[2] = 0;
	for (int64_t i = 0; i < nt; i++) {
		float *er = re + (row0 + i) * dim, *e0r = re0 + (row0 + i) * P;
		dit_cpu_timestep_embedding(sin_t, ts[i], freq);
		dit_cpu_linear(hid, dim, sin_t, freq, g2 + w0, g2 + b0, 1, dim, freq, DIT_ACT_SILU);
		dit_cpu_linear(er, dim, hid, dim, g2 + w2, g2 + b2, 1, dim, dim, DIT_ACT_NONE);
		memcpy(hid, er, (size_t)dim * sizeof *hid);
		dit_cpu_act(hid, dim, DIT_ACT_SILU);
		dit_cpu_linear(e0r, P, hid, dim, g2 + wp, g2 + bp, 1, P, dim, DIT_ACT_NONE);
		a1.t = ts[i];
		tbuf b[4] = {slab_buf(g, block, layout), tb(e1, dim, sizeof(float), 0, STARPU_W),
		             tb(e01, P, sizeof(float), 0, STARPU_W),
		             tb(NULL, freq + dim, sizeof(float), 0, STARPU_SCRATCH)};
		run_task(o, &dit_cl_time_embed, &a1, sizeof a1, 4, b);
		memcpy(se + (row0 + i) * dim, e1, (size_t)dim * sizeof(float));
		memcpy(se0 + (row0 + i) * P, e01, (size_t)(P) * sizeof(float));
	}
	char what[96], what_e[100];
	snprintf(what, sizeof what, "dim %lld freq %lld, nt %lld from row %lld%s, %s",
	         (long long)dim, (long long)freq, (long long)nt, (long long)row0,
	         nproj ? ", e0 of nproj dim" : "", slab_name(layout));
	snprintf(what_e, sizeof what_e, "%s: e", what);
	check(o, "time_embed", 0, 0, what_e, e[0], e[1], re, 1, ne, ne, 0);
	snprintf(what_e, sizeof what_e, "%s: e0", what);
	check(o, "time_embed", 0, 0, what_e, e0[0], e0[1], re0, 1, ne0, ne0, 0);
	tap_add(o->tap,
	        same_bytes(e[0], se, 1, ne, ne, 0) && same_bytes(e0[0], se0, 1, ne0, ne0, 0),
	        "time_embed%s %s: every row the bytes of a one-step task, the other rows kept",
	        o->w.tag, what);
	free(g);
	free(e_init);
	free(e0_init);
	free(re);
	free(re0);
	free(se);
	free(se0);
	free(sin_t);
	free(e1);
	free(e01);
	for (int i = 0; i < 2; i++) {
		free(e[i]);
		free(e0[i]);
	}
}

void test_text_embed(dit_ops *o, int64_t len, int64_t tdim, int64_t dim, int layout)
{
	int64_t w0 = 1, b0 = w0 + dim * tdim, w2 = b0 + dim + 3, b2 = w2 + dim * dim,
	        block = b2 + dim + 1;
	float *g = rnd(&o->rng, 2 * block, 1.0f / sqrtf((float)tdim));
	int64_t nc = len * tdim, ny = len * dim;
	float *context = rnd(&o->rng, 2 * nc, 1.0f);
	float *y[2], *ref = xalloc((size_t)ny * sizeof *ref),
	             *hid = xalloc((size_t)ny * sizeof *hid);
	int64_t skip = slab_skip(block, layout);
	dit_text_embed_args a = {.fp = {{len, tdim, dim, 0}},
	                         .len = len,
	                         .text_dim = tdim,
	                         .dim = dim,
	                         .w0 = skip + w0,
	                         .b0 = skip + b0,
	                         .w2 = skip + w2,
	                         .b2 = skip + b2};
	for (int run = 0; run < 2; run++) {
		y[run] = xalloc((size_t)ny * sizeof(float));
		tbuf b[4] = {slab_buf(g, block, layout),
		             tb(context, 2 * nc, sizeof(float), 2, STARPU_R),
		             tb(y[run], ny, sizeof(float), 0, STARPU_W),
		             tb(NULL, ny, sizeof(float), 0, STARPU_SCRATCH)};
		run_task(o, &dit_cl_text_embed, &a, sizeof a, 4, b);
	}
	const float *g2 = g + block;
	dit_cpu_linear(hid, dim, context + nc, tdim, g2 + w0, g2 + b0, len, dim, tdim,
	               DIT_ACT_GELU_TANH);
	dit_cpu_linear(ref, dim, hid, dim, g2 + w2, g2 + b2, len, dim, dim, DIT_ACT_NONE);
	char what[96];
	snprintf(what, sizeof what, "len %lld text_dim %lld dim %lld, %s", (long long)len,
	         (long long)tdim, (long long)dim, slab_name(layout));
	check(o, "text_embed", 0, 0, what, y[0], y[1], ref, len, dim, dim, 0);
	free(g);
	free(context);
	free(ref);
	free(hid);
	free(y[0]);
	free(y[1]);
}

void test_patch_embed(dit_ops *o, int64_t c, int64_t f, int64_t h, int64_t wd, int64_t pt,
                      int64_t ph, int64_t pw, int64_t dim, int layout)
{
	test_patch_embed_bias(o, c, f, h, wd, pt, ph, pw, dim, layout, 1);
}

void test_patch_embed_bias(dit_ops *o, int64_t c, int64_t f, int64_t h, int64_t wd, int64_t pt,
                           int64_t ph, int64_t pw, int64_t dim, int layout, int bias)
{
	int64_t cp = c * pt * ph * pw, tokens = (f / pt) * (h / ph) * (wd / pw);
	int64_t w_off = 4, b_off = w_off + dim * cp + 2, block = b_off + dim + 5;
	float *g = rnd(&o->rng, 2 * block, 1.0f / sqrtf((float)cp));
	int64_t nl = c * f * h * wd, nx = tokens * dim;
	float *latent = rnd(&o->rng, 2 * nl, 1.0f);
	float *x[2], *ref = xalloc((size_t)nx * sizeof *ref);
	float *rows = xalloc((size_t)(tokens * cp) * sizeof *rows);
	int64_t skip = slab_skip(block, layout);
	dit_patch_embed_args a = {.fp = {{tokens, cp, dim, 0}},
	                          .c = c,
	                          .f = f,
	                          .h = h,
	                          .w = wd,
	                          .pt = pt,
	                          .ph = ph,
	                          .pw = pw,
	                          .dim = dim,
	                          .w_off = skip + w_off,
	                          .b_off = bias ? skip + b_off : -1};
	for (int run = 0; run < 2; run++) {
		x[run] = xalloc((size_t)nx * sizeof(float));
		tbuf b[4] = {slab_buf(g, block, layout),
		             tb(latent, 2 * nl, sizeof(float), 2, STARPU_R),
		             tb(x[run], nx, sizeof(float), 0, STARPU_W),
		             tb(NULL, tokens * cp, sizeof(float), 0, STARPU_SCRATCH)};
		run_task(o, &dit_cl_patch_embed, &a, sizeof a, 4, b);
	}
	const float *g2 = g + block;
	dit_cpu_patchify(rows, latent + nl, c, f, h, wd, pt, ph, pw);
	dit_cpu_linear(ref, dim, rows, cp, g2 + w_off, bias ? g2 + b_off : NULL, tokens, dim, cp,
	               DIT_ACT_NONE);
	char what[96];
	snprintf(what, sizeof what, "[%lld,%lld,%lld,%lld] patch %lldx%lldx%lld dim %lld%s, %s",
	         (long long)c, (long long)f, (long long)h, (long long)wd, (long long)pt,
	         (long long)ph, (long long)pw, (long long)dim, bias ? "" : " no bias",
	         slab_name(layout));
	check(o, "patch_embed", 0, 0, what, x[0], x[1], ref, tokens, dim, dim, 0);
	free(g);
	free(latent);
	free(rows);
	free(ref);
	free(x[0]);
	free(x[1]);
}

void test_head(dit_ops *o, int64_t c, int64_t tf, int64_t th, int64_t tw, int64_t pt, int64_t ph,
               int64_t pw, int64_t dim, int layout)
{
	test_head_tab(o, c, tf, th, tw, pt, ph, pw, dim, layout, 0);
}

/* With mod_rows > 0, e is a table of ceil(tokens / mod_rows) rows of dim + 2 floats,
 * token l using row l / mod_rows; the reference normalises token by token with that
 * row as a plain vector. */
void test_head_tab(dit_ops *o, int64_t c, int64_t tf, int64_t th, int64_t tw, int64_t pt,
                   int64_t ph, int64_t pw, int64_t dim, int layout, int64_t mod_rows)
{
	int64_t cp = c * pt * ph * pw, tokens = tf * th * tw;
	int64_t w_off = 6, b_off = w_off + cp * dim + 1, mod_off = b_off + cp + 2,
	        block = mod_off + 2 * dim + 3;
	float *g = rnd(&o->rng, 2 * block, 1.0f / sqrtf((float)dim));
	int64_t nx = tokens * dim, nout = tokens * cp;
	int64_t mod_ld = mod_rows > 0 ? dim + 2 : dim;
	int64_t ntab = mod_rows > 0 ? (tokens + mod_rows - 1) / mod_rows : 1, ne = ntab * mod_ld;
	float *x = rnd(&o->rng, 2 * nx, 2.0f), *e = rnd(&o->rng, ne, 0.3f);
	float *out[2], *ref = xalloc((size_t)nout * sizeof *ref);
	float *hbuf = xalloc((size_t)(nx + nout) * sizeof *hbuf), *tok = hbuf + nx;
	int64_t skip = slab_skip(block, layout);
	dit_head_args a = {.fp = {{tokens, dim, cp, 0}},
	                   .c = c,
	                   .tf = tf,
	                   .th = th,
	                   .tw = tw,
	                   .pt = pt,
	                   .ph = ph,
	                   .pw = pw,
	                   .dim = dim,
	                   .eps = 1e-6f,
	                   .w_off = skip + w_off,
	                   .b_off = skip + b_off,
	                   .mod_off = skip + mod_off,
	                   .mod_ld = mod_rows > 0 ? mod_ld : 0,
	                   .mod_rows = mod_rows};
	for (int run = 0; run < 2; run++) {
		out[run] = xalloc((size_t)nout * sizeof(float));
		tbuf b[5] = {slab_buf(g, block, layout), tb(x, 2 * nx, sizeof(float), 2, STARPU_R),
		             tb(e, ne, sizeof(float), 0, STARPU_R),
		             tb(out[run], nout, sizeof(float), 0, STARPU_W),
		             tb(NULL, nx + nout, sizeof(float), 0, STARPU_SCRATCH)};
		run_task(o, &dit_cl_head, &a, sizeof a, 5, b);
	}
	const float *g2 = g + block, *mod = g2 + mod_off;
	for (int64_t l = 0; l < tokens; l++) {
		const float *el = e + (mod_rows > 0 ? l / mod_rows : 0) * mod_ld; /* its row */
		dit_cpu_layernorm(hbuf + l * dim, dim, x + nx + l * dim, dim, 1, dim, 1e-6f, NULL,
		                  NULL, mod, el, mod + dim, el, 0, 0);
	}
	dit_cpu_linear(tok, cp, hbuf, dim, g2 + w_off, g2 + b_off, tokens, cp, dim, DIT_ACT_NONE);
	dit_cpu_unpatchify(ref, tok, c, tf, th, tw, pt, ph, pw);
	char what[96];
	char tab[64] = "";
	if (mod_rows > 0)
		snprintf(tab, sizeof tab, ", e %lld rows / %lld", (long long)ntab,
		         (long long)mod_rows);
	snprintf(what, sizeof what,
	         "c %lld grid %lldx%lldx%lld patch %lldx%lldx%lld dim %lld%s, %s", (long long)c,
	         (long long)tf, (long long)th, (long long)tw, (long long)pt, (long long)ph,
	         (long long)pw, (long long)dim, tab, slab_name(layout));
	check(o, "head", 0, 0, what, out[0], out[1], ref, 1, nout, nout, 0);
	free(g);
	free(x);
	free(e);
	free(hbuf);
	free(ref);
	free(out[0]);
	free(out[1]);
}

void test_cfg(dit_ops *o, int64_t n, float scale)
{
	float *cond = rnd(&o->rng, 2 * n, 1.0f), *uncond = rnd(&o->rng, n, 1.0f);
	float *out[2], *ref = xalloc((size_t)n * sizeof *ref);
	dit_cfg_args a = {.fp = {{n, 0, 0, 0}}, .n = n, .scale = scale};
	for (int run = 0; run < 2; run++) {
		out[run] = xalloc((size_t)n * sizeof(float));
		tbuf b[3] = {tb(cond, 2 * n, sizeof(float), 2, STARPU_R),
		             tb(uncond, n, sizeof(float), 0, STARPU_R),
		             tb(out[run], n, sizeof(float), 0, STARPU_W)};
		run_task(o, &dit_cl_cfg, &a, sizeof a, 3, b);
	}
	dit_cpu_cfg(ref, cond + n, uncond, n, scale);
	char what[64];
	snprintf(what, sizeof what, "n %lld scale %g", (long long)n, scale);
	check(o, "cfg", 0, 0, what, out[0], out[1], ref, 1, n, n, 0);
	tap_add(o->tap, same_bytes(out[0], ref, 1, n, n, 0), "cfg %s: same bytes as the CPU", what);
	free(cond);
	free(uncond);
	free(ref);
	free(out[0]);
	free(out[1]);
}

/* dst = sum coef_i src_i with dst among the sources (RW) when self is set. */
void test_lincomb(dit_ops *o, int64_t n, int nterms, int self)
{
	float *d0 = rnd(&o->rng, n, 1.0f), *s1 = rnd(&o->rng, 2 * n, 1.0f),
	      *s2 = rnd(&o->rng, n, 1.0f);
	float *d[2], *ref = copy_of(d0, n);
	dit_lincomb_args a = {.fp = {{n, nterms, 0, 0}}, .n = n, .nterms = nterms};
	const double coef[DIT_LINCOMB_MAX] = {0.3, -1.25, 2.5e-3, 1.0 / 3.0};
	const int src_self[DIT_LINCOMB_MAX] = {1, 0, 2, 1},
	          src_other[DIT_LINCOMB_MAX] = {1, 2, 1, 2};
	const float *in[DIT_LINCOMB_MAX];
	for (int i = 0; i < nterms; i++) {
		a.src[i] = self ? src_self[i] : src_other[i];
		a.coef[i] = coef[i];
		in[i] = a.src[i] == 0 ? d0 : a.src[i] == 1 ? s1 + n : s2;
	}
	for (int run = 0; run < 2; run++) {
		d[run] = copy_of(d0, n);
		tbuf b[3] = {tb(d[run], n, sizeof(float), 0, self ? STARPU_RW : STARPU_W),
		             tb(s1, 2 * n, sizeof(float), 2, STARPU_R),
		             tb(s2, n, sizeof(float), 0, STARPU_R)};
		run_task(o, &dit_cl_lincomb, &a, sizeof a, 3, b);
	}
	dit_cpu_lincomb(ref, n, nterms, in, a.coef);
	char what[64];
	snprintf(what, sizeof what, "n %lld, %d terms%s", (long long)n, nterms,
	         self ? ", dst a source" : "");
	check(o, "lincomb", 0, 0, what, d[0], d[1], ref, 1, n, n, 0);
	free(d0);
	free(s1);
	free(s2);
	free(ref);
	free(d[0]);
	free(d[1]);
}

/* head_gate on an attention output o [rows, ldo] (the heads from column o_off, other
 * columns kept) from gate logits at column g_off of a [rows, ldg] buffer given as the
 * second half of a vector; the logits span [-12, 12]. */
void test_head_gate(dit_ops *o, int64_t rows, int64_t heads, int64_t hd)
{
	int64_t ldo = heads * hd + 5, o_off = 3, ldg = heads + 7, g_off = 2;
	int64_t no = rows * ldo, ng = rows * ldg;
	float *o0 = rnd(&o->rng, no, 2.0f), *gl = rnd(&o->rng, 2 * ng, 12.0f);
	float *out[2], *ref = copy_of(o0, no);
	dit_head_gate_args a = {.fp = {{rows, heads, hd, 0}},
	                        .rows = rows,
	                        .heads = heads,
	                        .hd = hd,
	                        .ldo = ldo,
	                        .o_off = o_off,
	                        .ldg = ldg,
	                        .g_off = g_off};
	for (int run = 0; run < 2; run++) {
		out[run] = copy_of(o0, no);
		tbuf b[2] = {tb(out[run], no, sizeof(float), 0, STARPU_RW),
		             tb(gl, 2 * ng, sizeof(float), 2, STARPU_R)};
		run_task(o, &dit_cl_head_gate, &a, sizeof a, 2, b);
	}
	dit_cpu_head_gate(ref + o_off, ldo, gl + ng + g_off, ldg, rows, heads, hd);
	char what[96];
	snprintf(what, sizeof what, "%lld rows %lld x %lld, ldo %lld ldg %lld", (long long)rows,
	         (long long)heads, (long long)hd, (long long)ldo, (long long)ldg);
	check(o, "head_gate", 0, 0, what, out[0], out[1], ref, rows, ldo, ldo, 0); /* all of o */
	free(o0);
	free(gl);
	free(out[0]);
	free(out[1]);
	free(ref);
}

/* add_rows (CPU only): a vector of a slab added to rows [r0, r0 + rows) of x [n, ld],
 * the other rows and columns kept. */
void test_add_rows(dit_ops *o, int64_t n, int64_t ld, int64_t r0, int64_t rows, int64_t dim,
                   int layout)
{
	int64_t nx = n * ld, v_off = 11, block = v_off + dim + 4;
	float *x0 = rnd(&o->rng, nx, 1.0f), *slab = rnd(&o->rng, 2 * block, 1.0f);
	float *x[2], *ref = copy_of(x0, nx);
	dit_add_rows_args a = {.fp = {{rows, dim, 0, 0}},
	                       .r0 = r0,
	                       .rows = rows,
	                       .dim = dim,
	                       .ld = ld,
	                       .v_off = slab_skip(block, layout) + v_off};
	for (int run = 0; run < 2; run++) {
		x[run] = copy_of(x0, nx);
		tbuf b[2] = {tb(x[run], nx, sizeof(float), 0, STARPU_RW),
		             slab_buf(slab, block, layout)};
		run_task(o, &dit_cl_add_rows, &a, sizeof a, 2, b);
	}
	for (int64_t r = r0; r < r0 + rows; r++)
		for (int64_t j = 0; j < dim; j++)
			ref[r * ld + j] += slab[block + v_off + j];
	char what[96];
	snprintf(what, sizeof what, "rows %lld..%lld of %lld, dim %lld ld %lld, %s", (long long)r0,
	         (long long)(r0 + rows), (long long)n, (long long)dim, (long long)ld,
	         slab_name(layout));
	check(o, "add_rows", 0, 0, what, x[0], x[1], ref, n, ld, ld, 0);
	free(x0);
	free(slab);
	free(x[0]);
	free(x[1]);
	free(ref);
}

/* copy2d into a dst that holds other data (RW: kept), from a src given as the second
 * half of a vector; the source has NaNs with payloads, -0, a denormal and inf. The
 * whole dst must equal the host copy bit for bit. */
void test_copy2d(dit_ops *o, int64_t count, int64_t len, int64_t src_off, int64_t src_ld,
                 int64_t dst_off, int64_t dst_ld)
{
	int64_t ns = src_off + (count - 1) * src_ld + len,
	        nd = dst_off + (count - 1) * dst_ld + len + 3;
	float *src = rnd(&o->rng, 2 * ns, 1.0f), *d0 = rnd(&o->rng, nd, 1.0f);
	static const uint32_t special[] = {0x7fc00001u, 0xffa00123u, 0x80000000u, 0x00000001u,
	                                   0x7f800000u};
	for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
		memcpy(&src[ns + src_off + (int64_t)i * 5 % len], &special[i], sizeof(float));
	float *d[2], *ref = copy_of(d0, nd);
	for (int64_t i = 0; i < count; i++)
		memcpy(ref + dst_off + i * dst_ld, src + ns + src_off + i * src_ld,
		       (size_t)len * sizeof(float));
	dit_copy2d_args a = {.fp = {{count, len, 0, 0}},
	                     .count = count,
	                     .len = len,
	                     .src_off = src_off,
	                     .src_ld = src_ld,
	                     .dst_off = dst_off,
	                     .dst_ld = dst_ld};
	for (int run = 0; run < 2; run++) {
		d[run] = copy_of(d0, nd);
		tbuf b[2] = {tb(d[run], nd, sizeof(float), 0, STARPU_RW),
		             tb(src, 2 * ns, sizeof(float), 2, STARPU_R)};
		run_task(o, &dit_cl_copy2d, &a, sizeof a, 2, b);
	}
	for (int64_t i = 0; i < nd; i++) {
		const unsigned char *p = (const unsigned char *)&d[0][i];
		for (size_t k = 0; k < sizeof(float); k++)
			o->w.hash = (o->w.hash ^ p[k]) * 0x100000001b3ull;
	}
	char what[96];
	snprintf(what, sizeof what, "count %lld len %lld, ld %lld -> %lld", (long long)count,
	         (long long)len, (long long)src_ld, (long long)dst_ld);
	tap_add(o->tap, same_bytes(d[0], ref, 1, nd, nd, 0),
	        "copy2d%s %s: bit for bit, the rest of dst kept", o->w.tag, what);
	tap_add(o->tap, same_bytes(d[0], d[1], 1, nd, nd, 0), "copy2d%s %s: two runs, same bytes",
	        o->w.tag, what);
	free(src);
	free(d0);
	free(ref);
	free(d[0]);
	free(d[1]);
}

/* xfer reads its buffers (a slab of 2 blocks, and a second vector) on a worker of the
 * backend: afterwards each holds a valid copy on that worker's memory node, and the
 * host data is unchanged. */
void test_xfer(dit_ops *o)
{
	int64_t block = 1000, n2 = 77;
	float *slab = rnd(&o->rng, 2 * block, 1.0f), *v = rnd(&o->rng, n2, 1.0f);
	float *slab0 = copy_of(slab, 2 * block), *v0 = copy_of(v, n2);
	starpu_data_handle_t h[2];
	starpu_vector_data_register(&h[0], STARPU_MAIN_RAM, (uintptr_t)slab, 2,
	                            (size_t)block * sizeof(float));
	starpu_vector_data_register(&h[1], STARPU_MAIN_RAM, (uintptr_t)v, (uint32_t)n2,
	                            sizeof(float));
	int worker = -1;
	starpu_worker_get_ids_by_type(o->be->worker, &worker, 1);
	unsigned node = starpu_worker_get_memory_node((unsigned)worker);
	int before = starpu_data_is_on_node(h[0], node) || starpu_data_is_on_node(h[1], node);
	struct starpu_task *t = starpu_task_create();
	t->cl = &dit_cl_xfer;
	t->nbuffers = 2;
	t->handles[0] = h[0];
	t->handles[1] = h[1];
	t->modes[0] = t->modes[1] = STARPU_R;
	t->execute_on_a_specific_worker = 1;
	t->workerid = (unsigned)worker;
	t->synchronous = 1;
	int ret = starpu_task_submit(t);
	int after =
	    ret == 0 && starpu_data_is_on_node(h[0], node) && starpu_data_is_on_node(h[1], node);
	starpu_data_unregister(h[0]);
	starpu_data_unregister(h[1]);
	tap_add(o->tap, !before && after,
	        "xfer: 2 buffers (a 2-block slab, a vector) brought to %s node %u", o->be->name,
	        node);
	tap_add(o->tap,
	        memcmp(slab, slab0, (size_t)(2 * block) * sizeof *slab) == 0 &&
	            memcmp(v, v0, (size_t)n2 * sizeof *v) == 0,
	        "xfer: the data is unchanged");
	free(slab);
	free(v);
	free(slab0);
	free(v0);
}
/* ---- the cases, in groups ---- */

/* The cases of the generalised fields draw from a stream of their own, so that the
 * cases before and after them keep their inputs. */
static dit_rng fields_begin(dit_ops *o, uint64_t seed)
{
	dit_rng keep = o->rng;
	o->rng.s = seed;
	return keep;
}

void ops_cases_gemm(dit_ops *o)
{
	test_linear(o, 77, 45, 33, DIT_ACT_NONE, 1, SLAB_FLAT, 0);
	test_linear(o, 130, 97, 70, DIT_ACT_GELU_TANH, 1, SLAB_BLOCKS, 0);
	test_linear(o, 5, 200, 129, DIT_ACT_SILU, 0, SLAB_PART, 0);
	test_linear(o, 1, 67, 300, DIT_ACT_SILU, 1, SLAB_BLOCKS, 0);
	test_linear(o, 64, 64, 16, DIT_ACT_NONE, 1, SLAB_FLAT, 0);
	test_linear(o, 77, 45, 33, DIT_ACT_NONE, 1, SLAB_FLAT, 1);
	test_linear(o, 130, 97, 70, DIT_ACT_GELU_TANH, 1, SLAB_BLOCKS, 1);
	test_linear(o, 5, 200, 129, DIT_ACT_SILU, 0, SLAB_PART, 1);
	test_text_embed(o, 13, 40, 48, SLAB_BLOCKS);
	test_text_embed(o, 7, 33, 20, SLAB_FLAT);
	test_patch_embed(o, 4, 3, 6, 10, 1, 2, 2, 48, SLAB_BLOCKS);
	test_patch_embed(o, 3, 4, 4, 6, 2, 2, 3, 20, SLAB_PART);
	test_head(o, 4, 3, 3, 5, 1, 2, 2, 48, SLAB_BLOCKS);
	test_head(o, 3, 2, 2, 2, 2, 2, 3, 20, SLAB_FLAT);
	/* e per token, per frame (15 tokens) */
	dit_rng keep = fields_begin(o, 0x6865616401ull);
	test_head_tab(o, 4, 3, 3, 5, 1, 2, 2, 48, SLAB_BLOCKS, 1);
	test_head_tab(o, 4, 3, 3, 5, 1, 2, 2, 48, SLAB_PART, 15);
	o->rng = keep;
	/* the exact (erf) GELU of Cosmos-Predict2.5's MLP and text projection: fp32 and
	 * bf16 weights, with and without bias */
	keep = fields_begin(o, 0x67656c7501ull);
	test_linear(o, 130, 97, 70, DIT_ACT_GELU, 1, SLAB_BLOCKS, 0);
	test_linear(o, 5, 200, 129, DIT_ACT_GELU, 0, SLAB_PART, 0);
	test_linear(o, 77, 45, 33, DIT_ACT_GELU, 1, SLAB_FLAT, 1);
	o->rng = keep;
	/* patch embedding without a bias (Cosmos-Predict2.5's x_embedder) */
	keep = fields_begin(o, 0x706501ull);
	test_patch_embed_bias(o, 4, 3, 6, 10, 1, 2, 2, 48, SLAB_BLOCKS, 0);
	test_patch_embed_bias(o, 3, 4, 4, 6, 2, 2, 3, 20, SLAB_PART, 0);
	o->rng = keep;
}

void ops_cases_time_embed(dit_ops *o)
{
	test_time_embed(o, 48, 32, 937.25, SLAB_BLOCKS);
	test_time_embed(o, 40, 256, 3.5, SLAB_PART);
	/* several timesteps in one task: one (row 0), five distinct (from row 2) */
	static const double ts[] = {999.0, 0.0, 250.5, 17.25, 700.0};
	dit_rng keep = fields_begin(o, 0x74696d01ull);
	test_time_embed_rows(o, 48, 32, 1, ts + 2, 0, SLAB_BLOCKS);
	test_time_embed_rows(o, 40, 256, 5, ts, 2, SLAB_PART);
	o->rng = keep;
	/* e0 of 9 D (LTX-2 with cross-attention AdaLN), and of 6 D said explicitly */
	keep = fields_begin(o, 0x74696d02ull);
	test_time_embed_proj(o, 48, 32, 3, ts + 1, 1, SLAB_BLOCKS, 9);
	test_time_embed_proj(o, 40, 256, 1, ts, 0, SLAB_PART, 6);
	o->rng = keep;
}

void ops_cases_fp64(dit_ops *o)
{
	test_layernorm(o, 37, 100, 0, 0, SLAB_FLAT);
	test_layernorm(o, 21, 77, 1, 0, SLAB_BLOCKS);
	test_layernorm(o, 45, 130, 0, 1, SLAB_PART);
	test_layernorm(o, 3, 1000, 0, 1, SLAB_BLOCKS);
	/* modulation per token, per frame (of 10 tokens), and in uneven groups */
	dit_rng keep = fields_begin(o, 0x6c6e01ull);
	test_layernorm_tab(o, 30, 100, 0, 1, SLAB_FLAT, 1);
	test_layernorm_tab(o, 30, 128, 0, 1, SLAB_PART, 10);
	test_layernorm_tab(o, 29, 77, 1, 1, SLAB_BLOCKS, 7);
	o->rng = keep;
	test_qk_norm(o, 2, 3, 5, 3, 16, 1, SLAB_BLOCKS);
	test_qk_norm(o, 2, 2, 3, 2, 128, 1, SLAB_PART);
	test_qk_norm(o, 1, 3, 3, 1, 128, 1, SLAB_FLAT);
	test_qk_norm(o, 3, 1, 7, 3, 16, 0, SLAB_BLOCKS);
	/* RMS per head (and per half head) */
	keep = fields_begin(o, 0x716b01ull);
	test_qk_norm_group(o, 2, 3, 5, 3, 16, 1, SLAB_BLOCKS, 16);
	test_qk_norm_group(o, 2, 2, 3, 2, 128, 1, SLAB_PART, 128);
	test_qk_norm_group(o, 1, 3, 3, 3, 64, 0, SLAB_FLAT, 64);
	test_qk_norm_group(o, 1, 2, 3, 2, 64, 1, SLAB_BLOCKS, 32);
	o->rng = keep;
	/* LTX-2: the RMS normalisation with per-token modulation (also a tile from row0),
	 * and the split RoPE after a whole-row (and a per-head) RMSNorm */
	keep = fields_begin(o, 0x6c747801ull);
	test_layernorm_rms(o, 37, 100, 0, 0, SLAB_FLAT, 0, 1, 0);
	test_layernorm_rms(o, 21, 77, 1, 0, SLAB_BLOCKS, 0, 1, 0);
	test_layernorm_rms(o, 30, 128, 0, 1, SLAB_PART, 1, 1, 0);
	test_layernorm_rms(o, 29, 77, 0, 1, SLAB_BLOCKS, 7, 1, 12);
	test_qk_norm_split(o, 30, 2, 64, 3, SLAB_BLOCKS, 0);
	test_qk_norm_split(o, 17, 3, 16, 1, SLAB_PART, 0);
	test_qk_norm_split(o, 13, 2, 128, 3, SLAB_FLAT, 128);
	o->rng = keep;
	/* the exact GELU computes in float64 where it can (OpenCL: erf in float without) */
	keep = fields_begin(o, 0x67656c7502ull);
	test_linear(o, 33, 70, 45, DIT_ACT_GELU, 1, SLAB_BLOCKS, 0);
	o->rng = keep;
	/* Cosmos-Predict2.5: per-head RMSNorm then the split RoPE of its 3D table */
	keep = fields_begin(o, 0x636f7301ull);
	test_qk_norm_cosmos(o, 2, 3, 5, 2, 128, SLAB_BLOCKS, 128);
	test_qk_norm_cosmos(o, 3, 2, 2, 3, 32, SLAB_PART, 32);
	o->rng = keep;
	test_lincomb(o, 1001, 3, 1);
	test_lincomb(o, 300, 4, 1);
	test_lincomb(o, 555, 2, 0);
}

void ops_cases_other(dit_ops *o)
{
	test_attention(o, 75, 75, 3, 16, 0);
	test_attention(o, 70, 70, 2, 128, 0);
	test_attention(o, 67, 45, 1, 128, 1);
	test_attention(o, 33, 300, 3, 16, 1);
	test_attention(o, 20, 41, 1, 160, 1);
	/* only the first keys valid: self and cross, one key, a head dim off the
	 * tensor-core path of CUDA */
	dit_rng keep = fields_begin(o, 0x61747401ull);
	test_attention_valid(o, 75, 75, 50, 3, 16, 0);
	test_attention_valid(o, 67, 45, 13, 1, 128, 1);
	test_attention_valid(o, 33, 300, 1, 3, 16, 1);
	test_attention_valid(o, 20, 41, 30, 1, 160, 1);
	o->rng = keep;
	test_residual(o, 29, 53, 1, SLAB_BLOCKS);
	test_residual(o, 31, 64, 1, SLAB_PART);
	test_residual(o, 17, 40, 0, SLAB_FLAT);
	/* gate per token, per frame (of 8 tokens) */
	keep = fields_begin(o, 0x72657301ull);
	test_residual_tab(o, 24, 53, 1, SLAB_BLOCKS, 1);
	test_residual_tab(o, 24, 64, 1, SLAB_PART, 8);
	o->rng = keep;
	/* channels appended to a latent [7, 3, 5, 6]; frame 0 of [16, 3, 5, 6] from an image
	 * latent [16, 1, 5, 6]; odd strides and offsets */
	keep = fields_begin(o, 0x63707901ull);
	test_copy2d(o, 1, 4 * 3 * 5 * 6, 0, 0, 3 * 3 * 5 * 6, 0);
	test_copy2d(o, 16, 5 * 6, 0, 5 * 6, 0, 3 * 5 * 6);
	test_copy2d(o, 5, 333, 7, 340, 5, 337);
	o->rng = keep;
	/* LTX-2: the per-head gate of attention; the rows of the first latent frame plus a
	 * vector (CPU only) */
	keep = fields_begin(o, 0x6c747802ull);
	test_head_gate(o, 37, 3, 16);
	test_head_gate(o, 5, 32, 128);
	test_head_gate(o, 130, 1, 7);
	if (o->be->where == STARPU_CPU) {
		test_add_rows(o, 40, 53, 0, 12, 50, SLAB_BLOCKS);
		test_add_rows(o, 30, 64, 7, 9, 64, SLAB_PART);
	}
	o->rng = keep;
	test_cfg(o, 1000, 5.0f);
	test_cfg(o, 257, -0.75f);
	if (o->be->where != STARPU_CPU) /* the CPU's memory node is the data's home */
		test_xfer(o);
}

/* ---- set-up and summary ---- */

int ops_start(const dit_backend *be, struct starpu_conf *conf)
{
	int ret = starpu_init(conf);
	if (ret == -ENODEV || (ret == 0 && starpu_worker_get_count_by_type(be->worker) <= 0)) {
		if (ret == 0)
			starpu_shutdown();
		printf("1..0 # SKIP no %s device\n", be->name);
		return 0;
	}
	if (ret != 0) {
		printf("Bail out! StarPU failed to start (%d)\n", ret);
		return 1;
	}
	return -1;
}

void ops_init(dit_ops *o, const dit_backend *be)
{
	memset(o, 0, sizeof *o);
	o->be = be;
	o->tap = xalloc(sizeof *o->tap);
	o->w.tag = "";
	o->w.hash = 0xcbf29ce484222325ull;
	o->rng.s = 12345;
}

int ops_report(dit_ops *o, double secs)
{
	dit_tap *tap = o->tap;
	dit_worst *w = &o->w;
	printf("1..%d\n", tap->n);
	for (int i = 0; i < tap->n; i++)
		printf("%s\n", tap->line[i]);
	for (int i = 0; i < w->n; i++)
		printf("# %-18s largest max rel err %.3g\n", w->op[i], w->err[i]);
	printf("# hash of the results %016llx\n", (unsigned long long)w->hash);
	printf("# %d checks in %.2f s (after StarPU's set-up)\n", tap->n, secs);
	int failed = tap->failed;
	free(tap);
	o->tap = NULL;
	return failed ? 1 : 0;
}
