/* One Wan2.1 attention block as a chain of op tasks (wan/modules/model.py,
 * WanAttentionBlock). Every task reads the block's weight slab W; e0 is this step's
 * time projection [6, D] (Wan2.2: one per token, [L, 6, D], as rows of distinct
 * timesteps that g->mod_rows tokens each share) and W.modulation the block's own
 * [6, D] table:
 *
 *   sh1, sc1, g1, sh2, sc2, g2 = W.modulation + e0
 *   h   = LN(x) * (1 + sc1) + sh1                         layernorm   [L, D]
 *   qkv = h Wqkv^T + bqkv                                 linear      [L, 3D]
 *   q   = rope(rms(q) * nq), k = rope(rms(k) * nk)        qk_norm x2
 *   o   = attention(q, k, v)                              attention   [L, D]
 *   x  += (o Wo^T + bo) * g1                              linear, residual
 *   h   = LN(x) * norm3.w + norm3.b                       layernorm
 *   q   = rms(h Wq'^T + bq') * nq'                        linear, qk_norm
 *   kv  = ctx Wkv'^T + bkv', k = rms(k) * nk'             linear, qk_norm  [Lc, 2D]
 *   x  += attention(q, k, v) Wo'^T + bo'                  attention, linear, residual
 *   h   = LN(x) * (1 + sc2) + sh2                         layernorm
 *   x  += (gelu_tanh(h W1^T + b1) W2^T + b2) * g2         linear x2, residual
 */
#include "dit_graph.h"
#include "dit_wan.h"
#include "dit_ops.h"

/* The handles and offsets one block's tasks share. */
typedef struct wan_ctx {
	dit_graph *g;
	const dit_pass *ps;
	starpu_data_handle_t wb;   /* the chunk holding the block */
	int64_t off[DIT_WB_COUNT]; /* tensor offsets inside it */
	int64_t L, D;
	int bf16;
} wan_ctx;

static dit_status linear(const wan_ctx *w, const dit_task_opts *o, const char *name,
                         starpu_data_handle_t x, starpu_data_handle_t y, int64_t m, int64_t n,
                         int64_t k, int wt, int bt, dit_act act, dit_error *err)
{
	dit_linear_args a = {.fp = {{m, n, k, act}},
	                     .m = m,
	                     .n = n,
	                     .k = k,
	                     .ldx = k,
	                     .ldy = n,
	                     .w_off = w->off[wt],
	                     .b_off = w->off[bt],
	                     .act = act,
	                     .wbf16 = w->bf16};
	return dit_op_linear(w->g, o, name, &a, x, w->wb, y, w->ps->scratch_lin, err);
}

/* LN(x) * (1 + scale) + shift, shift and scale rows shift_chunk, scale_chunk of
 * W.modulation + e0 (e0 one row per sample or per group of tokens). */
static dit_status adaln(const wan_ctx *w, const dit_task_opts *o, const char *name,
                        int64_t shift_chunk, int64_t scale_chunk, dit_error *err)
{
	const dit_graph *g = w->g;
	int64_t D = w->D, mod = w->off[DIT_WB_MOD];
	dit_layernorm_args a = {.fp = {{w->L, D, 1, 0}},
	                        .rows = w->L,
	                        .dim = D,
	                        .eps = (float)g->model->cfg.eps,
	                        .mod = 1,
	                        .shift_off = mod + shift_chunk * D,
	                        .scale_off = mod + scale_chunk * D,
	                        .vshift_off = shift_chunk * D,
	                        .vscale_off = scale_chunk * D,
	                        .mod_ld = 6 * D,
	                        .mod_rows = g->mod_rows};
	return dit_op_layernorm(w->g, o, name, &a, w->ps->x, w->ps->h, w->wb, g->e0, err);
}

/* RMSNorm over the whole width (Wan), optionally followed by RoPE. */
static dit_status qk_norm(const wan_ctx *w, const char *name, starpu_data_handle_t t, int64_t rows,
                          int64_t ld, int64_t t_off, int nt, int rope, dit_error *err)
{
	const dit_hparams *c = &w->g->model->cfg;
	dit_qknorm_args a = {.fp = {{rows, c->dim, rope, 0}},
	                     .rows = rows,
	                     .dim = c->dim,
	                     .ld = ld,
	                     .t_off = t_off,
	                     .w_off = w->off[nt],
	                     .heads = c->num_heads,
	                     .head_dim = c->dim / c->num_heads,
	                     .eps = (float)c->eps,
	                     .rope = rope};
	return dit_op_rmsnorm(w->g, NULL, name, &a, t, w->wb, w->g->rope, err);
}

/* x += y * gate (row gate_chunk of W.modulation + e0), or x += y (gate_chunk < 0). */
static dit_status residual(const wan_ctx *w, const dit_task_opts *o, const char *name,
                           int64_t gate_chunk, dit_error *err)
{
	int64_t D = w->D;
	dit_residual_args a = {.fp = {{w->L, D, gate_chunk >= 0, 0}},
	                       .rows = w->L,
	                       .dim = D,
	                       .gate_off = -1,
	                       .mod_ld = 6 * D,
	                       .mod_rows = w->g->mod_rows};
	if (gate_chunk >= 0) {
		a.gate_off = w->off[DIT_WB_MOD] + gate_chunk * D;
		a.vgate_off = gate_chunk * D;
	}
	return dit_op_residual(w->g, o, name, &a, w->ps->x, w->ps->y, w->wb, w->g->e0, err);
}

static dit_status wan_block_submit(dit_graph *g, int p, int64_t b, const dit_task_opts *first,
                                   const dit_task_opts *last, dit_error *err)
{
	const dit_model *m = g->model;
	const dit_hparams *c = &m->cfg;
	const dit_pass *ps = &g->pass[p];
	wan_ctx w = {.g = g, .ps = ps, .L = g->grid.tokens, .D = c->dim, .bf16 = m->blk.bf16};
	int64_t base;
	w.wb = dit_model_block_handle(m, b, &base);
	for (int i = 0; i < DIT_WB_COUNT; i++)
		w.off[i] = base + m->blk.off[i];
	int64_t L = w.L, D = c->dim, F = c->ffn_dim, Lc = c->text_len;
	int64_t heads = c->num_heads, hd = D / heads;
	dit_status st;

#define TRY(call)                                                                                  \
	do {                                                                                       \
		if ((st = (call)) != DIT_OK)                                                       \
			return st;                                                                 \
	} while (0)

	/* self-attention */
	TRY(adaln(&w, first, "norm1", 0, 1, err));
	TRY(linear(&w, NULL, "sa.qkv", ps->h, ps->qkv, L, 3 * D, D, DIT_WB_SA_QW, DIT_WB_SA_QB,
	           DIT_ACT_NONE, err));
	TRY(qk_norm(&w, "sa.norm_q", ps->qkv, L, 3 * D, 0, DIT_WB_SA_NQ, 1, err));
	TRY(qk_norm(&w, "sa.norm_k", ps->qkv, L, 3 * D, D, DIT_WB_SA_NK, 1, err));
	{
		dit_attention_args a = {.fp = {{L, L, heads, hd}},
		                        .lq = L,
		                        .lk = L,
		                        .heads = heads,
		                        .hd = hd,
		                        .q_off = 0,
		                        .ldq = 3 * D,
		                        .k_off = D,
		                        .v_off = 2 * D,
		                        .ldk = 3 * D,
		                        .ldo = D};
		TRY(dit_op_attention(g, NULL, "sa.attention", &a, ps->qkv, NULL, ps->o,
		                     ps->scratch_attn, err));
	}
	TRY(linear(&w, NULL, "sa.o", ps->o, ps->y, L, D, D, DIT_WB_SA_OW, DIT_WB_SA_OB,
	           DIT_ACT_NONE, err));
	TRY(residual(&w, NULL, "sa.residual", 2, err));

	/* cross-attention to the text, affine norm3, no gate */
	{
		dit_layernorm_args a = {.fp = {{L, D, 0, 1}},
		                        .rows = L,
		                        .dim = D,
		                        .eps = (float)c->eps,
		                        .affine = 1,
		                        .w_off = w.off[DIT_WB_N3W],
		                        .b_off = w.off[DIT_WB_N3B]};
		TRY(dit_op_layernorm(g, NULL, "norm3", &a, ps->x, ps->h, w.wb, NULL, err));
	}
	TRY(linear(&w, NULL, "ca.q", ps->h, ps->q, L, D, D, DIT_WB_CA_QW, DIT_WB_CA_QB,
	           DIT_ACT_NONE, err));
	TRY(qk_norm(&w, "ca.norm_q", ps->q, L, D, 0, DIT_WB_CA_NQ, 0, err));
	TRY(linear(&w, NULL, "ca.kv", ps->ctx, ps->kv, Lc, 2 * D, D, DIT_WB_CA_KW, DIT_WB_CA_KB,
	           DIT_ACT_NONE, err));
	TRY(qk_norm(&w, "ca.norm_k", ps->kv, Lc, 2 * D, 0, DIT_WB_CA_NK, 0, err));
	{
		dit_attention_args a = {.fp = {{L, Lc, heads, hd}},
		                        .lq = L,
		                        .lk = Lc,
		                        .heads = heads,
		                        .hd = hd,
		                        .q_off = 0,
		                        .ldq = D,
		                        .k_off = 0,
		                        .v_off = D,
		                        .ldk = 2 * D,
		                        .ldo = D};
		TRY(dit_op_attention(g, NULL, "ca.attention", &a, ps->q, ps->kv, ps->o,
		                     ps->scratch_attn, err));
	}
	TRY(linear(&w, NULL, "ca.o", ps->o, ps->y, L, D, D, DIT_WB_CA_OW, DIT_WB_CA_OB,
	           DIT_ACT_NONE, err));
	TRY(residual(&w, NULL, "ca.residual", -1, err));

	/* feed-forward */
	TRY(adaln(&w, NULL, "norm2", 3, 4, err));
	TRY(linear(&w, NULL, "ffn.0", ps->h, ps->ffn, L, F, D, DIT_WB_F0W, DIT_WB_F0B,
	           DIT_ACT_GELU_TANH, err));
	TRY(linear(&w, NULL, "ffn.2", ps->ffn, ps->y, L, D, F, DIT_WB_F2W, DIT_WB_F2B, DIT_ACT_NONE,
	           err));
	TRY(residual(&w, last, "ffn.residual", 5, err));
#undef TRY
	return DIT_OK;
}

const dit_block_kind dit_block_wan = {"wan", wan_block_submit};
