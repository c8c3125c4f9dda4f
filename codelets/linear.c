/* linear: y = act(x W^T + b), W and b read from a weight slab; W in fp32 or bf16. */
#include "dit_codelets.h"
#include "dit_opencl.h"

/* m rows of y (fp32, ldy) from m rows of x (fp32, ldx) on the CPU. */
static void linear_cpu_rows(const dit_linear_args *a, float *y, int64_t ldy, const float *x,
                            int64_t ldx, int64_t m, const float *slab, void *scratch)
{
	const float *b = a->b_off >= 0 ? slab + a->b_off : NULL;
	if (a->wbf16)
		dit_cpu_linear_bf16w(y, ldy, x, ldx, (const uint16_t *)(slab + a->w_off), b, m,
		                     a->n, a->k, a->act, dit_buf_f32(scratch),
		                     STARPU_VECTOR_GET_NX(scratch));
	else
		dit_cpu_linear(y, ldy, x, ldx, slab + a->w_off, b, m, a->n, a->k, a->act);
}

static void linear_cpu(void *buffers[], void *cl_arg)
{
	const dit_linear_args *a = cl_arg;
	const float *slab = DIT_BUF_F32(buffers, 1);
	void *scratch = a->wbf16 ? buffers[3] : NULL;
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
	               a->w_off, a->b_off, a->m, a->n, a->k, a->act, a->wbf16);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
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
	if (dit_cuda_lib_linear(s, y, y_bf16, ldy, x, x_bf16, a->ldx, slab + a->w_off, a->wbf16, b,
	                        a->m, a->n, a->k, a->act))
		return;
	DIT_CUDA_CHECK("linear",
	               dit_cuda_linear_act(starpu_cublas_get_local_handle(), s, y, y_bf16, ldy, x,
	                                   x_bf16, a->ldx, slab + a->w_off, a->wbf16, b, a->m, a->n,
	                                   a->k, a->act, scratch, scratch_n));
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
