/* copy2d: a strided block copy (placeholder CPU arm until the backends land). */
#include <string.h>

#include "dit_codelets.h"

static void copy2d_cpu(void *buffers[], void *cl_arg)
{
	const dit_copy2d_args *a = cl_arg;
	float *dst = DIT_BUF_F32(buffers, 0);
	const float *src = DIT_BUF_F32(buffers, 1);
	for (int64_t i = 0; i < a->count; i++)
		memcpy(dst + a->dst_off + i * a->dst_ld, src + a->src_off + i * a->src_ld,
		       (size_t)a->len * sizeof(float));
}

DIT_PERFMODEL(copy2d_model, "dit_copy2d");

struct starpu_codelet dit_cl_copy2d = {
    .name = "copy2d",
    .cpu_funcs = {copy2d_cpu},
    .cpu_funcs_name = {"copy2d_cpu"},
    .nbuffers = 2,
    .modes = {STARPU_RW, STARPU_R},
    .model = &copy2d_model,
};
