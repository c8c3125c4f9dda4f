/* The LTX-2 forward (ltx_core LTXModel, BasicAVTransformerBlock) as chains of generic op
 * tasks: the block kind "ltx_av" and the stages "ltx" around it (the text projection,
 * the AdaLN time tables, the RoPE tables, patchify and the two output heads). This
 * file is over the usual size because the block and its stages share one set of work
 * buffers and helpers.
 *
 * Shapes: Lv video tokens (pass x [Lv, D]), La audio tokens (LTX_AX [La, Da]), Lt =
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
#include <math.h>
#include <string.h>

#include "dit_codelets.h"
#include "dit_cpu.h"
#include "dit_graph.h"
#include "dit_ltx.h"
#include "dit_ops.h"

#define NB(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The work buffers of a pass (dit_pass.ws); ps->x is the video stream [Lv, D]. */
enum {
	LX_AX = 0, /* [La, Da] audio stream */
	LX_HV,     /* [Lv, D] normed video input of a sub-layer */
	LX_HV2,    /* [Lv, D] second normed video input (the v2a keys) */
	LX_HA,     /* [La, Da] */
	LX_HA2,    /* [La, Da] */
	LX_QKV,    /* [Lv, 3D] video self-attention q, k, v; the text query in its q */
	LX_AQKV,   /* [La, 3Da] */
	LX_O,      /* [Lv, D] video attention output */
	LX_AO,     /* [La, Da] */
	LX_Y,      /* [Lv, D] sub-layer output before its residual */
	LX_AY,     /* [La, Da] */
	LX_KV,     /* [Lt, 2D] text keys, values */
	LX_AKV,    /* [Lt, 2Da] */
	LX_AVQ,    /* [Lv, Da] a2v queries */
	LX_AVKV,   /* [La, 2Da] a2v keys, values */
	LX_AVO,    /* [Lv, Da] a2v output */
	LX_VAQ,    /* [La, Da] v2a queries */
	LX_VAKV,   /* [Lv, 2Da] */
	LX_VAO,    /* [La, Da] */
	LX_GL,     /* [Lv, H] gate logits */
	LX_AGL,    /* [La, H] */
	LX_F,      /* [Lv, F] MLP hidden */
	LX_AF,     /* [La, Fa] */
	LX_CTXV,   /* [Lt, D] the video context the blocks read */
	LX_CTXA,   /* [Lt, Da] */
	LX_ACTX,   /* [Lt, aux_text_dim] the audio context input */
	LX_CAPH,   /* [Lt, max(D, Da)] caption projection hidden */
	LX_MCTX,   /* [Lt, D] the modulated text context (2.3+) */
	LX_AMCTX,  /* [Lt, Da] */
	LX_ALAT,   /* [La, 128] patchified audio latent */
	LX_ATOK,   /* [La, 128] audio head tokens */
	LX_AOUT,   /* [8, T, 16] audio velocity */
	LX_S_ATTN, /* scratch of the attention, the patch embedding, bf16 GEMMs, heads */
	LX_S_PATCH,
	LX_S_LIN,
	LX_S_HEAD,
	LX_NPASS
};
/* Shared by the passes (dit_graph.ws). */
enum {
	LS_EV = 0,  /* [ntv, D] video embedded timestep */
	LS_E0V,     /* [ntv, ada_rows D] video block tables */
	LS_AVV,     /* [ntv, 4D] video a2v/v2a scale, shift */
	LS_GV,      /* [D] a2v gate (from the audio sigma) */
	LS_PV,      /* [2D] prompt table (2.3+, from the video sigma) */
	LS_EA,      /* [nta, Da] */
	LS_E0A,     /* [nta, ada_rows Da] */
	LS_AVA,     /* [nta, 4Da] */
	LS_GA,      /* [Da] v2a gate (from the video sigma) */
	LS_PA,      /* [2Da] */
	LS_EJ,      /* embedded timesteps nobody reads */
	LS_S_TIME,  /* time embedding scratch */
	LS_ROPE_V,  /* [Lv, H, hd/2, 2] doubles: video self-attention */
	LS_ROPE_VX, /* [Lv, H, ha/2, 2]: the video side of the cross-attentions */
	LS_ROPE_A,  /* [La, H, ha/2, 2]: audio self-attention */
	LS_ROPE_AX, /* [La, H, ha/2, 2]: the audio side of the cross-attentions */
	LS_ALAT,    /* [8, T, 16] the audio latent input */
	LS_VPOS,    /* [3, Lv, 2] doubles: video token bounds (s, px, px) */
	LS_APOS,    /* [1, La, 2] doubles: audio token bounds (s) */
};

#define TRY(call)                                                                                  \
	do {                                                                                       \
		dit_status st_ = (call);                                                           \
		if (st_ != DIT_OK)                                                                 \
			return st_;                                                                \
	} while (0)

static const dit_task_opts on_cpu = {.where = STARPU_CPU};

/* One stream's sizes and buffers inside a block. */
typedef struct lx_stream {
	int a;                          /* 0 video, 1 audio */
	int64_t L, D, F, hd, ntok_rows; /* tokens, width, MLP width, head width, mod_rows */
	starpu_data_handle_t x, h, h2, qkv, o, y, kv, gl, f, ctx, mctx;
	starpu_data_handle_t e0, av, gate, prompt, rope, rope_x;
	int self, text, ff1w, ff1b, ff2w, ff2b, sst, avsst, psst; /* tensor indices */
} lx_stream;

typedef struct lx_ctx {
	dit_graph *g;
	const dit_pass *ps;
	const dit_hparams *c;
	starpu_data_handle_t wb;
	int64_t off[DIT_MAX_TENSORS];
	int bf16;
	int64_t H, Lt, valid[2];
	int audio; /* the run has an audio stream */
	lx_stream s[2];
} lx_ctx;

static int64_t lx_max(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static lx_ctx lx_ctx_for(dit_graph *g, int p)
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
	                 .x = ps->x,
	                 .h = ps->ws[LX_HV],
	                 .h2 = ps->ws[LX_HV2],
	                 .qkv = ps->ws[LX_QKV],
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
	                 .ntok_rows = g->aux_mod_rows,
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

static void lx_use_globals(lx_ctx *h)
{
	const dit_model *m = h->g->model;
	h->wb = m->h_globals;
	h->bf16 = 0;
	for (int t = 0; t < DIT_LG_COUNT; t++)
		h->off[t] = m->glob.off[t];
}

static void lx_use_block(lx_ctx *h, int64_t b)
{
	const dit_pool *pl = &h->g->model->pool[0];
	int64_t base;
	h->wb = dit_pool_block_handle(pl, b, &base);
	h->bf16 = pl->lay.bf16;
	for (int t = 0; t < pl->lay.n; t++)
		h->off[t] = base + pl->lay.off[t];
}

/* y [m, n] (rows ldy apart, from column y_off) = act(x [m, k] (rows ldx apart, from
 * x_off) W^T + b), W tensor wt, b tensor bt (< 0: none). */
static dit_status lx_linear(const lx_ctx *h, const dit_task_opts *o, const char *name,
                            starpu_data_handle_t x, int64_t x_off, int64_t ldx,
                            starpu_data_handle_t y, int64_t y_off, int64_t ldy, int64_t m,
                            int64_t n, int64_t k, int wt, int bt, dit_act act, dit_error *err)
{
	int bf = h->bf16 && h->wb != h->g->model->h_globals &&
	         (h->g->model->pool[0].lay.is_bf16[wt] != 0);
	dit_linear_args a = {.fp = {{m, n, k, act}},
	                     .m = m,
	                     .n = n,
	                     .k = k,
	                     .ldx = ldx,
	                     .ldy = ldy,
	                     .x_off = x_off,
	                     .y_off = y_off,
	                     .w_off = h->off[wt],
	                     .b_off = bt >= 0 ? h->off[bt] : -1,
	                     .act = act,
	                     .wbf16 = bf};
	return dit_op_linear(h->g, o, name, &a, x, h->wb, y, h->ps->ws[LX_S_LIN], err);
}

/* y [rows, D] = rms(x) (* (1 + scale) + shift with shift = slab row r_sh of table tab
 * + row r_sh of the step's table vec (mod_ld floats a token row), scale likewise; tab
 * < 0: no modulation). */
static dit_status lx_norm(const lx_ctx *h, const dit_task_opts *o, const char *name,
                          const lx_stream *s, starpu_data_handle_t x, starpu_data_handle_t y,
                          int tab, starpu_data_handle_t vec, int64_t mod_ld, int64_t mod_rows,
                          int r_sh, int r_sc, dit_error *err)
{
	int64_t D = s->D;
	dit_layernorm_args a = {.fp = {{s->L, D, 2, tab >= 0}},
	                        .rows = s->L,
	                        .dim = D,
	                        .eps = (float)h->c->eps,
	                        .rms = 1};
	if (tab >= 0) {
		a.mod = 1;
		a.shift_off = h->off[tab] + r_sh * D;
		a.scale_off = h->off[tab] + r_sc * D;
		a.vshift_off = r_sh * D;
		a.vscale_off = r_sc * D;
		a.mod_ld = mod_ld;
		a.mod_rows = mod_rows;
	}
	return dit_op_layernorm(h->g, o, name, &a, x, y, h->wb, tab >= 0 ? vec : NULL, err);
}

/* x [rows, D] += y * gate, gate = slab row r of table tab + row r of vec (mod_ld floats
 * a token row; 0: vec is one vector [D], its row 0); tab < 0: x += y. */
static dit_status lx_add(const lx_ctx *h, const dit_task_opts *o, const char *name,
                         const lx_stream *s, starpu_data_handle_t x, starpu_data_handle_t y,
                         int tab, starpu_data_handle_t vec, int64_t mod_ld, int64_t mod_rows, int r,
                         dit_error *err)
{
	int64_t vr = mod_ld ? r : 0;
	int64_t D = s->D;
	dit_residual_args a = {.fp = {{s->L, D, tab >= 0, 0}}, .rows = s->L, .dim = D};
	if (tab >= 0) {
		a.gate_off = h->off[tab] + r * D;
		a.vgate_off = vr * D;
		a.mod_ld = mod_ld;
		a.mod_rows = mod_rows;
	} else {
		a.gate_off = -1;
	}
	return dit_op_residual(h->g, o, name, &a, x, y, h->wb, tab >= 0 ? vec : NULL, err);
}

/* RMSNorm (weight tensor wt, over the whole inner width n) of rows [0, rows) of the
 * columns [col, col + n) of t (ld floats a row), then split RoPE from table rope (NULL:
 * none) with heads of hd. */
static dit_status lx_qk(const lx_ctx *h, const char *name, starpu_data_handle_t t, int64_t ld,
                        int64_t col, int64_t rows, int64_t n, int64_t hd, int wt,
                        starpu_data_handle_t rope, dit_error *err)
{
	dit_qknorm_args a = {.fp = {{rows, n, rope != NULL, hd}},
	                     .rows = rows,
	                     .dim = n,
	                     .ld = ld,
	                     .t_off = col,
	                     .w_off = h->off[wt],
	                     .heads = n / hd,
	                     .head_dim = hd,
	                     .eps = (float)h->c->eps,
	                     .rope = rope != NULL,
	                     .rope_split = 1};
	return dit_op_rmsnorm(h->g, NULL, name, &a, t, h->wb, rope ? rope : h->g->ws[LS_ROPE_V],
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
	TRY(lx_linear(h, NULL, name, x, 0, kq, gl, 0, h->H, rows, h->H, kq,
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

/* ------------------------------------------------------------------ the block */

/* Self-attention of stream s, its residual included. */
static dit_status lx_self(const lx_ctx *h, const lx_stream *s, const dit_task_opts *first, int skip,
                          dit_error *err)
{
	int64_t L = s->L, D = s->D, mld = h->c->ada_rows * D;
	int at = s->self;
	TRY(lx_norm(h, first, s->a ? "audio_norm1" : "norm1", s, s->x, s->h, s->sst, s->e0, mld,
	            s->ntok_rows, 0, 1, err));
	TRY(lx_linear(h, NULL, "attn1.to_v", s->h, 0, D, s->qkv, 2 * D, 3 * D, L, D, D,
	              DIT_LTX_ATT(at, DIT_LA_V_W), DIT_LTX_ATT(at, DIT_LA_V_B), DIT_ACT_NONE, err));
	starpu_data_handle_t out = s->o;
	if (!skip) {
		TRY(lx_linear(h, NULL, "attn1.to_q", s->h, 0, D, s->qkv, 0, 3 * D, L, D, D,
		              DIT_LTX_ATT(at, DIT_LA_Q_W), DIT_LTX_ATT(at, DIT_LA_Q_B),
		              DIT_ACT_NONE, err));
		TRY(lx_linear(h, NULL, "attn1.to_k", s->h, 0, D, s->qkv, D, 3 * D, L, D, D,
		              DIT_LTX_ATT(at, DIT_LA_K_W), DIT_LTX_ATT(at, DIT_LA_K_B),
		              DIT_ACT_NONE, err));
		TRY(lx_qk(h, "attn1.q_norm", s->qkv, 3 * D, 0, L, D, s->hd,
		          DIT_LTX_ATT(at, DIT_LA_NQ), s->rope, err));
		TRY(lx_qk(h, "attn1.k_norm", s->qkv, 3 * D, D, L, D, s->hd,
		          DIT_LTX_ATT(at, DIT_LA_NK), s->rope, err));
		TRY(lx_attend(h, "attn1", s->qkv, 3 * D, L, NULL, D, 2 * D, 3 * D, L, L, D, s->hd,
		              out, err));
	} else { /* STG: the value projection replaces the attention */
		dit_copy2d_args ca = {.fp = {{L, D, 0, 0}},
		                      .count = L,
		                      .len = D,
		                      .src_off = 2 * D,
		                      .src_ld = 3 * D,
		                      .dst_ld = D};
		TRY(dit_op_copy2d(h->g, NULL, "attn1.skip", &ca, out, s->qkv, err));
	}
	TRY(lx_gate(h, "attn1.gate", at, s->h, L, D, s->gl, out, D, s->hd, err));
	TRY(lx_linear(h, NULL, "attn1.to_out", out, 0, D, s->y, 0, D, L, D, D,
	              DIT_LTX_ATT(at, DIT_LA_O_W), DIT_LTX_ATT(at, DIT_LA_O_B), DIT_ACT_NONE, err));
	return lx_add(h, NULL, "attn1.residual", s, s->x, s->y, s->sst, s->e0, mld, s->ntok_rows, 2,
	              err);
}

/* Text cross-attention of stream s (2.3+: AdaLN on the query and the context). */
static dit_status lx_text(const lx_ctx *h, const lx_stream *s, dit_error *err)
{
	int64_t L = s->L, D = s->D, Lt = h->Lt, mld = h->c->ada_rows * D;
	int at = s->text, ca = h->c->ca_adaln != 0;
	starpu_data_handle_t ctx = s->ctx;
	TRY(lx_norm(h, NULL, s->a ? "audio_norm2" : "norm2", s, s->x, s->h, ca ? s->sst : -1, s->e0,
	            mld, s->ntok_rows, 6, 7, err));
	if (ca) { /* context * (1 + scale_kv) + shift_kv, prompt table + prompt AdaLN */
		dit_modulate_args ma = {.fp = {{Lt, D, 0, 0}},
		                        .rows = Lt,
		                        .dim = D,
		                        .shift_off = h->off[s->psst],
		                        .scale_off = h->off[s->psst] + D,
		                        .vshift_off = 0,
		                        .vscale_off = D,
		                        .vec = h->c->prompt_adaln != 0};
		starpu_data_handle_t hb[] = {ctx, s->mctx, h->wb, s->prompt};
		enum starpu_data_access_mode md[] = {STARPU_R, STARPU_W, STARPU_R, STARPU_R};
		TRY(dit_graph_insert(h->g, &dit_cl_modulate, "attn2.kv_mod", &ma, sizeof ma, 0,
		                     ma.vec ? 4 : 3, hb, md, &on_cpu, err));
		ctx = s->mctx;
	}
	TRY(lx_linear(h, NULL, "attn2.to_q", s->h, 0, D, s->qkv, 0, 3 * D, L, D, D,
	              DIT_LTX_ATT(at, DIT_LA_Q_W), DIT_LTX_ATT(at, DIT_LA_Q_B), DIT_ACT_NONE, err));
	TRY(lx_linear(h, NULL, "attn2.to_k", ctx, 0, D, s->kv, 0, 2 * D, Lt, D, D,
	              DIT_LTX_ATT(at, DIT_LA_K_W), DIT_LTX_ATT(at, DIT_LA_K_B), DIT_ACT_NONE, err));
	TRY(lx_linear(h, NULL, "attn2.to_v", ctx, 0, D, s->kv, D, 2 * D, Lt, D, D,
	              DIT_LTX_ATT(at, DIT_LA_V_W), DIT_LTX_ATT(at, DIT_LA_V_B), DIT_ACT_NONE, err));
	TRY(lx_qk(h, "attn2.q_norm", s->qkv, 3 * D, 0, L, D, s->hd, DIT_LTX_ATT(at, DIT_LA_NQ),
	          NULL, err));
	TRY(lx_qk(h, "attn2.k_norm", s->kv, 2 * D, 0, Lt, D, s->hd, DIT_LTX_ATT(at, DIT_LA_NK),
	          NULL, err));
	TRY(lx_attend(h, "attn2", s->qkv, 3 * D, L, s->kv, 0, D, 2 * D, Lt, h->valid[s->a], D,
	              s->hd, s->o, err));
	TRY(lx_gate(h, "attn2.gate", at, s->h, L, D, s->gl, s->o, D, s->hd, err));
	TRY(lx_linear(h, NULL, "attn2.to_out", s->o, 0, D, s->y, 0, D, L, D, D,
	              DIT_LTX_ATT(at, DIT_LA_O_W), DIT_LTX_ATT(at, DIT_LA_O_B), DIT_ACT_NONE, err));
	return lx_add(h, NULL, "attn2.residual", s, s->x, s->y, ca ? s->sst : -1, s->e0, mld,
	              s->ntok_rows, 8, err);
}

/* The cross-attention into stream q from stream k (a2v: q video; v2a: q audio): queries
 * qin [Lq, Dq], keys and values from kin [Lk, Dk], audio geometry (H heads of ha). */
static dit_status lx_cross(const lx_ctx *h, const char *name, int at, const lx_stream *q,
                           const lx_stream *k, starpu_data_handle_t qin, starpu_data_handle_t kin,
                           starpu_data_handle_t qb, starpu_data_handle_t kvb,
                           starpu_data_handle_t ob, dit_error *err)
{
	int64_t Da = h->c->aux_dim, ha = h->c->aux_head_dim;
	TRY(lx_linear(h, NULL, name, qin, 0, q->D, qb, 0, Da, q->L, Da, q->D,
	              DIT_LTX_ATT(at, DIT_LA_Q_W), DIT_LTX_ATT(at, DIT_LA_Q_B), DIT_ACT_NONE, err));
	TRY(lx_linear(h, NULL, name, kin, 0, k->D, kvb, 0, 2 * Da, k->L, Da, k->D,
	              DIT_LTX_ATT(at, DIT_LA_K_W), DIT_LTX_ATT(at, DIT_LA_K_B), DIT_ACT_NONE, err));
	TRY(lx_linear(h, NULL, name, kin, 0, k->D, kvb, Da, 2 * Da, k->L, Da, k->D,
	              DIT_LTX_ATT(at, DIT_LA_V_W), DIT_LTX_ATT(at, DIT_LA_V_B), DIT_ACT_NONE, err));
	TRY(lx_qk(h, "q_norm", qb, Da, 0, q->L, Da, ha, DIT_LTX_ATT(at, DIT_LA_NQ), q->rope_x,
	          err));
	TRY(lx_qk(h, "k_norm", kvb, 2 * Da, 0, k->L, Da, ha, DIT_LTX_ATT(at, DIT_LA_NK), k->rope_x,
	          err));
	TRY(lx_attend(h, name, qb, Da, q->L, kvb, 0, Da, 2 * Da, k->L, k->L, Da, ha, ob, err));
	TRY(lx_gate(h, name, at, qin, q->L, q->D, q->gl, ob, Da, ha, err));
	TRY(lx_linear(h, NULL, name, ob, 0, Da, q->y, 0, q->D, q->L, q->D, Da,
	              DIT_LTX_ATT(at, DIT_LA_O_W), DIT_LTX_ATT(at, DIT_LA_O_B), DIT_ACT_NONE, err));
	/* gate = table row 4 + the gate AdaLN of the other stream's sigma */
	return lx_add(h, NULL, name, q, q->x, q->y, q->avsst, q->gate, 0, 0, 4, err);
}

/* Both cross-attentions, on the streams as they were before either. */
static dit_status lx_av(const lx_ctx *h, dit_error *err)
{
	const lx_stream *v = &h->s[0], *a = &h->s[1];
	const dit_pass *ps = h->ps;
	int64_t vm = 4 * v->D, am = 4 * a->D;
	TRY(lx_norm(h, NULL, "a2v.q_norm_in", v, v->x, v->h, v->avsst, v->av, vm, v->ntok_rows, 1,
	            0, err));
	TRY(lx_norm(h, NULL, "a2v.kv_norm_in", a, a->x, a->h, a->avsst, a->av, am, a->ntok_rows, 1,
	            0, err));
	TRY(lx_norm(h, NULL, "v2a.q_norm_in", a, a->x, a->h2, a->avsst, a->av, am, a->ntok_rows, 3,
	            2, err));
	TRY(lx_norm(h, NULL, "v2a.kv_norm_in", v, v->x, v->h2, v->avsst, v->av, vm, v->ntok_rows, 3,
	            2, err));
	TRY(lx_cross(h, "audio_to_video_attn", DIT_LX_A2V, v, a, v->h, a->h, ps->ws[LX_AVQ],
	             ps->ws[LX_AVKV], ps->ws[LX_AVO], err));
	return lx_cross(h, "video_to_audio_attn", DIT_LX_V2A, a, v, a->h2, v->h2, ps->ws[LX_VAQ],
	                ps->ws[LX_VAKV], ps->ws[LX_VAO], err);
}

static dit_status lx_ff(const lx_ctx *h, const lx_stream *s, const dit_task_opts *last,
                        dit_error *err)
{
	int64_t L = s->L, D = s->D, F = s->F, mld = h->c->ada_rows * D;
	int bias = s->a ? h->c->aux_ff_bias != 0 : h->c->ff_bias != 0;
	TRY(lx_norm(h, NULL, s->a ? "audio_norm3" : "norm3", s, s->x, s->h, s->sst, s->e0, mld,
	            s->ntok_rows, 3, 4, err));
	TRY(lx_linear(h, NULL, s->a ? "audio_ff.0" : "ff.0", s->h, 0, D, s->f, 0, F, L, F, D,
	              s->ff1w, bias ? s->ff1b : -1, DIT_ACT_GELU_TANH, err));
	TRY(lx_linear(h, NULL, s->a ? "audio_ff.2" : "ff.2", s->f, 0, F, s->y, 0, D, L, D, F,
	              s->ff2w, bias ? s->ff2b : -1, DIT_ACT_NONE, err));
	return lx_add(h, last, s->a ? "audio_ff.residual" : "ff.residual", s, s->x, s->y, s->sst,
	              s->e0, mld, s->ntok_rows, 5, err);
}

static dit_status lx_block_submit(dit_graph *g, int i, int p, int64_t b, const dit_task_opts *first,
                                  const dit_task_opts *last, dit_error *err)
{
	(void)i;
	lx_ctx h = lx_ctx_for(g, p);
	lx_use_block(&h, b);
	int skip = dit_graph_skips_self(g, p, b); /* STG: bit 0 video, bit 1 audio */
	TRY(lx_self(&h, &h.s[0], first, skip & 1, err));
	TRY(lx_text(&h, &h.s[0], err));
	if (h.audio) {
		TRY(lx_self(&h, &h.s[1], NULL, skip & 2, err));
		TRY(lx_text(&h, &h.s[1], err));
		if (!g->skip_cross[p]) /* the isolated-modality pass has none */
			TRY(lx_av(&h, err));
		TRY(lx_ff(&h, &h.s[0], NULL, err));
		return lx_ff(&h, &h.s[1], last, err);
	}
	return lx_ff(&h, &h.s[0], last, err);
}

const dit_block_kind dit_block_ltx_av = {"ltx_av", lx_block_submit, -1};

/* ------------------------------------------------------------------ stages */

static void lx_workspace(const dit_hparams *c, const dit_grid *grid, int64_t time_rows,
                         dit_ws_spec *ws)
{
	int64_t Lv = grid->tokens, La = grid->aux_t, Lt = c->text_len, D = c->dim, Da = c->aux_dim;
	int64_t H = c->num_heads, F = c->ffn_dim, Fa = c->aux_ffn_dim, nr = c->ada_rows;
	int64_t nta = grid->aux_time_rows > 0 ? grid->aux_time_rows : 1, A = c->aux_in;
	size_t f = sizeof(float), dbl = sizeof(double);
	int64_t lmax = lx_max(lx_max(Lv, La), Lt);
	ws->pass[LX_AX] = (dit_ws_buf){La * Da, f, "audio_x", 0, 0};
	ws->pass[LX_HV] = (dit_ws_buf){Lv * D, f, "h", 0, 0};
	ws->pass[LX_HV2] = (dit_ws_buf){Lv * D, f, "h2", 0, 0};
	ws->pass[LX_HA] = (dit_ws_buf){La * Da, f, "audio_h", 0, 0};
	ws->pass[LX_HA2] = (dit_ws_buf){La * Da, f, "audio_h2", 0, 0};
	ws->pass[LX_QKV] = (dit_ws_buf){Lv * 3 * D, f, "qkv", 0, 1};
	ws->pass[LX_AQKV] = (dit_ws_buf){La * 3 * Da, f, "audio_qkv", 0, 1};
	ws->pass[LX_O] = (dit_ws_buf){Lv * D, f, "o", 0, 0};
	ws->pass[LX_AO] = (dit_ws_buf){La * Da, f, "audio_o", 0, 0};
	ws->pass[LX_Y] = (dit_ws_buf){Lv * D, f, "y", 0, 0};
	ws->pass[LX_AY] = (dit_ws_buf){La * Da, f, "audio_y", 0, 0};
	ws->pass[LX_KV] = (dit_ws_buf){Lt * 2 * D, f, "text_kv", 0, 1};
	ws->pass[LX_AKV] = (dit_ws_buf){Lt * 2 * Da, f, "audio_text_kv", 0, 1};
	ws->pass[LX_AVQ] = (dit_ws_buf){Lv * Da, f, "a2v_q", 0, 0};
	ws->pass[LX_AVKV] = (dit_ws_buf){La * 2 * Da, f, "a2v_kv", 0, 1};
	ws->pass[LX_AVO] = (dit_ws_buf){Lv * Da, f, "a2v_o", 0, 0};
	ws->pass[LX_VAQ] = (dit_ws_buf){La * Da, f, "v2a_q", 0, 0};
	ws->pass[LX_VAKV] = (dit_ws_buf){Lv * 2 * Da, f, "v2a_kv", 0, 1};
	ws->pass[LX_VAO] = (dit_ws_buf){La * Da, f, "v2a_o", 0, 0};
	if (c->gated_attn) {
		ws->pass[LX_GL] = (dit_ws_buf){Lv * H, f, "gate_logits", 0, 0};
		ws->pass[LX_AGL] = (dit_ws_buf){La * H, f, "audio_gate_logits", 0, 0};
	}
	ws->pass[LX_F] = (dit_ws_buf){Lv * F, f, "mlp", 0, 0};
	ws->pass[LX_AF] = (dit_ws_buf){La * Fa, f, "audio_mlp", 0, 0};
	ws->pass[LX_CTXV] = (dit_ws_buf){Lt * D, f, "context_v", 0, 0};
	ws->pass[LX_CTXA] = (dit_ws_buf){Lt * Da, f, "context_a", 0, 0};
	ws->pass[LX_ACTX] = (dit_ws_buf){Lt * c->aux_text_dim, f, "audio_context", 0, 1};
	if (!c->caption_outside)
		ws->pass[LX_CAPH] = (dit_ws_buf){Lt * lx_max(D, Da), f, "caption_hidden", 0, 0};
	if (c->ca_adaln) {
		ws->pass[LX_MCTX] = (dit_ws_buf){Lt * D, f, "context_mod", 0, 0};
		ws->pass[LX_AMCTX] = (dit_ws_buf){Lt * Da, f, "audio_context_mod", 0, 0};
	}
	ws->pass[LX_ALAT] = (dit_ws_buf){La * A, f, "audio_tokens_in", 0, 1};
	ws->pass[LX_ATOK] = (dit_ws_buf){La * c->aux_out, f, "audio_tokens", 0, 0};
	ws->pass[LX_AOUT] = (dit_ws_buf){La * c->aux_out, f, "audio_out", 0, 1};
	ws->pass[LX_S_ATTN] =
	    (dit_ws_buf){(int64_t)dit_cpu_attention_scratch(lx_max(c->head_dim, c->aux_head_dim)),
	                 f, "scratch_attn", 0, 0};
	ws->pass[LX_S_PATCH] = (dit_ws_buf){Lv * c->in_dim, f, "scratch_patch", 0, 0};
	ws->pass[LX_S_LIN] = (dit_ws_buf){
	    dit_linear_scratch(lmax, lx_max(F, lx_max(Fa, c->text_dim))), f, "scratch_lin", 0, 0};
	ws->pass[LX_S_HEAD] = (dit_ws_buf){Lv * (D + c->out_dim), f, "scratch_head", 0, 0};
	int64_t ntv = time_rows, nt = lx_max(ntv, nta);
	ws->shared[LS_EV] = (dit_ws_buf){ntv * D, f, "t_emb", 0, 0};
	ws->shared[LS_E0V] = (dit_ws_buf){ntv * nr * D, f, "t_tables", 0, 0};
	ws->shared[LS_AVV] = (dit_ws_buf){ntv * 4 * D, f, "t_av", 0, 0};
	ws->shared[LS_GV] = (dit_ws_buf){D, f, "t_a2v_gate", 0, 0};
	ws->shared[LS_PV] = (dit_ws_buf){2 * D, f, "t_prompt", 0, 0};
	ws->shared[LS_EA] = (dit_ws_buf){nta * Da, f, "audio_t_emb", 0, 0};
	ws->shared[LS_E0A] = (dit_ws_buf){nta * nr * Da, f, "audio_t_tables", 0, 0};
	ws->shared[LS_AVA] = (dit_ws_buf){nta * 4 * Da, f, "audio_t_av", 0, 0};
	ws->shared[LS_GA] = (dit_ws_buf){Da, f, "t_v2a_gate", 0, 0};
	ws->shared[LS_PA] = (dit_ws_buf){2 * Da, f, "audio_t_prompt", 0, 0};
	ws->shared[LS_EJ] = (dit_ws_buf){nt * lx_max(D, Da), f, "t_unused", 0, 0};
	ws->shared[LS_S_TIME] =
	    (dit_ws_buf){dit_time_embed_scratch(nt < DIT_TIME_MAX_T ? nt : DIT_TIME_MAX_T,
	                                        c->freq_dim, lx_max(D, Da)),
	                 f, "scratch_time", 0, 0};
	ws->shared[LS_ROPE_V] = (dit_ws_buf){Lv * D, dbl, "rope", 0, 0};
	ws->shared[LS_ROPE_VX] = (dit_ws_buf){Lv * Da, dbl, "rope_cross", 0, 0};
	ws->shared[LS_ROPE_A] = (dit_ws_buf){La * Da, dbl, "audio_rope", 0, 0};
	ws->shared[LS_ROPE_AX] = (dit_ws_buf){La * Da, dbl, "audio_rope_cross", 0, 0};
	ws->shared[LS_ALAT] = (dit_ws_buf){La * A, f, "audio_latent", 0, 0};
	ws->shared[LS_VPOS] = (dit_ws_buf){3 * Lv * 2, dbl, "video_positions", 0, 0};
	ws->shared[LS_APOS] = (dit_ws_buf){La * 2, dbl, "audio_positions", 0, 0};
}

/* The RoPE table of nax axes of the positions pos (doubles [>= nax, L, 2]) over inner
 * features in heads (a CPU task). */
static dit_status lx_rope(dit_graph *g, starpu_data_handle_t pos, starpu_data_handle_t tab,
                          int64_t L, int nax, const double *max_pos, int64_t inner,
                          const char *name, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	dit_rope_split_args a = {.fp = {{L, inner, nax, 0}},
	                         .L = L,
	                         .naxes = nax,
	                         .inner = inner,
	                         .heads = c->num_heads,
	                         .theta = c->rope_theta};
	for (int i = 0; i < nax; i++)
		a.max_pos[i] = max_pos[i];
	starpu_data_handle_t h[] = {pos, tab};
	enum starpu_data_access_mode md[] = {STARPU_R, STARPU_W};
	return dit_graph_insert(g, &dit_cl_rope_split, name, &a, sizeof a, 0, 2, h, md, &on_cpu,
	                        err);
}

/* The default token positions (the official patchifiers): a CPU task per stream. */
static dit_status lx_positions(dit_graph *g, dit_error *err)
{
	const dit_grid *gr = &g->grid;
	const dit_model_desc *d = g->w->desc;
	dit_positions_args a = {.fp = {{gr->tokens, gr->aux_t, 0, 0}},
	                        .f = gr->f,
	                        .h = gr->h,
	                        .w = gr->w,
	                        .t = gr->aux_t,
	                        .fps = g->fps > 0 ? g->fps : 24.0};
	for (int i = 0; i < 3; i++)
		a.stride[i] = d->latent.vae_stride[i];
	for (int s = 0; s < 2; s++) {
		if (g->pos_given[s] || (s == 1 && gr->aux_t == 0))
			continue;
		a.audio = s;
		starpu_data_handle_t h[] = {g->ws[s ? LS_APOS : LS_VPOS]};
		enum starpu_data_access_mode md[] = {STARPU_W};
		TRY(dit_graph_insert(g, &dit_cl_ltx_positions, s ? "audio_positions" : "positions",
		                     &a, sizeof a, 0, 1, h, md, &on_cpu, err));
	}
	return DIT_OK;
}

/* The text features a stream's blocks read: the caption projection (LTX-2 19B) or the
 * input as it is. */
static dit_status lx_context(const lx_ctx *h, const lx_stream *s, starpu_data_handle_t in,
                             dit_error *err)
{
	const dit_hparams *c = h->c;
	int64_t Lt = h->Lt, D = s->D, k = s->a ? c->aux_text_dim : c->text_dim;
	if (c->caption_outside) {
		dit_copy2d_args ca = {.fp = {{1, Lt * D, 0, 0}},
		                      .count = 1,
		                      .len = Lt * D,
		                      .src_ld = Lt * D,
		                      .dst_ld = Lt * D};
		return dit_op_copy2d(h->g, NULL, s->a ? "audio_context" : "context", &ca, s->ctx,
		                     in, err);
	}
	int w1 = s->a ? DIT_LG_ACAP1_W : DIT_LG_CAP1_W, w2 = s->a ? DIT_LG_ACAP2_W : DIT_LG_CAP2_W;
	starpu_data_handle_t hid = h->ps->ws[LX_CAPH];
	TRY(lx_linear(h, NULL, "caption_projection", in, 0, k, hid, 0, D, Lt, D, k, w1, w1 + 1,
	              DIT_ACT_GELU_TANH, err));
	return lx_linear(h, NULL, "caption_projection", hid, 0, D, s->ctx, 0, D, Lt, D, D, w2,
	                 w2 + 1, DIT_ACT_NONE, err);
}

/* Once per run: positions and RoPE tables (shared), each pass's text features. */
static dit_status lx_text_stage(dit_graph *g, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	const dit_grid *gr = &g->grid;
	starpu_data_handle_t *ws = g->ws;
	TRY(lx_positions(g, err));
	double vmax[3] = {(double)c->max_pos[0], (double)c->max_pos[1], (double)c->max_pos[2]};
	double amax[1] = {(double)c->aux_max_pos};
	double xmax[1] = {(double)lx_max(c->max_pos[0], c->aux_max_pos)};
	TRY(lx_rope(g, ws[LS_VPOS], ws[LS_ROPE_V], gr->tokens, 3, vmax, c->dim, "rope", err));
	if (gr->aux_t > 0) {
		TRY(lx_rope(g, ws[LS_APOS], ws[LS_ROPE_A], gr->aux_t, 1, amax, c->aux_dim,
		            "audio_rope", err));
		TRY(lx_rope(g, ws[LS_VPOS], ws[LS_ROPE_VX], gr->tokens, 1, xmax, c->aux_cross_dim,
		            "rope_cross", err));
		TRY(lx_rope(g, ws[LS_APOS], ws[LS_ROPE_AX], gr->aux_t, 1, xmax, c->aux_cross_dim,
		            "audio_rope_cross", err));
	}
	for (int p = 0; p < g->npasses; p++) {
		lx_ctx h = lx_ctx_for(g, p);
		lx_use_globals(&h);
		TRY(lx_context(&h, &h.s[0], h.ps->context, err));
		if (h.audio)
			TRY(lx_context(&h, &h.s[1], h.ps->ws[LX_ACTX], err));
	}
	return DIT_OK;
}

/* An AdaLayerNormSingle (globals' AdaLN ad) of nt timesteps t (nt 1: one vector) into
 * e [nt, W] and e0 [nt, k W]. */
static dit_status lx_adaln(dit_graph *g, int ad, int64_t W, int64_t k, const double *t, int64_t nt,
                           starpu_data_handle_t e, starpu_data_handle_t e0, const char *name,
                           dit_error *err)
{
	const dit_model *m = g->model;
	const int64_t *off = m->glob.off;
	for (int64_t r0 = 0; r0 < nt; r0 += DIT_TIME_MAX_T) {
		int64_t n = nt - r0 < DIT_TIME_MAX_T ? nt - r0 : DIT_TIME_MAX_T;
		dit_time_embed_args a = {.fp = {{W, m->cfg.freq_dim, nt > 1 ? n : 0, k}},
		                         .dim = W,
		                         .freq_dim = m->cfg.freq_dim,
		                         .t = t[0],
		                         .w0 = off[DIT_LTX_ADALN(ad, DIT_LN_L1_W)],
		                         .b0 = off[DIT_LTX_ADALN(ad, DIT_LN_L1_B)],
		                         .w2 = off[DIT_LTX_ADALN(ad, DIT_LN_L2_W)],
		                         .b2 = off[DIT_LTX_ADALN(ad, DIT_LN_L2_B)],
		                         .wp = off[DIT_LTX_ADALN(ad, DIT_LN_P_W)],
		                         .bp = off[DIT_LTX_ADALN(ad, DIT_LN_P_B)],
		                         .nproj = k};
		if (nt > 1) {
			a.nt = n;
			a.row0 = r0;
			for (int64_t i = 0; i < n; i++)
				a.ts[i] = t[r0 + i];
		}
		enum starpu_data_access_mode part = r0 == 0 ? STARPU_W : STARPU_RW;
		starpu_data_handle_t h[] = {m->h_globals, e, e0, g->ws[LS_S_TIME]};
		enum starpu_data_access_mode md[] = {STARPU_R, part, part, STARPU_SCRATCH};
		TRY(dit_graph_insert(g, &dit_cl_time_embed, name, &a, sizeof a, 0, NB(h), h, md,
		                     NULL, err));
	}
	return DIT_OK;
}

/* Each step: the AdaLN tables of both streams. t: the video tokens' timesteps (sigma x
 * ts_mult, nt distinct), g->aux_ts the audio ones, g->sigma the per-sample sigmas. */
static dit_status lx_time(dit_graph *g, const double *t, int64_t nt, int64_t mod_rows,
                          dit_error *err)
{
	(void)mod_rows;
	const dit_hparams *c = &g->model->cfg;
	starpu_data_handle_t *ws = g->ws;
	int64_t D = c->dim, Da = c->aux_dim, nr = c->ada_rows;
	int audio = g->grid.aux_t > 0, pr = c->ca_adaln && c->prompt_adaln;
	double sv = g->sigma[0] * c->ts_mult, sa = g->sigma[1] * c->ts_mult;
	double gv = g->sigma[0] * c->av_ts_mult, ga = g->sigma[1] * c->av_ts_mult;
	TRY(lx_adaln(g, DIT_LT_V, D, nr, t, nt, ws[LS_EV], ws[LS_E0V], "adaln_single", err));
	if (pr)
		TRY(lx_adaln(g, DIT_LT_VP, D, 2, &sv, 1, ws[LS_EJ], ws[LS_PV], "prompt_adaln",
		             err));
	if (!audio)
		return DIT_OK;
	TRY(lx_adaln(g, DIT_LT_V_AVSS, D, 4, t, nt, ws[LS_EJ], ws[LS_AVV], "av_ca_video_ss", err));
	TRY(lx_adaln(g, DIT_LT_A2V_GATE, D, 1, &ga, 1, ws[LS_EJ], ws[LS_GV], "a2v_gate", err));
	const double *at = g->aux_ts ? g->aux_ts : &sa;
	int64_t ant = g->aux_ts ? g->aux_nt : 1;
	TRY(lx_adaln(g, DIT_LT_A, Da, nr, at, ant, ws[LS_EA], ws[LS_E0A], "audio_adaln", err));
	if (pr)
		TRY(lx_adaln(g, DIT_LT_AP, Da, 2, &sa, 1, ws[LS_EJ], ws[LS_PA],
		             "audio_prompt_adaln", err));
	TRY(lx_adaln(g, DIT_LT_A_AVSS, Da, 4, at, ant, ws[LS_EJ], ws[LS_AVA], "av_ca_audio_ss",
	             err));
	return lx_adaln(g, DIT_LT_V2A_GATE, Da, 1, &gv, 1, ws[LS_EJ], ws[LS_GA], "v2a_gate", err);
}

/* [8, T, 16] <-> tokens [T, 8 x 16]: one copy per channel. */
static dit_status lx_audio_layout(dit_graph *g, int to_tokens, starpu_data_handle_t dst,
                                  starpu_data_handle_t src, dit_error *err)
{
	const dit_stream_desc *a = g->w->desc->aux;
	int64_t T = g->grid.aux_t, C = a->channels, M = a->mel;
	for (int64_t ch = 0; ch < C; ch++) {
		dit_copy2d_args ca = {.fp = {{T, M, 0, 0}}, .count = T, .len = M};
		if (to_tokens) {
			ca.src_off = ch * T * M;
			ca.src_ld = M;
			ca.dst_off = ch * M;
			ca.dst_ld = C * M;
		} else {
			ca.src_off = ch * M;
			ca.src_ld = C * M;
			ca.dst_off = ch * T * M;
			ca.dst_ld = M;
		}
		TRY(dit_op_copy2d(g, NULL, to_tokens ? "audio_patchify" : "audio_unpatchify", &ca,
		                  dst, src, err));
	}
	return DIT_OK;
}

static dit_status lx_embed(dit_graph *g, int p, starpu_data_handle_t latent, dit_error *err)
{
	lx_ctx h = lx_ctx_for(g, p);
	lx_use_globals(&h);
	const dit_pass *ps = h.ps;
	const dit_grid *gr = &g->grid;
	TRY(dit_op_patch_embed(g, "patchify_proj", h.off[DIT_LG_PATCH_W], h.off[DIT_LG_PATCH_B],
	                       latent, ps->x, ps->ws[LX_S_PATCH], err));
	if (h.c->keyframes) { /* the first latent frame's tokens */
		dit_add_rows_args ka = {.fp = {{gr->th * gr->tw, h.c->dim, 0, 0}},
		                        .r0 = 0,
		                        .rows = gr->th * gr->tw,
		                        .dim = h.c->dim,
		                        .ld = h.c->dim,
		                        .v_off = h.off[DIT_LG_KEYFRAME]};
		TRY(dit_op_add_rows(g, NULL, "keyframes_embedding", &ka, ps->x, h.wb, err));
	}
	if (!h.audio)
		return DIT_OK;
	TRY(lx_audio_layout(g, 1, ps->ws[LX_ALAT], g->ws[LS_ALAT], err));
	return lx_linear(&h, NULL, "audio_patchify_proj", ps->ws[LX_ALAT], 0, h.c->aux_in,
	                 ps->ws[LX_AX], 0, h.c->aux_dim, gr->aux_t, h.c->aux_dim, h.c->aux_in,
	                 DIT_LG_APATCH_W, DIT_LG_APATCH_B, DIT_ACT_NONE, err);
}

/* The output heads: LayerNorm without affine, (shift, scale) = table + embedded
 * timestep, proj_out; the video unpatchified by the head codelet, the audio by copies. */
static dit_status lx_head(dit_graph *g, int p, dit_error *err)
{
	lx_ctx h = lx_ctx_for(g, p);
	lx_use_globals(&h);
	const dit_hparams *c = h.c;
	const dit_grid *gr = &g->grid;
	const dit_pass *ps = h.ps;
	dit_head_args ha = {.fp = {{gr->tokens, c->dim, c->out_dim, 0}},
	                    .c = c->out_dim,
	                    .tf = gr->tf,
	                    .th = gr->th,
	                    .tw = gr->tw,
	                    .pt = 1,
	                    .ph = 1,
	                    .pw = 1,
	                    .dim = c->dim,
	                    .eps = (float)c->eps,
	                    .w_off = h.off[DIT_LG_OUT_W],
	                    .b_off = h.off[DIT_LG_OUT_B],
	                    .mod_off = h.off[DIT_LG_SST],
	                    .mod_ld = c->dim,
	                    .mod_rows = g->mod_rows};
	starpu_data_handle_t hh[] = {g->model->h_globals, ps->x, g->ws[LS_EV], ps->out,
	                             ps->ws[LX_S_HEAD]};
	enum starpu_data_access_mode mh[] = {STARPU_R, STARPU_R, STARPU_R, STARPU_W,
	                                     STARPU_SCRATCH};
	TRY(dit_graph_insert(g, &dit_cl_head, "head", &ha, sizeof ha,
	                     2.0 * gr->tokens * c->dim * c->out_dim, NB(hh), hh, mh, NULL, err));
	if (!h.audio)
		return DIT_OK;
	const lx_stream *a = &h.s[1];
	int64_t Da = c->aux_dim;
	dit_layernorm_args la = {.fp = {{a->L, Da, 0, 1}},
	                         .rows = a->L,
	                         .dim = Da,
	                         .eps = (float)c->eps,
	                         .mod = 1,
	                         .shift_off = h.off[DIT_LG_ASST],
	                         .scale_off = h.off[DIT_LG_ASST] + Da,
	                         .mod_ld = Da,
	                         .mod_rows = g->aux_mod_rows};
	TRY(dit_op_layernorm(g, NULL, "audio_norm_out", &la, a->x, a->h, h.wb, g->ws[LS_EA], err));
	TRY(lx_linear(&h, NULL, "audio_proj_out", a->h, 0, Da, ps->ws[LX_ATOK], 0, c->aux_out, a->L,
	              c->aux_out, Da, DIT_LG_AOUT_W, DIT_LG_AOUT_B, DIT_ACT_NONE, err));
	return lx_audio_layout(g, 0, ps->ws[LX_AOUT], ps->ws[LX_ATOK], err);
}

const dit_stage_kind dit_stages_ltx = {
    .name = "ltx",
    .workspace = lx_workspace,
    .text = lx_text_stage,
    .time = lx_time,
    .embed = lx_embed,
    .head = lx_head,
};
