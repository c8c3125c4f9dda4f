/* attention: multi-head softmax attention, flash style (see dit_cpu_attention).
 * Self-attention reads q, k, v from one qkv buffer; cross-attention reads q from one
 * buffer and k, v from a kv buffer. */
#include "dit_codelets.h"

#include <math.h>

static void attention_cpu(void *buffers[], void *cl_arg)
{
	const dit_attention_args *a = cl_arg;
	const float *qb = DIT_BUF_F32(buffers, 0);
	const float *kvb = a->cross ? DIT_BUF_F32(buffers, 1) : qb;
	float *o = DIT_BUF_F32(buffers, a->cross ? 2 : 1);
	float *scratch = DIT_BUF_F32(buffers, a->cross ? 3 : 2);
	float scale = (float)(1.0 / sqrt((double)a->hd));
	dit_cpu_attention(o, a->ldo, qb + a->q_off, a->ldq, kvb + a->k_off, a->ldk, kvb + a->v_off,
	                  a->ldk, a->lq, a->lk, a->heads, a->hd, scale, scratch);
}

DIT_PERFMODEL(attention_model, "dit_attention");

struct starpu_codelet dit_cl_attention = {
    .name = "attention",
    .cpu_funcs = {attention_cpu},
    .cpu_funcs_name = {"attention_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &attention_model,
};
