/* The LTX-2 forward outside its blocks (ltx_core LTXModel, TransformerArgsPreprocessor):
 * the stages "ltx": the work buffers, once per run the default positions, the split
 * RoPE tables (in float64) and the text features (the caption projection of LTX-2 19B),
 * each step the eight AdaLN tables (the blocks', the prompt's and the cross-stream scale,
 * shift and gates), then per pass patchify (video tokens (f H + h) W + w, audio tokens t
 * with features c 16 + m; LTX-2.5's keyframe embedding on the first latent frame) and
 * the two output heads (LayerNorm without affine, shift and scale from the table plus
 * the embedded timestep, proj_out). */
#include <string.h>

#include "dit_cpu.h"
#include "ltx_priv.h"

/* LTX-2's work buffers: each stream's per-pass activations, the scratch of its ops,
 * and the time and RoPE tables the passes share. Long as a table is (one buffer a
 * line, about a hundred): cut in pieces it would scatter what the planner counts. */
static void lx_workspace(const dit_hparams *c, const dit_grid *grid, int64_t time_rows,
                         dit_ws_spec *ws)
{
	int64_t Lv = grid->tokens, La = grid->aux_t, Lt = c->text_len, D = c->dim, Da = c->aux_dim;
	int64_t H = c->num_heads, F = c->ffn_dim, Fa = c->aux_ffn_dim, nr = c->ada_rows;
	int64_t nta = grid->aux_time_rows > 0 ? grid->aux_time_rows : 1, A = c->aux_in;
	size_t f = sizeof(float), dbl = sizeof(double);
	size_t a = dit_grid_act_size(grid); /* a block's activations */
	/* token chunks: the video stream's per-token buffers hold a chunk of T rows (its row
	 * tiles), zeroed first (the last, shorter chunk writes part of them); self-attention's
	 * k/v [Lv, 2D] and v2a's [Lv, 2Da] stay whole, written a chunk's rows at a time */
	int64_t T = dit_grid_chunk(grid), ck = T > 0;
	if (!ck)
		T = Lv;
	int64_t rt = ck ? T : 0, lmax = dit_ltx_max(dit_ltx_max(T, La), Lt);
	ws->pass[LX_AX] = (dit_ws_buf){La * Da, f, "audio_x", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->pass[LX_HV] = (dit_ws_buf){T * D, a, "h", rt, ck, DIT_LIVE_BLOCK, ck};
	ws->pass[LX_HV2] = (dit_ws_buf){T * D, a, "h2", rt, ck, DIT_LIVE_BLOCK, ck};
	ws->pass[LX_HA] = (dit_ws_buf){La * Da, a, "audio_h", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_HA2] = (dit_ws_buf){La * Da, a, "audio_h2", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_QKV] = ck ? (dit_ws_buf){Lv * 2 * D, a, "self_kv", 0, 1, DIT_LIVE_BLOCK, 0}
	                      : (dit_ws_buf){Lv * 3 * D, a, "qkv", 0, 1, DIT_LIVE_BLOCK, 0};
	if (ck)
		ws->pass[LX_VQ] = (dit_ws_buf){T * D, a, "q", rt, 1, DIT_LIVE_BLOCK, 1};
	ws->pass[LX_AQKV] = (dit_ws_buf){La * 3 * Da, a, "audio_qkv", 0, 1, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_O] = (dit_ws_buf){T * D, a, "o", rt, ck, DIT_LIVE_BLOCK, ck};
	ws->pass[LX_AO] = (dit_ws_buf){La * Da, a, "audio_o", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_Y] = (dit_ws_buf){T * D, a, "y", rt, ck, DIT_LIVE_BLOCK, ck};
	ws->pass[LX_AY] = (dit_ws_buf){La * Da, a, "audio_y", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_KV] = (dit_ws_buf){Lt * 2 * D, a, "text_kv", 0, 1, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_AKV] = (dit_ws_buf){Lt * 2 * Da, a, "audio_text_kv", 0, 1, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_AVQ] = (dit_ws_buf){T * Da, a, "a2v_q", rt, ck, DIT_LIVE_BLOCK, ck};
	ws->pass[LX_AVKV] = (dit_ws_buf){La * 2 * Da, a, "a2v_kv", 0, 1, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_AVO] = (dit_ws_buf){T * Da, a, "a2v_o", rt, ck, DIT_LIVE_BLOCK, ck};
	ws->pass[LX_VAQ] = (dit_ws_buf){La * Da, a, "v2a_q", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_VAKV] = (dit_ws_buf){Lv * 2 * Da, a, "v2a_kv", 0, 1, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_VAO] = (dit_ws_buf){La * Da, a, "v2a_o", 0, 0, DIT_LIVE_BLOCK, 0};
	if (c->gated_attn) {
		ws->pass[LX_GL] = (dit_ws_buf){T * H, a, "gate_logits", rt, ck, DIT_LIVE_BLOCK, ck};
		ws->pass[LX_AGL] =
		    (dit_ws_buf){La * H, a, "audio_gate_logits", 0, 0, DIT_LIVE_BLOCK, 0};
	}
	ws->pass[LX_F] = (dit_ws_buf){T * F, a, "mlp", rt, ck, DIT_LIVE_BLOCK, ck};
	ws->pass[LX_AF] = (dit_ws_buf){La * Fa, a, "audio_mlp", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_CTXV] = (dit_ws_buf){Lt * D, f, "context_v", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->pass[LX_CTXA] = (dit_ws_buf){Lt * Da, f, "context_a", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->pass[LX_ACTX] =
	    (dit_ws_buf){Lt * c->aux_text_dim, f, "audio_context", 0, 1, DIT_LIVE_FORWARD, 0};
	if (!c->caption_outside)
		ws->pass[LX_CAPH] = (dit_ws_buf){Lt * dit_ltx_max(D, Da), f, "caption_hidden", 0, 0,
		                                 DIT_LIVE_BLOCK,          0};
	if (c->ca_adaln) {
		ws->pass[LX_MCTX] = (dit_ws_buf){Lt * D, f, "context_mod", 0, 0, DIT_LIVE_BLOCK, 0};
		ws->pass[LX_AMCTX] =
		    (dit_ws_buf){Lt * Da, f, "audio_context_mod", 0, 0, DIT_LIVE_BLOCK, 0};
	}
	ws->pass[LX_ALAT] = (dit_ws_buf){La * A, f, "audio_tokens_in", 0, 1, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_ATOK] =
	    (dit_ws_buf){La * c->aux_out, f, "audio_tokens", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_AOUT] =
	    (dit_ws_buf){La * c->aux_out, f, "audio_out", 0, 1, DIT_LIVE_FORWARD, 0};
	ws->pass[LX_S_ATTN] = (dit_ws_buf){
	    (int64_t)dit_cpu_attention_scratch(dit_ltx_max(c->head_dim, c->aux_head_dim)),
	    f,
	    "scratch_attn",
	    0,
	    0,
	    DIT_LIVE_BLOCK,
	    0};
	ws->pass[LX_S_PATCH] =
	    (dit_ws_buf){Lv * c->in_dim, f, "scratch_patch", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[LX_S_LIN] =
	    (dit_ws_buf){dit_linear_scratch(lmax, dit_ltx_max(F, dit_ltx_max(Fa, c->text_dim))),
	                 f,
	                 "scratch_lin",
	                 0,
	                 0,
	                 DIT_LIVE_BLOCK,
	                 0};
	ws->pass[LX_S_HEAD] = (dit_ws_buf){
	    dit_head_scratch(Lv, D, c->out_dim, rt), f, "scratch_head", 0, 0, DIT_LIVE_BLOCK, 0};
	int64_t ntv = time_rows, nt = dit_ltx_max(ntv, nta);
	ws->shared[LS_EV] = (dit_ws_buf){ntv * D, f, "t_emb", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_E0V] = (dit_ws_buf){ntv * nr * D, f, "t_tables", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_AVV] = (dit_ws_buf){ntv * 4 * D, f, "t_av", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_GV] = (dit_ws_buf){D, f, "t_a2v_gate", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_PV] = (dit_ws_buf){2 * D, f, "t_prompt", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_EA] = (dit_ws_buf){nta * Da, f, "audio_t_emb", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_E0A] =
	    (dit_ws_buf){nta * nr * Da, f, "audio_t_tables", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_AVA] = (dit_ws_buf){nta * 4 * Da, f, "audio_t_av", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_GA] = (dit_ws_buf){Da, f, "t_v2a_gate", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_PA] = (dit_ws_buf){2 * Da, f, "audio_t_prompt", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_EJ] =
	    (dit_ws_buf){nt * dit_ltx_max(D, Da), f, "t_unused", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_S_TIME] =
	    (dit_ws_buf){dit_time_embed_scratch(nt < DIT_TIME_MAX_T ? nt : DIT_TIME_MAX_T,
	                                        c->freq_dim, dit_ltx_max(D, Da)),
	                 f,
	                 "scratch_time",
	                 0,
	                 0,
	                 DIT_LIVE_FORWARD,
	                 0};
	ws->shared[LS_ROPE_V] = (dit_ws_buf){Lv * D, dbl, "rope", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_ROPE_VX] =
	    (dit_ws_buf){Lv * Da, dbl, "rope_cross", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_ROPE_A] = (dit_ws_buf){La * Da, dbl, "audio_rope", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_ROPE_AX] =
	    (dit_ws_buf){La * Da, dbl, "audio_rope_cross", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_ALAT] = (dit_ws_buf){La * A, f, "audio_latent", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_VPOS] =
	    (dit_ws_buf){3 * Lv * 2, dbl, "video_positions", 0, 0, DIT_LIVE_FORWARD, 0};
	ws->shared[LS_APOS] =
	    (dit_ws_buf){La * 2, dbl, "audio_positions", 0, 0, DIT_LIVE_FORWARD, 0};
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
	return dit_graph_insert(g, &dit_cl_rope_split, name, &a, sizeof a, 0, 2, h, md, &lx_on_cpu,
	                        err);
}

/* The default token positions (the official patchifiers): a CPU task per stream. */
static dit_status lx_positions(dit_graph *g, dit_error *err)
{
	const dit_grid *gr = &g->grid;
	const dit_model_desc *d = g->w.desc;
	const dit_ltx_state *ls = g->fam;
	dit_positions_args a = {.fp = {{gr->tokens, gr->aux_t, 0, 0}},
	                        .f = gr->f,
	                        .h = gr->h,
	                        .w = gr->w,
	                        .t = gr->aux_t,
	                        .fps = ls->fps > 0 ? ls->fps : 24.0};
	for (int i = 0; i < 3; i++)
		a.stride[i] = d->latent.vae_stride[i];
	for (int s = 0; s < 2; s++) {
		if (ls->pos_given[s] || (s == 1 && gr->aux_t == 0))
			continue;
		a.audio = s;
		starpu_data_handle_t h[] = {g->ws[s ? LS_APOS : LS_VPOS]};
		enum starpu_data_access_mode md[] = {STARPU_W};
		TRY(dit_graph_insert(g, &dit_cl_ltx_positions, s ? "audio_positions" : "positions",
		                     &a, sizeof a, 0, 1, h, md, &lx_on_cpu, err));
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
	TRY(dit_ltx_linear(h, NULL, "caption_projection", in, 0, k, hid, 0, D, Lt, D, k, w1, w1 + 1,
	                   DIT_ACT_GELU_TANH, err));
	return dit_ltx_linear(h, NULL, "caption_projection", hid, 0, D, s->ctx, 0, D, Lt, D, D, w2,
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
	double xmax[1] = {(double)dit_ltx_max(c->max_pos[0], c->aux_max_pos)};
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
		g->cur_pass = p;
		lx_ctx h = dit_ltx_ctx_for(g, p);
		dit_ltx_use_globals(&h);
		TRY(lx_context(&h, &h.s[0], h.ps->context, err));
		if (h.audio)
			TRY(lx_context(&h, &h.s[1], h.ps->ws[LX_ACTX], err));
	}
	g->cur_pass = -1;
	return DIT_OK;
}

/* An AdaLayerNormSingle (globals' AdaLN ad) of nt timesteps t (nt 1: one vector) into
 * e [nt, W] and e0 [nt, k W]. */
static dit_status lx_adaln(dit_graph *g, int ad, int64_t W, int64_t k, const double *t, int64_t nt,
                           starpu_data_handle_t e, starpu_data_handle_t e0, const char *name,
                           dit_error *err)
{
	const dit_graph_expert *m = g->model;
	dit_wview gv;
	dit_graph_globals_view(g, &gv);
	const int64_t *off = gv.off;
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
		starpu_data_handle_t h[] = {gv.slab, e, e0, g->ws[LS_S_TIME]};
		enum starpu_data_access_mode md[] = {STARPU_R, part, part, STARPU_SCRATCH};
		TRY(dit_graph_insert(g, &dit_cl_time_embed, name, &a, sizeof a, 0, NB(h), h, md,
		                     NULL, err));
	}
	return DIT_OK;
}

/* Each step: the AdaLN tables of both streams. t: the video tokens' timesteps (sigma x
 * ts_mult, nt distinct), the state's aux_ts the audio ones, its sigma the per-sample
 * sigmas. */
static dit_status lx_time(dit_graph *g, const double *t, int64_t nt, int64_t mod_rows,
                          dit_error *err)
{
	(void)mod_rows;
	const dit_hparams *c = &g->model->cfg;
	const dit_ltx_state *ls = g->fam;
	starpu_data_handle_t *ws = g->ws;
	int64_t D = c->dim, Da = c->aux_dim, nr = c->ada_rows;
	int audio = g->grid.aux_t > 0, pr = c->ca_adaln && c->prompt_adaln;
	double sv = ls->sigma[0] * c->ts_mult, sa = ls->sigma[1] * c->ts_mult;
	double gv = ls->sigma[0] * c->av_ts_mult, ga = ls->sigma[1] * c->av_ts_mult;
	TRY(lx_adaln(g, DIT_LT_V, D, nr, t, nt, ws[LS_EV], ws[LS_E0V], "adaln_single", err));
	if (pr)
		TRY(lx_adaln(g, DIT_LT_VP, D, 2, &sv, 1, ws[LS_EJ], ws[LS_PV], "prompt_adaln",
		             err));
	if (!audio)
		return DIT_OK;
	TRY(lx_adaln(g, DIT_LT_V_AVSS, D, 4, t, nt, ws[LS_EJ], ws[LS_AVV], "av_ca_video_ss", err));
	TRY(lx_adaln(g, DIT_LT_A2V_GATE, D, 1, &ga, 1, ws[LS_EJ], ws[LS_GV], "a2v_gate", err));
	const double *at = ls->aux_ts ? ls->aux_ts : &sa;
	int64_t ant = ls->aux_ts ? ls->aux_nt : 1;
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
	const dit_stream_desc *a = g->w.desc->aux;
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
	lx_ctx h = dit_ltx_ctx_for(g, p);
	dit_ltx_use_globals(&h);
	const dit_pass *ps = h.ps;
	const dit_grid *gr = &g->grid;
	TRY(dit_op_patch_embed(g, "patchify_proj", h.w.off[DIT_LG_PATCH_W], h.w.off[DIT_LG_PATCH_B],
	                       latent, ps->x, ps->ws[LX_S_PATCH], err));
	if (h.c->keyframes) { /* the first latent frame's tokens */
		dit_add_rows_args ka = {.fp = {{gr->th * gr->tw, h.c->dim, 0, 0}},
		                        .r0 = 0,
		                        .rows = gr->th * gr->tw,
		                        .dim = h.c->dim,
		                        .ld = h.c->dim,
		                        .v_off = h.w.off[DIT_LG_KEYFRAME]};
		TRY(dit_op_add_rows(g, NULL, "keyframes_embedding", &ka, ps->x, h.w.slab, err));
	}
	if (!h.audio)
		return DIT_OK;
	TRY(lx_audio_layout(g, 1, ps->ws[LX_ALAT], g->ws[LS_ALAT], err));
	return dit_ltx_linear(&h, NULL, "audio_patchify_proj", ps->ws[LX_ALAT], 0, h.c->aux_in,
	                      ps->ws[LX_AX], 0, h.c->aux_dim, gr->aux_t, h.c->aux_dim, h.c->aux_in,
	                      DIT_LG_APATCH_W, DIT_LG_APATCH_B, DIT_ACT_NONE, err);
}

/* The output heads: LayerNorm without affine, (shift, scale) = table + embedded
 * timestep, proj_out; the video unpatchified by the head codelet, the audio by copies. */
static dit_status lx_head(dit_graph *g, int p, dit_error *err)
{
	lx_ctx h = dit_ltx_ctx_for(g, p);
	dit_ltx_use_globals(&h);
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
	                    .w_off = h.w.off[DIT_LG_OUT_W],
	                    .b_off = h.w.off[DIT_LG_OUT_B],
	                    .mod_off = h.w.off[DIT_LG_SST],
	                    .mod_ld = c->dim,
	                    .mod_rows = g->mod_rows,
	                    .chunk = dit_grid_chunk(gr)};
	starpu_data_handle_t hh[] = {h.w.slab, ps->x, g->ws[LS_EV], ps->out, ps->ws[LX_S_HEAD]};
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
	                         .shift_off = h.w.off[DIT_LG_ASST],
	                         .scale_off = h.w.off[DIT_LG_ASST] + Da,
	                         .mod_ld = Da,
	                         .mod_rows = ((const dit_ltx_state *)g->fam)->aux_mod_rows};
	TRY(dit_op_layernorm(g, NULL, "audio_norm_out", &la, a->x, a->h, h.w.slab, g->ws[LS_EA],
	                     err));
	TRY(dit_ltx_linear(&h, NULL, "audio_proj_out", a->h, 0, Da, ps->ws[LX_ATOK], 0, c->aux_out,
	                   a->L, c->aux_out, Da, DIT_LG_AOUT_W, DIT_LG_AOUT_B, DIT_ACT_NONE, err));
	return lx_audio_layout(g, 0, ps->ws[LX_AOUT], ps->ws[LX_ATOK], err);
}

/* Both streams' sigma, for the next time tables. */
static void lx_sigma(dit_graph *g, double video, double audio)
{
	dit_ltx_state *ls = g->fam;
	ls->sigma[0] = video;
	ls->sigma[1] = audio;
}

const dit_stage_kind dit_stages_ltx = {
    .name = "ltx",
    .workspace = lx_workspace,
    .text = lx_text_stage,
    .time = lx_time,
    .embed = lx_embed,
    .head = lx_head,
    .state_bytes = sizeof(dit_ltx_state),
    .sigma = lx_sigma,
    .token_chunks = 1,
};

dit_ltx_state *dit_ltx_state_of(dit_graph *g)
{
	return g->stages == &dit_stages_ltx ? g->fam : NULL;
}
