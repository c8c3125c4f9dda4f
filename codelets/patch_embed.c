/* patch_embed: the Conv3d patch embedding as one GEMM over patch rows. */
#include "dit_codelets.h"

static void patch_embed_cpu(void *buffers[], void *cl_arg)
{
	const dit_patch_embed_args *a = cl_arg;
	const float *g = DIT_BUF_F32(buffers, 0);
	const float *latent = DIT_BUF_F32(buffers, 1);
	float *x = DIT_BUF_F32(buffers, 2);
	float *rows = DIT_BUF_F32(buffers, 3);
	int64_t cp = a->c * a->pt * a->ph * a->pw;
	int64_t tokens = (a->f / a->pt) * (a->h / a->ph) * (a->w / a->pw);
	dit_cpu_patchify(rows, latent, a->c, a->f, a->h, a->w, a->pt, a->ph, a->pw);
	dit_cpu_linear(x, a->dim, rows, cp, g + a->w_off, g + a->b_off, tokens, a->dim, cp,
	               DIT_ACT_NONE);
}

DIT_PERFMODEL(patch_embed_model, "dit_patch_embed");

struct starpu_codelet dit_cl_patch_embed = {
    .name = "patch_embed",
    .cpu_funcs = {patch_embed_cpu},
    .cpu_funcs_name = {"patch_embed_cpu"},
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_SCRATCH},
    .model = &patch_embed_model,
};
