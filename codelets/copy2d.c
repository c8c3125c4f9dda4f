/* copy2d: count rows of len floats from src to dst, each side with its own offset and
 * row stride, bit for bit; the rest of dst is kept. Latent surgery: concatenating
 * channels, putting a conditioning frame back into every channel. */
#include <string.h>

#include "dit_codelets.h"
#include "dit_opencl.h"

/* bf16 activations (both buffers: tasks/ops.c refuses a mix) are copied as two-byte
 * elements, bit for bit like fp32's four. */
static void copy2d_cpu(void *buffers[], void *cl_arg)
{
	const dit_copy2d_args *a = cl_arg;
	if (dit_buf_bf16(buffers[0])) {
		const uint16_t *src = dit_buf_at(buffers[1], a->src_off);
		uint16_t *dst = dit_buf_at(buffers[0], a->dst_off);
		for (int64_t i = 0; i < a->count && a->len > 0; i++)
			memcpy(dst + i * a->dst_ld, src + i * a->src_ld,
			       (size_t)a->len * sizeof *dst);
		return;
	}
	dit_cpu_copy2d(DIT_BUF_F32(buffers, 0) + a->dst_off, a->dst_ld,
	               DIT_BUF_F32(buffers, 1) + a->src_off, a->src_ld, a->count, a->len);
}

#ifdef STARPU_USE_OPENCL
static void copy2d_opencl(void *buffers[], void *cl_arg)
{
	const dit_copy2d_args *a = cl_arg;
	cl_kernel k = dit_ocl_kernel(DIT_OCL_COPY2D);
	dit_ocl_ref dst = dit_ocl_act(buffers[0], a->dst_off);
	dit_ocl_ref src = dit_ocl_act(buffers[1], a->src_off);
	cl_long dst_ld = a->dst_ld, src_ld = a->src_ld, count = a->count, len = a->len;
	dit_ocl_set_args(k, "dit_copy2d", DIT_OCL_ARG(dst.mem), DIT_OCL_ARG(dst.off),
	                 DIT_OCL_ARG(dst_ld), DIT_OCL_ARG(src.mem), DIT_OCL_ARG(src.off),
	                 DIT_OCL_ARG(src_ld), DIT_OCL_ARG(count), DIT_OCL_ARG(len),
	                 DIT_OCL_ARG(dst.bf16), DIT_OCL_END);
	if (a->count > 0 && a->len > 0) {
		size_t local = DIT_OCL_ELEM_WG, global = (size_t)(a->count * a->len);
		dit_ocl_enqueue(k, "dit_copy2d", 1, &global, &local);
	}
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void copy2d_cuda(void *buffers[], void *cl_arg)
{
	const dit_copy2d_args *a = cl_arg;
	if (dit_buf_bf16(buffers[0])) {
		if (a->count > 0 && a->len > 0)
			DIT_CUDA_CHECK("copy2d",
			               (int)cudaMemcpy2DAsync(
			                   dit_buf_at(buffers[0], a->dst_off), 2 * a->dst_ld,
			                   dit_buf_at(buffers[1], a->src_off), 2 * a->src_ld,
			                   2 * a->len, a->count, cudaMemcpyDeviceToDevice,
			                   starpu_cuda_get_local_stream()));
		return;
	}
	DIT_CUDA_CHECK("copy2d", dit_cuda_copy2d(starpu_cuda_get_local_stream(),
	                                         DIT_BUF_F32(buffers, 0) + a->dst_off, a->dst_ld,
	                                         DIT_BUF_F32(buffers, 1) + a->src_off, a->src_ld,
	                                         a->count, a->len));
}
#endif

DIT_PERFMODEL(copy2d_model, "dit_copy2d");

struct starpu_codelet dit_cl_copy2d = {
    .name = "copy2d",
    .cpu_funcs = {copy2d_cpu},
    .cpu_funcs_name = {"copy2d_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {copy2d_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {copy2d_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS, /* dst W when written whole (tasks/ops.c) */
    .model = &copy2d_model,
};
