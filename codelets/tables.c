/* CPU-only table ops run once per run (positions, split RoPE tables) or once per block
 * on the text context (an affine modulation without a norm): small next to the
 * blocks' GEMMs, so no device version; StarPU moves their output where it is read. */
#include "dit_codelets.h"

static void rope_split_cpu(void *buffers[], void *cl_arg)
{
	const dit_rope_split_args *a = cl_arg;
	dit_cpu_rope_split_table(DIT_BUF_F64(buffers, 1), DIT_BUF_F64(buffers, 0), a->L, a->naxes,
	                         a->max_pos, a->theta, a->inner, a->heads);
}

static void ltx_positions_cpu(void *buffers[], void *cl_arg)
{
	const dit_positions_args *a = cl_arg;
	if (a->audio)
		dit_cpu_ltx_audio_positions(DIT_BUF_F64(buffers, 0), a->t);
	else
		dit_cpu_ltx_video_positions(DIT_BUF_F64(buffers, 0), a->f, a->h, a->w, a->stride,
		                            a->fps);
}

static void modulate_cpu(void *buffers[], void *cl_arg)
{
	const dit_modulate_args *a = cl_arg;
	const float *slab = DIT_BUF_F32(buffers, 2);
	const float *vec = a->vec ? DIT_BUF_F32(buffers, 3) : NULL;
	dit_cpu_modulate(DIT_BUF_F32(buffers, 1), DIT_BUF_F32(buffers, 0), a->rows, a->dim,
	                 slab + a->shift_off, slab + a->scale_off, vec ? vec + a->vshift_off : NULL,
	                 vec ? vec + a->vscale_off : NULL);
}

static void rope_cosmos_cpu(void *buffers[], void *cl_arg)
{
	const dit_rope_cosmos_args *a = cl_arg;
	dit_cpu_rope_cosmos_table(DIT_BUF_F64(buffers, 0), a->t, a->h, a->w, a->head_dim, a->heads,
	                          a->ratio);
}

DIT_PERFMODEL(rope_split_model, "dit_rope_split");
DIT_PERFMODEL(rope_cosmos_model, "dit_rope_cosmos");
DIT_PERFMODEL(ltx_positions_model, "dit_ltx_positions");
DIT_PERFMODEL(modulate_model, "dit_modulate");

struct starpu_codelet dit_cl_rope_split = {
    .name = "rope_split",
    .cpu_funcs = {rope_split_cpu},
    .cpu_funcs_name = {"rope_split_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &rope_split_model,
};

struct starpu_codelet dit_cl_rope_cosmos = {
    .name = "rope_cosmos",
    .cpu_funcs = {rope_cosmos_cpu},
    .cpu_funcs_name = {"rope_cosmos_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &rope_cosmos_model,
};

struct starpu_codelet dit_cl_ltx_positions = {
    .name = "ltx_positions",
    .cpu_funcs = {ltx_positions_cpu},
    .cpu_funcs_name = {"ltx_positions_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &ltx_positions_model,
};

struct starpu_codelet dit_cl_modulate = {
    .name = "modulate",
    .cpu_funcs = {modulate_cpu},
    .cpu_funcs_name = {"modulate_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &modulate_model,
};
