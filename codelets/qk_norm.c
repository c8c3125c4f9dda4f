/* qk_norm: RMSNorm over the whole width of q or k (all heads together), times its
 * weight, then 3D RoPE for self-attention. */
#include "dit_codelets.h"

static void qk_norm_cpu(void *buffers[], void *cl_arg)
{
	const dit_qknorm_args *a = cl_arg;
	float *t = DIT_BUF_F32(buffers, 0) + a->t_off;
	const float *slab = DIT_BUF_F32(buffers, 1);
	dit_cpu_rmsnorm(t, a->ld, a->rows, a->dim, a->eps, slab + a->w_off);
	if (a->rope)
		dit_cpu_rope_apply(t, a->ld, a->rows, a->heads, a->head_dim,
		                   DIT_BUF_F64(buffers, 2));
}

DIT_PERFMODEL(qk_norm_model, "dit_qk_norm");

struct starpu_codelet dit_cl_qk_norm = {
    .name = "qk_norm",
    .cpu_funcs = {qk_norm_cpu},
    .cpu_funcs_name = {"qk_norm_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &qk_norm_model,
};
