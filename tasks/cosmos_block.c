/* The Cosmos-Predict2.5 network (MinimalV1LVGDiT, cosmos_predict2/_src/predict2/networks/
 * minimal_v4_dit.py) as chains of generic op tasks: the block kind "cosmos" (Block) and
 * the stages "cosmos" around it (the text projection, the timestep embedding with its
 * AdaLN-LoRA term, the RoPE table, patchify, the final layer).
 *
 * Shapes: L tokens (t, h, w) of the patched grid, T latent frames (the rows of the time
 * tables: one per distinct frame timestep, mod_rows tokens a row), D = dim, F = ffn_dim,
 * H heads of hd, r = lora_dim, Lt context rows, Cx = crossattn_emb_channels. No biases
 * except the text projection's.
 *
 *   s    = sinusoid_D(t x timestep_scale)                     [T, D]  ([cos, sin])
 *   lora = linear_2(SiLU(linear_1(s)))                        [T, 3D] (all blocks)
 *   temb = RMSNorm(s) x t_embedding_norm                      [T, D]
 *   ctx  = GELU(crossattn_proj(crossattn_emb))                [Lt, Cx]
 *   per block and sub-layer k (self-attention, cross-attention, MLP):
 *     (shift, scale, gate) = adaln_k.2(adaln_k.1(SiLU(temb))) + lora
 *     h = LN(x) (1 + scale) + shift                           (eps 1e-6, no affine)
 *   x += gate o_proj(attn(rope(rms_h(q)), rope(rms_h(k)), v))  q, k, v = h W
 *   x += gate o_proj(attn(rms_h(h Wq), rms_h(ctx Wk), ctx Wv))
 *   x += gate layer2(GELU(layer1(h)))
 *   out = unpatchify(final(LN(x)(1 + scale) + shift)), (shift, scale) = final_adaln + lora[:2D]
 *
 * With token chunks (grid.chunk_rows) each sub-layer and the final layer run a chunk of
 * rows at a time through buffers of one chunk; self-attention's q/k/v stay whole.
 *
 * The modulation has no table term: the ops' table is a zero vector. RoPE pairs the
 * features (i, i + hd/2) of each head, one angle table shared by the heads. */
#include "dit_codelets.h"
#include "dit_cosmos.h"
#include "dit_graph.h"
#include "dit_ops.h"

#define NB(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The work buffers of a pass; ps->x is the token stream [L, D]. */
enum {
	CS_H = 0, /* [L, D] a sub-layer's modulated input */
	CS_QKV,   /* [L, 3D] self-attention q, k, v; the cross-attention's q in its first D
	             (token chunks: k, v alone, [L, 2D]) */
	CS_O,     /* [L, D] attention output */
	CS_Y,     /* [L, D] a sub-layer's output */
	CS_KV,    /* [Lt, 2D] cross-attention keys, values */
	CS_F,     /* [L, F] MLP hidden */
	CS_CTX,   /* [Lt, Cx] the projected text */
	CS_MOD,   /* [T, 3D] a sub-layer's (shift, scale, gate) */
	CS_MODH,  /* [T, r] its low-rank hidden */
	CS_FMOD,  /* [T, 2D] the final layer's (shift, scale) */
	CS_TOK,   /* [L, out pt ph pw] final layer output */
	CS_S_ATTN,
	CS_S_PATCH,
	CS_S_LIN,
	CS_Q, /* token chunks: [T, D] a chunk's q (self- and cross-attention) */
	CS_NPASS
};
/* Shared by the passes. */
enum {
	CT_SIN1 = 0, /* [D] one frame's sinusoid */
	CT_SIN,      /* [T, D] the frames' sinusoids */
	CT_TEMB,     /* [T, D] RMSNorm(s) x weight, then SiLU of it */
	CT_HID,      /* [T, D] t_embedder hidden */
	CT_LORA,     /* [T, 3D] AdaLN-LoRA term */
	CT_LORA2,    /* [T, 2D] its first 2D columns */
	CT_ZERO,     /* [3D] zeros: the modulation's table term */
	CT_ROPE,     /* [L, hd/2, 2] doubles, one angle table for the heads */
};

static const dit_task_opts on_cpu = {.where = STARPU_CPU};

typedef struct cs_ctx {
	dit_graph *g;
	const dit_pass *ps;
	const dit_hparams *c;
	dit_wview w; /* the slab the tasks read: a block's chunk or the globals */
	int64_t L, D, F, hd, H, Lt, nt, mrows;
} cs_ctx;

static cs_ctx cs_ctx_for(dit_graph *g, int p)
{
	const dit_hparams *c = &g->model->cfg;
	cs_ctx h = {.g = g, .ps = &g->pass[p], .c = c};
	h.L = g->grid.tokens;
	h.D = c->dim;
	h.F = c->ffn_dim;
	h.H = c->num_heads;
	h.hd = c->dim / c->num_heads;
	h.Lt = c->text_len;
	h.nt = g->mod_rows > 0 ? g->grid.tf : 1;
	h.mrows = g->mod_rows;
	return h;
}

static void cs_use_globals(cs_ctx *h)
{
	dit_graph_globals_view(h->g, &h->w);
}

static void cs_use_block(cs_ctx *h, int64_t b)
{
	dit_graph_block_view(h->g, 0, b, &h->w);
}

/* y [m, n] (rows ldy apart, from column y_off) = act(x [m, k] (from column x_off, rows
 * ldx apart) W^T + b), W tensor wt, b tensor bt (< 0: none). */
static dit_status cs_linear(const cs_ctx *h, const dit_task_opts *o, const char *name,
                            starpu_data_handle_t x, int64_t x_off, int64_t ldx,
                            starpu_data_handle_t y, int64_t y_off, int64_t ldy, int64_t m,
                            int64_t n, int64_t k, int wt, int bt, dit_act act, dit_error *err)
{
	dit_linear_args a = dit_linear_make(m, n, k, ldx, x_off, ldy, y_off, &h->w, wt,
	                                    bt >= 0 ? h->w.off[bt] : -1, act);
	return dit_op_linear_w(h->g, o, name, &a, &h->w, wt, 0, x, y, h->ps->ws[CS_S_LIN], err);
}

/* y [m, D] = LN(x) (1 + scale) + shift for rows r0 .. r0 + m of x, shift and scale
 * columns 0 and D of the per-frame table mod (ld floats a row). */
static dit_status cs_adaln(const cs_ctx *h, const dit_task_opts *o, const char *name,
                           starpu_data_handle_t x, starpu_data_handle_t mod, int64_t ld, int64_t r0,
                           int64_t m, dit_error *err)
{
	int64_t D = h->D;
	dit_layernorm_args a = {.fp = {{m, D, 1, 0}},
	                        .rows = m,
	                        .dim = D,
	                        .eps = (float)h->c->eps,
	                        .mod = 1,
	                        .shift_off = 0,
	                        .scale_off = D,
	                        .vshift_off = 0,
	                        .vscale_off = D,
	                        .mod_ld = h->nt > 1 ? ld : 0,
	                        .mod_rows = h->nt > 1 ? h->mrows : 0,
	                        .row0 = r0,
	                        .x_off = r0 * D};
	return dit_op_layernorm(h->g, o, name, &a, x, h->ps->ws[CS_H], h->g->ws[CT_ZERO], mod, err);
}

/* x [r0 .. r0 + m) += y [m, D] * gate, gate column 2D of the sub-layer's table. */
static dit_status cs_gate(const cs_ctx *h, const dit_task_opts *o, const char *name, int64_t r0,
                          int64_t m, dit_error *err)
{
	int64_t D = h->D;
	dit_residual_args a = {.fp = {{m, D, 1, 0}},
	                       .rows = m,
	                       .dim = D,
	                       .gate_off = 2 * D,
	                       .vgate_off = 2 * D,
	                       .mod_ld = h->nt > 1 ? 3 * D : 0,
	                       .mod_rows = h->nt > 1 ? h->mrows : 0,
	                       .row0 = r0,
	                       .x_off = r0 * D};
	return dit_op_residual(h->g, o, name, &a, h->ps->x, h->ps->ws[CS_Y], h->g->ws[CT_ZERO],
	                       h->ps->ws[CS_MOD], err);
}

/* Per-head RMSNorm (weight wt [hd]) of the D columns from col of m rows of t [., ld]
 * from row t_row, the sequence's rows r0 .. r0 + m, then RoPE when rope. */
static dit_status cs_qk(const cs_ctx *h, const char *name, starpu_data_handle_t t, int64_t ld,
                        int64_t col, int64_t t_row, int64_t r0, int64_t m, int wt, int rope,
                        dit_error *err)
{
	dit_qknorm_args a = {.fp = {{m, h->D, rope, h->hd}},
	                     .rows = m,
	                     .dim = h->D,
	                     .ld = ld,
	                     .t_off = t_row * ld + col,
	                     .w_off = h->w.off[wt],
	                     .heads = h->H,
	                     .head_dim = h->hd,
	                     .eps = (float)h->c->eps,
	                     .rope = rope,
	                     .group = h->hd,
	                     .rope_off = r0 * h->hd,
	                     .rope_split = 1,
	                     .rope_shared = 1};
	return dit_op_rmsnorm(h->g, NULL, name, &a, t, h->w.slab, h->g->ws[CT_ROPE], err);
}

/* A sub-layer's modulation: adaln.2(adaln.1(SiLU(temb))) + lora into CS_MOD [T, 3D]. */
static dit_status cs_mod(const cs_ctx *h, const dit_task_opts *first, int k, dit_error *err)
{
	int64_t D = h->D, r = h->c->lora_dim, nt = h->nt;
	const dit_pass *ps = h->ps;
	int w1 = DIT_CB_MOD + 2 * k;
	TRY(cs_linear(h, first, "adaln_modulation.1", h->g->ws[CT_TEMB], 0, D, ps->ws[CS_MODH], 0,
	              r, nt, r, D, w1, -1, DIT_ACT_NONE, err));
	TRY(cs_linear(h, NULL, "adaln_modulation.2", ps->ws[CS_MODH], 0, r, ps->ws[CS_MOD], 0,
	              3 * D, nt, 3 * D, r, w1 + 1, -1, DIT_ACT_NONE, err));
	dit_residual_args a = {
	    .fp = {{nt, 3 * D, 0, 0}}, .rows = nt, .dim = 3 * D, .gate_off = -1, .vgate_off = 0};
	return dit_op_residual(h->g, NULL, "adaln_lora", &a, ps->ws[CS_MOD], h->g->ws[CT_LORA],
	                       h->w.slab, NULL, err);
}

/* Where the attentions' q and self-attention's k/v live: whole blocks keep q/k/v in
 * qkv [L, 3D] (the cross-attention's q in its first D columns); in token chunks only
 * k/v are whole, kv [L, 2D] in CS_QKV, and a chunk's q is made in CS_Q [T, D] just
 * before its attention, so q is never whole. */
typedef struct cs_qkv {
	int chunked;
	starpu_data_handle_t q, kv;
	int64_t ldq, ldkv, kcol; /* q's and kv's row strides, k's first column in kv */
} cs_qkv;

static cs_qkv cs_qkv_of(const cs_ctx *h)
{
	const dit_pass *ps = h->ps;
	int64_t D = h->D;
	if (dit_grid_chunk(&h->g->grid) > 0)
		return (cs_qkv){1, ps->ws[CS_Q], ps->ws[CS_QKV], D, 2 * D, 0};
	return (cs_qkv){0, ps->ws[CS_QKV], ps->ws[CS_QKV], 3 * D, 3 * D, D};
}

/* q [m, D] of rows r0 .. r0 + m of the modulated input in CS_H (projection wt, norm
 * nt, RoPE when rope): qkv's rows r0 .., or CS_Q's first rows in token chunks. */
static dit_status cs_q(const cs_ctx *h, const cs_qkv *s, const char *proj, const char *norm,
                       int64_t r0, int64_t m, int wt, int nt, int rope, dit_error *err)
{
	int64_t D = h->D, row = s->chunked ? 0 : r0;
	TRY(cs_linear(h, NULL, proj, h->ps->ws[CS_H], 0, D, s->q, row * s->ldq, s->ldq, m, D, D, wt,
	              -1, DIT_ACT_NONE, err));
	return cs_qk(h, norm, s->q, s->ldq, 0, row, r0, m, nt, rope, err);
}

/* Self-attention, chunk by chunk: every chunk's k/v rows (and, whole, its q) into the
 * whole qkv (they read x), then each chunk's q (in token chunks), its queries against
 * all keys, projection and residual. */
static dit_status cs_self_attention(const cs_ctx *h, const dit_chunks *ch,
                                    const dit_task_opts *first, dit_error *err)
{
	const dit_pass *ps = h->ps;
	int64_t L = h->L, D = h->D;
	cs_qkv s = cs_qkv_of(h);
	starpu_data_handle_t hh = ps->ws[CS_H];
	TRY(cs_mod(h, first, 0, err));
	for (int i = 0; i < ch->n; i++) {
		int64_t r0 = ch->row0[i], m = ch->row0[i + 1] - r0, k = r0 * s.ldkv + s.kcol;
		TRY(cs_adaln(h, NULL, "norm1", ps->x, ps->ws[CS_MOD], 3 * D, r0, m, err));
		if (!s.chunked)
			TRY(cs_linear(h, NULL, "self_attn.q_proj", hh, 0, D, s.q, r0 * s.ldq, s.ldq,
			              m, D, D, DIT_CB_SQ, -1, DIT_ACT_NONE, err));
		TRY(cs_linear(h, NULL, "self_attn.k_proj", hh, 0, D, s.kv, k, s.ldkv, m, D, D,
		              DIT_CB_SK, -1, DIT_ACT_NONE, err));
		TRY(cs_linear(h, NULL, "self_attn.v_proj", hh, 0, D, s.kv, k + D, s.ldkv, m, D, D,
		              DIT_CB_SV, -1, DIT_ACT_NONE, err));
		if (!s.chunked)
			TRY(cs_qk(h, "self_attn.q_norm", s.q, s.ldq, 0, r0, r0, m, DIT_CB_SNQ, 1,
			          err));
		TRY(cs_qk(h, "self_attn.k_norm", s.kv, s.ldkv, s.kcol, r0, r0, m, DIT_CB_SNK, 1,
		          err));
	}
	for (int i = 0; i < ch->n; i++) {
		int64_t r0 = ch->row0[i], m = ch->row0[i + 1] - r0;
		dit_attention_args sa = s.chunked ? dit_attention_split(m, L, h->H, h->hd)
		                                  : dit_attention_fused(r0, m, L, h->H, h->hd);
		if (s.chunked) {
			TRY(cs_adaln(h, NULL, "norm1", ps->x, ps->ws[CS_MOD], 3 * D, r0, m, err));
			TRY(cs_q(h, &s, "self_attn.q_proj", "self_attn.q_norm", r0, m, DIT_CB_SQ,
			         DIT_CB_SNQ, 1, err));
		}
		TRY(dit_op_attention(h->g, NULL, "self_attn", &sa, s.q, s.chunked ? s.kv : NULL,
		                     ps->ws[CS_O], ps->ws[CS_S_ATTN], err));
		TRY(cs_linear(h, NULL, "self_attn.output_proj", ps->ws[CS_O], 0, D, ps->ws[CS_Y], 0,
		              D, m, D, D, DIT_CB_SO, -1, DIT_ACT_NONE, err));
		TRY(cs_gate(h, NULL, "self_attn.residual", r0, m, err));
	}
	return DIT_OK;
}

/* Cross-attention to the projected text (its k/v once a block), chunk by chunk; a
 * chunk's q goes to the first D columns of its rows of qkv (token chunks: CS_Q). */
static dit_status cs_cross_attention(const cs_ctx *h, const dit_chunks *ch, dit_error *err)
{
	const dit_pass *ps = h->ps;
	int64_t D = h->D, Lt = h->Lt, Cx = h->c->cross_dim;
	cs_qkv s = cs_qkv_of(h);
	starpu_data_handle_t kv = ps->ws[CS_KV];
	TRY(cs_mod(h, NULL, 1, err));
	TRY(cs_linear(h, NULL, "cross_attn.k_proj", ps->ws[CS_CTX], 0, Cx, kv, 0, 2 * D, Lt, D, Cx,
	              DIT_CB_CK, -1, DIT_ACT_NONE, err));
	TRY(cs_linear(h, NULL, "cross_attn.v_proj", ps->ws[CS_CTX], 0, Cx, kv, D, 2 * D, Lt, D, Cx,
	              DIT_CB_CV, -1, DIT_ACT_NONE, err));
	TRY(cs_qk(h, "cross_attn.k_norm", kv, 2 * D, 0, 0, 0, Lt, DIT_CB_CNK, 0, err));
	for (int i = 0; i < ch->n; i++) {
		int64_t r0 = ch->row0[i], m = ch->row0[i + 1] - r0;
		TRY(cs_adaln(h, NULL, "norm2", ps->x, ps->ws[CS_MOD], 3 * D, r0, m, err));
		TRY(cs_q(h, &s, "cross_attn.q_proj", "cross_attn.q_norm", r0, m, DIT_CB_CQ,
		         DIT_CB_CNQ, 0, err));
		dit_attention_args ca = dit_attention_at(
		    m, Lt, h->H, h->hd, (s.chunked ? 0 : r0) * s.ldq, s.ldq, 0, D, 2 * D);
		ca.cross = 1;
		ca.lk_valid = ps->text_valid;
		TRY(dit_op_attention(h->g, NULL, "cross_attn", &ca, s.q, kv, ps->ws[CS_O],
		                     ps->ws[CS_S_ATTN], err));
		TRY(cs_linear(h, NULL, "cross_attn.output_proj", ps->ws[CS_O], 0, D, ps->ws[CS_Y],
		              0, D, m, D, D, DIT_CB_CO, -1, DIT_ACT_NONE, err));
		TRY(cs_gate(h, NULL, "cross_attn.residual", r0, m, err));
	}
	return DIT_OK;
}

/* The MLP, chunk by chunk through the hidden [m, F]; last on the last residual. */
static dit_status cs_mlp(const cs_ctx *h, const dit_chunks *ch, const dit_task_opts *last,
                         dit_error *err)
{
	const dit_pass *ps = h->ps;
	int64_t D = h->D, F = h->F;
	TRY(cs_mod(h, NULL, 2, err));
	for (int i = 0; i < ch->n; i++) {
		int64_t r0 = ch->row0[i], m = ch->row0[i + 1] - r0;
		TRY(cs_adaln(h, NULL, "norm3", ps->x, ps->ws[CS_MOD], 3 * D, r0, m, err));
		TRY(cs_linear(h, NULL, "mlp.layer1", ps->ws[CS_H], 0, D, ps->ws[CS_F], 0, F, m, F,
		              D, DIT_CB_FC1, -1, DIT_ACT_GELU, err));
		TRY(cs_linear(h, NULL, "mlp.layer2", ps->ws[CS_F], 0, F, ps->ws[CS_Y], 0, D, m, D,
		              F, DIT_CB_FC2, -1, DIT_ACT_NONE, err));
		TRY(cs_gate(h, i == ch->n - 1 ? last : NULL, "mlp.residual", r0, m, err));
	}
	return DIT_OK;
}

/* One block; with token chunks (grid.chunk_rows) every per-token buffer but the
 * self-attention's k/v holds one chunk. */
static dit_status cs_block_submit(dit_graph *g, int i, int p, int64_t b, const dit_task_opts *first,
                                  const dit_task_opts *last, dit_error *err)
{
	(void)i;
	cs_ctx h = cs_ctx_for(g, p);
	cs_use_block(&h, b);
	dit_chunks ch;
	dit_grid_chunks(&g->grid, &ch);
	TRY(cs_self_attention(&h, &ch, first, err));
	TRY(cs_cross_attention(&h, &ch, err));
	return cs_mlp(&h, &ch, last, err);
}

const dit_block_kind dit_block_cosmos = {"cosmos", cs_block_submit, -1};

/* ------------------------------------------------------------------ stages */

static void cs_workspace(const dit_hparams *c, const dit_grid *grid, int64_t time_rows,
                         dit_ws_spec *ws)
{
	int64_t L = grid->tokens, D = c->dim, F = c->ffn_dim, Lt = c->text_len;
	int64_t Cx = c->cross_dim, r = c->lora_dim, nt = time_rows;
	int64_t P = c->patch[0] * c->patch[1] * c->patch[2], hd = D / c->num_heads;
	/* the inner sizes of the GEMMs with bf16 weights, the blocks' (the text projection
	 * reads the fp32 globals, without scratch) */
	int64_t kmax = F > c->cross_dim ? F : c->cross_dim;
	/* token chunks: h, o, y and the MLP hidden hold the longest chunk, zeroed first (a
	 * shorter chunk writes part of them) */
	int64_t T = dit_grid_chunk(grid), part = T > 0;
	if (!part)
		T = L;
	size_t f = sizeof(float), a = dit_grid_act_size(grid); /* a block's activations */
	ws->pass[CS_H] = (dit_ws_buf){T * D, a, "h", 0, part, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_QKV] = part ? (dit_ws_buf){L * 2 * D, a, "self_kv", 0, 1, DIT_LIVE_BLOCK, 0}
	                        : (dit_ws_buf){L * 3 * D, a, "qkv", 0, 1, DIT_LIVE_BLOCK, 0};
	if (part)
		ws->pass[CS_Q] = (dit_ws_buf){T * D, a, "q", 0, part, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_O] = (dit_ws_buf){T * D, a, "o", 0, part, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_Y] = (dit_ws_buf){T * D, a, "y", 0, part, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_KV] = (dit_ws_buf){Lt * 2 * D, a, "kv", 0, 1, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_F] = (dit_ws_buf){T * F, a, "mlp", 0, part, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_CTX] = (dit_ws_buf){Lt * Cx, f, "context", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->pass[CS_MOD] = (dit_ws_buf){nt * 3 * D, f, "mod", 0, 1, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_MODH] = (dit_ws_buf){nt * r, f, "mod_lora", 0, 1, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_FMOD] = (dit_ws_buf){nt * 2 * D, f, "final_mod", 0, 1, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_TOK] = (dit_ws_buf){L * c->out_dim * P, f, "final", 0, part, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_S_ATTN] = (dit_ws_buf){
	    (int64_t)dit_cpu_attention_scratch(hd), f, "scratch_attn", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_S_PATCH] =
	    (dit_ws_buf){L * c->in_dim * P, f, "scratch_patch", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[CS_S_LIN] = (dit_ws_buf){
	    dit_linear_scratch(L > Lt ? L : Lt, kmax), f, "scratch_lin", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->shared[CT_SIN1] = (dit_ws_buf){D, f, "sinusoid", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[CT_SIN] = (dit_ws_buf){nt * D, f, "sinusoids", 0, 1, DIT_LIVE_FORWARD, 0};
	ws->shared[CT_TEMB] = (dit_ws_buf){nt * D, f, "t_emb", 0, 1, DIT_LIVE_FORWARD, 0};
	ws->shared[CT_HID] = (dit_ws_buf){nt * D, f, "t_hidden", 0, 1, DIT_LIVE_FORWARD, 0};
	ws->shared[CT_LORA] = (dit_ws_buf){nt * 3 * D, f, "adaln_lora", 0, 1, DIT_LIVE_FORWARD, 0};
	ws->shared[CT_LORA2] =
	    (dit_ws_buf){nt * 2 * D, f, "adaln_lora_2d", 0, 1, DIT_LIVE_FORWARD, 0};
	ws->shared[CT_ZERO] = (dit_ws_buf){3 * D, f, "zero", 0, 1, DIT_LIVE_FORWARD, 0};
	ws->shared[CT_ROPE] =
	    (dit_ws_buf){L * hd, sizeof(double), "rope", 0, 0, DIT_LIVE_FORWARD, 0};
}

/* Once per run: the RoPE table (shared), each pass's projected text. */
static dit_status cs_text(dit_graph *g, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	const dit_grid *gr = &g->grid;
	if (gr->tf > c->max_size[0] || gr->th > c->max_size[1] || gr->tw > c->max_size[2])
		return dit_error_set(err, DIT_EINVAL,
		                     "%s: a patched grid of %lld x %lld x %lld exceeds the model's "
		                     "%lld x %lld x %lld (max_frames, max_img_h, max_img_w)",
		                     g->w.desc->name, (long long)gr->tf, (long long)gr->th,
		                     (long long)gr->tw, (long long)c->max_size[0],
		                     (long long)c->max_size[1], (long long)c->max_size[2]);
	dit_rope_cosmos_args ra = {.fp = {{gr->tokens, c->dim / c->num_heads, 0, 0}},
	                           .t = gr->tf,
	                           .h = gr->th,
	                           .w = gr->tw,
	                           .head_dim = c->dim / c->num_heads,
	                           .heads = 1, /* the same angles for every head */
	                           .ratio = {c->rope_ratio[0], c->rope_ratio[1], c->rope_ratio[2]}};
	starpu_data_handle_t hr[] = {g->ws[CT_ROPE]};
	enum starpu_data_access_mode mr[] = {STARPU_W};
	TRY(dit_graph_insert(g, &dit_cl_rope_cosmos, "rope", &ra, sizeof ra, 0, 1, hr, mr, &on_cpu,
	                     err));
	for (int p = 0; p < g->npasses; p++) {
		g->cur_pass = p;
		cs_ctx h = cs_ctx_for(g, p);
		cs_use_globals(&h);
		TRY(cs_linear(&h, NULL, "crossattn_proj", h.ps->context, 0, c->text_dim,
		              h.ps->ws[CS_CTX], 0, c->cross_dim, h.Lt, c->cross_dim, c->text_dim,
		              DIT_CG_XPROJ_W, DIT_CG_XPROJ_B, DIT_ACT_GELU, err));
	}
	g->cur_pass = -1;
	return DIT_OK;
}

/* Each step: the frames' sinusoids, the AdaLN-LoRA term and SiLU(RMSNorm(s)). t holds the
 * nt distinct frame timesteps (0..1000). */
static dit_status cs_time(dit_graph *g, const double *t, int64_t nt, int64_t mod_rows,
                          dit_error *err)
{
	(void)mod_rows;
	const dit_hparams *c = &g->model->cfg;
	cs_ctx h = cs_ctx_for(g, 0);
	cs_use_globals(&h);
	starpu_data_handle_t *ws = g->ws;
	int64_t D = c->dim;
	for (int64_t i = 0; i < nt; i++) {
		dit_sinusoid_args a = {.fp = {{D, 0, 0, 0}}, .dim = D, .t = t[i] * c->ts_mult};
		starpu_data_handle_t h1[] = {ws[CT_SIN1]};
		enum starpu_data_access_mode m1[] = {STARPU_W};
		TRY(dit_graph_insert(g, &dit_cl_sinusoid, "sinusoid", &a, sizeof a, 0, 1, h1, m1,
		                     &on_cpu, err));
		dit_copy2d_args ca = {.fp = {{1, D, 0, 0}},
		                      .count = 1,
		                      .len = D,
		                      .src_ld = D,
		                      .dst_off = i * D,
		                      .dst_ld = D};
		TRY(dit_op_copy2d(g, NULL, "sinusoids", &ca, ws[CT_SIN], ws[CT_SIN1], err));
	}
	TRY(cs_linear(&h, NULL, "t_embedder.linear_1", ws[CT_SIN], 0, D, ws[CT_HID], 0, D, nt, D, D,
	              DIT_CG_T1, -1, DIT_ACT_SILU, err));
	TRY(cs_linear(&h, NULL, "t_embedder.linear_2", ws[CT_HID], 0, D, ws[CT_LORA], 0, 3 * D, nt,
	              3 * D, D, DIT_CG_T2, -1, DIT_ACT_NONE, err));
	dit_copy2d_args lc = {
	    .fp = {{nt, 2 * D, 0, 0}}, .count = nt, .len = 2 * D, .src_ld = 3 * D, .dst_ld = 2 * D};
	TRY(dit_op_copy2d(g, NULL, "adaln_lora_2d", &lc, ws[CT_LORA2], ws[CT_LORA], err));
	dit_copy2d_args tc = {.fp = {{1, nt * D, 0, 0}},
	                      .count = 1,
	                      .len = nt * D,
	                      .src_ld = nt * D,
	                      .dst_ld = nt * D};
	TRY(dit_op_copy2d(g, NULL, "t_emb", &tc, ws[CT_TEMB], ws[CT_SIN], err));
	dit_qknorm_args na = {.fp = {{nt, D, 0, 0}},
	                      .rows = nt,
	                      .dim = D,
	                      .ld = D,
	                      .w_off = h.w.off[DIT_CG_TNORM],
	                      .heads = 1,
	                      .head_dim = D,
	                      .eps = (float)c->eps};
	TRY(dit_op_rmsnorm(g, NULL, "t_embedding_norm", &na, ws[CT_TEMB], h.w.slab, NULL, err));
	dit_act_args sa = {.fp = {{nt * D, DIT_ACT_SILU, 0, 0}}, .n = nt * D, .act = DIT_ACT_SILU};
	starpu_data_handle_t hs[] = {ws[CT_TEMB]};
	enum starpu_data_access_mode ms[] = {STARPU_RW};
	return dit_graph_insert(g, &dit_cl_act, "silu", &sa, sizeof sa, 0, 1, hs, ms, &on_cpu, err);
}

static dit_status cs_embed(dit_graph *g, int p, starpu_data_handle_t latent, dit_error *err)
{
	dit_wview gv;
	dit_graph_globals_view(g, &gv);
	const int64_t *off = gv.off;
	const dit_pass *ps = &g->pass[p];
	return dit_op_patch_embed(g, "x_embedder", off[DIT_CG_PATCH], -1, latent, ps->x,
	                          ps->ws[CS_S_PATCH], err);
}

/* The final layer and unpatchify (features (ph, pw, pt, C), C innermost). */
static dit_status cs_head(dit_graph *g, int p, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	const dit_grid *gr = &g->grid;
	cs_ctx h = cs_ctx_for(g, p);
	cs_use_globals(&h);
	const dit_pass *ps = h.ps;
	int64_t D = h.D, r = c->lora_dim, nt = h.nt, P = c->patch[0] * c->patch[1] * c->patch[2];
	int64_t CP = c->out_dim * P;
	TRY(cs_linear(&h, NULL, "final_layer.adaln_modulation.1", g->ws[CT_TEMB], 0, D,
	              ps->ws[CS_MODH], 0, r, nt, r, D, DIT_CG_FMOD1, -1, DIT_ACT_NONE, err));
	TRY(cs_linear(&h, NULL, "final_layer.adaln_modulation.2", ps->ws[CS_MODH], 0, r,
	              ps->ws[CS_FMOD], 0, 2 * D, nt, 2 * D, r, DIT_CG_FMOD2, -1, DIT_ACT_NONE,
	              err));
	dit_residual_args ra = {
	    .fp = {{nt, 2 * D, 0, 0}}, .rows = nt, .dim = 2 * D, .gate_off = -1, .vgate_off = 0};
	TRY(dit_op_residual(g, NULL, "final_layer.lora", &ra, ps->ws[CS_FMOD], g->ws[CT_LORA2],
	                    h.w.slab, NULL, err));
	dit_chunks ch;
	dit_grid_chunks(gr, &ch);
	for (int i = 0; i < ch.n; i++) {
		int64_t r0 = ch.row0[i], m = ch.row0[i + 1] - r0;
		TRY(cs_adaln(&h, NULL, "final_layer.norm", ps->x, ps->ws[CS_FMOD], 2 * D, r0, m,
		             err));
		TRY(cs_linear(&h, NULL, "final_layer.linear", ps->ws[CS_H], 0, D, ps->ws[CS_TOK],
		              r0 * CP, CP, m, CP, D, DIT_CG_FINAL, -1, DIT_ACT_NONE, err));
	}
	dit_unpatchify_args ua = {.fp = {{h.L, CP, 0, 0}},
	                          .c = c->out_dim,
	                          .tf = gr->tf,
	                          .th = gr->th,
	                          .tw = gr->tw,
	                          .pt = c->patch[0],
	                          .ph = c->patch[1],
	                          .pw = c->patch[2],
	                          .c_outer = 0};
	starpu_data_handle_t hu[] = {ps->ws[CS_TOK], ps->out};
	enum starpu_data_access_mode mu[] = {STARPU_R, STARPU_W};
	return dit_graph_insert(g, &dit_cl_unpatchify, "unpatchify", &ua, sizeof ua, 0, 2, hu, mu,
	                        &on_cpu, err);
}

const dit_stage_kind dit_stages_cosmos = {
    .name = "cosmos",
    .workspace = cs_workspace,
    .text = cs_text,
    .time = cs_time,
    .embed = cs_embed,
    .head = cs_head,
    .token_chunks = 1,
};
