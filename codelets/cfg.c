/* cfg: classifier-free guidance, out = uncond + scale * (cond - uncond). */
#include "dit_codelets.h"

static void cfg_cpu(void *buffers[], void *cl_arg)
{
	const dit_cfg_args *a = cl_arg;
	dit_cpu_cfg(DIT_BUF_F32(buffers, 2), DIT_BUF_F32(buffers, 0), DIT_BUF_F32(buffers, 1), a->n,
	            a->scale);
}

DIT_PERFMODEL(cfg_model, "dit_cfg");

struct starpu_codelet dit_cl_cfg = {
    .name = "cfg",
    .cpu_funcs = {cfg_cpu},
    .cpu_funcs_name = {"cfg_cpu"},
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &cfg_model,
};
