/* The stats report of a session: the graph's figures handed to the stats as plain
 * data (dit_stats_graph), so that the stats never read the graph. */
#include "dit_session.h"

#include <string.h>

#include "dit_tiles.h"

static const char *prio_name(int priorities)
{
	return priorities == DIT_PRIO_CRITICAL_PATH ? "critical-path"
	       : priorities == DIT_PRIO_OP_CLASS    ? "op-class"
	                                            : "none";
}

/* Each pool index's bytes moved and chunks kept, every expert's. */
static void pool_figures(const dit_graph *g, dit_stats_graph *o)
{
	for (int p = 0; g->xfer && p < g->xfer->npools; p++) {
		const dit_xfer_pool *xp = &g->xfer->pool[p];
		int i = ((const dit_pool *)xp->id)->index;
		if (i < 0 || i >= DIT_MAX_POOLS)
			continue;
		o->pool_moved[i] += xp->fetch_bytes;
		o->pool_kept[i] += xp->nresident;
	}
}

void dit_session_stats_graph(const dit_graph *g, dit_stats_graph *o)
{
	memset(o, 0, sizeof *o);
	o->family = g->w.desc->name;
	o->tokens = g->grid.tokens;
	o->tile_rows = g->tile_rows;
	o->token_tiles = dit_tile_count(g->grid.tokens, g->tile_rows);
	o->text_tiles = dit_tile_count(g->model->cfg.text_len, g->tile_rows);
	o->flops = g->flops;
	for (int i = 0; i < g->counts.n && i < DIT_STATS_MAX_CODELETS; i++) {
		o->codelet[o->ncodelets] = g->counts.name[i];
		o->count[o->ncodelets++] = g->counts.count[i];
	}
	o->model_tasks = g->model_tasks;
	o->model_uncalibrated = g->model_uncalibrated;
	o->expert = g->expert;
	o->npasses = g->npasses;
	o->slots = g->slots;
	o->chunk_rows = g->grid.chunk_rows;
	o->activation_bytes = g->activation_bytes;
	o->priorities = prio_name(g->priorities);
	o->prio_lo = g->prio_lo;
	o->prio_hi = g->prio_hi;
	pool_figures(g, o);
}

dit_status dit_session_stats_json(dit_session *s, const char *path, dit_error *err)
{
	dit_stats_graph gs;
	dit_session_stats_graph(&s->graph, &gs);
	return dit_stats_write_json(&s->stats, &gs, path, err);
}
