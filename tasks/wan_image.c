/* Wan2.1 image-to-video's image projection (wan/modules/model.py MLPProj), run once for
 * the passes, which share the image:
 *
 *   h   = clip_fea [+ emb_pos]            [Li, 1280]   copy2d, add_rows (FLF2V)
 *   h   = LN(h) * w0 + b0                 [Li, 1280]   layernorm, eps 1e-5
 *   h   = gelu(h W1^T + b1)               [Li, 1280]   linear (exact GELU)
 *   h   = h W3^T + b3                     [Li, D]      linear
 *   ctx_img = LN(h) * w4 + b4             [Li, D]      layernorm, eps 1e-5
 *
 * Every block then projects ctx_img to its own image keys and values (wan_block.c). */
#include "dit_codelets.h"
#include "dit_ops.h"
#include "dit_wan.h"
#include "wan_priv.h"

/* torch.nn.LayerNorm's default */
#define IMG_LN_EPS 1e-5f

void dit_wan_image_workspace(const dit_hparams *c, dit_ws_spec *ws)
{
	if (!c->image_dim)
		return;
	int64_t Li = c->image_tokens, w = c->image_dim > c->dim ? c->image_dim : c->dim;
	size_t f = sizeof(float);
	ws->shared[WAN_CLIP] = (dit_ws_buf){Li * c->image_dim, f, "clip_fea", 0, 0, 0, 0};
	ws->shared[WAN_IMG_A] = (dit_ws_buf){Li * w, f, "img_a", 0, 0, 0, 0};
	ws->shared[WAN_IMG_B] = (dit_ws_buf){Li * w, f, "img_b", 0, 0, 0, 0};
	ws->shared[WAN_CTX_IMG] = (dit_ws_buf){Li * c->dim, f, "ctx_img", 0, 0, 0, 0};
}

static dit_status image_ln(dit_graph *g, const dit_wview *gv, const char *name,
                           starpu_data_handle_t x, starpu_data_handle_t y, int64_t rows,
                           int64_t dim, int wt, int bt, dit_error *err)
{
	dit_layernorm_args a = {.fp = {{rows, dim, 0, 1}},
	                        .rows = rows,
	                        .dim = dim,
	                        .eps = IMG_LN_EPS,
	                        .affine = 1,
	                        .w_off = gv->off[wt],
	                        .b_off = gv->off[bt]};
	return dit_op_layernorm(g, NULL, name, &a, x, y, gv->slab, NULL, err);
}

static dit_status image_linear(dit_graph *g, const dit_wview *gv, const char *name,
                               starpu_data_handle_t x, starpu_data_handle_t y, int64_t m, int64_t n,
                               int64_t k, int wt, int bt, dit_act act, dit_error *err)
{
	dit_linear_args a = {.fp = {{m, n, k, act}},
	                     .m = m,
	                     .n = n,
	                     .k = k,
	                     .ldx = k,
	                     .ldy = n,
	                     .w_off = gv->off[wt],
	                     .b_off = gv->off[bt],
	                     .act = act};
	return dit_op_linear(g, NULL, name, &a, x, gv->slab, y, NULL, err);
}

dit_status dit_wan_image_embed(dit_graph *g, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	if (!c->image_dim)
		return DIT_OK;
	int64_t Li = c->image_tokens, I = c->image_dim, D = c->dim;
	dit_wview gv;
	dit_graph_globals_view(g, &gv);
	starpu_data_handle_t in = g->ws[WAN_CLIP], a = g->ws[WAN_IMG_A], b = g->ws[WAN_IMG_B];
	if (c->image_pos) { /* FLF2V: the learned positions of the two images' tokens */
		dit_copy2d_args cp = {.fp = {{1, Li * I, 0, 0}},
		                      .count = 1,
		                      .len = Li * I,
		                      .src_ld = Li * I,
		                      .dst_ld = Li * I};
		TRY(dit_op_copy2d(g, NULL, "img_emb.copy", &cp, a, in, err));
		dit_add_rows_args ad = {.fp = {{Li, I, 0, 0}},
		                        .rows = Li,
		                        .dim = I,
		                        .ld = I,
		                        .v_off = gv.off[DIT_WG_IMG_POS],
		                        .v_ld = I};
		TRY(dit_op_add_rows(g, NULL, "img_emb.emb_pos", &ad, a, gv.slab, err));
		in = a;
	}
	TRY(image_ln(g, &gv, "img_emb.norm0", in, b, Li, I, DIT_WG_IMG_N0W, DIT_WG_IMG_N0B, err));
	TRY(image_linear(g, &gv, "img_emb.fc1", b, a, Li, I, I, DIT_WG_IMG_L1W, DIT_WG_IMG_L1B,
	                 DIT_ACT_GELU, err));
	TRY(image_linear(g, &gv, "img_emb.fc2", a, b, Li, D, I, DIT_WG_IMG_L3W, DIT_WG_IMG_L3B,
	                 DIT_ACT_NONE, err));
	return image_ln(g, &gv, "img_emb.norm4", b, g->ws[WAN_CTX_IMG], Li, D, DIT_WG_IMG_N4W,
	                DIT_WG_IMG_N4B, err);
}
