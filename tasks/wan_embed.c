/* The parts of a Wan2.1 forward outside the blocks (wan/modules/model.py WanModel):
 *
 *   e   = time_embedding(sinusoid(t))            [D]     once per step, both passes
 *   e0  = time_projection(e)                     [6, D]
 *   ctx = text_embedding(pad(context))           [Lc, D] once per run and pass
 *   x   = patch_embedding(latent)                [L, D]
 *   x   = block_i(x, e0, ctx)  for every block
 *   out = unpatchify(head(x, e))                 [C, f, h, w]
 */
#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_wan.h"
#include "dit_ops.h"
#include "dit_planner.h"

#define NB(a) ((int)(sizeof(a) / sizeof((a)[0])))

dit_status dit_graph_submit_text(dit_graph *g, dit_error *err)
{
	const dit_model *m = g->model;
	const dit_hparams *c = &m->cfg;
	const int64_t *off = m->glob.off;
	for (int p = 0; p < g->npasses; p++) {
		const dit_pass *ps = &g->pass[p];
		dit_text_embed_args a = {.fp = {{c->text_len, c->text_dim, c->dim, 0}},
		                         .len = c->text_len,
		                         .text_dim = c->text_dim,
		                         .dim = c->dim,
		                         .w0 = off[DIT_WG_TEXT0_W],
		                         .b0 = off[DIT_WG_TEXT0_B],
		                         .w2 = off[DIT_WG_TEXT2_W],
		                         .b2 = off[DIT_WG_TEXT2_B]};
		starpu_data_handle_t h[] = {m->h_globals, ps->context, ps->ctx, ps->scratch_text};
		enum starpu_data_access_mode md[] = {STARPU_R, STARPU_R, STARPU_W, STARPU_SCRATCH};
		double fl = 2.0 * c->text_len * c->dim * (c->text_dim + c->dim);
		dit_status st = dit_graph_insert(g, &dit_cl_text_embed, "text_embed", &a, sizeof a,
		                                 fl, NB(h), h, md, NULL, err);
		if (st)
			return st;
	}
	g->text_expert = g->expert;
	return DIT_OK;
}

dit_status dit_graph_submit_time_rows(dit_graph *g, const double *t, int64_t nt, int64_t mod_rows,
                                      dit_error *err)
{
	const dit_model *m = g->model;
	const dit_hparams *c = &m->cfg;
	const int64_t *off = m->glob.off;
	if (nt < 1 || nt > g->time_rows)
		return dit_error_set(err, DIT_EINVAL, "%lld timesteps for %lld rows", (long long)nt,
		                     (long long)g->time_rows);
	if (nt == 1) {
		g->mod_rows = 0;
		return dit_graph_submit_time(g, t[0], err);
	}
	g->mod_rows = mod_rows;
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
		starpu_data_handle_t h[] = {m->h_globals, g->e, g->e0, g->scratch_time};
		enum starpu_data_access_mode md[] = {STARPU_R, part, part, STARPU_SCRATCH};
		dit_status st = dit_graph_insert(g, &dit_cl_time_embed, "time_embed", &a, sizeof a,
		                                 0, NB(h), h, md, NULL, err);
		if (st)
			return st;
	}
	return DIT_OK;
}

dit_status dit_graph_submit_time(dit_graph *g, double t, dit_error *err)
{
	const dit_model *m = g->model;
	const dit_hparams *c = &m->cfg;
	const int64_t *off = m->glob.off;
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
	starpu_data_handle_t h[] = {m->h_globals, g->e, g->e0, g->scratch_time};
	enum starpu_data_access_mode md[] = {STARPU_R, STARPU_W, STARPU_W, STARPU_SCRATCH};
	g->mod_rows = 0;
	return dit_graph_insert(g, &dit_cl_time_embed, "time_embed", &a, sizeof a, 0, NB(h), h, md,
	                        NULL, err);
}

dit_status dit_graph_submit_patch_embed(dit_graph *g, int p, starpu_data_handle_t latent,
                                        dit_error *err)
{
	const dit_model *m = g->model;
	const dit_hparams *c = &m->cfg;
	const dit_grid *gr = &g->grid;
	const int64_t *off = m->glob.off;
	const dit_pass *ps = &g->pass[p];
	int64_t P = c->patch[0] * c->patch[1] * c->patch[2];
	dit_patch_embed_args pa = {.fp = {{gr->tokens, c->in_dim * P, c->dim, 0}},
	                           .c = c->in_dim,
	                           .f = gr->f,
	                           .h = gr->h,
	                           .w = gr->w,
	                           .pt = c->patch[0],
	                           .ph = c->patch[1],
	                           .pw = c->patch[2],
	                           .dim = c->dim,
	                           .w_off = off[DIT_WG_PATCH_W],
	                           .b_off = off[DIT_WG_PATCH_B]};
	starpu_data_handle_t hp[] = {m->h_globals, latent, ps->x, ps->scratch_patch};
	enum starpu_data_access_mode mp[] = {STARPU_R, STARPU_R, STARPU_W, STARPU_SCRATCH};
	return dit_graph_insert(g, &dit_cl_patch_embed, "patch_embed", &pa, sizeof pa,
	                        2.0 * gr->tokens * c->dim * c->in_dim * P, NB(hp), hp, mp, NULL,
	                        err);
}

static dit_status head(dit_graph *g, int p, dit_error *err)
{
	const dit_model *m = g->model;
	const dit_hparams *c = &m->cfg;
	const dit_grid *gr = &g->grid;
	const int64_t *off = m->glob.off;
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
	                    .mod_rows = g->mod_rows};
	starpu_data_handle_t hh[] = {m->h_globals, ps->x, g->e, ps->out, ps->scratch_head};
	enum starpu_data_access_mode mh[] = {STARPU_R, STARPU_R, STARPU_R, STARPU_W,
	                                     STARPU_SCRATCH};
	return dit_graph_insert(g, &dit_cl_head, "head", &ha, sizeof ha,
	                        2.0 * gr->tokens * c->dim * c->out_dim * P, NB(hh), hh, mh, NULL,
	                        err);
}

/* --check-finite: a CPU task scanning buf after block b (-1: the head) of pass p. */
static dit_status check_finite(dit_graph *g, starpu_data_handle_t buf, int64_t b, int p,
                               dit_error *err)
{
	if (!g->finite)
		return DIT_OK;
	dit_check_finite_args a = {.fp = {{(int64_t)starpu_vector_get_nx(buf), 0, 0, 0}},
	                           .n = (int64_t)starpu_vector_get_nx(buf),
	                           .step = g->step,
	                           .pass = p,
	                           .block = b,
	                           .guard = g->finite};
	starpu_data_handle_t h[] = {buf};
	enum starpu_data_access_mode md[] = {STARPU_R};
	dit_task_opts o = {.where = STARPU_CPU};
	return dit_graph_insert(g, &dit_cl_check_finite, "check_finite", &a, sizeof a, 0, 1, h, md,
	                        &o, err);
}

dit_status dit_graph_submit_passes(dit_graph *g, starpu_data_handle_t latent, dit_error *err)
{
	const dit_model *m = g->model;
	const dit_grid *gr = &g->grid;
	int pool = g->off ? dit_offload_pool_of(g->off, m) : 0;
	dit_status st;
	/* each expert embeds the text with its own weights */
	if (g->text_expert != g->expert && (st = dit_graph_submit_text(g, err)) != DIT_OK)
		return st;
	if (g->xin) { /* image conditioning: the latent, then y, as the model's input */
		int64_t n = m->cfg.out_dim * gr->f * gr->h * gr->w;
		dit_copy2d_args ca = {
		    .fp = {{1, n, 0, 0}}, .count = 1, .len = n, .src_ld = n, .dst_ld = n};
		if ((st = dit_op_copy2d(g, NULL, "concat", &ca, g->xin, latent, err)) != DIT_OK)
			return st;
		latent = g->xin;
	}
	for (int p = 0; p < g->npasses; p++)
		if ((st = dit_graph_submit_patch_embed(g, p, latent, err)) != DIT_OK)
			return st;
	for (int64_t k = 0; k < m->nchunks; k++) {
		uint64_t gate = 0;
		if (g->off && (st = dit_xfer_fetch(g, pool, k, &gate, err)) != DIT_OK)
			return st;
		for (int p = 0; p < g->npasses; p++) {
			for (int64_t j = 0; j < m->chunk_size; j++) {
				/* the chunk's first task of the pass waits for its transfer, its
				 * last one ends the use (what later prefetches wait for) */
				dit_task_opts first = {0}, last = {0};
				if (gate && j == 0) {
					first.tag = dit_offload_first_tag(g->off, p);
					first.after = gate;
				}
				if (g->off && j == m->chunk_size - 1)
					last.tag = dit_offload_end_tag(g->off, p);
				int64_t b = k * m->chunk_size + j;
				st = dit_graph_submit_block(g, p, b, &first, &last, err);
				if (!st)
					st = check_finite(g, g->pass[p].x, b, p, err);
				if (st)
					return st;
			}
		}
		if (g->off)
			dit_xfer_done(g, pool, k);
	}
	for (int p = 0; p < g->npasses; p++)
		if ((st = head(g, p, err)) != DIT_OK ||
		    (st = check_finite(g, g->pass[p].out, -1, p, err)) != DIT_OK)
			return st;
	return DIT_OK;
}
