/* The Wan forward (wan/modules/model.py): the block kind "wan", one attention block as
 * a chain of op tasks (WanAttentionBlock), and the stages outside the blocks. Block: Every task
 * reads the block's weight slab W; e0 is this step's time projection [6, D] (Wan2.2: one per token,
 * [L, 6, D], as rows of distinct timesteps that g->mod_rows tokens each share) and W.modulation the
 * block's own [6, D] table:
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
 *   kvi = ctx_img Wkvi^T + bkvi (Wan2.1 I2V)              linear, qk_norm  [Li, 2D]
 *   o   = attention(q, k, v)                              attention
 *   o  += attention(q, rms(ki) * nki, vi)                 Wan2.1 I2V: the image keys
 *   x  += o Wo'^T + bo'                                   linear, residual
 *   h   = LN(x) * (1 + sc2) + sh2                         layernorm
 *   x  += (gelu_tanh(h W1^T + b1) W2^T + b2) * g2         linear x2, residual
 */
#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_ops.h"
#include "dit_tiles.h"
#include "dit_wan.h"
#include "wan_priv.h"

#define NB(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The handles and offsets one block's tasks share. */
typedef struct wan_ctx {
	dit_graph *g;
	const dit_pass *ps;
	dit_wview v; /* the chunk holding the block, the tensors' offsets in it */
	int64_t L, D;
} wan_ctx;

/* y[r0 + i] = act(x[r0' + i] W^T + b) for m rows: x [.., k] read from row x_row,
 * y [.., n] written from row y_row; W the n rows of tensor wt from its row w_row, b
 * from element w_row of tensor bt. */
static dit_status linear_rows(const wan_ctx *w, const dit_task_opts *o, const char *name,
                              starpu_data_handle_t x, int64_t x_row, starpu_data_handle_t y,
                              int64_t y_row, int64_t m, int64_t n, int64_t k, int wt, int bt,
                              int64_t w_row, dit_act act, dit_error *err)
{
	dit_linear_args a = {.fp = {{m, n, k, act}},
	                     .m = m,
	                     .n = n,
	                     .k = k,
	                     .ldx = k,
	                     .ldy = n,
	                     .x_off = x_row * k,
	                     .y_off = y_row * n,
	                     .b_off = w->v.off[bt] + w_row,
	                     .act = act};
	return dit_op_linear_w(w->g, o, name, &a, &w->v, wt, w_row, x, y, w->ps->ws[WAN_S_LIN],
	                       err);
}

static dit_status linear(const wan_ctx *w, const dit_task_opts *o, const char *name,
                         starpu_data_handle_t x, starpu_data_handle_t y, int64_t m, int64_t n,
                         int64_t k, int wt, int bt, dit_act act, dit_error *err)
{
	return linear_rows(w, o, name, x, 0, y, 0, m, n, k, wt, bt, 0, act, err);
}

/* LN(x) * (1 + scale) + shift for rows r0 .. r0 + m of x into h [m, D], shift and scale
 * rows shift_chunk, scale_chunk of W.modulation + e0 (e0 one row per sample or per
 * group of tokens). */
static dit_status adaln(const wan_ctx *w, const dit_task_opts *o, const char *name,
                        int64_t shift_chunk, int64_t scale_chunk, int64_t r0, int64_t m,
                        dit_error *err)
{
	const dit_graph *g = w->g;
	int64_t D = w->D, mod = w->v.off[DIT_WB_MOD];
	dit_layernorm_args a = {.fp = {{m, D, 1, 0}},
	                        .rows = m,
	                        .dim = D,
	                        .eps = (float)g->model->cfg.eps,
	                        .mod = 1,
	                        .shift_off = mod + shift_chunk * D,
	                        .scale_off = mod + scale_chunk * D,
	                        .vshift_off = shift_chunk * D,
	                        .vscale_off = scale_chunk * D,
	                        .mod_ld = 6 * D,
	                        .mod_rows = g->mod_rows,
	                        .row0 = r0,
	                        .x_off = r0 * D};
	return dit_op_layernorm(w->g, o, name, &a, w->ps->x, w->ps->ws[WAN_H], w->v.slab,
	                        g->ws[WAN_E0], err);
}

/* RMSNorm over the whole width (Wan) of rows rows of t, ld apart from t_off, optionally
 * followed by RoPE (rope_row: the sequence row of t's first row). */
static dit_status qk_norm(const wan_ctx *w, const char *name, starpu_data_handle_t t, int64_t rows,
                          int64_t ld, int64_t t_off, int nt, int rope, int64_t rope_row,
                          dit_error *err)
{
	const dit_hparams *c = &w->g->model->cfg;
	int64_t hd = c->dim / c->num_heads;
	dit_qknorm_args a = {.fp = {{rows, c->dim, rope, 0}},
	                     .rows = rows,
	                     .dim = c->dim,
	                     .ld = ld,
	                     .t_off = t_off,
	                     .w_off = w->v.off[nt],
	                     .heads = c->num_heads,
	                     .head_dim = hd,
	                     .eps = (float)c->eps,
	                     .rope = rope,
	                     .rope_off = rope_row * hd};
	return dit_op_rmsnorm(w->g, NULL, name, &a, t, w->v.slab, w->g->rope, err);
}

/* x[r0 .. r0 + m) += y[0 .. m) * gate (row gate_chunk of W.modulation + e0), or x += y
 * (gate_chunk < 0). */
static dit_status residual(const wan_ctx *w, const dit_task_opts *o, const char *name,
                           int64_t gate_chunk, int64_t r0, int64_t m, dit_error *err)
{
	int64_t D = w->D;
	dit_residual_args a = {.fp = {{m, D, gate_chunk >= 0, 0}},
	                       .rows = m,
	                       .dim = D,
	                       .gate_off = -1,
	                       .mod_ld = 6 * D,
	                       .mod_rows = w->g->mod_rows,
	                       .row0 = r0,
	                       .x_off = r0 * D};
	if (gate_chunk >= 0) {
		a.gate_off = w->v.off[DIT_WB_MOD] + gate_chunk * D;
		a.vgate_off = gate_chunk * D;
	}
	return dit_op_residual(w->g, o, name, &a, w->ps->x, w->ps->ws[WAN_Y], w->v.slab,
	                       w->g->ws[WAN_E0], err);
}

/* Self-attention over all tokens at once: q/k/v [L, 3D] by one GEMM. */
static dit_status self_attention_whole(const wan_ctx *w, const dit_task_opts *first, dit_error *err)
{
	const dit_pass *ps = w->ps;
	const dit_hparams *c = &w->g->model->cfg;
	int64_t L = w->L, D = w->D, heads = c->num_heads, hd = D / heads;
	TRY(adaln(w, first, "norm1", 0, 1, 0, L, err));
	TRY(linear(w, NULL, "sa.qkv", ps->ws[WAN_H], ps->ws[WAN_QKV], L, 3 * D, D, DIT_WB_SA_QW,
	           DIT_WB_SA_QB, DIT_ACT_NONE, err));
	TRY(qk_norm(w, "sa.norm_q", ps->ws[WAN_QKV], L, 3 * D, 0, DIT_WB_SA_NQ, 1, 0, err));
	TRY(qk_norm(w, "sa.norm_k", ps->ws[WAN_QKV], L, 3 * D, D, DIT_WB_SA_NK, 1, 0, err));
	dit_attention_args a = dit_attention_fused(0, L, L, heads, hd);
	TRY(dit_op_attention(w->g, NULL, "sa.attention", &a, ps->ws[WAN_QKV], NULL, ps->ws[WAN_O],
	                     ps->ws[WAN_S_ATTN], err));
	TRY(linear(w, NULL, "sa.o", ps->ws[WAN_O], ps->ws[WAN_Y], L, D, D, DIT_WB_SA_OW,
	           DIT_WB_SA_OB, DIT_ACT_NONE, err));
	return residual(w, NULL, "sa.residual", 2, 0, L, err);
}

/* Self-attention in token chunks, where q is never whole: first every chunk's k/v rows
 * into kv [L, 2D] (WAN_QKV; they read x, which the chunks then update), then per chunk
 * its normed input again, its q [T, D] (WAN_Q), its queries against all keys, its output
 * projection and residual. The rows of Wqkv are q's, k's, v's: k/v are its rows
 * [D, 3D), q its rows [0, D). */
static dit_status self_attention_chunks(const wan_ctx *w, const dit_chunks *ch,
                                        const dit_task_opts *first, dit_error *err)
{
	const dit_pass *ps = w->ps;
	const dit_hparams *c = &w->g->model->cfg;
	int64_t L = w->L, D = w->D, heads = c->num_heads, hd = D / heads;
	starpu_data_handle_t kv = ps->ws[WAN_QKV], q = ps->ws[WAN_Q];
	for (int i = 0; i < ch->n; i++) {
		int64_t r0 = ch->row0[i], m = ch->row0[i + 1] - r0;
		TRY(adaln(w, i ? NULL : first, "norm1", 0, 1, r0, m, err));
		TRY(linear_rows(w, NULL, "sa.kv", ps->ws[WAN_H], 0, kv, r0, m, 2 * D, D,
		                DIT_WB_SA_QW, DIT_WB_SA_QB, D, DIT_ACT_NONE, err));
		TRY(qk_norm(w, "sa.norm_k", kv, m, 2 * D, r0 * 2 * D, DIT_WB_SA_NK, 1, r0, err));
	}
	for (int i = 0; i < ch->n; i++) {
		int64_t r0 = ch->row0[i], m = ch->row0[i + 1] - r0;
		TRY(adaln(w, NULL, "norm1", 0, 1, r0, m, err));
		TRY(linear(w, NULL, "sa.q", ps->ws[WAN_H], q, m, D, D, DIT_WB_SA_QW, DIT_WB_SA_QB,
		           DIT_ACT_NONE, err));
		TRY(qk_norm(w, "sa.norm_q", q, m, D, 0, DIT_WB_SA_NQ, 1, r0, err));
		dit_attention_args a = dit_attention_split(m, L, heads, hd);
		TRY(dit_op_attention(w->g, NULL, "sa.attention", &a, q, kv, ps->ws[WAN_O],
		                     ps->ws[WAN_S_ATTN], err));
		TRY(linear(w, NULL, "sa.o", ps->ws[WAN_O], ps->ws[WAN_Y], m, D, D, DIT_WB_SA_OW,
		           DIT_WB_SA_OB, DIT_ACT_NONE, err));
		TRY(residual(w, NULL, "sa.residual", 2, r0, m, err));
	}
	return DIT_OK;
}

/* Cross-attention of rows r0 .. r0 + m to the text (its k/v made once a block),
 * affine norm3, no gate. */
static dit_status cross_attention(const wan_ctx *w, int64_t r0, int64_t m, dit_error *err)
{
	const dit_pass *ps = w->ps;
	const dit_hparams *c = &w->g->model->cfg;
	int64_t D = w->D, Lc = c->text_len, heads = c->num_heads, hd = D / heads;
	dit_layernorm_args ln = {.fp = {{m, D, 0, 1}},
	                         .rows = m,
	                         .dim = D,
	                         .eps = (float)c->eps,
	                         .affine = 1,
	                         .w_off = w->v.off[DIT_WB_N3W],
	                         .b_off = w->v.off[DIT_WB_N3B],
	                         .row0 = r0,
	                         .x_off = r0 * D};
	TRY(dit_op_layernorm(w->g, NULL, "norm3", &ln, ps->x, ps->ws[WAN_H], w->v.slab, NULL, err));
	TRY(linear(w, NULL, "ca.q", ps->ws[WAN_H], ps->ws[WAN_Q], m, D, D, DIT_WB_CA_QW,
	           DIT_WB_CA_QB, DIT_ACT_NONE, err));
	TRY(qk_norm(w, "ca.norm_q", ps->ws[WAN_Q], m, D, 0, DIT_WB_CA_NQ, 0, 0, err));
	dit_attention_args a = dit_attention_split(m, Lc, heads, hd);
	TRY(dit_op_attention(w->g, NULL, "ca.attention", &a, ps->ws[WAN_Q], ps->ws[WAN_KV],
	                     ps->ws[WAN_O], ps->ws[WAN_S_ATTN], err));
	if (c->image_dim) { /* the image's attention (into y, free until ca.o) added to o */
		dit_attention_args ai = dit_attention_split(m, c->image_tokens, heads, hd);
		TRY(dit_op_attention(w->g, NULL, "ca.attention_img", &ai, ps->ws[WAN_Q],
		                     ps->ws[WAN_KVI], ps->ws[WAN_Y], ps->ws[WAN_S_ATTN], err));
		dit_residual_args ad = {
		    .fp = {{m, D, 0, 0}}, .rows = m, .dim = D, .gate_off = -1, .row0 = r0};
		TRY(dit_op_residual(w->g, NULL, "ca.add_img", &ad, ps->ws[WAN_O], ps->ws[WAN_Y],
		                    w->v.slab, NULL, err));
	}
	TRY(linear(w, NULL, "ca.o", ps->ws[WAN_O], ps->ws[WAN_Y], m, D, D, DIT_WB_CA_OW,
	           DIT_WB_CA_OB, DIT_ACT_NONE, err));
	return residual(w, NULL, "ca.residual", -1, r0, m, err);
}

/* The feed-forward of rows r0 .. r0 + m: x += (gelu_tanh(h W1^T + b1) W2^T + b2) * g2
 * through the hidden [m, F]. */
static dit_status feed_forward(const wan_ctx *w, const dit_task_opts *last, int64_t r0, int64_t m,
                               dit_error *err)
{
	const dit_pass *ps = w->ps;
	int64_t D = w->D, F = w->g->model->cfg.ffn_dim;
	TRY(adaln(w, NULL, "norm2", 3, 4, r0, m, err));
	TRY(linear(w, NULL, "ffn.0", ps->ws[WAN_H], ps->ws[WAN_FFN], m, F, D, DIT_WB_F0W,
	           DIT_WB_F0B, DIT_ACT_GELU_TANH, err));
	TRY(linear(w, NULL, "ffn.2", ps->ws[WAN_FFN], ps->ws[WAN_Y], m, D, F, DIT_WB_F2W,
	           DIT_WB_F2B, DIT_ACT_NONE, err));
	return residual(w, last, "ffn.residual", 5, r0, m, err);
}

/* One block of pass p from chunk b of pool i. With token chunks (grid.chunk_rows) every
 * per-token buffer but qkv holds one chunk: self-attention makes all of q/k/v first,
 * then cross-attention and the feed-forward, which are per token, run a chunk at a
 * time; the text's k/v are made once. */
static dit_status wan_block_submit(dit_graph *g, int i, int p, int64_t b,
                                   const dit_task_opts *first, const dit_task_opts *last,
                                   dit_error *err)
{
	const dit_graph_expert *m = g->model;
	const dit_hparams *c = &m->cfg;
	const dit_pass *ps = &g->pass[p];
	wan_ctx w = {.g = g, .ps = ps, .L = g->grid.tokens, .D = c->dim};
	dit_graph_block_view(g, i, b, &w.v);
	int64_t D = c->dim, Lc = c->text_len;
	dit_chunks ch;
	dit_grid_chunks(&g->grid, &ch);

	if (ch.n > 1)
		TRY(self_attention_chunks(&w, &ch, first, err));
	else
		TRY(self_attention_whole(&w, first, err));
	TRY(linear(&w, NULL, "ca.kv", ps->ws[WAN_CTX], ps->ws[WAN_KV], Lc, 2 * D, D, DIT_WB_CA_KW,
	           DIT_WB_CA_KB, DIT_ACT_NONE, err));
	TRY(qk_norm(&w, "ca.norm_k", ps->ws[WAN_KV], Lc, 2 * D, 0, DIT_WB_CA_NK, 0, 0, err));
	if (c->image_dim) {
		TRY(linear(&w, NULL, "ca.kv_img", g->ws[WAN_CTX_IMG], ps->ws[WAN_KVI],
		           c->image_tokens, 2 * D, D, DIT_WB_CA_KIW, DIT_WB_CA_KIB, DIT_ACT_NONE,
		           err));
		TRY(qk_norm(&w, "ca.norm_k_img", ps->ws[WAN_KVI], c->image_tokens, 2 * D, 0,
		            DIT_WB_CA_NKI, 0, 0, err));
	}
	for (int k = 0; k < ch.n; k++) {
		int64_t r0 = ch.row0[k], rows = ch.row0[k + 1] - r0;
		TRY(cross_attention(&w, r0, rows, err));
		TRY(feed_forward(&w, k == ch.n - 1 ? last : NULL, r0, rows, err));
	}
	return DIT_OK;
}

const dit_block_kind dit_block_wan = {"wan", wan_block_submit, -1};

/* ------------------------------------------------------------------ stages
 *
 *   e   = time_embedding(sinusoid(t))            [T, D]  once per step, both passes
 *   e0  = time_projection(e)                     [T, 6, D]
 *   ctx = text_embedding(pad(context))           [Lc, D] once per run and pass
 *   x   = patch_embedding(latent)                [L, D]
 *   out = unpatchify(head(x, e))                 [C, f, h, w]
 */

static int64_t wan_linear_scratch(const dit_hparams *c, const dit_grid *grid)
{
	int64_t rows = grid->tokens > c->text_len ? grid->tokens : c->text_len;
	return dit_linear_scratch(rows, c->ffn_dim > c->dim ? c->ffn_dim : c->dim);
}

static void wan_workspace(const dit_hparams *c, const dit_grid *grid, int64_t time_rows,
                          dit_ws_spec *ws)
{
	int64_t L = grid->tokens, D = c->dim, Lc = c->text_len, hd = D / c->num_heads;
	int64_t P = c->patch[0] * c->patch[1] * c->patch[2];
	int64_t tr = time_rows < DIT_TIME_MAX_T ? time_rows : DIT_TIME_MAX_T;
	size_t f = sizeof(float), a = dit_grid_act_size(grid);
	/* token chunks: the per-token buffers hold a chunk (its row tiles, as [L, .] have
	 * theirs) and are zeroed first (the last, shorter chunk writes part of them) */
	int64_t T = dit_grid_chunk(grid), chunked = T > 0;
	if (!chunked)
		T = L;
	ws->pass[WAN_CTX] = (dit_ws_buf){Lc * D, f, "ctx", Lc, 0, DIT_LIVE_FORWARD, 0};
	ws->pass[WAN_H] = (dit_ws_buf){T * D, a, "h", T, chunked, DIT_LIVE_BLOCK, chunked};
	/* whole: q/k/v [L, 3D]; in chunks k/v alone [L, 2D], written a chunk's rows at a
	 * time (never in tiles), q a chunk in WAN_Q */
	ws->pass[WAN_QKV] = chunked ? (dit_ws_buf){L * 2 * D, a, "self_kv", 0, 1, DIT_LIVE_BLOCK, 0}
	                            : (dit_ws_buf){L * 3 * D, a, "qkv", L, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[WAN_Q] = (dit_ws_buf){T * D, a, "q", T, chunked, DIT_LIVE_BLOCK, chunked};
	ws->pass[WAN_KV] = (dit_ws_buf){Lc * 2 * D, a, "kv", Lc, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[WAN_O] = (dit_ws_buf){T * D, a, "o", T, chunked, DIT_LIVE_BLOCK, chunked};
	ws->pass[WAN_Y] = (dit_ws_buf){T * D, a, "y", T, chunked, DIT_LIVE_BLOCK, chunked};
	ws->pass[WAN_FFN] =
	    (dit_ws_buf){T * c->ffn_dim, a, "ffn", T, chunked, DIT_LIVE_BLOCK, chunked};
	ws->pass[WAN_S_ATTN] = (dit_ws_buf){
	    (int64_t)dit_cpu_attention_scratch(hd), f, "scratch_attn", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[WAN_S_PATCH] =
	    (dit_ws_buf){L * c->in_dim * P, f, "scratch_patch", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[WAN_S_HEAD] =
	    (dit_ws_buf){dit_head_scratch(L, D, c->out_dim * P, dit_grid_chunk(grid)),
	                 f,
	                 "scratch_head",
	                 0,
	                 0,
	                 DIT_LIVE_BLOCK,
	                 0};
	ws->pass[WAN_S_TEXT] = (dit_ws_buf){Lc * D, f, "scratch_text", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[WAN_S_LIN] =
	    (dit_ws_buf){wan_linear_scratch(c, grid), f, "scratch_lin", 0, 0, DIT_LIVE_BLOCK, 0};
	if (c->image_dim)
		ws->pass[WAN_KVI] = (dit_ws_buf){
		    c->image_tokens * 2 * D, a, "kv_img", c->image_tokens, 0, DIT_LIVE_BLOCK, 0};
	dit_wan_image_workspace(c, ws);
	ws->shared[WAN_E] = (dit_ws_buf){time_rows * D, f, "e", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[WAN_E0] = (dit_ws_buf){time_rows * 6 * D, f, "e0", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[WAN_S_TIME] =
	    (dit_ws_buf){tr * (c->freq_dim + D), f, "scratch_time", 0, 0, DIT_LIVE_FORWARD, 0};
}

static dit_status wan_text(dit_graph *g, dit_error *err)
{
	const dit_graph_expert *m = g->model;
	const dit_hparams *c = &m->cfg;
	dit_wview gv;
	dit_graph_globals_view(g, &gv);
	const int64_t *off = gv.off;
	for (int p = 0; p < g->npasses; p++) {
		g->cur_pass = p;
		const dit_pass *ps = &g->pass[p];
		dit_text_embed_args a = {.fp = {{c->text_len, c->text_dim, c->dim, 0}},
		                         .len = c->text_len,
		                         .text_dim = c->text_dim,
		                         .dim = c->dim,
		                         .w0 = off[DIT_WG_TEXT0_W],
		                         .b0 = off[DIT_WG_TEXT0_B],
		                         .w2 = off[DIT_WG_TEXT2_W],
		                         .b2 = off[DIT_WG_TEXT2_B]};
		starpu_data_handle_t h[] = {gv.slab, ps->context, ps->ws[WAN_CTX],
		                            ps->ws[WAN_S_TEXT]};
		enum starpu_data_access_mode md[] = {STARPU_R, STARPU_R, STARPU_W, STARPU_SCRATCH};
		double fl = 2.0 * c->text_len * c->dim * (c->text_dim + c->dim);
		dit_status st = dit_graph_insert(g, &dit_cl_text_embed, "text_embed", &a, sizeof a,
		                                 fl, NB(h), h, md, NULL, err);
		if (st)
			return st;
	}
	g->cur_pass = -1;
	return dit_wan_image_embed(g, err);
}

static dit_status wan_time_one(dit_graph *g, double t, dit_error *err);

/* e, e0 for nt distinct timesteps (the generic driver has set g->mod_rows). */
static dit_status wan_time(dit_graph *g, const double *t, int64_t nt, int64_t mod_rows,
                           dit_error *err)
{
	const dit_graph_expert *m = g->model;
	const dit_hparams *c = &m->cfg;
	dit_wview gv;
	dit_graph_globals_view(g, &gv);
	const int64_t *off = gv.off;
	(void)mod_rows;
	if (nt == 1)
		return wan_time_one(g, t[0], err);
	for (int64_t r0 = 0; r0 < nt; r0 += DIT_TIME_MAX_T) {
		int64_t n = nt - r0 < DIT_TIME_MAX_T ? nt - r0 : DIT_TIME_MAX_T;
		dit_time_embed_args a = {.fp = {{c->dim, c->freq_dim, n, 0}},
		                         .dim = c->dim,
		                         .freq_dim = c->freq_dim,
		                         .w0 = off[DIT_WG_TIME0_W],
		                         .b0 = off[DIT_WG_TIME0_B],
		                         .w2 = off[DIT_WG_TIME2_W],
		                         .b2 = off[DIT_WG_TIME2_B],
		                         .wp = off[DIT_WG_TPROJ_W],
		                         .bp = off[DIT_WG_TPROJ_B],
		                         .nt = n,
		                         .row0 = r0};
		for (int64_t i = 0; i < n; i++)
			a.ts[i] = t[r0 + i];
		/* e, e0 written in parts of DIT_TIME_MAX_T rows: the first part W (StarPU
		 * reads no uninitialised data), the others RW, keeping the rows before */
		enum starpu_data_access_mode part = r0 == 0 ? STARPU_W : STARPU_RW;
		starpu_data_handle_t h[] = {gv.slab, g->ws[WAN_E], g->ws[WAN_E0],
		                            g->ws[WAN_S_TIME]};
		enum starpu_data_access_mode md[] = {STARPU_R, part, part, STARPU_SCRATCH};
		dit_status st = dit_graph_insert(g, &dit_cl_time_embed, "time_embed", &a, sizeof a,
		                                 0, NB(h), h, md, NULL, err);
		if (st)
			return st;
	}
	return DIT_OK;
}

static dit_status wan_time_one(dit_graph *g, double t, dit_error *err)
{
	const dit_graph_expert *m = g->model;
	const dit_hparams *c = &m->cfg;
	dit_wview gv;
	dit_graph_globals_view(g, &gv);
	const int64_t *off = gv.off;
	dit_time_embed_args a = {.fp = {{c->dim, c->freq_dim, 0, 0}},
	                         .dim = c->dim,
	                         .freq_dim = c->freq_dim,
	                         .t = t,
	                         .w0 = off[DIT_WG_TIME0_W],
	                         .b0 = off[DIT_WG_TIME0_B],
	                         .w2 = off[DIT_WG_TIME2_W],
	                         .b2 = off[DIT_WG_TIME2_B],
	                         .wp = off[DIT_WG_TPROJ_W],
	                         .bp = off[DIT_WG_TPROJ_B]};
	starpu_data_handle_t h[] = {gv.slab, g->ws[WAN_E], g->ws[WAN_E0], g->ws[WAN_S_TIME]};
	enum starpu_data_access_mode md[] = {STARPU_R, STARPU_W, STARPU_W, STARPU_SCRATCH};
	return dit_graph_insert(g, &dit_cl_time_embed, "time_embed", &a, sizeof a, 0, NB(h), h, md,
	                        NULL, err);
}

static dit_status wan_embed(dit_graph *g, int p, starpu_data_handle_t latent, dit_error *err)
{
	dit_wview gv;
	dit_graph_globals_view(g, &gv);
	const int64_t *off = gv.off;
	const dit_pass *ps = &g->pass[p];
	return dit_op_patch_embed(g, "patch_embed", off[DIT_WG_PATCH_W], off[DIT_WG_PATCH_B],
	                          latent, ps->x, ps->ws[WAN_S_PATCH], err);
}

static dit_status wan_head(dit_graph *g, int p, dit_error *err)
{
	const dit_graph_expert *m = g->model;
	const dit_hparams *c = &m->cfg;
	const dit_grid *gr = &g->grid;
	dit_wview gv;
	dit_graph_globals_view(g, &gv);
	const int64_t *off = gv.off;
	const dit_pass *ps = &g->pass[p];
	int64_t P = c->patch[0] * c->patch[1] * c->patch[2];
	dit_head_args ha = {.fp = {{gr->tokens, c->dim, c->out_dim * P, 0}},
	                    .c = c->out_dim,
	                    .tf = gr->tf,
	                    .th = gr->th,
	                    .tw = gr->tw,
	                    .pt = c->patch[0],
	                    .ph = c->patch[1],
	                    .pw = c->patch[2],
	                    .dim = c->dim,
	                    .eps = (float)c->eps,
	                    .w_off = off[DIT_WG_HEAD_W],
	                    .b_off = off[DIT_WG_HEAD_B],
	                    .mod_off = off[DIT_WG_HEAD_MOD],
	                    .mod_ld = c->dim,
	                    .mod_rows = g->mod_rows,
	                    .chunk = dit_grid_chunk(gr)};
	starpu_data_handle_t hh[] = {gv.slab, ps->x, g->ws[WAN_E], ps->out, ps->ws[WAN_S_HEAD]};
	enum starpu_data_access_mode mh[] = {STARPU_R, STARPU_R, STARPU_R, STARPU_W,
	                                     STARPU_SCRATCH};
	return dit_graph_insert(g, &dit_cl_head, "head", &ha, sizeof ha,
	                        2.0 * gr->tokens * c->dim * c->out_dim * P, NB(hh), hh, mh, NULL,
	                        err);
}

const dit_stage_kind dit_stages_wan = {
    .name = "wan",
    .workspace = wan_workspace,
    .text = wan_text,
    .time = wan_time,
    .embed = wan_embed,
    .head = wan_head,
    .token_chunks = 1,
};
