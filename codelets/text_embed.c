/* text_embed: ctx = Linear2(GELU_tanh(Linear1(context))) on the zero-padded context:
 * padded rows are embedded too (they become Linear2(GELU(b1)) + b2, not zero). */
#include "dit_codelets.h"

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

DIT_PERFMODEL(text_embed_model, "dit_text_embed");

struct starpu_codelet dit_cl_text_embed = {
    .name = "text_embed",
    .cpu_funcs = {text_embed_cpu},
    .cpu_funcs_name = {"text_embed_cpu"},
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_SCRATCH},
    .model = &text_embed_model,
};
