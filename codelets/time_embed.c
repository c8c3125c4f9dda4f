/* time_embed: e = Linear2(SiLU(Linear1(sinusoid(t)))), e0 = Linear(SiLU(e)) [6D]. */
#include <string.h>

#include "dit_codelets.h"

static void time_embed_cpu(void *buffers[], void *cl_arg)
{
	const dit_time_embed_args *a = cl_arg;
	const float *g = DIT_BUF_F32(buffers, 0);
	float *e = DIT_BUF_F32(buffers, 1);
	float *e0 = DIT_BUF_F32(buffers, 2);
	float *sin_t = DIT_BUF_F32(buffers, 3); /* [freq_dim] */
	float *hid = sin_t + a->freq_dim;       /* [D] */

	dit_cpu_timestep_embedding(sin_t, a->t, a->freq_dim);
	dit_cpu_linear(hid, a->dim, sin_t, a->freq_dim, g + a->w0, g + a->b0, 1, a->dim,
	               a->freq_dim, DIT_ACT_SILU);
	dit_cpu_linear(e, a->dim, hid, a->dim, g + a->w2, g + a->b2, 1, a->dim, a->dim,
	               DIT_ACT_NONE);
	memcpy(hid, e, (size_t)a->dim * sizeof *hid);
	dit_cpu_act(hid, a->dim, DIT_ACT_SILU);
	dit_cpu_linear(e0, 6 * a->dim, hid, a->dim, g + a->wp, g + a->bp, 1, 6 * a->dim, a->dim,
	               DIT_ACT_NONE);
}

DIT_PERFMODEL(time_embed_model, "dit_time_embed");

struct starpu_codelet dit_cl_time_embed = {
    .name = "time_embed",
    .cpu_funcs = {time_embed_cpu},
    .cpu_funcs_name = {"time_embed_cpu"},
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_W, STARPU_W, STARPU_SCRATCH},
    .model = &time_embed_model,
};
