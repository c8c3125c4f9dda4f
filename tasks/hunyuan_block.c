/* The HunyuanVideo forward (hyvideo/modules/models.py) as chains of generic op
 * tasks: the block kinds "hunyuan_double" (MMDoubleStreamBlock) and "hunyuan_single"
 * (MMSingleStreamBlock), and the stages "hunyuan" around them (embeddings, the token
 * refiner, the final layer). This file is over the usual size because the three pieces
 * share one set of work buffers and helpers.
 *
 * Shapes: Li image tokens, Lt = text_len text rows (the prompt's Lv tokens, then
 * padding), L = Li + Lt, D = dim, F = ffn_dim, hd = head_dim. Every modulation is
 * Linear(SiLU(vec)); the Linear is computed without its bias into a [kD] buffer and
 * the bias enters as the slab term of the layernorm and residual ops (shift = bias +
 * W SiLU(vec)), which is the same fp32 sum.
 *
 *   vec  = time_in(sin t) + vector_in(text_states_2) + guidance_in(sin g)     [D]
 *   c    = t_embedder(sin t) + c_embedder(mean of the prompt's text states)    [D]
 *   txt  = refiner_2(refiner_1(input_embedder(text_states), c))             [Lt, D]
 *   img  = img_in(latent)                                                   [Li, D]
 *   img, txt = double_b(img, txt, vec)                 20 blocks, pool 0
 *   x = [img; txt]; x = single_b(x, vec)               40 blocks, pool 1
 *   out = unpatchify(final_layer(x[:Li], vec))         [C, f, h, w]
 *
 * Attention is joint over [img; txt]: keys are the image tokens and the prompt's text
 * tokens (lk_valid = Li + Lv). Padded text rows are computed against the same keys;
 * they never reach the image output (the official code gives them their own segment,
 * whose values are as meaningless). RoPE rotates image q, k only. */
#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_hunyuan.h"
#include "dit_ops.h"

#define NB(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The work buffers of a pass (dit_pass.ws); ps->x is the image stream [Li, D]. */
enum {
	HY_XT = 0, /* [Lt, D] text stream */
	HY_XJ,     /* [L, D] joint stream of the single blocks */
	HY_HI,     /* [Li, D] normed image input of a sub-layer */
	HY_HT,     /* [Lt, D] normed text input */
	HY_HJ,     /* [L, D] normed joint input */
	HY_QKV,    /* [L, 3D] joint q, k, v (the refiner: its first Lt rows) */
	HY_O,      /* [L, D] joint attention output */
	HY_YI,     /* [Li, D] sub-layer outputs before the residual */
	HY_YT,     /* [Lt, D] */
	HY_YJ,     /* [L, D] */
	HY_FI,     /* [Li, F] MLP hidden */
	HY_FT,     /* [Lt, F] (the refiner: [Lt, 4D]) */
	HY_CAT,    /* [L, D + F] single block: attention output, then gelu_tanh(mlp) */
	HY_MODI,   /* [6D] image modulation, without its bias */
	HY_MODT,   /* [6D] text modulation */
	HY_MOD3,   /* [3D] single-block modulation */
	HY_MOD2,   /* [2D] refiner and final-layer modulation */
	HY_SVEC,   /* [D] SiLU(vec) */
	HY_SC,     /* [D] SiLU(c) of the refiner */
	HY_CLIP,   /* [D] vector_in(text_states_2), once per run */
	HY_CEMB,   /* [D] c_embedder(mean), once per run */
	HY_MEAN,   /* [text_dim] mean of the prompt's text states */
	HY_HID,    /* [D] hidden layer of an embedding MLP */
	HY_TXT0,   /* [Lt, D] input_embedder(text_states), once per run */
	HY_TOK,    /* [Li, C pt ph pw] final layer output */
	HY_S_ATTN, /* scratch of the attention, the patch embedding, the bf16 GEMMs */
	HY_S_PATCH,
	HY_S_LIN,
	HY_NPASS
};
/* Shared by the passes (dit_graph.ws): this step's time terms. */
enum {
	HY_SIN_T = 0, /* [256] sinusoid of t */
	HY_SIN_G,     /* [256] sinusoid of the guidance input */
	HY_TIN,       /* [D] time_in */
	HY_GIN,       /* [D] guidance_in, once per run */
	HY_RT,        /* [D] the refiner's t_embedder */
	HY_HID_S,     /* [D] hidden layer */
};

/* The small ops have CPU kernels only (codelets/vec_small.c). */
static const dit_task_opts on_cpu = {.where = STARPU_CPU};

/* What the tasks of one block (or stage) share. */
typedef struct hy_ctx {
	dit_graph *g;
	const dit_pass *ps;
	dit_wview w; /* the slab: a block's chunk or the globals */
	int64_t Li, Lt, L, D, F, hd, heads;
	int64_t valid; /* the prompt's text tokens */
} hy_ctx;

static hy_ctx hy_ctx_for(dit_graph *g, int p)
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
static void hy_use_globals(hy_ctx *h)
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
static dit_status hy_linear(const hy_ctx *h, const dit_task_opts *o, const char *name,
                            starpu_data_handle_t x, int64_t x_off, starpu_data_handle_t y,
                            int64_t y_off, int64_t ldy, int64_t m, int64_t n, int64_t k, int wt,
                            int64_t r0, int bt, dit_act act, dit_error *err)
{
	int bf = h->w.bf16[wt];
	dit_linear_args a = {.fp = {{m, n, k, act}},
	                     .m = m,
	                     .n = n,
	                     .k = k,
	                     .ldx = k,
	                     .ldy = ldy,
	                     .x_off = x_off,
	                     .y_off = y_off,
	                     .w_off = h->w.off[wt] + (bf ? r0 * k / 2 : r0 * k),
	                     .b_off = bt >= 0 ? h->w.off[bt] + r0 : -1,
	                     .act = act,
	                     .wbf16 = bf};
	return dit_op_linear(h->g, o, name, &a, x, h->w.slab, y, h->ps->ws[HY_S_LIN], err);
}

/* y [rows, D] = LN(x) * (1 + scale) + shift for rows x0 .. x0 + rows of x, shift =
 * slab[bias + s0 D] + mod[s0 D], scale likewise from chunk s0 + 1 (the modulation
 * Linear's bias and its output). */
static dit_status hy_adaln(const hy_ctx *h, const dit_task_opts *o, const char *name,
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
static dit_status hy_gate(const hy_ctx *h, const dit_task_opts *o, const char *name,
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

/* Per-head RMSNorm of q (col 0) or k (col D) of rows [r0, r0 + rows) of a [.., ld]
 * buffer, then RoPE when rope (image rows: r0 is their image row). */
static dit_status hy_qk(const hy_ctx *h, const char *name, starpu_data_handle_t t, int64_t ld,
                        int64_t r0, int64_t rows, int64_t col, int wt, int rope, dit_error *err)
{
	dit_qknorm_args a = {.fp = {{rows, h->D, rope, h->hd}},
	                     .rows = rows,
	                     .dim = h->D,
	                     .ld = ld,
	                     .t_off = r0 * ld + col,
	                     .w_off = h->w.off[wt],
	                     .heads = h->heads,
	                     .head_dim = h->hd,
	                     .eps = (float)h->g->model->cfg.eps,
	                     .rope = rope,
	                     .group = h->hd,
	                     .rope_off = rope ? r0 * h->hd : 0};
	return dit_op_rmsnorm(h->g, NULL, name, &a, t, h->w.slab, h->g->rope, err);
}

/* Self-attention of the queries of rows q0 .. q0 + lq over the keys [0, valid) of lk
 * rows, q, k, v [lk, 3D] of one buffer, into o [lq, ldo]. */
static dit_status hy_attention(const hy_ctx *h, const char *name, starpu_data_handle_t qkv,
                               int64_t q0, int64_t lq, int64_t lk, int64_t valid,
                               starpu_data_handle_t o, int64_t ldo, dit_error *err)
{
	dit_attention_args a = dit_attention_fused(q0, lq, lk, h->heads, h->hd);
	a.ldo = ldo;
	a.lk_valid = valid;
	return dit_op_attention(h->g, NULL, name, &a, qkv, NULL, o, h->ps->ws[HY_S_ATTN], err);
}

/* rows of src from row s0 into dst from row d0, [.., D] both. */
static dit_status hy_copy_rows(const hy_ctx *h, const dit_task_opts *o, const char *name,
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
 * first row; text: 0, all Lt): LN + modulation, then its rows of the joint qkv. */
static dit_status hy_double_qkv(const hy_ctx *h, int txt, int64_t s0, int64_t rows, dit_error *err)
{
	const dit_pass *ps = h->ps;
	int t0 = txt ? DIT_HD_TXT : 0;
	starpu_data_handle_t x = txt ? ps->ws[HY_XT] : ps->x, hh = ps->ws[txt ? HY_HT : HY_HI];
	starpu_data_handle_t mod = ps->ws[txt ? HY_MODT : HY_MODI];
	int64_t r0 = (txt ? h->Li : 0) + s0, D = h->D;
	TRY(hy_adaln(h, NULL, txt ? "txt_norm1" : "img_norm1", x, s0, hh, rows, t0 + DIT_HD_MOD_B,
	             mod, 0, err));
	TRY(hy_linear(h, NULL, txt ? "txt_attn_qkv" : "img_attn_qkv", hh, 0, ps->ws[HY_QKV],
	              r0 * 3 * D, 3 * D, rows, 3 * D, D, t0 + DIT_HD_QKV_W, 0, t0 + DIT_HD_QKV_B,
	              DIT_ACT_NONE, err));
	TRY(hy_qk(h, txt ? "txt_q_norm" : "img_q_norm", ps->ws[HY_QKV], 3 * D, r0, rows, 0,
	          t0 + DIT_HD_NQ, !txt, err));
	return hy_qk(h, txt ? "txt_k_norm" : "img_k_norm", ps->ws[HY_QKV], 3 * D, r0, rows, D,
	             t0 + DIT_HD_NK, !txt, err);
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
	TRY(hy_linear(h, NULL, txt ? "txt_attn_proj" : "img_attn_proj", ps->ws[HY_O], 0, y, 0, D,
	              rows, D, D, t0 + DIT_HD_PROJ_W, 0, t0 + DIT_HD_PROJ_B, DIT_ACT_NONE, err));
	TRY(hy_gate(h, NULL, txt ? "txt_attn_residual" : "img_attn_residual", x, s0, y, rows,
	            t0 + DIT_HD_MOD_B, mod, 2, err));
	TRY(hy_adaln(h, NULL, txt ? "txt_norm2" : "img_norm2", x, s0, hh, rows, t0 + DIT_HD_MOD_B,
	             mod, 3, err));
	TRY(hy_linear(h, NULL, txt ? "txt_mlp.fc1" : "img_mlp.fc1", hh, 0, f, 0, F, rows, F, D,
	              t0 + DIT_HD_FC1_W, 0, t0 + DIT_HD_FC1_B, DIT_ACT_GELU_TANH, err));
	TRY(hy_linear(h, NULL, txt ? "txt_mlp.fc2" : "img_mlp.fc2", f, 0, y, 0, D, rows, D, F,
	              t0 + DIT_HD_FC2_W, 0, t0 + DIT_HD_FC2_B, DIT_ACT_NONE, err));
	return hy_gate(h, last, txt ? "txt_mlp_residual" : "img_mlp_residual", x, s0, y, rows,
	               t0 + DIT_HD_MOD_B, mod, 5, err);
}

static dit_status hy_double_submit(dit_graph *g, int i, int p, int64_t b,
                                   const dit_task_opts *first, const dit_task_opts *last,
                                   dit_error *err)
{
	hy_ctx h = hy_ctx_for(g, p);
	hy_use_block(&h, i, b);
	const dit_pass *ps = h.ps;
	int64_t D = h.D, keys = h.Li + h.valid;
	dit_chunks ch;
	dit_grid_chunks(&g->grid, &ch);
	TRY(hy_linear(&h, first, "img_mod", ps->ws[HY_SVEC], 0, ps->ws[HY_MODI], 0, 6 * D, 1, 6 * D,
	              D, DIT_HD_MOD_W, 0, -1, DIT_ACT_NONE, err));
	TRY(hy_linear(&h, NULL, "txt_mod", ps->ws[HY_SVEC], 0, ps->ws[HY_MODT], 0, 6 * D, 1, 6 * D,
	              D, DIT_HD_TXT + DIT_HD_MOD_W, 0, -1, DIT_ACT_NONE, err));
	for (int c = 0; c < ch.n; c++)
		TRY(hy_double_qkv(&h, 0, ch.row0[c], ch.row0[c + 1] - ch.row0[c], err));
	TRY(hy_double_qkv(&h, 1, 0, h.Lt, err));
	for (int c = 0; c < ch.n; c++) {
		int64_t r0 = ch.row0[c], m = ch.row0[c + 1] - r0;
		TRY(hy_attention(&h, "attention", ps->ws[HY_QKV], r0, m, h.L, keys, ps->ws[HY_O], D,
		                 err));
		TRY(hy_double_out(&h, NULL, 0, r0, m, err));
	}
	TRY(hy_attention(&h, "attention", ps->ws[HY_QKV], h.Li, h.Lt, h.L, keys, ps->ws[HY_O], D,
	                 err));
	return hy_double_out(&h, last, 1, 0, h.Lt, err);
}

/* Per-head norms of q and k of joint rows r0 .. r0 + m: RoPE on the image rows. */
static dit_status hy_single_norms(const hy_ctx *h, int64_t r0, int64_t m, dit_error *err)
{
	starpu_data_handle_t qkv = h->ps->ws[HY_QKV];
	int64_t D = h->D, Li = h->Li, end = r0 + m;
	int64_t ie = end < Li ? end : Li, t0 = r0 > Li ? r0 : Li;
	if (ie > r0) {
		TRY(hy_qk(h, "img_q_norm", qkv, 3 * D, r0, ie - r0, 0, DIT_HS_NQ, 1, err));
		TRY(hy_qk(h, "img_k_norm", qkv, 3 * D, r0, ie - r0, D, DIT_HS_NK, 1, err));
	}
	if (end > t0) {
		TRY(hy_qk(h, "txt_q_norm", qkv, 3 * D, t0, end - t0, 0, DIT_HS_NQ, 0, err));
		TRY(hy_qk(h, "txt_k_norm", qkv, 3 * D, t0, end - t0, D, DIT_HS_NK, 0, err));
	}
	return DIT_OK;
}

/* The MLP input of joint rows r0 .. r0 + m from their normed rows (hj): the rows
 * [3D, 3D + F) of linear1, activated into the columns of cat after the attention's. */
static dit_status hy_single_mlp_in(const hy_ctx *h, int64_t m, dit_error *err)
{
	int64_t D = h->D, F = h->F;
	return hy_linear(h, NULL, "linear1.mlp", h->ps->ws[HY_HJ], 0, h->ps->ws[HY_CAT], D, D + F,
	                 m, F, D, DIT_HS_LIN1_W, 3 * D, DIT_HS_LIN1_B, DIT_ACT_GELU_TANH, err);
}

static dit_status hy_single_submit(dit_graph *g, int i, int p, int64_t b,
                                   const dit_task_opts *first, const dit_task_opts *last,
                                   dit_error *err)
{
	hy_ctx h = hy_ctx_for(g, p);
	hy_use_block(&h, i, b);
	const dit_pass *ps = h.ps;
	int64_t D = h.D, F = h.F, L = h.L, Li = h.Li;
	starpu_data_handle_t xj = ps->ws[HY_XJ], hj = ps->ws[HY_HJ], cat = ps->ws[HY_CAT];
	starpu_data_handle_t qkv = ps->ws[HY_QKV], mod = ps->ws[HY_MOD3];
	dit_chunks ch;
	dit_chunks_make(L, g->grid.chunk_rows, &ch);
	if (b == 0) { /* x = cat(img, txt) */
		TRY(hy_copy_rows(&h, first, "concat_img", xj, 0, ps->x, Li, err));
		TRY(hy_copy_rows(&h, NULL, "concat_txt", xj, Li, ps->ws[HY_XT], h.Lt, err));
		first = NULL;
	}
	TRY(hy_linear(&h, first, "modulation", ps->ws[HY_SVEC], 0, mod, 0, 3 * D, 1, 3 * D, D,
	              DIT_HS_MOD_W, 0, -1, DIT_ACT_NONE, err));
	/* linear1 in two GEMMs: rows [0, 3D) are q, k, v; rows [3D, 3D + F) the MLP input,
	 * which chunks make after the attention (cat holds one chunk), from the normed rows
	 * made again */
	for (int c = 0; c < ch.n; c++) {
		int64_t r0 = ch.row0[c], m = ch.row0[c + 1] - r0;
		TRY(hy_adaln(&h, NULL, "pre_norm", xj, r0, hj, m, DIT_HS_MOD_B, mod, 0, err));
		TRY(hy_linear(&h, NULL, "linear1.qkv", hj, 0, qkv, r0 * 3 * D, 3 * D, m, 3 * D, D,
		              DIT_HS_LIN1_W, 0, DIT_HS_LIN1_B, DIT_ACT_NONE, err));
		if (ch.n == 1)
			TRY(hy_single_mlp_in(&h, m, err));
		TRY(hy_single_norms(&h, r0, m, err));
	}
	for (int c = 0; c < ch.n; c++) {
		int64_t r0 = ch.row0[c], m = ch.row0[c + 1] - r0;
		if (ch.n > 1) {
			TRY(hy_adaln(&h, NULL, "pre_norm", xj, r0, hj, m, DIT_HS_MOD_B, mod, 0,
			             err));
			TRY(hy_single_mlp_in(&h, m, err));
		}
		TRY(hy_attention(&h, "attention", qkv, r0, m, L, Li + h.valid, cat, D + F, err));
		TRY(hy_linear(&h, NULL, "linear2", cat, 0, ps->ws[HY_YJ], 0, D, m, D, D + F,
		              DIT_HS_LIN2_W, 0, DIT_HS_LIN2_B, DIT_ACT_NONE, err));
		TRY(hy_gate(&h, c == ch.n - 1 ? last : NULL, "residual", xj, r0, ps->ws[HY_YJ], m,
		            DIT_HS_MOD_B, mod, 2, err));
	}
	return DIT_OK;
}

const dit_block_kind dit_block_hunyuan_double = {"hunyuan_double", hy_double_submit, -1};
const dit_block_kind dit_block_hunyuan_single = {"hunyuan_single", hy_single_submit, HY_XJ};

/* ------------------------------------------------------------------ stages */

static void hy_workspace(const dit_hparams *c, const dit_grid *grid, int64_t time_rows,
                         dit_ws_spec *ws)
{
	int64_t Li = grid->tokens, Lt = c->text_len, L = Li + Lt, D = c->dim, F = c->ffn_dim;
	int64_t hd = D / c->num_heads, P = c->patch[0] * c->patch[1] * c->patch[2];
	int64_t Fr = F > 4 * D ? F : 4 * D; /* the text MLP hidden serves the refiner's 4D */
	size_t f = sizeof(float);
	(void)time_rows;
	/* token chunks: the image stream's buffers hold a chunk (T rows), the joint
	 * stream's one of its own (Tj), each in its row tiles and zeroed first (the last,
	 * shorter chunk writes part of them); the attention output serves the text's Lt
	 * rows too */
	dit_chunks jc;
	int64_t T = dit_grid_chunk(grid), part = T > 0, tr = part ? T : Li;
	int64_t Tj = part ? dit_chunks_make(L, grid->chunk_rows, &jc) : L, jr = Tj;
	if (!part)
		T = Li;
	int64_t To = T > Lt ? T : Lt;
	ws->pass[HY_XT] = (dit_ws_buf){Lt * D, f, "txt", Lt, 0, DIT_LIVE_FORWARD, 0};
	ws->pass[HY_XJ] = (dit_ws_buf){L * D, f, "xj", L, 1, DIT_LIVE_FORWARD, 0};
	ws->pass[HY_HI] = (dit_ws_buf){T * D, f, "h_img", tr, part, DIT_LIVE_BLOCK, part};
	ws->pass[HY_HT] = (dit_ws_buf){Lt * D, f, "h_txt", Lt, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_HJ] = (dit_ws_buf){Tj * D, f, "h", jr, part, DIT_LIVE_BLOCK, part};
	ws->pass[HY_QKV] = (dit_ws_buf){L * 3 * D, f, "qkv", L, 1, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_O] = (dit_ws_buf){To * D, f, "o", To == tr ? tr : 0, 1, DIT_LIVE_BLOCK, part};
	ws->pass[HY_YI] = (dit_ws_buf){T * D, f, "y_img", tr, part, DIT_LIVE_BLOCK, part};
	ws->pass[HY_YT] = (dit_ws_buf){Lt * D, f, "y_txt", Lt, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_YJ] = (dit_ws_buf){Tj * D, f, "y", jr, part, DIT_LIVE_BLOCK, part};
	ws->pass[HY_FI] = (dit_ws_buf){T * F, f, "mlp_img", tr, part, DIT_LIVE_BLOCK, part};
	ws->pass[HY_FT] = (dit_ws_buf){Lt * Fr, f, "mlp_txt", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_CAT] = (dit_ws_buf){Tj * (D + F), f, "cat", jr, 1, DIT_LIVE_BLOCK, part};
	ws->pass[HY_MODI] = (dit_ws_buf){6 * D, f, "mod_img", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_MODT] = (dit_ws_buf){6 * D, f, "mod_txt", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_MOD3] = (dit_ws_buf){3 * D, f, "mod_single", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_MOD2] = (dit_ws_buf){2 * D, f, "mod_2", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_SVEC] = (dit_ws_buf){D, f, "vec", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->pass[HY_SC] = (dit_ws_buf){D, f, "refiner_c", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->pass[HY_CLIP] = (dit_ws_buf){D, f, "vector_in", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->pass[HY_CEMB] = (dit_ws_buf){D, f, "c_embedder", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->pass[HY_MEAN] = (dit_ws_buf){c->text_dim, f, "text_mean", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_HID] = (dit_ws_buf){D, f, "hidden", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_TXT0] = (dit_ws_buf){Lt * D, f, "txt_in", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->pass[HY_TOK] =
	    (dit_ws_buf){Li * c->out_dim * P, f, "final", part ? 0 : Li, part, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_S_ATTN] = (dit_ws_buf){
	    (int64_t)dit_cpu_attention_scratch(hd), f, "scratch_attn", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_S_PATCH] =
	    (dit_ws_buf){Li * c->in_dim * P, f, "scratch_patch", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_S_LIN] =
	    (dit_ws_buf){dit_linear_scratch(L, D + F), f, "scratch_lin", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->shared[HY_SIN_T] = (dit_ws_buf){c->freq_dim, f, "sin_t", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[HY_SIN_G] = (dit_ws_buf){c->freq_dim, f, "sin_g", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[HY_TIN] = (dit_ws_buf){D, f, "time_in", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[HY_GIN] = (dit_ws_buf){D, f, "guidance_in", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[HY_RT] = (dit_ws_buf){D, f, "t_embedder", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[HY_HID_S] = (dit_ws_buf){D, f, "hidden", 0, 0, DIT_LIVE_FORWARD, 0};
}

/* out [D] = W2 SiLU(W1 x + b1) + b2 (an embedding MLP of the globals, w1 w2 its
 * weights, b = w + 1), hid its hidden layer. */
static dit_status hy_mlp(const hy_ctx *h, const char *name, starpu_data_handle_t x, int64_t k,
                         int w1, int w2, starpu_data_handle_t hid, starpu_data_handle_t out,
                         dit_error *err)
{
	TRY(hy_linear(h, NULL, name, x, 0, hid, 0, h->D, 1, h->D, k, w1, 0, w1 + 1, DIT_ACT_SILU,
	              err));
	return hy_linear(h, NULL, name, hid, 0, out, 0, h->D, 1, h->D, h->D, w2, 0, w2 + 1,
	                 DIT_ACT_NONE, err);
}

static dit_status hy_sinusoid(dit_graph *g, starpu_data_handle_t out, double t, dit_error *err)
{
	int64_t n = g->model->cfg.freq_dim;
	dit_sinusoid_args a = {.fp = {{n, 0, 0, 0}}, .dim = n, .t = t};
	enum starpu_data_access_mode md[] = {STARPU_W};
	return dit_graph_insert(g, &dit_cl_sinusoid, "sinusoid", &a, sizeof a, 0, 1, &out, md,
	                        &on_cpu, err);
}

/* Once per run: guidance_in of the run's guidance input (shared by the passes), and
 * per pass the prompt's mean and c_embedder, vector_in, input_embedder. */
static dit_status hy_text(dit_graph *g, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	hy_ctx hg = hy_ctx_for(g, 0);
	hy_use_globals(&hg);
	TRY(hy_sinusoid(g, g->ws[HY_SIN_G], g->guidance, err));
	TRY(hy_mlp(&hg, "guidance_in", g->ws[HY_SIN_G], c->freq_dim, DIT_HG_GUID0_W, DIT_HG_GUID2_W,
	           g->ws[HY_HID_S], g->ws[HY_GIN], err));
	for (int p = 0; p < g->npasses; p++) {
		g->cur_pass = p;
		hy_ctx h = hy_ctx_for(g, p);
		hy_use_globals(&h);
		const dit_pass *ps = h.ps;
		if (!ps->pooled)
			return dit_error_set(err, DIT_EINVAL,
			                     "%s needs a pooled text embedding (text_states_2)",
			                     g->w.desc->name);
		dit_row_mean_args ma = {
		    .fp = {{h.valid, c->text_dim, 0, 0}}, .rows = h.valid, .dim = c->text_dim};
		starpu_data_handle_t hm[] = {ps->context, ps->ws[HY_MEAN]};
		enum starpu_data_access_mode mm[] = {STARPU_R, STARPU_W};
		TRY(dit_graph_insert(g, &dit_cl_row_mean, "text_mean", &ma, sizeof ma, 0, 2, hm, mm,
		                     &on_cpu, err));
		TRY(hy_mlp(&h, "c_embedder", ps->ws[HY_MEAN], c->text_dim, DIT_HG_TXT_C1_W,
		           DIT_HG_TXT_C2_W, ps->ws[HY_HID], ps->ws[HY_CEMB], err));
		TRY(hy_mlp(&h, "vector_in", ps->pooled, c->text_dim_2, DIT_HG_VEC0_W, DIT_HG_VEC2_W,
		           ps->ws[HY_HID], ps->ws[HY_CLIP], err));
		TRY(hy_linear(&h, NULL, "input_embedder", ps->context, 0, ps->ws[HY_TXT0], 0, h.D,
		              h.Lt, h.D, c->text_dim, DIT_HG_TXT_IN_W, 0, DIT_HG_TXT_IN_B,
		              DIT_ACT_NONE, err));
	}
	g->cur_pass = -1;
	return DIT_OK;
}

/* Each step: the time terms every pass shares. */
static dit_status hy_time(dit_graph *g, const double *t, int64_t nt, int64_t mod_rows,
                          dit_error *err)
{
	(void)nt;
	(void)mod_rows;
	hy_ctx h = hy_ctx_for(g, 0);
	hy_use_globals(&h);
	starpu_data_handle_t *ws = g->ws;
	int64_t F = g->model->cfg.freq_dim;
	TRY(hy_sinusoid(g, ws[HY_SIN_T], t[0], err));
	TRY(hy_mlp(&h, "time_in", ws[HY_SIN_T], F, DIT_HG_TIME0_W, DIT_HG_TIME2_W, ws[HY_HID_S],
	           ws[HY_TIN], err));
	return hy_mlp(&h, "t_embedder", ws[HY_SIN_T], F, DIT_HG_TXT_T0_W, DIT_HG_TXT_T2_W,
	              ws[HY_HID_S], ws[HY_RT], err);
}

/* dst = SiLU(sum of the terms) [D]. */
static dit_status hy_sum_silu(const hy_ctx *h, const char *name, starpu_data_handle_t dst,
                              starpu_data_handle_t *terms, int nterms, dit_error *err)
{
	dit_lincomb_args a = {.fp = {{h->D, nterms, 0, 0}}, .n = h->D, .nterms = nterms};
	starpu_data_handle_t hb[DIT_LINCOMB_MAX + 1] = {dst};
	enum starpu_data_access_mode md[DIT_LINCOMB_MAX + 1] = {STARPU_W};
	for (int i = 0; i < nterms; i++) {
		a.src[i] = i + 1;
		a.coef[i] = 1.0;
		hb[i + 1] = terms[i];
		md[i + 1] = STARPU_R;
	}
	TRY(dit_graph_insert(h->g, &dit_cl_lincomb, name, &a, sizeof a, 0, nterms + 1, hb, md, NULL,
	                     err));
	dit_act_args s = {.fp = {{h->D, DIT_ACT_SILU, 0, 0}}, .n = h->D, .act = DIT_ACT_SILU};
	enum starpu_data_access_mode ms[] = {STARPU_RW};
	return dit_graph_insert(h->g, &dit_cl_act, name, &s, sizeof s, 0, 1, &dst, ms, &on_cpu,
	                        err);
}

/* A token-refiner block r over the text stream (IndividualTokenRefinerBlock). */
static dit_status hy_refiner_block(const hy_ctx *h, int r, dit_error *err)
{
	const dit_pass *ps = h->ps;
	int t0 = DIT_HG_REFINER + r * DIT_HR_COUNT;
	int64_t Lt = h->Lt, D = h->D;
	starpu_data_handle_t xt = ps->ws[HY_XT], ht = ps->ws[HY_HT], yt = ps->ws[HY_YT];
	starpu_data_handle_t mod = ps->ws[HY_MOD2], qkv = ps->ws[HY_QKV], f = ps->ws[HY_FT];
	TRY(hy_linear(h, NULL, "refiner.adaLN", ps->ws[HY_SC], 0, mod, 0, 2 * D, 1, 2 * D, D,
	              t0 + DIT_HR_MOD_W, 0, -1, DIT_ACT_NONE, err));
	for (int half = 0; half < 2; half++) {
		dit_layernorm_args a = {.fp = {{Lt, D, 0, 1}},
		                        .rows = Lt,
		                        .dim = D,
		                        .eps = (float)h->g->model->cfg.eps,
		                        .affine = 1,
		                        .w_off = h->w.off[t0 + (half ? DIT_HR_N2W : DIT_HR_N1W)],
		                        .b_off = h->w.off[t0 + (half ? DIT_HR_N2B : DIT_HR_N1B)]};
		TRY(dit_op_layernorm(h->g, NULL, half ? "refiner.norm2" : "refiner.norm1", &a, xt,
		                     ht, h->w.slab, NULL, err));
		if (!half) {
			TRY(hy_linear(h, NULL, "refiner.qkv", ht, 0, qkv, 0, 3 * D, Lt, 3 * D, D,
			              t0 + DIT_HR_QKV_W, 0, t0 + DIT_HR_QKV_B, DIT_ACT_NONE, err));
			TRY(hy_attention(h, "refiner.attention", qkv, 0, Lt, Lt, h->valid,
			                 ps->ws[HY_O], D, err));
			TRY(hy_linear(h, NULL, "refiner.proj", ps->ws[HY_O], 0, yt, 0, D, Lt, D, D,
			              t0 + DIT_HR_PROJ_W, 0, t0 + DIT_HR_PROJ_B, DIT_ACT_NONE,
			              err));
		} else {
			TRY(hy_linear(h, NULL, "refiner.fc1", ht, 0, f, 0, 4 * D, Lt, 4 * D, D,
			              t0 + DIT_HR_FC1_W, 0, t0 + DIT_HR_FC1_B, DIT_ACT_SILU, err));
			TRY(hy_linear(h, NULL, "refiner.fc2", f, 0, yt, 0, D, Lt, D, 4 * D,
			              t0 + DIT_HR_FC2_W, 0, t0 + DIT_HR_FC2_B, DIT_ACT_NONE, err));
		}
		TRY(hy_gate(h, NULL, "refiner.residual", xt, 0, yt, Lt, t0 + DIT_HR_MOD_B, mod,
		            half, err));
	}
	return DIT_OK;
}

/* Per pass and step: vec, the refiner's c, the text stream through the refiner, and
 * the image tokens. */
static dit_status hy_embed(dit_graph *g, int p, starpu_data_handle_t latent, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	hy_ctx h = hy_ctx_for(g, p);
	hy_use_globals(&h);
	const dit_pass *ps = h.ps;
	starpu_data_handle_t vt[] = {g->ws[HY_TIN], ps->ws[HY_CLIP], g->ws[HY_GIN]};
	TRY(hy_sum_silu(&h, "vec", ps->ws[HY_SVEC], vt, 3, err));
	starpu_data_handle_t ct[] = {g->ws[HY_RT], ps->ws[HY_CEMB]};
	TRY(hy_sum_silu(&h, "refiner_c", ps->ws[HY_SC], ct, 2, err));
	TRY(hy_copy_rows(&h, NULL, "txt_in", ps->ws[HY_XT], 0, ps->ws[HY_TXT0], h.Lt, err));
	for (int r = 0; r < DIT_HUNYUAN_REFINER_BLOCKS; r++)
		TRY(hy_refiner_block(&h, r, err));
	(void)c;
	return dit_op_patch_embed(g, "img_in", h.w.off[DIT_HG_PATCH_W], h.w.off[DIT_HG_PATCH_B],
	                          latent, ps->x, ps->ws[HY_S_PATCH], err);
}

/* The final layer on the image rows, then unpatchify (channel outermost). */
static dit_status hy_head(dit_graph *g, int p, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	const dit_grid *gr = &g->grid;
	hy_ctx h = hy_ctx_for(g, p);
	hy_use_globals(&h);
	const dit_pass *ps = h.ps;
	int64_t D = h.D, CP = c->out_dim * c->patch[0] * c->patch[1] * c->patch[2];
	starpu_data_handle_t x = c->layers[1] > 0 ? ps->ws[HY_XJ] : ps->x;
	TRY(hy_linear(&h, NULL, "final.adaLN", ps->ws[HY_SVEC], 0, ps->ws[HY_MOD2], 0, 2 * D, 1,
	              2 * D, D, DIT_HG_FINAL_MOD_W, 0, -1, DIT_ACT_NONE, err));
	dit_chunks ch;
	dit_grid_chunks(gr, &ch);
	for (int i = 0; i < ch.n; i++) {
		int64_t r0 = ch.row0[i], m = ch.row0[i + 1] - r0;
		TRY(hy_adaln(&h, NULL, "final.norm", x, r0, ps->ws[HY_HI], m, DIT_HG_FINAL_MOD_B,
		             ps->ws[HY_MOD2], 0, err));
		TRY(hy_linear(&h, NULL, "final.linear", ps->ws[HY_HI], 0, ps->ws[HY_TOK], r0 * CP,
		              CP, m, CP, D, DIT_HG_FINAL_W, 0, DIT_HG_FINAL_B, DIT_ACT_NONE, err));
	}
	dit_unpatchify_args ua = {.fp = {{h.Li, CP, 0, 0}},
	                          .c = c->out_dim,
	                          .tf = gr->tf,
	                          .th = gr->th,
	                          .tw = gr->tw,
	                          .pt = c->patch[0],
	                          .ph = c->patch[1],
	                          .pw = c->patch[2],
	                          .c_outer = 1};
	starpu_data_handle_t hu[] = {ps->ws[HY_TOK], ps->out};
	enum starpu_data_access_mode mu[] = {STARPU_R, STARPU_W};
	return dit_graph_insert(g, &dit_cl_unpatchify, "unpatchify", &ua, sizeof ua, 0, 2, hu, mu,
	                        &on_cpu, err);
}

const dit_stage_kind dit_stages_hunyuan = {
    .name = "hunyuan",
    .workspace = hy_workspace,
    .text = hy_text,
    .time = hy_time,
    .embed = hy_embed,
    .head = hy_head,
    .token_chunks = 1,
};
