/* linear: y = act(x W^T + b), W and b read from a weight slab; W in any weight dtype
 * (dit_wdt.h: fp32, bf16, or a checkpoint's compact fp16, float8 or Q8_0). */
#include "dit_codelets.h"
#include "dit_opencl.h"

/* m rows of y (fp32, ldy) from m rows of x (fp32, ldx) on the CPU. */
static void linear_cpu_rows(const dit_linear_args *a, float *y, int64_t ldy, const float *x,
                            int64_t ldx, int64_t m, const float *slab, void *scratch)
{
	const float *b = a->b_off >= 0 ? slab + a->b_off : NULL;
	if (a->wdt != DIT_WDT_F32)
		dit_cpu_linear_wdt(y, ldy, x, ldx, dit_linear_w(a, slab), a->wdt,
		                   a->s_off > 0 ? slab[a->s_off] : 1.0f, b, m, a->n, a->k, a->act,
		                   dit_buf_f32(scratch), STARPU_VECTOR_GET_NX(scratch));
	else
		dit_cpu_linear(y, ldy, x, ldx, dit_linear_w(a, slab), b, m, a->n, a->k, a->act);
}

static void linear_cpu(void *buffers[], void *cl_arg)
{
	const dit_linear_args *a = cl_arg;
	const float *slab = DIT_BUF_F32(buffers, 1);
	void *scratch = a->wdt != DIT_WDT_F32 ? buffers[3] : NULL;
	int64_t ldy = dit_buf_ld(buffers[2], a->ldy);
	if (!dit_buf_bf16(buffers[0]) && !dit_buf_bf16(buffers[2])) {
		linear_cpu_rows(a, DIT_BUF_F32(buffers, 2) + a->y_off, ldy,
		                DIT_BUF_F32(buffers, 0) + a->x_off, a->ldx, a->m, slab, scratch);
		return;
	}
	/* bf16 activations: a block of rows at a time through fp32 copies */
	for (int64_t r0 = 0; r0 < a->m; r0 += DIT_STAGE_ROWS) {
		int64_t nr = a->m - r0 < DIT_STAGE_ROWS ? a->m - r0 : DIT_STAGE_ROWS;
		dit_f32rows x, y;
		dit_f32rows_open(&x, buffers[0], a->x_off + r0 * a->ldx, a->ldx, nr, a->k, 1,
		                 "linear");
		dit_f32rows_open(&y, buffers[2], a->y_off + r0 * ldy, ldy, nr, a->n, 0, "linear");
		linear_cpu_rows(a, y.p, y.ld, x.p, x.ld, nr, slab, scratch);
		dit_f32rows_close(&x, 0);
		dit_f32rows_close(&y, 1);
	}
}

#ifdef STARPU_USE_OPENCL
static void linear_opencl(void *buffers[], void *cl_arg)
{
	const dit_linear_args *a = cl_arg;
	dit_ocl_linear(dit_ocl_act(buffers[2], a->y_off), dit_buf_ld(buffers[2], a->ldy),
	               dit_ocl_act(buffers[0], a->x_off), a->ldx, dit_ocl_f32(buffers[1], 0),
	               4 * a->w_off + dit_wdt_data_bytes(a->wdt, a->w_row0 * a->k), a->s_off,
	               a->b_off, a->m, a->n, a->k, a->act, a->wdt);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
/* This CUDA worker's tile of a compact weight matrix widened to bf16 (allocated at its
 * first compact GEMM, DIT_CUDA_WTILE_BYTES, freed by dit_cuda_wtile_free). */
static _Thread_local uint16_t *wtile;

void dit_cuda_wtile_free(void)
{
	if (wtile)
		cudaFree(wtile);
	wtile = NULL;
}

/* y = act(x W^T + b) with W compact: rows of W widened to bf16 into the worker's tile,
 * each tile one bf16-weight GEMM of the columns it gives y. */
static void linear_cuda_compact(const dit_linear_args *a, const float *slab, void *y, int y_bf16,
                                int64_t ldy, const void *x, int x_bf16, uint16_t *scratch,
                                size_t scratch_n)
{
	cudaStream_t s = starpu_cuda_get_local_stream();
	if (!wtile)
		DIT_CUDA_CHECK("linear", (int)cudaMalloc((void **)&wtile, DIT_CUDA_WTILE_BYTES));
	int64_t rows = (int64_t)(DIT_CUDA_WTILE_BYTES / 2) / (a->k > 0 ? a->k : 1);
	rows = rows >= 16 ? rows / 8 * 8 : 1; /* y's columns stay 16-byte aligned */
	const char *w = dit_linear_w(a, slab);
	const float *sc = a->s_off > 0 ? slab + a->s_off : NULL;
	const float *b = a->b_off >= 0 ? slab + a->b_off : NULL;
	for (int64_t j0 = 0; j0 < a->n; j0 += rows) {
		int64_t nt = a->n - j0 < rows ? a->n - j0 : rows;
		DIT_CUDA_CHECK("linear", dit_cuda_wdt_to_bf16(
		                             s, wtile, w + dit_wdt_data_bytes(a->wdt, j0 * a->k),
		                             a->wdt, sc, nt * a->k));
		void *yj = (char *)y + j0 * (y_bf16 ? 2 : 4);
		const float *bj = b ? b + j0 : NULL;
		if (dit_cuda_lib_linear(s, yj, y_bf16, ldy, x, x_bf16, a->ldx, wtile, 1, bj, a->m,
		                        nt, a->k, a->act))
			continue;
		DIT_CUDA_CHECK("linear",
		               dit_cuda_linear_act(starpu_cublas_get_local_handle(), s, yj, y_bf16,
		                                   ldy, x, x_bf16, a->ldx, wtile, 1, bj, a->m, nt,
		                                   a->k, a->act, scratch, scratch_n));
	}
}

static void linear_cuda(void *buffers[], void *cl_arg)
{
	const dit_linear_args *a = cl_arg;
	const float *slab = DIT_BUF_F32(buffers, 1);
	const float *b = a->b_off >= 0 ? slab + a->b_off : NULL;
	uint16_t *scratch = NULL;
	size_t scratch_n = 0;
	if (dit_linear_has_scratch(a, buffers)) {
		scratch = (uint16_t *)DIT_BUF_F32(buffers, 3);
		scratch_n = 2 * (size_t)STARPU_VECTOR_GET_NX(buffers[3]);
	}
	cudaStream_t s = starpu_cuda_get_local_stream();
	void *y = dit_buf_at(buffers[2], a->y_off);
	const void *x = dit_buf_at(buffers[0], a->x_off);
	int y_bf16 = dit_buf_bf16(buffers[2]), x_bf16 = dit_buf_bf16(buffers[0]);
	int64_t ldy = dit_buf_ld(buffers[2], a->ldy);
	if (a->wdt >= DIT_WDT_F16) {
		linear_cuda_compact(a, slab, y, y_bf16, ldy, x, x_bf16, scratch, scratch_n);
		return;
	}
	const void *w = dit_linear_w(a, slab);
	int w_bf16 = a->wdt == DIT_WDT_BF16;
	if (dit_cuda_lib_linear(s, y, y_bf16, ldy, x, x_bf16, a->ldx, w, w_bf16, b, a->m, a->n,
	                        a->k, a->act))
		return;
	DIT_CUDA_CHECK("linear", dit_cuda_linear_act(starpu_cublas_get_local_handle(), s, y, y_bf16,
	                                             ldy, x, x_bf16, a->ldx, w, w_bf16, b, a->m,
	                                             a->n, a->k, a->act, scratch, scratch_n));
}
#endif

DIT_PERFMODEL(linear_model, "dit_linear");

struct starpu_codelet dit_cl_linear = {
    .name = "linear",
    .cpu_funcs = {linear_cpu},
    .cpu_funcs_name = {"linear_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {linear_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {linear_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &linear_model,
};
