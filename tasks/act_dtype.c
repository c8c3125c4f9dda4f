/* bf16 activations (dit_grid.act_bf16): the ops whose codelets take them on every
 * backend, and the check that no other op is handed one. */
#include "dit_codelets.h"
#include "dit_graph.h"

/* Whether codelet cl computes over bf16 activations (dit_grid.act_bf16) on every
 * backend: the ops a block's activations flow through. */
static int takes_bf16(const struct starpu_codelet *cl)
{
	const struct starpu_codelet *ok[] = {
	    &dit_cl_linear,   &dit_cl_layernorm, &dit_cl_qk_norm, &dit_cl_attention,
	    &dit_cl_residual, &dit_cl_head_gate, &dit_cl_copy2d};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (cl == ok[i])
			return 1;
	return 0;
}

/* DIT_OK, or the error of a bf16 buffer handed to an op without a bf16 form (a block
 * kind that marks a buffer bf16 which an op of its own cannot read: a bug, caught
 * before a kernel reads bf16 as fp32). */
dit_status dit_graph_bf16_check(const struct starpu_codelet *cl, const char *name, int nbuf,
                                const starpu_data_handle_t *h, dit_error *err)
{
	if (takes_bf16(cl))
		return DIT_OK;
	for (int i = 0; i < nbuf; i++)
		if (h[i] && starpu_data_get_interface_id(h[i]) == STARPU_VECTOR_INTERFACE_ID &&
		    starpu_vector_get_elemsize(h[i]) == 2)
			return dit_error_set(err, DIT_EUNSUPPORTED,
			                     "%s: the %s op has no bf16 form for its buffer %d "
			                     "(--act-dtype f32 runs it)",
			                     name, cl->name, i);
	return DIT_OK;
}
