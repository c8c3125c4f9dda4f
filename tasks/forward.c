/* The forward of any family as one task graph: the family's stages (embeddings,
 * head) around its pools of blocks, each pool walked chunk by chunk for every pass
 * between the chunk's transfer and its eviction, so a chunk is brought once per
 * step whatever the passes:
 *
 *   ctx = text(context)                  once per run and expert
 *   t   = time(timesteps)                once per step, shared by the passes
 *   x   = embed(latent [, image])        per pass               [L, D]
 *   x   = block_i(x, t, ctx)             every block of every pool, chunk-major
 *   out = head(x, t)                     per pass               [C, f, h, w]
 */
#include <string.h>

#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_ops.h"
#include "dit_xfer.h"
#include "dit_tiles.h"

static const dit_stage_kind *const stage_kinds[] = {
#define DIT_BLOCK_KIND(n)
#define DIT_STAGE_KIND(n) &dit_stages_##n,
#include "dit_kinds.def"
#undef DIT_BLOCK_KIND
#undef DIT_STAGE_KIND
};

const dit_stage_kind *dit_stage_kind_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof stage_kinds / sizeof stage_kinds[0]; i++)
		if (strcmp(stage_kinds[i]->name, name) == 0)
			return stage_kinds[i];
	return NULL;
}

dit_status dit_graph_submit_text(dit_graph *g, dit_error *err)
{
	dit_status st = g->stages->text(g, err);
	if (st == DIT_OK)
		g->text_expert = g->expert;
	return st;
}

dit_status dit_graph_submit_time_rows(dit_graph *g, const double *t, int64_t nt, int64_t mod_rows,
                                      dit_error *err)
{
	if (nt < 1 || nt > g->time_rows)
		return dit_error_set(err, DIT_EINVAL, "%lld timesteps for %lld rows", (long long)nt,
		                     (long long)g->time_rows);
	g->mod_rows = nt == 1 ? 0 : mod_rows;
	return g->stages->time(g, t, nt, g->mod_rows, err);
}

dit_status dit_graph_submit_time(dit_graph *g, double t, dit_error *err)
{
	return dit_graph_submit_time_rows(g, &t, 1, 0, err);
}

dit_status dit_graph_submit_patch_embed(dit_graph *g, int p, starpu_data_handle_t latent,
                                        dit_error *err)
{
	g->cur_pass = p;
	dit_status st = g->stages->embed(g, p, latent, err);
	g->cur_pass = -1;
	return st;
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

/* The blocks of chunk k of pool i in pass p; tp is the pass index the chunk use's tags
 * carry (p, or 0 when each pass has its own use of the chunk). */
static dit_status submit_chunk(dit_graph *g, int i, int64_t k, int p, int tp, uint64_t gate,
                               dit_error *err)
{
	const dit_graph_pool *m = &g->model->pool[i];
	for (int64_t j = 0; j < m->chunk_size; j++) {
		/* the chunk's first task of the pass waits for its transfer, its last one
		 * ends the use (what later prefetches wait for) */
		dit_task_opts first = {0}, last = {0};
		if (gate && j == 0) {
			first.tag = dit_xfer_first_tag(g->xfer, tp);
			first.after = gate;
		}
		if (g->xfer && j == m->chunk_size - 1)
			last.tag = dit_xfer_end_tag(g->xfer, tp);
		int64_t b = k * m->chunk_size + j;
		dit_status st = dit_graph_submit_block(g, i, p, b, &first, &last, err);
		g->cur_pass = p;
		if (!st)
			st =
			    check_finite(g,
			                 g->kind[i]->stream < 0 ? g->pass[p].x
			                                        : g->pass[p].ws[g->kind[i]->stream],
			                 b, p, err);
		g->cur_pass = -1;
		if (st)
			return st;
	}
	return DIT_OK;
}

/* The blocks of pool i of the current expert, chunk by chunk, each chunk for every
 * pass (or, pass-major, pass by pass, each chunk for one pass). */
static dit_status submit_pool(dit_graph *g, int i, dit_error *err)
{
	const dit_graph_pool *m = &g->model->pool[i];
	int pool = g->xfer ? dit_xfer_pool_of(g->xfer, m->id) : 0;
	int outer = g->pass_major ? g->npasses : 1, inner = g->pass_major ? 1 : g->npasses;
	dit_status st;
	for (int q = 0; q < outer; q++)
		for (int64_t k = 0; k < m->nchunks; k++) {
			uint64_t gate = 0;
			if (g->xfer && (st = dit_xfer_fetch(g, pool, k, &gate, err)) != DIT_OK)
				return st;
			for (int r = 0; r < inner; r++)
				if ((st = submit_chunk(g, i, k, q + r, g->pass_major ? 0 : r, gate,
				                       err)) != DIT_OK)
					return st;
			if (g->xfer && (st = dit_xfer_done(g, pool, k, err)) != DIT_OK)
				return st;
		}
	return DIT_OK;
}

dit_status dit_graph_submit_passes(dit_graph *g, starpu_data_handle_t latent, dit_error *err)
{
	const dit_grid *gr = &g->grid;
	dit_status st;
	/* each expert embeds the text with its own weights */
	if (g->text_expert != g->expert && (st = dit_graph_submit_text(g, err)) != DIT_OK)
		return st;
	if (g->img.xin) { /* image conditioning: the latent, then y, as the model's input */
		int64_t n = g->model->cfg.out_dim * gr->f * gr->h * gr->w;
		dit_copy2d_args ca = {
		    .fp = {{1, n, 0, 0}}, .count = 1, .len = n, .src_ld = n, .dst_ld = n};
		if ((st = dit_op_copy2d(g, NULL, "concat", &ca, g->img.xin, latent, err)) != DIT_OK)
			return st;
		if (g->img.cond_gt) { /* the conditioning frames of every channel: gt */
			int64_t k = g->img.cond_frames * gr->h * gr->w, fhw = gr->f * gr->h * gr->w;
			dit_copy2d_args ga = {.fp = {{g->model->cfg.out_dim, k, 0, 0}},
			                      .count = g->model->cfg.out_dim,
			                      .len = k,
			                      .src_ld = k,
			                      .dst_ld = fhw};
			if ((st = dit_op_copy2d(g, NULL, "condition_frames", &ga, g->img.xin,
			                        g->img.cond_gt, err)) != DIT_OK)
				return st;
		}
		latent = g->img.xin;
	}
	for (int p = 0; p < g->npasses; p++)
		if ((st = dit_graph_submit_patch_embed(g, p, latent, err)) != DIT_OK)
			return st;
	for (int i = 0; i < g->model->npools; i++)
		if ((st = submit_pool(g, i, err)) != DIT_OK)
			return st;
	for (int p = 0; p < g->npasses; p++) {
		g->cur_pass = p;
		st = g->stages->head(g, p, err);
		if (!st)
			st = check_finite(g, g->pass[p].out, -1, p, err);
		g->cur_pass = -1;
		if (st)
			return st;
	}
	dit_graph_tiles_join(g);
	return DIT_OK;
}
