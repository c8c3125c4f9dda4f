/* HunyuanVideo's block kinds "hunyuan_double" (MMDoubleStreamBlock) and
 * "hunyuan_single" (MMSingleStreamBlock) and the op helpers its stages share
 * (tasks/hunyuan_priv.h has the shapes and buffers). */
#include "hunyuan_priv.h"

hy_ctx dit_hy_ctx_for(dit_graph *g, int p)
{
	const dit_hparams *c = &g->model->cfg;
	hy_ctx h = {.g = g, .ps = &g->pass[p]};
	h.Li = g->grid.tokens;
	h.Lt = c->text_len;
	h.L = h.Li + h.Lt;
	h.D = c->dim;
	h.F = c->ffn_dim;
	h.heads = c->num_heads;
	h.hd = c->dim / c->num_heads;
	h.valid = g->pass[p].text_valid;
	return h;
}

/* The globals as the slab. */
void dit_hy_use_globals(hy_ctx *h)
{
	dit_graph_globals_view(h->g, &h->w);
}

/* Block b of pool i as the slab. */
static void hy_use_block(hy_ctx *h, int i, int64_t b)
{
	dit_graph_block_view(h->g, i, b, &h->w);
}

/* y [m, n] (rows ldy apart, from y_off) = act(x [m, k] (from x_off) W^T + b), W the
 * n rows of tensor wt from row r0, b from element r0 of tensor bt (bt < 0: none). */
dit_status dit_hy_linear(const hy_ctx *h, const dit_task_opts *o, const char *name,
                         starpu_data_handle_t x, int64_t x_off, starpu_data_handle_t y,
                         int64_t y_off, int64_t ldy, int64_t m, int64_t n, int64_t k, int wt,
                         int64_t r0, int bt, dit_act act, dit_error *err)
{
	dit_linear_args a = {.fp = {{m, n, k, act}},
	                     .m = m,
	                     .n = n,
	                     .k = k,
	                     .ldx = k,
	                     .ldy = ldy,
	                     .x_off = x_off,
	                     .y_off = y_off,
	                     .b_off = bt >= 0 ? h->w.off[bt] + r0 : -1,
	                     .act = act};
	return dit_op_linear_w(h->g, o, name, &a, &h->w, wt, r0, x, y, h->ps->ws[HY_S_LIN], err);
}

/* y [rows, D] = LN(x) * (1 + scale) + shift for rows x0 .. x0 + rows of x, shift =
 * slab[bias + s0 D] + mod[s0 D], scale likewise from chunk s0 + 1 (the modulation
 * Linear's bias and its output). */
dit_status dit_hy_adaln(const hy_ctx *h, const dit_task_opts *o, const char *name,
                        starpu_data_handle_t x, int64_t x0, starpu_data_handle_t y, int64_t rows,
                        int bias, starpu_data_handle_t mod, int64_t s0, dit_error *err)
{
	int64_t D = h->D;
	dit_layernorm_args a = {.fp = {{rows, D, 1, 0}},
	                        .x_off = x0 * D,
	                        .rows = rows,
	                        .dim = D,
	                        .eps = (float)h->g->model->cfg.eps,
	                        .mod = 1,
	                        .shift_off = h->w.off[bias] + s0 * D,
	                        .scale_off = h->w.off[bias] + (s0 + 1) * D,
	                        .vshift_off = s0 * D,
	                        .vscale_off = (s0 + 1) * D};
	return dit_op_layernorm(h->g, o, name, &a, x, y, h->w.slab, mod, err);
}

/* x [x0 .. x0 + rows) += y [rows, D] * gate, gate = slab[bias + s D] + mod[s D]. */
dit_status dit_hy_gate(const hy_ctx *h, const dit_task_opts *o, const char *name,
                       starpu_data_handle_t x, int64_t x0, starpu_data_handle_t y, int64_t rows,
                       int bias, starpu_data_handle_t mod, int64_t s, dit_error *err)
{
	int64_t D = h->D;
	dit_residual_args a = {.fp = {{rows, D, 1, 0}},
	                       .x_off = x0 * D,
	                       .rows = rows,
	                       .dim = D,
	                       .gate_off = h->w.off[bias] + s * D,
	                       .vgate_off = s * D};
	return dit_op_residual(h->g, o, name, &a, x, y, h->w.slab, mod, err);
}

/* Per-head RMSNorm of q (col 0) or k (col D) of rows [t_row, t_row + rows) of a
 * [.., ld] buffer, then RoPE when rope (image rows: r0 is the image row of t_row). */
static dit_status hy_qk_at(const hy_ctx *h, const char *name, starpu_data_handle_t t, int64_t ld,
                           int64_t t_row, int64_t r0, int64_t rows, int64_t col, int wt, int rope,
                           dit_error *err)
{
	dit_qknorm_args a = {.fp = {{rows, h->D, rope, h->hd}},
	                     .rows = rows,
	                     .dim = h->D,
	                     .ld = ld,
	                     .t_off = t_row * ld + col,
	                     .w_off = h->w.off[wt],
	                     .heads = h->heads,
	                     .head_dim = h->hd,
	                     .eps = (float)h->g->model->cfg.eps,
	                     .rope = rope,
	                     .group = h->hd,
	                     .rope_off = rope ? r0 * h->hd : 0};
	return dit_op_rmsnorm(h->g, NULL, name, &a, t, h->w.slab, h->g->rope, err);
}

/* hy_qk_at of rows r0 .. of t itself. */
static dit_status hy_qk(const hy_ctx *h, const char *name, starpu_data_handle_t t, int64_t ld,
                        int64_t r0, int64_t rows, int64_t col, int wt, int rope, dit_error *err)
{
	return hy_qk_at(h, name, t, ld, r0, r0, rows, col, wt, rope, err);
}

/* Self-attention of the queries of rows q0 .. q0 + lq over the keys [0, valid) of lk
 * rows, q, k, v [lk, 3D] of one buffer, into o [lq, ldo]. */
dit_status dit_hy_attention(const hy_ctx *h, const char *name, starpu_data_handle_t qkv, int64_t q0,
                            int64_t lq, int64_t lk, int64_t valid, starpu_data_handle_t o,
                            int64_t ldo, dit_error *err)
{
	dit_attention_args a = dit_attention_fused(q0, lq, lk, h->heads, h->hd);
	a.ldo = ldo;
	a.lk_valid = valid;
	return dit_op_attention(h->g, NULL, name, &a, qkv, NULL, o, h->ps->ws[HY_S_ATTN], err);
}

/* Token chunks: self-attention of the lq queries in q's first rows over the keys
 * [0, valid) of lk rows of k/v [lk, 2D] in HY_QKV, into o [lq, ldo]. */
static dit_status hy_attention_q(const hy_ctx *h, const char *name, starpu_data_handle_t q,
                                 int64_t lq, int64_t lk, int64_t valid, starpu_data_handle_t o,
                                 int64_t ldo, dit_error *err)
{
	dit_attention_args a = dit_attention_split(lq, lk, h->heads, h->hd);
	a.ldo = ldo;
	a.lk_valid = valid;
	return dit_op_attention(h->g, NULL, name, &a, q, h->ps->ws[HY_QKV], o, h->ps->ws[HY_S_ATTN],
	                        err);
}

/* rows of src from row s0 into dst from row d0, [.., D] both. */
dit_status dit_hy_copy_rows(const hy_ctx *h, const dit_task_opts *o, const char *name,
                            starpu_data_handle_t dst, int64_t d0, starpu_data_handle_t src,
                            int64_t rows, dit_error *err)
{
	int64_t n = rows * h->D;
	dit_copy2d_args a = {.fp = {{1, n, 0, 0}},
	                     .count = 1,
	                     .len = n,
	                     .src_ld = n,
	                     .dst_off = d0 * h->D,
	                     .dst_ld = n};
	return dit_op_copy2d(h->g, o, name, &a, dst, src, err);
}

/* ------------------------------------------------------------------ blocks
 *
 * With token chunks (grid.chunk_rows) the image stream (double blocks) and the joint
 * stream (single blocks) run a chunk of rows at a time: first every chunk's rows of the
 * joint q/k/v (they read the stream), then each chunk's queries against all keys and
 * what follows them, through buffers of one chunk. */

/* One stream's attention input for its rows s0 .. s0 + rows (image: s0 a chunk's
 * first row; text: 0, all Lt): LN + modulation, then its rows of the joint qkv, or in
 * token chunks (chunked) of the joint k/v alone (Wqkv's rows [D, 3D)). */
static dit_status hy_double_qkv(const hy_ctx *h, int txt, int64_t s0, int64_t rows, int chunked,
                                dit_error *err)
{
	const dit_pass *ps = h->ps;
	int t0 = txt ? DIT_HD_TXT : 0;
	starpu_data_handle_t x = txt ? ps->ws[HY_XT] : ps->x, hh = ps->ws[txt ? HY_HT : HY_HI];
	starpu_data_handle_t mod = ps->ws[txt ? HY_MODT : HY_MODI];
	int64_t r0 = (txt ? h->Li : 0) + s0, D = h->D, n = chunked ? 2 * D : 3 * D;
	TRY(dit_hy_adaln(h, NULL, txt ? "txt_norm1" : "img_norm1", x, s0, hh, rows,
	                 t0 + DIT_HD_MOD_B, mod, 0, err));
	TRY(dit_hy_linear(h, NULL, txt ? "txt_attn_qkv" : "img_attn_qkv", hh, 0, ps->ws[HY_QKV],
	                  r0 * n, n, rows, n, D, t0 + DIT_HD_QKV_W, chunked ? D : 0,
	                  t0 + DIT_HD_QKV_B, DIT_ACT_NONE, err));
	if (!chunked)
		TRY(hy_qk(h, txt ? "txt_q_norm" : "img_q_norm", ps->ws[HY_QKV], n, r0, rows, 0,
		          t0 + DIT_HD_NQ, !txt, err));
	return hy_qk(h, txt ? "txt_k_norm" : "img_k_norm", ps->ws[HY_QKV], n, r0, rows,
	             chunked ? 0 : D, t0 + DIT_HD_NK, !txt, err);
}

/* Token chunks: one stream's q of its rows s0 .. s0 + rows into HY_Q's first rows, from
 * its normed input made again (Wqkv's rows [0, D)). */
static dit_status hy_double_q(const hy_ctx *h, int txt, int64_t s0, int64_t rows, dit_error *err)
{
	const dit_pass *ps = h->ps;
	int t0 = txt ? DIT_HD_TXT : 0;
	starpu_data_handle_t x = txt ? ps->ws[HY_XT] : ps->x, hh = ps->ws[txt ? HY_HT : HY_HI];
	starpu_data_handle_t mod = ps->ws[txt ? HY_MODT : HY_MODI];
	int64_t D = h->D;
	TRY(dit_hy_adaln(h, NULL, txt ? "txt_norm1" : "img_norm1", x, s0, hh, rows,
	                 t0 + DIT_HD_MOD_B, mod, 0, err));
	TRY(dit_hy_linear(h, NULL, txt ? "txt_attn_q" : "img_attn_q", hh, 0, ps->ws[HY_Q], 0, D,
	                  rows, D, D, t0 + DIT_HD_QKV_W, 0, t0 + DIT_HD_QKV_B, DIT_ACT_NONE, err));
	return hy_qk_at(h, txt ? "txt_q_norm" : "img_q_norm", ps->ws[HY_Q], D, 0, s0, rows, 0,
	                t0 + DIT_HD_NQ, !txt, err);
}

/* One stream's rows s0 .. s0 + rows after the attention (its output in o's first rows):
 * projection, gate, then the MLP. */
static dit_status hy_double_out(const hy_ctx *h, const dit_task_opts *last, int txt, int64_t s0,
                                int64_t rows, dit_error *err)
{
	const dit_pass *ps = h->ps;
	int t0 = txt ? DIT_HD_TXT : 0;
	starpu_data_handle_t x = txt ? ps->ws[HY_XT] : ps->x, hh = ps->ws[txt ? HY_HT : HY_HI];
	starpu_data_handle_t y = ps->ws[txt ? HY_YT : HY_YI], f = ps->ws[txt ? HY_FT : HY_FI];
	starpu_data_handle_t mod = ps->ws[txt ? HY_MODT : HY_MODI];
	int64_t D = h->D, F = h->F;
	TRY(dit_hy_linear(h, NULL, txt ? "txt_attn_proj" : "img_attn_proj", ps->ws[HY_O], 0, y, 0,
	                  D, rows, D, D, t0 + DIT_HD_PROJ_W, 0, t0 + DIT_HD_PROJ_B, DIT_ACT_NONE,
	                  err));
	TRY(dit_hy_gate(h, NULL, txt ? "txt_attn_residual" : "img_attn_residual", x, s0, y, rows,
	                t0 + DIT_HD_MOD_B, mod, 2, err));
	TRY(dit_hy_adaln(h, NULL, txt ? "txt_norm2" : "img_norm2", x, s0, hh, rows,
	                 t0 + DIT_HD_MOD_B, mod, 3, err));
	TRY(dit_hy_linear(h, NULL, txt ? "txt_mlp.fc1" : "img_mlp.fc1", hh, 0, f, 0, F, rows, F, D,
	                  t0 + DIT_HD_FC1_W, 0, t0 + DIT_HD_FC1_B, DIT_ACT_GELU_TANH, err));
	TRY(dit_hy_linear(h, NULL, txt ? "txt_mlp.fc2" : "img_mlp.fc2", f, 0, y, 0, D, rows, D, F,
	                  t0 + DIT_HD_FC2_W, 0, t0 + DIT_HD_FC2_B, DIT_ACT_NONE, err));
	return dit_hy_gate(h, last, txt ? "txt_mlp_residual" : "img_mlp_residual", x, s0, y, rows,
	                   t0 + DIT_HD_MOD_B, mod, 5, err);
}

static dit_status hy_double_submit(dit_graph *g, int i, int p, int64_t b,
                                   const dit_task_opts *first, const dit_task_opts *last,
                                   dit_error *err)
{
	hy_ctx h = dit_hy_ctx_for(g, p);
	hy_use_block(&h, i, b);
	const dit_pass *ps = h.ps;
	int64_t D = h.D, keys = h.Li + h.valid;
	dit_chunks ch;
	dit_grid_chunks(&g->grid, &ch);
	TRY(dit_hy_linear(&h, first, "img_mod", ps->ws[HY_SVEC], 0, ps->ws[HY_MODI], 0, 6 * D, 1,
	                  6 * D, D, DIT_HD_MOD_W, 0, -1, DIT_ACT_NONE, err));
	TRY(dit_hy_linear(&h, NULL, "txt_mod", ps->ws[HY_SVEC], 0, ps->ws[HY_MODT], 0, 6 * D, 1,
	                  6 * D, D, DIT_HD_TXT + DIT_HD_MOD_W, 0, -1, DIT_ACT_NONE, err));
	int chunked = ch.n > 1;
	for (int c = 0; c < ch.n; c++)
		TRY(hy_double_qkv(&h, 0, ch.row0[c], ch.row0[c + 1] - ch.row0[c], chunked, err));
	TRY(hy_double_qkv(&h, 1, 0, h.Lt, chunked, err));
	for (int c = 0; c < ch.n; c++) {
		int64_t r0 = ch.row0[c], m = ch.row0[c + 1] - r0;
		if (chunked) {
			TRY(hy_double_q(&h, 0, r0, m, err));
			TRY(hy_attention_q(&h, "attention", ps->ws[HY_Q], m, h.L, keys,
			                   ps->ws[HY_O], D, err));
		} else {
			TRY(dit_hy_attention(&h, "attention", ps->ws[HY_QKV], r0, m, h.L, keys,
			                     ps->ws[HY_O], D, err));
		}
		TRY(hy_double_out(&h, NULL, 0, r0, m, err));
	}
	if (chunked) {
		TRY(hy_double_q(&h, 1, 0, h.Lt, err));
		TRY(hy_attention_q(&h, "attention", ps->ws[HY_Q], h.Lt, h.L, keys, ps->ws[HY_O], D,
		                   err));
	} else {
		TRY(dit_hy_attention(&h, "attention", ps->ws[HY_QKV], h.Li, h.Lt, h.L, keys,
		                     ps->ws[HY_O], D, err));
	}
	return hy_double_out(&h, last, 1, 0, h.Lt, err);
}

/* Per-head norm of q or k (k) of joint rows r0 .. r0 + m, which are t's rows from t_row
 * ([.., ld], from column col): RoPE on the image rows. */
static dit_status hy_single_norm(const hy_ctx *h, int k, starpu_data_handle_t t, int64_t ld,
                                 int64_t col, int64_t t_row, int64_t r0, int64_t m, dit_error *err)
{
	int64_t Li = h->Li, end = r0 + m;
	int64_t ie = end < Li ? end : Li, t0 = r0 > Li ? r0 : Li;
	int wt = k ? DIT_HS_NK : DIT_HS_NQ;
	if (ie > r0)
		TRY(hy_qk_at(h, k ? "img_k_norm" : "img_q_norm", t, ld, t_row, r0, ie - r0, col, wt,
		             1, err));
	if (end > t0)
		TRY(hy_qk_at(h, k ? "txt_k_norm" : "txt_q_norm", t, ld, t_row + t0 - r0, t0,
		             end - t0, col, wt, 0, err));
	return DIT_OK;
}

/* The MLP input of joint rows r0 .. r0 + m from their normed rows (hj): the rows
 * [3D, 3D + F) of linear1, activated into the columns of cat after the attention's. */
static dit_status hy_single_mlp_in(const hy_ctx *h, int64_t m, dit_error *err)
{
	int64_t D = h->D, F = h->F;
	return dit_hy_linear(h, NULL, "linear1.mlp", h->ps->ws[HY_HJ], 0, h->ps->ws[HY_CAT], D,
	                     D + F, m, F, D, DIT_HS_LIN1_W, 3 * D, DIT_HS_LIN1_B, DIT_ACT_GELU_TANH,
	                     err);
}

static dit_status hy_single_submit(dit_graph *g, int i, int p, int64_t b,
                                   const dit_task_opts *first, const dit_task_opts *last,
                                   dit_error *err)
{
	hy_ctx h = dit_hy_ctx_for(g, p);
	hy_use_block(&h, i, b);
	const dit_pass *ps = h.ps;
	int64_t D = h.D, F = h.F, L = h.L, Li = h.Li;
	starpu_data_handle_t xj = ps->ws[HY_XJ], hj = ps->ws[HY_HJ], cat = ps->ws[HY_CAT];
	starpu_data_handle_t qkv = ps->ws[HY_QKV], mod = ps->ws[HY_MOD3];
	dit_chunks ch;
	dit_chunks_make(L, g->grid.chunk_rows, &ch);
	if (b == 0) { /* x = cat(img, txt) */
		TRY(dit_hy_copy_rows(&h, first, "concat_img", xj, 0, ps->x, Li, err));
		TRY(dit_hy_copy_rows(&h, NULL, "concat_txt", xj, Li, ps->ws[HY_XT], h.Lt, err));
		first = NULL;
	}
	TRY(dit_hy_linear(&h, first, "modulation", ps->ws[HY_SVEC], 0, mod, 0, 3 * D, 1, 3 * D, D,
	                  DIT_HS_MOD_W, 0, -1, DIT_ACT_NONE, err));
	/* linear1 in two GEMMs: rows [0, 3D) are q, k, v; rows [3D, 3D + F) the MLP input,
	 * which chunks make after the attention (cat holds one chunk), from the normed rows
	 * made again, and with them the chunk's q (rows [0, D)): in chunks qkv holds k, v
	 * alone (rows [D, 3D)) */
	int chunked = ch.n > 1;
	int64_t n = chunked ? 2 * D : 3 * D;
	for (int c = 0; c < ch.n; c++) {
		int64_t r0 = ch.row0[c], m = ch.row0[c + 1] - r0;
		TRY(dit_hy_adaln(&h, NULL, "pre_norm", xj, r0, hj, m, DIT_HS_MOD_B, mod, 0, err));
		TRY(dit_hy_linear(&h, NULL, "linear1.qkv", hj, 0, qkv, r0 * n, n, m, n, D,
		                  DIT_HS_LIN1_W, chunked ? D : 0, DIT_HS_LIN1_B, DIT_ACT_NONE,
		                  err));
		if (!chunked) {
			TRY(hy_single_mlp_in(&h, m, err));
			TRY(hy_single_norm(&h, 0, qkv, n, 0, r0, r0, m, err));
		}
		TRY(hy_single_norm(&h, 1, qkv, n, chunked ? 0 : D, r0, r0, m, err));
	}
	for (int c = 0; c < ch.n; c++) {
		int64_t r0 = ch.row0[c], m = ch.row0[c + 1] - r0;
		if (chunked) {
			TRY(dit_hy_adaln(&h, NULL, "pre_norm", xj, r0, hj, m, DIT_HS_MOD_B, mod, 0,
			                 err));
			TRY(hy_single_mlp_in(&h, m, err));
			TRY(dit_hy_linear(&h, NULL, "linear1.q", hj, 0, ps->ws[HY_QJ], 0, D, m, D,
			                  D, DIT_HS_LIN1_W, 0, DIT_HS_LIN1_B, DIT_ACT_NONE, err));
			TRY(hy_single_norm(&h, 0, ps->ws[HY_QJ], D, 0, 0, r0, m, err));
			TRY(hy_attention_q(&h, "attention", ps->ws[HY_QJ], m, L, Li + h.valid, cat,
			                   D + F, err));
		} else {
			TRY(dit_hy_attention(&h, "attention", qkv, r0, m, L, Li + h.valid, cat,
			                     D + F, err));
		}
		TRY(dit_hy_linear(&h, NULL, "linear2", cat, 0, ps->ws[HY_YJ], 0, D, m, D, D + F,
		                  DIT_HS_LIN2_W, 0, DIT_HS_LIN2_B, DIT_ACT_NONE, err));
		TRY(dit_hy_gate(&h, c == ch.n - 1 ? last : NULL, "residual", xj, r0, ps->ws[HY_YJ],
		                m, DIT_HS_MOD_B, mod, 2, err));
	}
	return DIT_OK;
}

const dit_block_kind dit_block_hunyuan_double = {"hunyuan_double", hy_double_submit, -1};
const dit_block_kind dit_block_hunyuan_single = {"hunyuan_single", hy_single_submit, HY_XJ};
