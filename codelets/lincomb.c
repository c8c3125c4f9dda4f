/* lincomb: one solver update, dst = sum_i coef_i * src_i over latent buffers. */
#include "dit_codelets.h"

static void lincomb_cpu(void *buffers[], void *cl_arg)
{
	const dit_lincomb_args *a = cl_arg;
	const float *in[DIT_LINCOMB_MAX];
	for (int i = 0; i < a->nterms; i++)
		in[i] = DIT_BUF_F32(buffers, a->src[i]);
	dit_cpu_lincomb(DIT_BUF_F32(buffers, 0), a->n, a->nterms, in, a->coef);
}

DIT_PERFMODEL(lincomb_model, "dit_lincomb");

struct starpu_codelet dit_cl_lincomb = {
    .name = "lincomb",
    .cpu_funcs = {lincomb_cpu},
    .cpu_funcs_name = {"lincomb_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &lincomb_model,
};
