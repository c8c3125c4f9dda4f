/* residual: x += y * gate, gate = block.modulation chunk + e0 chunk, or x += y. */
#include "dit_codelets.h"

static void residual_cpu(void *buffers[], void *cl_arg)
{
	const dit_residual_args *a = cl_arg;
	float *x = DIT_BUF_F32(buffers, 0);
	const float *y = DIT_BUF_F32(buffers, 1);
	const float *ga = NULL, *gb = NULL;
	if (a->gate_off >= 0) {
		ga = DIT_BUF_F32(buffers, 2) + a->gate_off;
		gb = DIT_BUF_F32(buffers, 3) + a->vgate_off;
	}
	dit_cpu_residual(x, a->dim, y, a->dim, a->rows, a->dim, ga, gb);
}

DIT_PERFMODEL(residual_model, "dit_residual");

struct starpu_codelet dit_cl_residual = {
    .name = "residual",
    .cpu_funcs = {residual_cpu},
    .cpu_funcs_name = {"residual_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &residual_model,
};
