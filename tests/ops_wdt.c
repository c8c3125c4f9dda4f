/* The compact-weight cases of the codelet-level device tests (see ops_cases.h): linear
 * with its matrix kept as a checkpoint stores it (dit_wdt.h: fp16, float8 e4m3fn and
 * e5m2 with their scale in the slot after the data, GGUF's Q8_0), at a slot offset of a
 * slab and read from a row inside the tensor (as the block kinds and the column tiles
 * address it), on the device against the same codelet on the CPU, whose kernel
 * (dit_cpu_linear_wdt) test_cpu_kernels checks against the formats' definitions. CUDA
 * widens the matrix to bf16 for its GEMM: its tolerance is that of bf16 weights. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "dit_codelets.h"
#include "dit_wdt.h"
#include "ops_cases.h"

static void *zalloc(size_t n)
{
	void *p = calloc(n ? n : 1, 1);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

/* Finite codes of dtype wdt for n weights (q8_0: whole blocks) from the test's
 * random numbers; |values| about 2^-4 (f8 times the scale, q8_0 times its d). */
static void fill_codes(dit_ops *o, int wdt, int64_t n, uint8_t *data)
{
	float *r = ops_rnd(o, n, 1.0f);
	for (int64_t i = 0; i < n; i++) {
		unsigned u = (unsigned)((r[i] + 1.0f) * 32767.5f) * 2654435761u >> 8;
		if (wdt == DIT_WDT_F16) {
			unsigned h = (u & 0x83ffu) | ((9u + u % 5u) << 10);
			memcpy(data + 2 * i, &h, 2);
		} else if (wdt == DIT_WDT_F8_E4M3) {
			unsigned b = u & 0xffu;
			data[i] = (uint8_t)((b & 0x7fu) == 0x7fu ? b - 1 : b);
		} else if (wdt == DIT_WDT_F8_E5M2) {
			unsigned b = u & 0xffu;
			data[i] = (uint8_t)((b & 0x7cu) == 0x7cu ? b & 0x83u : b);
		} else {
			uint8_t *blk = data + i / 32 * 34;
			if (i % 32 == 0) {
				unsigned d = (u & 0x3ffu) | (7u << 10); /* 2^-8 .. 2^-7 */
				memcpy(blk, &d, 2);
			}
			blk[2 + i % 32] = (uint8_t)(u >> 12);
		}
	}
	free(r);
}

/* y [m, n] = act(x [m, k] W^T + b), W rows row0.. of a [row0 + n, k] tensor of dtype
 * wdt at slot w_off of a slab of floats. */
static void linear_wdt(dit_ops *o, int wdt, int64_t m, int64_t n, int64_t k, int64_t row0, int act)
{
	int64_t ldx = k + 3, ldy = n + 5;
	int64_t rows = row0 + n, w_off = 8;
	int64_t s_off = dit_wdt_is_f8(wdt) ? w_off + dit_wdt_data_slots(wdt, rows * k) : 0;
	int64_t b_off = w_off + dit_wdt_slots(wdt, rows * k) + 1, nslab = b_off + n + 3;
	float *x = ops_rnd(o, m * ldx, 1.0f);
	float *slab = ops_rnd(o, nslab, 0.5f);
	fill_codes(o, wdt, rows * k, (uint8_t *)(slab + w_off));
	if (s_off)
		slab[s_off] = 0.0625f / sqrtf((float)k) * 8.0f;
	dit_linear_args a = {.fp = {{m, n, k, act}},
	                     .m = m,
	                     .n = n,
	                     .k = k,
	                     .ldx = ldx,
	                     .ldy = ldy,
	                     .w_off = w_off,
	                     .b_off = b_off,
	                     .w_row0 = row0,
	                     .s_off = s_off,
	                     .act = act,
	                     .wdt = wdt};
	float *y[3];
	for (int r = 0; r < 3; r++) {
		y[r] = zalloc((size_t)(m * ldy) * sizeof(float));
		ops_buf b[4] = {
		    ops_buf_of(x, m * ldx, sizeof(float), 0, STARPU_R),
		    ops_buf_of(slab, nslab, sizeof(float), 0, STARPU_R),
		    ops_buf_of(y[r], m * ldy, sizeof(float), 0, STARPU_W),
		    ops_buf_of(NULL, dit_linear_scratch(m, k), sizeof(float), 0, STARPU_SCRATCH)};
		ops_run(r < 2 ? o->be->where : STARPU_CPU, &dit_cl_linear, &a, sizeof a,
		        dit_linear_nbuf(wdt, 0, 0), b);
	}
	char what[112];
	snprintf(what, sizeof what, "%lldx%lldx%lld act %d, %s weights from row %lld", (long long)m,
	         (long long)n, (long long)k, act, dit_wdt_name(wdt), (long long)row0);
	ops_check(o, "linear", o->be->tol("linear", 1, 0), what, y[0], y[1], y[2], m, n, ldy, 0);
	for (int r = 0; r < 3; r++)
		free(y[r]);
	free(x);
	free(slab);
}

void test_linear_wdt(dit_ops *o)
{
	dit_rng keep = o->rng; /* the other cases keep their inputs */
	o->rng.s = 0x7764740001ull;
	static const int wdts[] = {DIT_WDT_F16, DIT_WDT_F8_E4M3, DIT_WDT_F8_E5M2, DIT_WDT_Q8_0};
	for (size_t d = 0; d < sizeof wdts / sizeof wdts[0]; d++) {
		linear_wdt(o, wdts[d], 37, 45, 64, 3, DIT_ACT_GELU_TANH);
		linear_wdt(o, wdts[d], 5, 70, 96, 0, DIT_ACT_NONE);
	}
	o->rng = keep;
}
