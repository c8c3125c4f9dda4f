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
#include "dit_codelets.h"
#include "dit_graph.h"

#define R     STARPU_R
#define W     STARPU_W
#define RW    STARPU_RW
#define SCR   STARPU_SCRATCH
#define NB(a) ((int)(sizeof(a) / sizeof((a)[0])))

static dit_status linear(dit_graph *g, const dit_pass *ps, const char *name, starpu_data_handle_t x,
                         starpu_data_handle_t slab, starpu_data_handle_t y, int64_t m, int64_t n,
                         int64_t k, int64_t w_off, int64_t b_off, dit_act act, dit_error *err)
{
	int bf16 = g->model->lay.bf16;
	dit_linear_args a = {.fp = {{m, n, k, act}},
	                     .m = m,
	                     .n = n,
	                     .k = k,
	                     .ldx = k,
	                     .ldy = n,
	                     .w_off = w_off,
	                     .b_off = b_off,
	                     .act = act,
	                     .wbf16 = bf16};
	starpu_data_handle_t h[] = {x, slab, y, ps->scratch_lin};
	enum starpu_data_access_mode md[] = {R, R, W, SCR};
	return dit_graph_insert(g, &dit_cl_linear, name, &a, sizeof a, 2.0 * m * n * k,
	                        bf16 ? 4 : 3, h, md, err);
}

static dit_status adaln(dit_graph *g, const char *name, const dit_pass *ps,
                        starpu_data_handle_t slab, int64_t mod, int64_t shift_chunk,
                        int64_t scale_chunk, dit_error *err)
{
	const dit_model *m = g->model;
	int64_t D = m->cfg.dim;
	dit_layernorm_args a = {.fp = {{g->grid.tokens, D, 1, 0}},
	                        .rows = g->grid.tokens,
	                        .dim = D,
	                        .eps = (float)m->cfg.eps,
	                        .mod = 1,
	                        .shift_off = mod + shift_chunk * D,
	                        .scale_off = mod + scale_chunk * D,
	                        .vshift_off = shift_chunk * D,
	                        .vscale_off = scale_chunk * D,
	                        .mod_ld = 6 * D,
	                        .mod_rows = g->mod_rows};
	starpu_data_handle_t h[] = {ps->x, ps->h, slab, g->e0};
	enum starpu_data_access_mode md[] = {R, W, R, R};
	return dit_graph_insert(g, &dit_cl_layernorm, name, &a, sizeof a, 0, NB(h), h, md, err);
}

static dit_status qk_norm(dit_graph *g, const char *name, starpu_data_handle_t t, int64_t rows,
                          int64_t ld, int64_t t_off, starpu_data_handle_t slab, int64_t w_off,
                          int rope, dit_error *err)
{
	const dit_wan_config *c = &g->model->cfg;
	dit_qknorm_args a = {.fp = {{rows, c->dim, rope, 0}},
	                     .rows = rows,
	                     .dim = c->dim,
	                     .ld = ld,
	                     .t_off = t_off,
	                     .w_off = w_off,
	                     .heads = c->num_heads,
	                     .head_dim = c->dim / c->num_heads,
	                     .eps = (float)c->eps,
	                     .rope = rope};
	starpu_data_handle_t h[] = {t, slab, g->rope};
	enum starpu_data_access_mode md[] = {RW, R, R};
	return dit_graph_insert(g, &dit_cl_qk_norm, name, &a, sizeof a, 0, rope ? 3 : 2, h, md,
	                        err);
}

static dit_status residual(dit_graph *g, const char *name, const dit_pass *ps,
                           starpu_data_handle_t slab, int64_t mod, int64_t gate_chunk,
                           dit_error *err)
{
	const dit_model *m = g->model;
	int64_t D = m->cfg.dim;
	dit_residual_args a = {.fp = {{g->grid.tokens, D, gate_chunk >= 0, 0}},
	                       .rows = g->grid.tokens,
	                       .dim = D,
	                       .gate_off = -1,
	                       .mod_ld = 6 * D,
	                       .mod_rows = g->mod_rows};
	starpu_data_handle_t h[] = {ps->x, ps->y, slab, g->e0};
	enum starpu_data_access_mode md[] = {RW, R, R, R};
	int nb = 2;
	if (gate_chunk >= 0) {
		a.gate_off = mod + gate_chunk * D;
		a.vgate_off = gate_chunk * D;
		nb = 4;
	}
	return dit_graph_insert(g, &dit_cl_residual, name, &a, sizeof a, 0, nb, h, md, err);
}

dit_status dit_graph_submit_block(dit_graph *g, int p, int64_t b, uint64_t end_tag,
                                  uint64_t first_tag, uint64_t gate, dit_error *err)
{
	const dit_model *m = g->model;
	const dit_wan_config *c = &m->cfg;
	const dit_pass *ps = &g->pass[p];
	int64_t base;
	starpu_data_handle_t wb = dit_model_block_handle(m, b, &base);
	int64_t off[DIT_WB_COUNT]; /* tensor offsets inside the chunk handle */
	for (int i = 0; i < DIT_WB_COUNT; i++)
		off[i] = base + m->lay.block_off[i];
	int64_t L = g->grid.tokens, D = c->dim, F = c->ffn_dim, Lc = c->text_len;
	int64_t heads = c->num_heads, hd = D / heads;
	dit_status st;

#define TRY(call)                                                                                  \
	do {                                                                                       \
		if ((st = (call)) != DIT_OK)                                                       \
			return st;                                                                 \
	} while (0)

	if (first_tag) {
		g->next_tag = first_tag;
		g->next_tag_set = 1;
		g->next_dep = gate;
		g->next_dep_set = gate != 0;
	}

	/* self-attention */
	TRY(adaln(g, "norm1", ps, wb, off[DIT_WB_MOD], 0, 1, err));
	TRY(linear(g, ps, "sa.qkv", ps->h, wb, ps->qkv, L, 3 * D, D, off[DIT_WB_SA_QW],
	           off[DIT_WB_SA_QB], DIT_ACT_NONE, err));
	TRY(qk_norm(g, "sa.norm_q", ps->qkv, L, 3 * D, 0, wb, off[DIT_WB_SA_NQ], 1, err));
	TRY(qk_norm(g, "sa.norm_k", ps->qkv, L, 3 * D, D, wb, off[DIT_WB_SA_NK], 1, err));
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
		starpu_data_handle_t h[] = {ps->qkv, ps->o, ps->scratch_attn};
		enum starpu_data_access_mode md[] = {R, W, SCR};
		TRY(dit_graph_insert(g, &dit_cl_attention, "sa.attention", &a, sizeof a,
		                     4.0 * L * L * D, NB(h), h, md, err));
	}
	TRY(linear(g, ps, "sa.o", ps->o, wb, ps->y, L, D, D, off[DIT_WB_SA_OW], off[DIT_WB_SA_OB],
	           DIT_ACT_NONE, err));
	TRY(residual(g, "sa.residual", ps, wb, off[DIT_WB_MOD], 2, err));

	/* cross-attention to the text, affine norm3, no gate */
	{
		dit_layernorm_args a = {.fp = {{L, D, 0, 1}},
		                        .rows = L,
		                        .dim = D,
		                        .eps = (float)c->eps,
		                        .affine = 1,
		                        .w_off = off[DIT_WB_N3W],
		                        .b_off = off[DIT_WB_N3B]};
		starpu_data_handle_t h[] = {ps->x, ps->h, wb};
		enum starpu_data_access_mode md[] = {R, W, R};
		TRY(dit_graph_insert(g, &dit_cl_layernorm, "norm3", &a, sizeof a, 0, NB(h), h, md,
		                     err));
	}
	TRY(linear(g, ps, "ca.q", ps->h, wb, ps->q, L, D, D, off[DIT_WB_CA_QW], off[DIT_WB_CA_QB],
	           DIT_ACT_NONE, err));
	TRY(qk_norm(g, "ca.norm_q", ps->q, L, D, 0, wb, off[DIT_WB_CA_NQ], 0, err));
	TRY(linear(g, ps, "ca.kv", ps->ctx, wb, ps->kv, Lc, 2 * D, D, off[DIT_WB_CA_KW],
	           off[DIT_WB_CA_KB], DIT_ACT_NONE, err));
	TRY(qk_norm(g, "ca.norm_k", ps->kv, Lc, 2 * D, 0, wb, off[DIT_WB_CA_NK], 0, err));
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
		                        .ldo = D,
		                        .cross = 1};
		starpu_data_handle_t h[] = {ps->q, ps->kv, ps->o, ps->scratch_attn};
		enum starpu_data_access_mode md[] = {R, R, W, SCR};
		TRY(dit_graph_insert(g, &dit_cl_attention, "ca.attention", &a, sizeof a,
		                     4.0 * L * Lc * D, NB(h), h, md, err));
	}
	TRY(linear(g, ps, "ca.o", ps->o, wb, ps->y, L, D, D, off[DIT_WB_CA_OW], off[DIT_WB_CA_OB],
	           DIT_ACT_NONE, err));
	TRY(residual(g, "ca.residual", ps, wb, off[DIT_WB_MOD], -1, err));

	/* feed-forward */
	TRY(adaln(g, "norm2", ps, wb, off[DIT_WB_MOD], 3, 4, err));
	TRY(linear(g, ps, "ffn.0", ps->h, wb, ps->ffn, L, F, D, off[DIT_WB_F0W], off[DIT_WB_F0B],
	           DIT_ACT_GELU_TANH, err));
	TRY(linear(g, ps, "ffn.2", ps->ffn, wb, ps->y, L, D, F, off[DIT_WB_F2W], off[DIT_WB_F2B],
	           DIT_ACT_NONE, err));
	if (end_tag) {
		g->next_tag = end_tag;
		g->next_tag_set = 1;
	}
	TRY(residual(g, "ffn.residual", ps, wb, off[DIT_WB_MOD], 5, err));
#undef TRY
	return DIT_OK;
}
