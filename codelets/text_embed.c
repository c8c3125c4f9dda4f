/* text_embed: ctx = Linear2(GELU_tanh(Linear1(context))) on the zero-padded context:
 * padded rows are embedded too (they become Linear2(GELU(b1)) + b2, not zero). */
#include "dit_codelets.h"
#include "dit_opencl.h"

static void text_embed_cpu(void *buffers[], void *cl_arg)
{
	const dit_text_embed_args *a = cl_arg;
	const float *g = DIT_BUF_F32(buffers, 0);
	const float *context = DIT_BUF_F32(buffers, 1);
	float *ctx = DIT_BUF_F32(buffers, 2);
	float *hid = DIT_BUF_F32(buffers, 3);
	dit_cpu_linear(hid, a->dim, context, a->text_dim, g + a->w0, g + a->b0, a->len, a->dim,
	               a->text_dim, DIT_ACT_GELU_TANH);
	dit_cpu_linear(ctx, a->dim, hid, a->dim, g + a->w2, g + a->b2, a->len, a->dim, a->dim,
	               DIT_ACT_NONE);
}

#ifdef STARPU_USE_OPENCL
static void text_embed_opencl(void *buffers[], void *cl_arg)
{
	const dit_text_embed_args *a = cl_arg;
	dit_ocl_ref g = dit_ocl_f32(buffers[0], 0), hid = dit_ocl_f32(buffers[3], 0);
	dit_ocl_linear(hid, a->dim, dit_ocl_f32(buffers[1], 0), a->text_dim, g, 4 * a->w0, 0, a->b0,
	               a->len, a->dim, a->text_dim, DIT_ACT_GELU_TANH, 0);
	dit_ocl_linear(dit_ocl_f32(buffers[2], 0), a->dim, hid, a->dim, g, 4 * a->w2, 0, a->b2,
	               a->len, a->dim, a->dim, DIT_ACT_NONE, 0);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void text_embed_cuda(void *buffers[], void *cl_arg)
{
	const dit_text_embed_args *a = cl_arg;
	cudaStream_t s = starpu_cuda_get_local_stream();
	cublasHandle_t h = starpu_cublas_get_local_handle();
	const float *g = DIT_BUF_F32(buffers, 0);
	const float *context = DIT_BUF_F32(buffers, 1);
	float *ctx = DIT_BUF_F32(buffers, 2);
	float *hid = DIT_BUF_F32(buffers, 3);
	DIT_CUDA_CHECK("text_embed", dit_cuda_linear(h, s, hid, a->dim, context, a->text_dim,
	                                             g + a->w0, 0, g + a->b0, a->len, a->dim,
	                                             a->text_dim, DIT_ACT_GELU_TANH, NULL, 0));
	DIT_CUDA_CHECK("text_embed",
	               dit_cuda_linear(h, s, ctx, a->dim, hid, a->dim, g + a->w2, 0, g + a->b2,
	                               a->len, a->dim, a->dim, DIT_ACT_NONE, NULL, 0));
}
#endif

DIT_PERFMODEL(text_embed_model, "dit_text_embed");

struct starpu_codelet dit_cl_text_embed = {
    .name = "text_embed",
    .cpu_funcs = {text_embed_cpu},
    .cpu_funcs_name = {"text_embed_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {text_embed_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {text_embed_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_SCRATCH},
    .model = &text_embed_model,
};
