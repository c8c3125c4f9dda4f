/* layernorm: LayerNorm without affine, then an affine transform (norm3) or the
 * adaptive modulation (1 + scale) * . + shift, with shift and scale the sums of a slab
 * table and a per-step vector (block.modulation + e0). */
#include "dit_codelets.h"
#include "dit_opencl.h"

static void layernorm_cpu(void *buffers[], void *cl_arg)
{
	const dit_layernorm_args *a = cl_arg;
	const float *x = DIT_BUF_F32(buffers, 0);
	float *y = DIT_BUF_F32(buffers, 1);
	const float *slab = DIT_BUF_F32(buffers, 2);
	const float *w = a->affine ? slab + a->w_off : NULL;
	const float *b = a->affine ? slab + a->b_off : NULL;
	const float *sha = NULL, *shb = NULL, *sca = NULL, *scb = NULL;
	if (a->mod) {
		const float *vec = DIT_BUF_F32(buffers, 3);
		sha = slab + a->shift_off;
		shb = vec + a->vshift_off;
		sca = slab + a->scale_off;
		scb = vec + a->vscale_off;
	}
	dit_cpu_layernorm(y, a->dim, x, a->dim, a->rows, a->dim, a->eps, w, b, sha, shb, sca, scb);
}

#ifdef STARPU_USE_OPENCL
static void layernorm_opencl(void *buffers[], void *cl_arg)
{
	const dit_layernorm_args *a = cl_arg;
	dit_ocl_ref none = {NULL, 0};
	dit_ocl_ref vec = a->mod ? dit_ocl_f32(buffers[3], 0) : none;
	dit_ocl_layernorm(dit_ocl_f32(buffers[1], 0), dit_ocl_f32(buffers[0], 0), a->rows, a->dim,
	                  a->eps, a->affine, a->mod, dit_ocl_f32(buffers[2], 0), a->w_off, a->b_off,
	                  a->shift_off, a->scale_off, vec, a->vshift_off, a->vscale_off);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void layernorm_cuda(void *buffers[], void *cl_arg)
{
	const dit_layernorm_args *a = cl_arg;
	const float *x = DIT_BUF_F32(buffers, 0);
	float *y = DIT_BUF_F32(buffers, 1);
	const float *slab = DIT_BUF_F32(buffers, 2);
	const float *w = a->affine ? slab + a->w_off : NULL;
	const float *b = a->affine ? slab + a->b_off : NULL;
	const float *sha = NULL, *shb = NULL, *sca = NULL, *scb = NULL;
	if (a->mod) {
		const float *vec = DIT_BUF_F32(buffers, 3);
		sha = slab + a->shift_off;
		shb = vec + a->vshift_off;
		sca = slab + a->scale_off;
		scb = vec + a->vscale_off;
	}
	DIT_CUDA_CHECK("layernorm",
	               dit_cuda_layernorm(starpu_cuda_get_local_stream(), y, a->dim, x, a->dim,
	                                  a->rows, a->dim, a->eps, w, b, sha, shb, sca, scb));
}
#endif

DIT_PERFMODEL(layernorm_model, "dit_layernorm");

struct starpu_codelet dit_cl_layernorm = {
    .name = "layernorm",
    .cpu_funcs = {layernorm_cpu},
    .cpu_funcs_name = {"layernorm_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {layernorm_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {layernorm_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &layernorm_model,
};
