/* The token grid of a run, its token chunks, and the family's work buffers and
 * activations for a grid (what the planner counts and the graph registers). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dit_graph.h"
#include "dit_tiles.h"

dit_status dit_grid_from_latent(dit_grid *g, const dit_hparams *cfg, int64_t c, int64_t f,
                                int64_t h, int64_t w, dit_error *err)
{
	if (c != cfg->out_dim)
		return dit_error_set(err, DIT_ESHAPE,
		                     "latent has %lld channels, the model takes %lld", (long long)c,
		                     (long long)cfg->out_dim);
	if (f <= 0 || h <= 0 || w <= 0 || f % cfg->patch[0] || h % cfg->patch[1] ||
	    w % cfg->patch[2])
		return dit_error_set(err, DIT_ESHAPE,
		                     "latent size %lldx%lldx%lld (f x h x w) is not a whole number "
		                     "of %lldx%lldx%lld patches",
		                     (long long)f, (long long)h, (long long)w,
		                     (long long)cfg->patch[0], (long long)cfg->patch[1],
		                     (long long)cfg->patch[2]);
	g->c = c;
	g->f = f;
	g->h = h;
	g->w = w;
	g->tf = f / cfg->patch[0];
	g->th = h / cfg->patch[1];
	g->tw = w / cfg->patch[2];
	g->tokens = g->tf * g->th * g->tw;
	g->chunk_rows = 0;
	return DIT_OK;
}

int64_t dit_grid_chunk(const dit_grid *g)
{
	int n = dit_tile_count(g->tokens, g->chunk_rows);
	return n > 1 ? (g->tokens + n - 1) / n : 0;
}

int64_t dit_chunks_make(int64_t rows, int64_t chunk_rows, dit_chunks *ch)
{
	ch->n = dit_tile_count(rows, chunk_rows);
	int64_t T = (rows + ch->n - 1) / ch->n;
	for (int i = 0; i <= ch->n; i++)
		ch->row0[i] = (int64_t)i * T < rows ? (int64_t)i * T : rows;
	return T;
}

void dit_grid_chunks(const dit_grid *g, dit_chunks *ch)
{
	dit_chunks_make(g->tokens, g->chunk_rows, ch);
}

int dit_graph_token_chunks(const dit_model_desc *d)
{
	const dit_stage_kind *sk = dit_stage_kind_find(d->stages);
	return sk && sk->token_chunks;
}

dit_status dit_grid_from_pixels(dit_grid *g, const dit_model_desc *d, const dit_hparams *cfg,
                                int64_t frames, int64_t height, int64_t width, dit_error *err)
{
	const int64_t *vs = d->latent.vae_stride;
	dit_status st = dit_model_check_size(d, cfg, frames, height, width, err);
	if (st)
		return st;
	int64_t f = dit_model_latent_frames(d, frames);
	return dit_grid_from_latent(g, cfg, cfg->out_dim, f, height / vs[1], width / vs[2], err);
}

/* The family's work buffers for this grid (a zeroed spec when it has no stages). */
const dit_stage_kind *dit_graph_workspace(const dit_model_desc *d, const dit_hparams *c,
                                          const dit_grid *grid, int64_t time_rows, dit_ws_spec *ws)
{
	memset(ws, 0, sizeof *ws);
	const dit_stage_kind *sk = dit_stage_kind_find(d->stages);
	if (sk)
		sk->workspace(c, grid, time_rows < 1 ? 1 : time_rows, ws);
	return sk;
}

dit_status dit_graph_check_size(const dit_model_desc *d, const dit_hparams *c, const dit_grid *grid,
                                dit_error *err)
{
	dit_ws_spec ws;
	dit_graph_workspace(d, c, grid, 1, &ws);
	/* StarPU vectors count elements in 32 bits: the largest buffer must fit. */
	const dit_ws_buf *big = NULL;
	dit_ws_buf x = {
	    grid->tokens * c->dim, sizeof(float), "x", grid->tokens, 0, DIT_LIVE_FORWARD, 0};
	if (x.n > (int64_t)UINT32_MAX)
		big = &x;
	for (int i = 0; i < DIT_MAX_WS && !big; i++)
		if (ws.pass[i].n > (int64_t)UINT32_MAX)
			big = &ws.pass[i];
	if (big)
		return dit_error_set(err, DIT_EINVAL,
		                     "%lld tokens are too many for one pass of this model (its "
		                     "'%s' activation would hold %lld elements, more than 2^32)",
		                     (long long)grid->tokens, big->name, (long long)big->n);
	return DIT_OK;
}

/* How long a buffer of the plan lives, which decides its copies (dit_act_buf.life). */
enum { ACT_PASS, ACT_FORWARD, ACT_BLOCK, ACT_SHARED };

/* Adds buffer name of b bytes living life (ACT_*) to the plan's list and sums, and
 * counts it towards the plan's largest. */
static void act_add(dit_act_plan *a, const char *name, int life, size_t b)
{
	static const char *const names[] = {"pass", "forward", "block", "shared"};
	size_t *sums[] = {&a->io, &a->forward, &a->block, &a->shared};
	int copies[] = {a->npasses, a->npasses, a->slots, 1};
	if (!b)
		return;
	*sums[life] += b;
	if (a->nbuf < DIT_ACT_MAX_BUFS)
		a->buf[a->nbuf++] = (dit_act_buf){name, names[life], b, copies[life]};
	if (b > a->largest_bytes) {
		a->largest = name;
		a->largest_bytes = b;
	}
}

void dit_graph_act_plan(const dit_model_desc *d, const dit_hparams *c, const dit_grid *grid,
                        int npasses, int slots, int64_t time_rows, int concat, int first_frame,
                        dit_act_plan *a)
{
	dit_ws_spec ws;
	dit_graph_workspace(d, c, grid, time_rows, &ws);
	memset(a, 0, sizeof *a);
	a->npasses = npasses;
	a->chunk_rows = dit_grid_chunk(grid) ? grid->chunk_rows : 0;
	a->act_bf16 = grid->act_bf16;
	a->slots = slots < 1 || slots > npasses ? npasses : slots;
	int64_t L = grid->tokens, fhw = grid->f * grid->h * grid->w, hd = c->dim / c->num_heads;
	size_t fl = sizeof(float);
	/* per pass: the context input, x, the velocity */
	size_t ctx = fl * (size_t)(c->text_len * c->text_dim), x = fl * (size_t)(L * c->dim),
	       v = fl * (size_t)(c->out_dim * fhw);
	act_add(a, "context", ACT_PASS, ctx);
	act_add(a, "x", ACT_PASS, x);
	act_add(a, "velocity", ACT_PASS, v);
	for (int i = 0; i < DIT_MAX_WS; i++) {
		size_t b = (size_t)ws.pass[i].n * ws.pass[i].elemsize;
		act_add(a, ws.pass[i].name,
		        ws.pass[i].life == DIT_LIVE_BLOCK ? ACT_BLOCK : ACT_FORWARD, b);
	}
	for (int i = 0; i < DIT_MAX_WS; i++)
		act_add(a, ws.shared[i].name, ACT_SHARED,
		        (size_t)ws.shared[i].n * ws.shared[i].elemsize);
	/* shared: the model input with image conditioning, the first-frame latent, the
	 * RoPE table in doubles */
	if (concat)
		act_add(a, "model_input", ACT_SHARED, fl * (size_t)(c->in_dim * fhw));
	if (first_frame)
		act_add(a, "first_frame", ACT_SHARED,
		        fl * (size_t)(c->out_dim * grid->h * grid->w));
	if (d->rope.pairing == DIT_ROPE_INTERLEAVED)
		act_add(a, "rope", ACT_SHARED, sizeof(double) * (size_t)(L * hd));
	a->total =
	    (size_t)a->npasses * (a->io + a->forward) + (size_t)a->slots * a->block + a->shared;
}
