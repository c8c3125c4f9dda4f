/* linear: y = act(x W^T + b), W and b read from a weight slab; W in fp32 or bf16. */
#include "dit_codelets.h"
#include "dit_opencl.h"

static void linear_cpu(void *buffers[], void *cl_arg)
{
	const dit_linear_args *a = cl_arg;
	const float *x = DIT_BUF_F32(buffers, 0) + a->x_off;
	const float *slab = DIT_BUF_F32(buffers, 1);
	float *y = DIT_BUF_F32(buffers, 2) + a->y_off;
	const float *b = a->b_off >= 0 ? slab + a->b_off : NULL;
	if (a->wbf16) {
		float *tile = DIT_BUF_F32(buffers, 3);
		size_t tile_n = STARPU_VECTOR_GET_NX(buffers[3]);
		dit_cpu_linear_bf16w(y, dit_buf_ld(buffers[2], a->ldy), x, a->ldx,
		                     (const uint16_t *)(slab + a->w_off), b, a->m, a->n, a->k,
		                     a->act, tile, tile_n);
	} else {
		dit_cpu_linear(y, dit_buf_ld(buffers[2], a->ldy), x, a->ldx, slab + a->w_off, b,
		               a->m, a->n, a->k, a->act);
	}
}

#ifdef STARPU_USE_OPENCL
static void linear_opencl(void *buffers[], void *cl_arg)
{
	const dit_linear_args *a = cl_arg;
	dit_ocl_linear(dit_ocl_f32(buffers[2], a->y_off), dit_buf_ld(buffers[2], a->ldy),
	               dit_ocl_f32(buffers[0], a->x_off), a->ldx, dit_ocl_f32(buffers[1], 0),
	               a->w_off, a->b_off, a->m, a->n, a->k, a->act, a->wbf16);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void linear_cuda(void *buffers[], void *cl_arg)
{
	const dit_linear_args *a = cl_arg;
	const float *x = DIT_BUF_F32(buffers, 0) + a->x_off;
	const float *slab = DIT_BUF_F32(buffers, 1);
	float *y = DIT_BUF_F32(buffers, 2) + a->y_off;
	const float *b = a->b_off >= 0 ? slab + a->b_off : NULL;
	uint16_t *scratch = NULL;
	size_t scratch_n = 0;
	if (a->wbf16) {
		scratch = (uint16_t *)DIT_BUF_F32(buffers, 3);
		scratch_n = 2 * (size_t)STARPU_VECTOR_GET_NX(buffers[3]);
	}
	DIT_CUDA_CHECK("linear",
	               dit_cuda_linear(starpu_cublas_get_local_handle(),
	                               starpu_cuda_get_local_stream(), y,
	                               dit_buf_ld(buffers[2], a->ldy), x, a->ldx, slab + a->w_off,
	                               a->wbf16, b, a->m, a->n, a->k, a->act, scratch, scratch_n));
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
