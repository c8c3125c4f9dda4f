/* Insert helpers for the generic ops (see dit_ops.h). */
#include "dit_ops.h"

#define R   STARPU_R
#define W   STARPU_W
#define RW  STARPU_RW
#define SCR STARPU_SCRATCH

dit_status dit_op_linear(dit_graph *g, const dit_task_opts *o, const char *name,
                         const dit_linear_args *a, starpu_data_handle_t x,
                         starpu_data_handle_t slab, starpu_data_handle_t y,
                         starpu_data_handle_t scratch, dit_error *err)
{
	dit_linear_args c = *a;
	starpu_data_handle_t h[] = {x, slab, y, scratch};
	enum starpu_data_access_mode md[] = {R, R, W, SCR};
	return dit_graph_insert(g, &dit_cl_linear, name, &c, sizeof c, 2.0 * a->m * a->n * a->k,
	                        a->wbf16 ? 4 : 3, h, md, o, err);
}

dit_status dit_op_layernorm(dit_graph *g, const dit_task_opts *o, const char *name,
                            const dit_layernorm_args *a, starpu_data_handle_t x,
                            starpu_data_handle_t y, starpu_data_handle_t slab,
                            starpu_data_handle_t vec, dit_error *err)
{
	dit_layernorm_args c = *a;
	starpu_data_handle_t h[] = {x, y, slab, vec};
	enum starpu_data_access_mode md[] = {R, W, R, R};
	return dit_graph_insert(g, &dit_cl_layernorm, name, &c, sizeof c, 0, a->mod ? 4 : 3, h, md,
	                        o, err);
}

dit_status dit_op_rmsnorm(dit_graph *g, const dit_task_opts *o, const char *name,
                          const dit_qknorm_args *a, starpu_data_handle_t t,
                          starpu_data_handle_t slab, starpu_data_handle_t rope, dit_error *err)
{
	dit_qknorm_args c = *a;
	starpu_data_handle_t h[] = {t, slab, rope};
	enum starpu_data_access_mode md[] = {RW, R, R};
	return dit_graph_insert(g, &dit_cl_qk_norm, name, &c, sizeof c, 0, a->rope ? 3 : 2, h, md,
	                        o, err);
}

dit_status dit_op_attention(dit_graph *g, const dit_task_opts *o, const char *name,
                            const dit_attention_args *a, starpu_data_handle_t q,
                            starpu_data_handle_t kv, starpu_data_handle_t out,
                            starpu_data_handle_t scratch, dit_error *err)
{
	dit_attention_args c = *a;
	c.cross = kv != NULL;
	int64_t lk = a->lk_valid > 0 ? a->lk_valid : a->lk;
	double flops = 4.0 * (double)a->lq * (double)lk * (double)(a->heads * a->hd);
	if (kv) {
		starpu_data_handle_t h[] = {q, kv, out, scratch};
		enum starpu_data_access_mode md[] = {R, R, W, SCR};
		return dit_graph_insert(g, &dit_cl_attention, name, &c, sizeof c, flops, 4, h, md,
		                        o, err);
	}
	starpu_data_handle_t h[] = {q, out, scratch};
	enum starpu_data_access_mode md[] = {R, W, SCR};
	return dit_graph_insert(g, &dit_cl_attention, name, &c, sizeof c, flops, 3, h, md, o, err);
}

dit_status dit_op_residual(dit_graph *g, const dit_task_opts *o, const char *name,
                           const dit_residual_args *a, starpu_data_handle_t x,
                           starpu_data_handle_t y, starpu_data_handle_t slab,
                           starpu_data_handle_t vec, dit_error *err)
{
	dit_residual_args c = *a;
	starpu_data_handle_t h[] = {x, y, slab, vec};
	enum starpu_data_access_mode md[] = {RW, R, R, R};
	return dit_graph_insert(g, &dit_cl_residual, name, &c, sizeof c, 0,
	                        a->gate_off >= 0 ? 4 : 2, h, md, o, err);
}

dit_status dit_op_copy2d(dit_graph *g, const dit_task_opts *o, const char *name,
                         const dit_copy2d_args *a, starpu_data_handle_t dst,
                         starpu_data_handle_t src, dit_error *err)
{
	dit_copy2d_args c = *a;
	starpu_data_handle_t h[] = {dst, src};
	enum starpu_data_access_mode md[] = {RW, R};
	return dit_graph_insert(g, &dit_cl_copy2d, name, &c, sizeof c, 0, 2, h, md, o, err);
}
