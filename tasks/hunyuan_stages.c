/* HunyuanVideo's stages "hunyuan" around its blocks: the text and time embeddings, the
 * token refiner, the patch embedding and the final layer (tasks/hunyuan_priv.h). */
#include "hunyuan_priv.h"
#include "hunyuan_state.h"

static void hy_workspace(const dit_hparams *c, const dit_grid *grid, int64_t time_rows,
                         dit_ws_spec *ws)
{
	int64_t Li = grid->tokens, Lt = c->text_len, L = Li + Lt, D = c->dim, F = c->ffn_dim;
	int64_t hd = D / c->num_heads, P = c->patch[0] * c->patch[1] * c->patch[2];
	int64_t Fr = F > 4 * D ? F : 4 * D; /* the text MLP hidden serves the refiner's 4D */
	size_t f = sizeof(float), a = dit_grid_act_size(grid); /* a block's activations */
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
	ws->pass[HY_HI] = (dit_ws_buf){T * D, a, "h_img", tr, part, DIT_LIVE_BLOCK, part};
	ws->pass[HY_HT] = (dit_ws_buf){Lt * D, a, "h_txt", Lt, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_HJ] = (dit_ws_buf){Tj * D, a, "h", jr, part, DIT_LIVE_BLOCK, part};
	/* whole: q/k/v [L, 3D]; token chunks: k/v alone [L, 2D] (the refiner's [Lt, 3D] in
	 * it), written a chunk's rows at a time, never in tiles, q a chunk in HY_Q (image,
	 * text) or HY_QJ (joint) */
	int64_t kvn = 2 * L * D > 3 * Lt * D ? 2 * L * D : 3 * Lt * D;
	ws->pass[HY_QKV] = part ? (dit_ws_buf){kvn, a, "self_kv", 0, 1, DIT_LIVE_BLOCK, 0}
	                        : (dit_ws_buf){L * 3 * D, a, "qkv", L, 1, DIT_LIVE_BLOCK, 0};
	if (part) { /* in the row tiles of the chunks, as o and cat */
		ws->pass[HY_Q] =
		    (dit_ws_buf){To * D, a, "q_img", To == tr ? tr : 0, 1, DIT_LIVE_BLOCK, part};
		ws->pass[HY_QJ] = (dit_ws_buf){Tj * D, a, "q", jr, 1, DIT_LIVE_BLOCK, part};
	}
	ws->pass[HY_O] = (dit_ws_buf){To * D, a, "o", To == tr ? tr : 0, 1, DIT_LIVE_BLOCK, part};
	ws->pass[HY_YI] = (dit_ws_buf){T * D, a, "y_img", tr, part, DIT_LIVE_BLOCK, part};
	ws->pass[HY_YT] = (dit_ws_buf){Lt * D, a, "y_txt", Lt, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_YJ] = (dit_ws_buf){Tj * D, a, "y", jr, part, DIT_LIVE_BLOCK, part};
	ws->pass[HY_FI] = (dit_ws_buf){T * F, a, "mlp_img", tr, part, DIT_LIVE_BLOCK, part};
	ws->pass[HY_FT] = (dit_ws_buf){Lt * Fr, a, "mlp_txt", 0, 0, DIT_LIVE_BLOCK, 0};
	ws->pass[HY_CAT] = (dit_ws_buf){Tj * (D + F), a, "cat", jr, 1, DIT_LIVE_BLOCK, part};
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
	TRY(dit_hy_linear(h, NULL, name, x, 0, hid, 0, h->D, 1, h->D, k, w1, 0, w1 + 1,
	                  DIT_ACT_SILU, err));
	return dit_hy_linear(h, NULL, name, hid, 0, out, 0, h->D, 1, h->D, h->D, w2, 0, w2 + 1,
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
	hy_ctx hg = dit_hy_ctx_for(g, 0);
	dit_hy_use_globals(&hg);
	TRY(hy_sinusoid(g, g->ws[HY_SIN_G], ((const dit_hunyuan_state *)g->fam)->guidance, err));
	TRY(hy_mlp(&hg, "guidance_in", g->ws[HY_SIN_G], c->freq_dim, DIT_HG_GUID0_W, DIT_HG_GUID2_W,
	           g->ws[HY_HID_S], g->ws[HY_GIN], err));
	for (int p = 0; p < g->npasses; p++) {
		g->cur_pass = p;
		hy_ctx h = dit_hy_ctx_for(g, p);
		dit_hy_use_globals(&h);
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
		TRY(dit_hy_linear(&h, NULL, "input_embedder", ps->context, 0, ps->ws[HY_TXT0], 0,
		                  h.D, h.Lt, h.D, c->text_dim, DIT_HG_TXT_IN_W, 0, DIT_HG_TXT_IN_B,
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
	hy_ctx h = dit_hy_ctx_for(g, 0);
	dit_hy_use_globals(&h);
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
	TRY(dit_hy_linear(h, NULL, "refiner.adaLN", ps->ws[HY_SC], 0, mod, 0, 2 * D, 1, 2 * D, D,
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
			TRY(dit_hy_linear(h, NULL, "refiner.qkv", ht, 0, qkv, 0, 3 * D, Lt, 3 * D,
			                  D, t0 + DIT_HR_QKV_W, 0, t0 + DIT_HR_QKV_B, DIT_ACT_NONE,
			                  err));
			TRY(dit_hy_attention(h, "refiner.attention", qkv, 0, Lt, Lt, h->valid,
			                     ps->ws[HY_O], D, err));
			TRY(dit_hy_linear(h, NULL, "refiner.proj", ps->ws[HY_O], 0, yt, 0, D, Lt, D,
			                  D, t0 + DIT_HR_PROJ_W, 0, t0 + DIT_HR_PROJ_B,
			                  DIT_ACT_NONE, err));
		} else {
			TRY(dit_hy_linear(h, NULL, "refiner.fc1", ht, 0, f, 0, 4 * D, Lt, 4 * D, D,
			                  t0 + DIT_HR_FC1_W, 0, t0 + DIT_HR_FC1_B, DIT_ACT_SILU,
			                  err));
			TRY(dit_hy_linear(h, NULL, "refiner.fc2", f, 0, yt, 0, D, Lt, D, 4 * D,
			                  t0 + DIT_HR_FC2_W, 0, t0 + DIT_HR_FC2_B, DIT_ACT_NONE,
			                  err));
		}
		TRY(dit_hy_gate(h, NULL, "refiner.residual", xt, 0, yt, Lt, t0 + DIT_HR_MOD_B, mod,
		                half, err));
	}
	return DIT_OK;
}

/* Per pass and step: vec, the refiner's c, the text stream through the refiner, and
 * the image tokens. */
static dit_status hy_embed(dit_graph *g, int p, starpu_data_handle_t latent, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	hy_ctx h = dit_hy_ctx_for(g, p);
	dit_hy_use_globals(&h);
	const dit_pass *ps = h.ps;
	starpu_data_handle_t vt[] = {g->ws[HY_TIN], ps->ws[HY_CLIP], g->ws[HY_GIN]};
	TRY(hy_sum_silu(&h, "vec", ps->ws[HY_SVEC], vt, 3, err));
	starpu_data_handle_t ct[] = {g->ws[HY_RT], ps->ws[HY_CEMB]};
	TRY(hy_sum_silu(&h, "refiner_c", ps->ws[HY_SC], ct, 2, err));
	TRY(dit_hy_copy_rows(&h, NULL, "txt_in", ps->ws[HY_XT], 0, ps->ws[HY_TXT0], h.Lt, err));
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
	hy_ctx h = dit_hy_ctx_for(g, p);
	dit_hy_use_globals(&h);
	const dit_pass *ps = h.ps;
	int64_t D = h.D, CP = c->out_dim * c->patch[0] * c->patch[1] * c->patch[2];
	starpu_data_handle_t x = c->layers[1] > 0 ? ps->ws[HY_XJ] : ps->x;
	TRY(dit_hy_linear(&h, NULL, "final.adaLN", ps->ws[HY_SVEC], 0, ps->ws[HY_MOD2], 0, 2 * D, 1,
	                  2 * D, D, DIT_HG_FINAL_MOD_W, 0, -1, DIT_ACT_NONE, err));
	dit_chunks ch;
	dit_grid_chunks(gr, &ch);
	for (int i = 0; i < ch.n; i++) {
		int64_t r0 = ch.row0[i], m = ch.row0[i + 1] - r0;
		TRY(dit_hy_adaln(&h, NULL, "final.norm", x, r0, ps->ws[HY_HI], m,
		                 DIT_HG_FINAL_MOD_B, ps->ws[HY_MOD2], 0, err));
		TRY(dit_hy_linear(&h, NULL, "final.linear", ps->ws[HY_HI], 0, ps->ws[HY_TOK],
		                  r0 * CP, CP, m, CP, D, DIT_HG_FINAL_W, 0, DIT_HG_FINAL_B,
		                  DIT_ACT_NONE, err));
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
    .state_bytes = sizeof(dit_hunyuan_state),
};

dit_hunyuan_state *dit_hunyuan_state_of(dit_graph *g)
{
	return g->stages == &dit_stages_hunyuan ? g->fam : NULL;
}
