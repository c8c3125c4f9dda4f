/* head: LayerNorm with the head's modulation (head.modulation + e, where e is the
 * time embedding before projection), the output Linear, then unpatchify. */
#include "dit_codelets.h"

static void head_cpu(void *buffers[], void *cl_arg)
{
	const dit_head_args *a = cl_arg;
	const float *g = DIT_BUF_F32(buffers, 0);
	const float *x = DIT_BUF_F32(buffers, 1);
	const float *e = DIT_BUF_F32(buffers, 2);
	float *out = DIT_BUF_F32(buffers, 3);
	int64_t tokens = a->tf * a->th * a->tw;
	int64_t cp = a->c * a->pt * a->ph * a->pw;
	float *h = DIT_BUF_F32(buffers, 4); /* [tokens, D] */
	float *tok = h + tokens * a->dim;   /* [tokens, C*P] */
	const float *mod = g + a->mod_off;  /* [2, D]: shift, scale */
	dit_cpu_layernorm(h, a->dim, x, a->dim, tokens, a->dim, a->eps, NULL, NULL, mod, e,
	                  mod + a->dim, e);
	dit_cpu_linear(tok, cp, h, a->dim, g + a->w_off, g + a->b_off, tokens, cp, a->dim,
	               DIT_ACT_NONE);
	dit_cpu_unpatchify(out, tok, a->c, a->tf, a->th, a->tw, a->pt, a->ph, a->pw);
}

DIT_PERFMODEL(head_model, "dit_head");

struct starpu_codelet dit_cl_head = {
    .name = "head",
    .cpu_funcs = {head_cpu},
    .cpu_funcs_name = {"head_cpu"},
    .nbuffers = 5,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W, STARPU_SCRATCH},
    .model = &head_model,
};
