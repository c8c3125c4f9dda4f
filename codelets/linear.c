/* linear: y = act(x W^T + b), W and b read from a weight slab. */
#include "dit_codelets.h"
#include "dit_opencl.h"

static void linear_cpu(void *buffers[], void *cl_arg)
{
	const dit_linear_args *a = cl_arg;
	const float *x = DIT_BUF_F32(buffers, 0) + a->x_off;
	const float *slab = DIT_BUF_F32(buffers, 1);
	float *y = DIT_BUF_F32(buffers, 2) + a->y_off;
	const float *b = a->b_off >= 0 ? slab + a->b_off : NULL;
	dit_cpu_linear(y, a->ldy, x, a->ldx, slab + a->w_off, b, a->m, a->n, a->k, a->act);
}

#ifdef STARPU_USE_OPENCL
static void linear_opencl(void *buffers[], void *cl_arg)
{
	const dit_linear_args *a = cl_arg;
	dit_ocl_linear(dit_ocl_f32(buffers[2], a->y_off), a->ldy, dit_ocl_f32(buffers[0], a->x_off),
	               a->ldx, dit_ocl_f32(buffers[1], 0), a->w_off, a->b_off, a->m, a->n, a->k,
	               a->act);
	dit_ocl_finish();
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
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &linear_model,
};
