/* The LTX-2 block (ltx_core BasicAVTransformerBlock) as a chain of generic op tasks:
 * the block kind "ltx_av" (its stages, in tasks/ltx_stages.c, share its buffers and
 * helpers through tasks/ltx_priv.h).
 *
 * Shapes: Lv video tokens (pass x [Lv, D]), La audio tokens (LX_AX [La, Da]), Lt =
 * text_len context rows, H heads on both streams (hd = D/H, ha = Da/H), F = 4D, Fa =
 * 4Da. rms(x) is RMSNorm without weight; "mod(k)" reads row k of a block table plus
 * row k of this step's AdaLN output for the token (per-token tables: mod_rows tokens a
 * row). Per stream s in (video, audio), with the other stream o:
 *
 *   x_s += attn1(rms(x_s) mod(0, 1), rope_s) * mod(2)          self-attention
 *   x_s += attn2(rms(x_s) [mod(6, 7)], ctx_s [mod prompt]) [* mod(8)]   text (2.3+: AdaLN)
 *   x_v += a2v(rms(x_v) avmod_v(0, 1), rms(x_a) avmod_a(0, 1)) * gate_a2v(sigma_a)
 *   x_a += v2a(rms(x_a) avmod_a(2, 3), rms(x_v) avmod_v(2, 3)) * gate_v2a(sigma_v)
 *   x_s += ff(rms(x_s) mod(3, 4)) * mod(5)
 *
 * where both cross-attentions read the streams as they were before either (the four
 * normed inputs are made first). Attention: q, k RMSNorm over the whole inner width
 * (weights), then "split" RoPE (feature pairs (i, i + hd/2) per head, per-head angles
 * over fractional positions); 2.3+ multiply each head's output by 2 sigmoid(gate
 * logits of the query input) before to_out. A run without audio is the video stream
 * alone, as the official forward with audio None. */
#include "ltx_priv.h"

lx_ctx dit_ltx_ctx_for(dit_graph *g, int p)
{
	const dit_hparams *c = &g->model->cfg;
	const dit_pass *ps = &g->pass[p];
	lx_ctx h = {.g = g, .ps = ps, .c = c};
	h.H = c->num_heads;
	h.Lt = c->text_len;
	h.valid[0] = ps->text_valid;
	h.valid[1] = ps->aux_text_valid;
	h.audio = g->grid.aux_t > 0;
	lx_stream *v = &h.s[0], *a = &h.s[1];
	*v = (lx_stream){.a = 0,
	                 .L = g->grid.tokens,
	                 .D = c->dim,
	                 .F = c->ffn_dim,
	                 .hd = c->head_dim,
	                 .ntok_rows = g->mod_rows,
	                 .T = dit_grid_chunk(&g->grid),
	                 .x = ps->x,
	                 .h = ps->ws[LX_HV],
	                 .h2 = ps->ws[LX_HV2],
	                 .qkv = ps->ws[LX_QKV],
	                 .q = ps->ws[LX_VQ],
	                 .o = ps->ws[LX_O],
	                 .y = ps->ws[LX_Y],
	                 .kv = ps->ws[LX_KV],
	                 .gl = ps->ws[LX_GL],
	                 .f = ps->ws[LX_F],
	                 .ctx = ps->ws[LX_CTXV],
	                 .mctx = ps->ws[LX_MCTX],
	                 .e0 = g->ws[LS_E0V],
	                 .av = g->ws[LS_AVV],
	                 .gate = g->ws[LS_GV],
	                 .prompt = g->ws[LS_PV],
	                 .rope = g->ws[LS_ROPE_V],
	                 .rope_x = g->ws[LS_ROPE_VX],
	                 .self = DIT_LX_V_SELF,
	                 .text = DIT_LX_V_TEXT,
	                 .ff1w = DIT_LB_FF1_W,
	                 .ff1b = DIT_LB_FF1_B,
	                 .ff2w = DIT_LB_FF2_W,
	                 .ff2b = DIT_LB_FF2_B,
	                 .sst = DIT_LB_SST,
	                 .avsst = DIT_LB_AV_VSST,
	                 .psst = DIT_LB_PSST};
	*a = (lx_stream){.a = 1,
	                 .L = g->grid.aux_t,
	                 .D = c->aux_dim,
	                 .F = c->aux_ffn_dim,
	                 .hd = c->aux_head_dim,
	                 .ntok_rows = ((const dit_ltx_state *)g->fam)->aux_mod_rows,
	                 .x = ps->ws[LX_AX],
	                 .h = ps->ws[LX_HA],
	                 .h2 = ps->ws[LX_HA2],
	                 .qkv = ps->ws[LX_AQKV],
	                 .o = ps->ws[LX_AO],
	                 .y = ps->ws[LX_AY],
	                 .kv = ps->ws[LX_AKV],
	                 .gl = ps->ws[LX_AGL],
	                 .f = ps->ws[LX_AF],
	                 .ctx = ps->ws[LX_CTXA],
	                 .mctx = ps->ws[LX_AMCTX],
	                 .e0 = g->ws[LS_E0A],
	                 .av = g->ws[LS_AVA],
	                 .gate = g->ws[LS_GA],
	                 .prompt = g->ws[LS_PA],
	                 .rope = g->ws[LS_ROPE_A],
	                 .rope_x = g->ws[LS_ROPE_AX],
	                 .self = DIT_LX_A_SELF,
	                 .text = DIT_LX_A_TEXT,
	                 .ff1w = DIT_LB_AFF1_W,
	                 .ff1b = DIT_LB_AFF1_B,
	                 .ff2w = DIT_LB_AFF2_W,
	                 .ff2b = DIT_LB_AFF2_B,
	                 .sst = DIT_LB_ASST,
	                 .avsst = DIT_LB_AV_ASST,
	                 .psst = DIT_LB_APSST};
	return h;
}

void dit_ltx_use_globals(lx_ctx *h)
{
	dit_graph_globals_view(h->g, &h->w);
}

static void lx_use_block(lx_ctx *h, int64_t b)
{
	dit_graph_block_view(h->g, 0, b, &h->w);
}

/* y [m, n] (rows ldy apart, from column y_off) = act(x [m, k] (rows ldx apart, from
 * x_off) W^T + b), W tensor wt, b tensor bt (< 0: none). */
dit_status dit_ltx_linear(const lx_ctx *h, const dit_task_opts *o, const char *name,
                          starpu_data_handle_t x, int64_t x_off, int64_t ldx,
                          starpu_data_handle_t y, int64_t y_off, int64_t ldy, int64_t m, int64_t n,
                          int64_t k, int wt, int bt, dit_act act, dit_error *err)
{
	dit_linear_args a = dit_linear_make(m, n, k, ldx, x_off, ldy, y_off, &h->w, wt,
	                                    bt >= 0 ? h->w.off[bt] : -1, act);
	return dit_op_linear_w(h->g, o, name, &a, &h->w, wt, 0, x, y, h->ps->ws[LX_S_LIN], err);
}

/* y [m, D] = rms(x rows r0 .. r0 + m) (* (1 + scale) + shift with shift = slab row r_sh
 * of table tab + row r_sh of the step's table vec (mod_ld floats a token row), scale
 * likewise; tab < 0: no modulation). */
static dit_status lx_norm(const lx_ctx *h, const dit_task_opts *o, const char *name,
                          const lx_stream *s, starpu_data_handle_t y, int tab,
                          starpu_data_handle_t vec, int64_t mod_ld, int r_sh, int r_sc, int64_t r0,
                          int64_t m, dit_error *err)
{
	int64_t D = s->D;
	dit_layernorm_args a = {.fp = {{m, D, 2, tab >= 0}},
	                        .rows = m,
	                        .dim = D,
	                        .eps = (float)h->c->eps,
	                        .rms = 1,
	                        .row0 = r0,
	                        .x_off = r0 * D};
	if (tab >= 0) {
		a.mod = 1;
		a.shift_off = h->w.off[tab] + r_sh * D;
		a.scale_off = h->w.off[tab] + r_sc * D;
		a.vshift_off = r_sh * D;
		a.vscale_off = r_sc * D;
		a.mod_ld = mod_ld;
		a.mod_rows = s->ntok_rows;
	}
	return dit_op_layernorm(h->g, o, name, &a, s->x, y, h->w.slab, tab >= 0 ? vec : NULL, err);
}

/* x rows r0 .. r0 + m += y [m, D] * gate, gate = slab row r of table tab + row r of
 * vec (mod_ld floats a token row; 0: vec is one vector [D], its row 0); tab < 0:
 * x += y. */
static dit_status lx_add(const lx_ctx *h, const dit_task_opts *o, const char *name,
                         const lx_stream *s, int tab, starpu_data_handle_t vec, int64_t mod_ld,
                         int r, int64_t r0, int64_t m, dit_error *err)
{
	int64_t vr = mod_ld ? r : 0;
	int64_t D = s->D;
	dit_residual_args a = {
	    .fp = {{m, D, tab >= 0, 0}}, .rows = m, .dim = D, .row0 = r0, .x_off = r0 * D};
	if (tab >= 0) {
		a.gate_off = h->w.off[tab] + r * D;
		a.vgate_off = vr * D;
		a.mod_ld = mod_ld;
		a.mod_rows = mod_ld ? s->ntok_rows : 0;
	} else {
		a.gate_off = -1;
	}
	return dit_op_residual(h->g, o, name, &a, s->x, s->y, h->w.slab, tab >= 0 ? vec : NULL,
	                       err);
}

/* RMSNorm (weight tensor wt, over the whole inner width n) of rows [0, rows) of t from
 * float t_off (ld floats a row), then split RoPE from table rope (NULL: none) with
 * heads of hd, t's first row at the table's row rope_row. */
static dit_status lx_qk(const lx_ctx *h, const char *name, starpu_data_handle_t t, int64_t ld,
                        int64_t t_off, int64_t rows, int64_t n, int64_t hd, int wt,
                        starpu_data_handle_t rope, int64_t rope_row, dit_error *err)
{
	dit_qknorm_args a = {.fp = {{rows, n, rope != NULL, hd}},
	                     .rows = rows,
	                     .dim = n,
	                     .ld = ld,
	                     .t_off = t_off,
	                     .w_off = h->w.off[wt],
	                     .heads = n / hd,
	                     .head_dim = hd,
	                     .eps = (float)h->c->eps,
	                     .rope = rope != NULL,
	                     .rope_split = 1,
	                     .rope_off = rope ? rope_row * n : 0};
	return dit_op_rmsnorm(h->g, NULL, name, &a, t, h->w.slab, rope ? rope : h->g->ws[LS_ROPE_V],
	                      err);
}

/* o [lq, n] = attention of q (cols q_off of a [lq, ldq] buffer) over keys and values
 * (cols k_off, v_off of kv [lk, ldk]; kv NULL: q's buffer), keys [0, valid). */
static dit_status lx_attend(const lx_ctx *h, const char *name, starpu_data_handle_t q, int64_t ldq,
                            int64_t lq, starpu_data_handle_t kv, int64_t k_off, int64_t v_off,
                            int64_t ldk, int64_t lk, int64_t valid, int64_t n, int64_t hd,
                            starpu_data_handle_t o, dit_error *err)
{
	dit_attention_args a = {.fp = {{lq, lk, n / hd, hd}},
	                        .lq = lq,
	                        .lk = lk,
	                        .heads = n / hd,
	                        .hd = hd,
	                        .ldq = ldq,
	                        .k_off = k_off,
	                        .v_off = v_off,
	                        .ldk = ldk,
	                        .ldo = n,
	                        .cross = kv != NULL,
	                        .lk_valid = valid};
	return dit_op_attention(h->g, NULL, name, &a, q, kv, o, h->ps->ws[LX_S_ATTN], err);
}

/* The per-head gates of attention att (2.3+): logits of its query input x [rows, kq]
 * into gl, then o [rows, n] *= 2 sigmoid(logit) per head of hd. */
static dit_status lx_gate(const lx_ctx *h, const char *name, int att, starpu_data_handle_t x,
                          int64_t rows, int64_t kq, starpu_data_handle_t gl, starpu_data_handle_t o,
                          int64_t n, int64_t hd, dit_error *err)
{
	if (!h->c->gated_attn)
		return DIT_OK;
	TRY(dit_ltx_linear(h, NULL, name, x, 0, kq, gl, 0, h->H, rows, h->H, kq,
	                   DIT_LTX_ATT(att, DIT_LA_G_W), DIT_LTX_ATT(att, DIT_LA_G_B), DIT_ACT_NONE,
	                   err));
	dit_head_gate_args a = {.fp = {{rows, h->H, hd, 0}},
	                        .rows = rows,
	                        .heads = h->H,
	                        .hd = hd,
	                        .ldo = n,
	                        .ldg = h->H};
	return dit_op_head_gate(h->g, NULL, name, &a, o, gl, err);
}

/* ------------------------------------------------------------------ the block
 *
 * With token chunks (grid.chunk_rows: the video stream's T) the video stream runs a chunk
 * of rows at a time through buffers of one chunk: what a chunk's queries read of every
 * row (self-attention's k/v [Lv, 2D] in s->qkv, v2a's k/v [Lv, 2Da]) is made first, a
 * chunk at a time, then each chunk's queries, the rest of its sub-layer and its residual.
 * The audio stream, a few hundred rows, stays whole. Whole (T 0), a stream is one chunk
 * and self-attention keeps its fused q/k/v [L, 3D]. */

/* The chunks of stream s's rows (one: all of them, when s is whole). */
static void lx_chunks(const lx_ctx *h, const lx_stream *s, dit_chunks *ch)
{
	dit_chunks_make(s->L, s->T ? h->g->grid.chunk_rows : 0, ch);
}

/* Token chunks: self-attention's keys and values of rows r0 .. r0 + m of stream s into
 * kv [L, 2D] (s->qkv: k, then v), from their normed rows. */
static dit_status lx_self_kv(const lx_ctx *h, const lx_stream *s, const dit_task_opts *first,
                             int64_t r0, int64_t m, dit_error *err)
{
	int64_t D = s->D, mld = h->c->ada_rows * D, at = s->self;
	TRY(lx_norm(h, first, "norm1", s, s->h, s->sst, s->e0, mld, 0, 1, r0, m, err));
	TRY(dit_ltx_linear(h, NULL, "attn1.to_k", s->h, 0, D, s->qkv, r0 * 2 * D, 2 * D, m, D, D,
	                   DIT_LTX_ATT(at, DIT_LA_K_W), DIT_LTX_ATT(at, DIT_LA_K_B), DIT_ACT_NONE,
	                   err));
	TRY(dit_ltx_linear(h, NULL, "attn1.to_v", s->h, 0, D, s->qkv, r0 * 2 * D + D, 2 * D, m, D,
	                   D, DIT_LTX_ATT(at, DIT_LA_V_W), DIT_LTX_ATT(at, DIT_LA_V_B),
	                   DIT_ACT_NONE, err));
	return lx_qk(h, "attn1.k_norm", s->qkv, 2 * D, r0 * 2 * D, m, D, s->hd,
	             DIT_LTX_ATT(at, DIT_LA_NK), s->rope, r0, err);
}

/* Whole: q, k, v [L, 3D] of stream s from its normed input, the attention into o, or
 * (skip, STG) the value projection copied there instead. */
static dit_status lx_self_whole(const lx_ctx *h, const lx_stream *s, int skip, dit_error *err)
{
	int64_t L = s->L, D = s->D;
	int at = s->self;
	TRY(dit_ltx_linear(h, NULL, "attn1.to_v", s->h, 0, D, s->qkv, 2 * D, 3 * D, L, D, D,
	                   DIT_LTX_ATT(at, DIT_LA_V_W), DIT_LTX_ATT(at, DIT_LA_V_B), DIT_ACT_NONE,
	                   err));
	if (skip) {
		dit_copy2d_args ca = {.fp = {{L, D, 0, 0}},
		                      .count = L,
		                      .len = D,
		                      .src_off = 2 * D,
		                      .src_ld = 3 * D,
		                      .dst_ld = D};
		return dit_op_copy2d(h->g, NULL, "attn1.skip", &ca, s->o, s->qkv, err);
	}
	TRY(dit_ltx_linear(h, NULL, "attn1.to_q", s->h, 0, D, s->qkv, 0, 3 * D, L, D, D,
	                   DIT_LTX_ATT(at, DIT_LA_Q_W), DIT_LTX_ATT(at, DIT_LA_Q_B), DIT_ACT_NONE,
	                   err));
	TRY(dit_ltx_linear(h, NULL, "attn1.to_k", s->h, 0, D, s->qkv, D, 3 * D, L, D, D,
	                   DIT_LTX_ATT(at, DIT_LA_K_W), DIT_LTX_ATT(at, DIT_LA_K_B), DIT_ACT_NONE,
	                   err));
	TRY(lx_qk(h, "attn1.q_norm", s->qkv, 3 * D, 0, L, D, s->hd, DIT_LTX_ATT(at, DIT_LA_NQ),
	          s->rope, 0, err));
	TRY(lx_qk(h, "attn1.k_norm", s->qkv, 3 * D, D, L, D, s->hd, DIT_LTX_ATT(at, DIT_LA_NK),
	          s->rope, 0, err));
	return lx_attend(h, "attn1", s->qkv, 3 * D, L, NULL, D, 2 * D, 3 * D, L, L, D, s->hd, s->o,
	                 err);
}

/* Self-attention of rows r0 .. r0 + m of stream s (all rows when whole), its residual
 * included; in token chunks the chunk's q [m, D] in s->q against every row's k/v, or
 * (skip, STG) its value projection straight into o. */
static dit_status lx_self_rows(const lx_ctx *h, const lx_stream *s, const dit_task_opts *first,
                               int skip, int64_t r0, int64_t m, dit_error *err)
{
	int64_t L = s->L, D = s->D, mld = h->c->ada_rows * D;
	int at = s->self;
	TRY(lx_norm(h, first, s->a ? "audio_norm1" : "norm1", s, s->h, s->sst, s->e0, mld, 0, 1, r0,
	            m, err));
	if (!s->T) {
		TRY(lx_self_whole(h, s, skip, err));
	} else if (skip) {
		TRY(dit_ltx_linear(h, NULL, "attn1.to_v", s->h, 0, D, s->o, 0, D, m, D, D,
		                   DIT_LTX_ATT(at, DIT_LA_V_W), DIT_LTX_ATT(at, DIT_LA_V_B),
		                   DIT_ACT_NONE, err));
	} else {
		TRY(dit_ltx_linear(h, NULL, "attn1.to_q", s->h, 0, D, s->q, 0, D, m, D, D,
		                   DIT_LTX_ATT(at, DIT_LA_Q_W), DIT_LTX_ATT(at, DIT_LA_Q_B),
		                   DIT_ACT_NONE, err));
		TRY(lx_qk(h, "attn1.q_norm", s->q, D, 0, m, D, s->hd, DIT_LTX_ATT(at, DIT_LA_NQ),
		          s->rope, r0, err));
		TRY(lx_attend(h, "attn1", s->q, D, m, s->qkv, 0, D, 2 * D, L, L, D, s->hd, s->o,
		              err));
	}
	TRY(lx_gate(h, "attn1.gate", at, s->h, m, D, s->gl, s->o, D, s->hd, err));
	TRY(dit_ltx_linear(h, NULL, "attn1.to_out", s->o, 0, D, s->y, 0, D, m, D, D,
	                   DIT_LTX_ATT(at, DIT_LA_O_W), DIT_LTX_ATT(at, DIT_LA_O_B), DIT_ACT_NONE,
	                   err));
	return lx_add(h, NULL, "attn1.residual", s, s->sst, s->e0, mld, 2, r0, m, err);
}

static dit_status lx_self(const lx_ctx *h, const lx_stream *s, const dit_task_opts *first, int skip,
                          dit_error *err)
{
	dit_chunks ch;
	lx_chunks(h, s, &ch);
	for (int c = 0; s->T && !skip && c < ch.n; c++, first = NULL)
		TRY(lx_self_kv(h, s, first, ch.row0[c], ch.row0[c + 1] - ch.row0[c], err));
	for (int c = 0; c < ch.n; c++, first = NULL)
		TRY(lx_self_rows(h, s, first, skip, ch.row0[c], ch.row0[c + 1] - ch.row0[c], err));
	return DIT_OK;
}

/* The text's keys and values for stream s (2.3+: the context modulated first). */
static dit_status lx_text_kv(const lx_ctx *h, const lx_stream *s, dit_error *err)
{
	int64_t D = s->D, Lt = h->Lt;
	int at = s->text;
	starpu_data_handle_t ctx = s->ctx;
	if (h->c->ca_adaln) { /* context * (1 + scale_kv) + shift_kv, prompt table + AdaLN */
		dit_modulate_args ma = {.fp = {{Lt, D, 0, 0}},
		                        .rows = Lt,
		                        .dim = D,
		                        .shift_off = h->w.off[s->psst],
		                        .scale_off = h->w.off[s->psst] + D,
		                        .vshift_off = 0,
		                        .vscale_off = D,
		                        .vec = h->c->prompt_adaln != 0};
		starpu_data_handle_t hb[] = {ctx, s->mctx, h->w.slab, s->prompt};
		enum starpu_data_access_mode md[] = {STARPU_R, STARPU_W, STARPU_R, STARPU_R};
		TRY(dit_graph_insert(h->g, &dit_cl_modulate, "attn2.kv_mod", &ma, sizeof ma, 0,
		                     ma.vec ? 4 : 3, hb, md, &lx_on_cpu, err));
		ctx = s->mctx;
	}
	TRY(dit_ltx_linear(h, NULL, "attn2.to_k", ctx, 0, D, s->kv, 0, 2 * D, Lt, D, D,
	                   DIT_LTX_ATT(at, DIT_LA_K_W), DIT_LTX_ATT(at, DIT_LA_K_B), DIT_ACT_NONE,
	                   err));
	TRY(dit_ltx_linear(h, NULL, "attn2.to_v", ctx, 0, D, s->kv, D, 2 * D, Lt, D, D,
	                   DIT_LTX_ATT(at, DIT_LA_V_W), DIT_LTX_ATT(at, DIT_LA_V_B), DIT_ACT_NONE,
	                   err));
	return lx_qk(h, "attn2.k_norm", s->kv, 2 * D, 0, Lt, D, s->hd, DIT_LTX_ATT(at, DIT_LA_NK),
	             NULL, 0, err);
}

/* Text cross-attention of rows r0 .. r0 + m of stream s (2.3+: AdaLN on the query), its
 * residual included; the query in q/k/v's q columns (whole) or in s->q (chunks). */
static dit_status lx_text_rows(const lx_ctx *h, const lx_stream *s, int64_t r0, int64_t m,
                               dit_error *err)
{
	int64_t D = s->D, mld = h->c->ada_rows * D;
	int at = s->text, ca = h->c->ca_adaln != 0;
	starpu_data_handle_t q = s->T ? s->q : s->qkv;
	int64_t ldq = s->T ? D : 3 * D;
	TRY(lx_norm(h, NULL, s->a ? "audio_norm2" : "norm2", s, s->h, ca ? s->sst : -1, s->e0, mld,
	            6, 7, r0, m, err));
	TRY(dit_ltx_linear(h, NULL, "attn2.to_q", s->h, 0, D, q, 0, ldq, m, D, D,
	                   DIT_LTX_ATT(at, DIT_LA_Q_W), DIT_LTX_ATT(at, DIT_LA_Q_B), DIT_ACT_NONE,
	                   err));
	TRY(lx_qk(h, "attn2.q_norm", q, ldq, 0, m, D, s->hd, DIT_LTX_ATT(at, DIT_LA_NQ), NULL, 0,
	          err));
	TRY(lx_attend(h, "attn2", q, ldq, m, s->kv, 0, D, 2 * D, h->Lt, h->valid[s->a], D, s->hd,
	              s->o, err));
	TRY(lx_gate(h, "attn2.gate", at, s->h, m, D, s->gl, s->o, D, s->hd, err));
	TRY(dit_ltx_linear(h, NULL, "attn2.to_out", s->o, 0, D, s->y, 0, D, m, D, D,
	                   DIT_LTX_ATT(at, DIT_LA_O_W), DIT_LTX_ATT(at, DIT_LA_O_B), DIT_ACT_NONE,
	                   err));
	return lx_add(h, NULL, "attn2.residual", s, ca ? s->sst : -1, s->e0, mld, 8, r0, m, err);
}

static dit_status lx_text(const lx_ctx *h, const lx_stream *s, dit_error *err)
{
	dit_chunks ch;
	lx_chunks(h, s, &ch);
	TRY(lx_text_kv(h, s, err));
	for (int c = 0; c < ch.n; c++)
		TRY(lx_text_rows(h, s, ch.row0[c], ch.row0[c + 1] - ch.row0[c], err));
	return DIT_OK;
}

/* The keys and values of cross-attention at (a2v: from audio; v2a: from video) of rows
 * r0 .. r0 + m of stream k, normed in kin's first rows, into kvb's rows [Lk, 2Da]. */
static dit_status lx_cross_kv(const lx_ctx *h, const char *name, int at, const lx_stream *k,
                              starpu_data_handle_t kin, starpu_data_handle_t kvb, int64_t r0,
                              int64_t m, dit_error *err)
{
	int64_t Da = h->c->aux_dim, ha = h->c->aux_head_dim, off = r0 * 2 * Da;
	TRY(dit_ltx_linear(h, NULL, name, kin, 0, k->D, kvb, off, 2 * Da, m, Da, k->D,
	                   DIT_LTX_ATT(at, DIT_LA_K_W), DIT_LTX_ATT(at, DIT_LA_K_B), DIT_ACT_NONE,
	                   err));
	TRY(dit_ltx_linear(h, NULL, name, kin, 0, k->D, kvb, off + Da, 2 * Da, m, Da, k->D,
	                   DIT_LTX_ATT(at, DIT_LA_V_W), DIT_LTX_ATT(at, DIT_LA_V_B), DIT_ACT_NONE,
	                   err));
	return lx_qk(h, "k_norm", kvb, 2 * Da, off, m, Da, ha, DIT_LTX_ATT(at, DIT_LA_NK),
	             k->rope_x, r0, err);
}

/* The queries of cross-attention at of rows r0 .. r0 + m of stream q (normed in qin's
 * first rows, into qb [m, Da]) against the keys of stream k in kvb, into ob, then
 * their output projection and gated residual. */
static dit_status lx_cross_q(const lx_ctx *h, const char *name, int at, const lx_stream *q,
                             const lx_stream *k, starpu_data_handle_t qin, starpu_data_handle_t qb,
                             starpu_data_handle_t kvb, starpu_data_handle_t ob, int64_t r0,
                             int64_t m, dit_error *err)
{
	int64_t Da = h->c->aux_dim, ha = h->c->aux_head_dim;
	TRY(dit_ltx_linear(h, NULL, name, qin, 0, q->D, qb, 0, Da, m, Da, q->D,
	                   DIT_LTX_ATT(at, DIT_LA_Q_W), DIT_LTX_ATT(at, DIT_LA_Q_B), DIT_ACT_NONE,
	                   err));
	TRY(lx_qk(h, "q_norm", qb, Da, 0, m, Da, ha, DIT_LTX_ATT(at, DIT_LA_NQ), q->rope_x, r0,
	          err));
	TRY(lx_attend(h, name, qb, Da, m, kvb, 0, Da, 2 * Da, k->L, k->L, Da, ha, ob, err));
	TRY(lx_gate(h, name, at, qin, m, q->D, q->gl, ob, Da, ha, err));
	TRY(dit_ltx_linear(h, NULL, name, ob, 0, Da, q->y, 0, q->D, m, q->D, Da,
	                   DIT_LTX_ATT(at, DIT_LA_O_W), DIT_LTX_ATT(at, DIT_LA_O_B), DIT_ACT_NONE,
	                   err));
	/* gate = table row 4 + the gate AdaLN of the other stream's sigma */
	return lx_add(h, NULL, name, q, q->avsst, q->gate, 0, 4, r0, m, err);
}

/* Both cross-attentions, on the streams as they were before either: the audio's normed
 * inputs, v2a's keys from every video row (a chunk at a time), a2v's from the audio,
 * then v2a (it changes the audio alone) and a2v a video chunk at a time. */
static dit_status lx_av(const lx_ctx *h, dit_error *err)
{
	const lx_stream *v = &h->s[0], *a = &h->s[1];
	const dit_pass *ps = h->ps;
	int64_t vm = 4 * v->D, am = 4 * a->D;
	dit_chunks ch;
	lx_chunks(h, v, &ch);
	TRY(lx_norm(h, NULL, "a2v.kv_norm_in", a, a->h, a->avsst, a->av, am, 1, 0, 0, a->L, err));
	TRY(lx_norm(h, NULL, "v2a.q_norm_in", a, a->h2, a->avsst, a->av, am, 3, 2, 0, a->L, err));
	for (int c = 0; c < ch.n; c++) {
		int64_t r0 = ch.row0[c], m = ch.row0[c + 1] - r0;
		TRY(lx_norm(h, NULL, "v2a.kv_norm_in", v, v->h2, v->avsst, v->av, vm, 3, 2, r0, m,
		            err));
		TRY(lx_cross_kv(h, "video_to_audio_attn", DIT_LX_V2A, v, v->h2, ps->ws[LX_VAKV], r0,
		                m, err));
	}
	TRY(lx_cross_kv(h, "audio_to_video_attn", DIT_LX_A2V, a, a->h, ps->ws[LX_AVKV], 0, a->L,
	                err));
	TRY(lx_cross_q(h, "video_to_audio_attn", DIT_LX_V2A, a, v, a->h2, ps->ws[LX_VAQ],
	               ps->ws[LX_VAKV], ps->ws[LX_VAO], 0, a->L, err));
	for (int c = 0; c < ch.n; c++) {
		int64_t r0 = ch.row0[c], m = ch.row0[c + 1] - r0;
		TRY(lx_norm(h, NULL, "a2v.q_norm_in", v, v->h, v->avsst, v->av, vm, 1, 0, r0, m,
		            err));
		TRY(lx_cross_q(h, "audio_to_video_attn", DIT_LX_A2V, v, a, v->h, ps->ws[LX_AVQ],
		               ps->ws[LX_AVKV], ps->ws[LX_AVO], r0, m, err));
	}
	return DIT_OK;
}

/* The feed-forward of stream s, a chunk of rows at a time (last: the last task's
 * options, on the last chunk's residual). */
static dit_status lx_ff(const lx_ctx *h, const lx_stream *s, const dit_task_opts *last,
                        dit_error *err)
{
	int64_t D = s->D, F = s->F, mld = h->c->ada_rows * D;
	int bias = s->a ? h->c->aux_ff_bias != 0 : h->c->ff_bias != 0;
	dit_chunks ch;
	lx_chunks(h, s, &ch);
	for (int c = 0; c < ch.n; c++) {
		int64_t r0 = ch.row0[c], m = ch.row0[c + 1] - r0;
		TRY(lx_norm(h, NULL, s->a ? "audio_norm3" : "norm3", s, s->h, s->sst, s->e0, mld, 3,
		            4, r0, m, err));
		TRY(dit_ltx_linear(h, NULL, s->a ? "audio_ff.0" : "ff.0", s->h, 0, D, s->f, 0, F, m,
		                   F, D, s->ff1w, bias ? s->ff1b : -1, DIT_ACT_GELU_TANH, err));
		TRY(dit_ltx_linear(h, NULL, s->a ? "audio_ff.2" : "ff.2", s->f, 0, F, s->y, 0, D, m,
		                   D, F, s->ff2w, bias ? s->ff2b : -1, DIT_ACT_NONE, err));
		TRY(lx_add(h, c == ch.n - 1 ? last : NULL,
		           s->a ? "audio_ff.residual" : "ff.residual", s, s->sst, s->e0, mld, 5, r0,
		           m, err));
	}
	return DIT_OK;
}

/* The streams (bit 0 video, bit 1 audio) whose self-attention pass p replaces in
 * block b by its value projection (STG); 0: none. */
static int lx_skips_self(const dit_graph *g, int p, int64_t b)
{
	const dit_ltx_state *ls = g->fam;
	if (p < 0 || p >= DIT_MAX_PASSES || !ls->skip_self[p] || b < 0 ||
	    b >= g->model->cfg.layers[0])
		return 0;
	return ls->skip_self[p][b];
}

static dit_status lx_block_submit(dit_graph *g, int i, int p, int64_t b, const dit_task_opts *first,
                                  const dit_task_opts *last, dit_error *err)
{
	(void)i;
	lx_ctx h = dit_ltx_ctx_for(g, p);
	lx_use_block(&h, b);
	int skip = lx_skips_self(g, p, b); /* STG: bit 0 video, bit 1 audio */
	TRY(lx_self(&h, &h.s[0], first, skip & 1, err));
	TRY(lx_text(&h, &h.s[0], err));
	if (h.audio) {
		TRY(lx_self(&h, &h.s[1], NULL, skip & 2, err));
		TRY(lx_text(&h, &h.s[1], err));
		if (!((const dit_ltx_state *)g->fam)
		         ->skip_cross[p]) /* the isolated-modality pass has none */
			TRY(lx_av(&h, err));
		TRY(lx_ff(&h, &h.s[0], NULL, err));
		return lx_ff(&h, &h.s[1], last, err);
	}
	return lx_ff(&h, &h.s[0], last, err);
}

const dit_block_kind dit_block_ltx_av = {"ltx_av", lx_block_submit, -1};
