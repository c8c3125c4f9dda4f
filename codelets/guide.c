/* guide_step: the x0-guided Euler step of a sample over its passes' velocities
 * (dit_cpu_guide_step), once per step and stream on latent-sized data, optionally
 * keeping the guided x0 (--preview): CPU only. */
#include "dit_codelets.h"

static void guide_step_cpu(void *buffers[], void *cl_arg)
{
	const dit_guide_args *a = cl_arg;
	const float *v[4] = {NULL, NULL, NULL, NULL};
	int b = 1;
	for (int k = 0; k < 4; k++)
		if (a->have[k])
			v[k] = DIT_BUF_F32(buffers, b++);
	dit_guide_cond c = {.off = a->c_off,
	                    .len = a->c_len,
	                    .ld = a->c_ld,
	                    .count = a->c_count,
	                    .mask = a->c_mask};
	if (a->cond)
		c.clean = DIT_BUF_F32(buffers, b + (a->x0 ? 1 : 0));
	dit_cpu_guide_step(DIT_BUF_F32(buffers, 0), a->x0 ? DIT_BUF_F32(buffers, b) : NULL, v, a->n,
	                   a->sigma, a->sigma_next, a->cfg, a->stg, a->rescale, a->modality,
	                   a->cond ? &c : NULL);
}

DIT_PERFMODEL(guide_step_model, "dit_guide_step");

struct starpu_codelet dit_cl_guide_step = {
    .name = "guide_step",
    .cpu_funcs = {guide_step_cpu},
    .cpu_funcs_name = {"guide_step_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &guide_step_model,
};
