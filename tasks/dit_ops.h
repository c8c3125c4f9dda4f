/* Insert helpers for the generic ops, shared by every block kind: each takes the op's
 * codelet arguments (codelets/dit_codelets.h: sizes, tensor offsets in the weight
 * slab, modulation tables, masks), the data handles the op reads and writes, and the
 * per-call task options (NULL: none). They pick the access modes, the buffer count
 * and the flops the stats and traces report. */
#ifndef DIT_OPS_H
#define DIT_OPS_H

#include "dit_codelets.h"
#include "dit_graph.h"

/* In a block kind's or stage's submit function: return the status of call when it is
 * not DIT_OK (common/dit_error.h). */
#define TRY(call) DIT_TRY(call)

/* The attention of m queries over L keys, heads x hd wide (D), into o [m, D]: q rows
 * ldq apart from q_off, k and v rows ldk apart from k_off and v_off. */
static inline dit_attention_args dit_attention_at(int64_t m, int64_t L, int64_t heads, int64_t hd,
                                                  int64_t q_off, int64_t ldq, int64_t k_off,
                                                  int64_t v_off, int64_t ldk)
{
	dit_attention_args a = {.fp = {{m, L, heads, hd}},
	                        .lq = m,
	                        .lk = L,
	                        .heads = heads,
	                        .hd = hd,
	                        .q_off = q_off,
	                        .ldq = ldq,
	                        .k_off = k_off,
	                        .v_off = v_off,
	                        .ldk = ldk,
	                        .ldo = heads * hd};
	return a;
}

/* The queries of rows q0 .. q0 + m over all L keys of a fused q/k/v buffer [L, 3D]
 * (q, k, v one after the other in each row). */
static inline dit_attention_args dit_attention_fused(int64_t q0, int64_t m, int64_t L,
                                                     int64_t heads, int64_t hd)
{
	int64_t D = heads * hd;
	return dit_attention_at(m, L, heads, hd, q0 * 3 * D, 3 * D, D, 2 * D, 3 * D);
}

/* lq queries, q [lq, D] in a buffer of their own, over L keys whose k and v share kv
 * [L, 2D] (k its first D columns): token chunks' q against the whole k/v. */
static inline dit_attention_args dit_attention_split(int64_t lq, int64_t L, int64_t heads,
                                                     int64_t hd)
{
	int64_t D = heads * hd;
	return dit_attention_at(lq, L, heads, hd, 0, D, 0, D, 2 * D);
}

/* The arguments of y [m, n] (rows ldy apart, from column y_off) = act(x [m, k] (rows ldx
 * apart, from column x_off) W^T + b), W tensor wt of view v (from its row 0), b at
 * b_off (< 0: none). */
static inline dit_linear_args dit_linear_make(int64_t m, int64_t n, int64_t k, int64_t ldx,
                                              int64_t x_off, int64_t ldy, int64_t y_off,
                                              const dit_wview *v, int wt, int64_t b_off,
                                              dit_act act)
{
	dit_linear_args a = {.fp = {{m, n, k, act}},
	                     .m = m,
	                     .n = n,
	                     .k = k,
	                     .ldx = ldx,
	                     .ldy = ldy,
	                     .x_off = x_off,
	                     .y_off = y_off,
	                     .w_off = v->off[wt],
	                     .b_off = b_off,
	                     .s_off = v->soff[wt],
	                     .act = act,
	                     .wdt = v->wdt[wt]};
	return a;
}

/* a's W: tensor wt of view v from its row w_row (rows of a->k elements). */
static inline void dit_linear_weight(dit_linear_args *a, const dit_wview *v, int wt, int64_t w_row)
{
	a->w_off = v->off[wt];
	a->w_row0 = w_row;
	a->wdt = v->wdt[wt];
	a->s_off = v->soff[wt];
}

/* dit_op_linear with W the a->n rows of view v from row w_row of tensor wt, which may
 * run on into the tensors after it in the table (Wan's q, k and v weights read as one
 * [3D, D] matrix, their biases likewise as one vector at a->b_off): one GEMM when every
 * tensor it reads is fp32, or every one bf16 (laid end to end in the slab), else one
 * GEMM per tensor, each giving its columns of y (compact tensors are padded apart and
 * f8 ones each have their own scale). */
dit_status dit_op_linear_w(dit_graph *g, const dit_task_opts *o, const char *name,
                           const dit_linear_args *a, const dit_wview *v, int wt, int64_t w_row,
                           starpu_data_handle_t x, starpu_data_handle_t y,
                           starpu_data_handle_t scratch, dit_error *err);

/* y [m, n] = act(x [m, k] W^T + b): W at a->w_off of slab from row a->w_row0 in dtype
 * a->wdt (not fp32: scratch is the tile buffer), b at a->b_off (< 0: no bias). */
dit_status dit_op_linear(dit_graph *g, const dit_task_opts *o, const char *name,
                         const dit_linear_args *a, starpu_data_handle_t x,
                         starpu_data_handle_t slab, starpu_data_handle_t y,
                         starpu_data_handle_t scratch, dit_error *err);

/* y = LayerNorm(x), then the affine weights of slab (a->affine) or the modulation
 * (a->mod: slab table + rows of vec, per sample or per token). */
dit_status dit_op_layernorm(dit_graph *g, const dit_task_opts *o, const char *name,
                            const dit_layernorm_args *a, starpu_data_handle_t x,
                            starpu_data_handle_t y, starpu_data_handle_t slab,
                            starpu_data_handle_t vec, dit_error *err);

/* t = RMSNorm(t) (over the row or per group of a->group features) * weight, then
 * RoPE from the table rope when a->rope (a->rope_split: the split RoPE, whose table
 * has heads * head_dim doubles a row, so a row tile from row row0 reads it from
 * a->rope_off + row0 * heads * head_dim). */
dit_status dit_op_rmsnorm(dit_graph *g, const dit_task_opts *o, const char *name,
                          const dit_qknorm_args *a, starpu_data_handle_t t,
                          starpu_data_handle_t slab, starpu_data_handle_t rope, dit_error *err);

/* o = softmax(q k^T / sqrt(hd)) v per head; self-attention reads q, k, v from one
 * buffer qkv (kv NULL), cross-attention q and kv; a->lk_valid masks keys. */
dit_status dit_op_attention(dit_graph *g, const dit_task_opts *o, const char *name,
                            const dit_attention_args *a, starpu_data_handle_t q,
                            starpu_data_handle_t kv, starpu_data_handle_t out,
                            starpu_data_handle_t scratch, dit_error *err);

/* x += y, or x += y * gate with gate = slab table + rows of vec (a->gate_off >= 0). */
dit_status dit_op_residual(dit_graph *g, const dit_task_opts *o, const char *name,
                           const dit_residual_args *a, starpu_data_handle_t x,
                           starpu_data_handle_t y, starpu_data_handle_t slab,
                           starpu_data_handle_t vec, dit_error *err);

/* x [L, D] = patchify(latent [in_dim, f, h, w]) Wp^T + bp, the Conv3d weight and bias
 * at w_off, b_off of the globals of the graph's current expert (a family's patch
 * embedding over the graph's grid). */
dit_status dit_op_patch_embed(dit_graph *g, const char *name, int64_t w_off, int64_t b_off,
                              starpu_data_handle_t latent, starpu_data_handle_t x,
                              starpu_data_handle_t scratch, dit_error *err);

/* Rows of src into dst (the rest of dst kept). */
dit_status dit_op_copy2d(dit_graph *g, const dit_task_opts *o, const char *name,
                         const dit_copy2d_args *a, starpu_data_handle_t dst,
                         starpu_data_handle_t src, dit_error *err);

/* o[r, h * hd + j] (rows a->ldo apart from a->o_off) *= 2 sigmoid(logits[r, h]) (rows
 * a->ldg apart from a->g_off): LTX-2's gated attention, one task per row tile of o. */
dit_status dit_op_head_gate(dit_graph *g, const dit_task_opts *o, const char *name,
                            const dit_head_gate_args *a, starpu_data_handle_t out,
                            starpu_data_handle_t logits, dit_error *err);

/* x[(a->r0 + r) * a->ld + j] += slab[a->v_off + j] for r < a->rows, j < a->dim, on a CPU
 * worker (whatever o->where says): one task per row tile of x holding such rows. */
dit_status dit_op_add_rows(dit_graph *g, const dit_task_opts *o, const char *name,
                           const dit_add_rows_args *a, starpu_data_handle_t x,
                           starpu_data_handle_t slab, dit_error *err);

#endif
