/* Handles of a run and the one place tasks are submitted. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_profile.h"
#include "dit_tiles.h"

void dit_graph_vector(const dit_graph *g, starpu_data_handle_t *h, int64_t n, size_t elemsize,
                      const char *name)
{
	starpu_vector_data_register(h, -1, 0, (uint32_t)n, elemsize);
	starpu_data_set_name(*h, name);
	if (g->ram_only)
		starpu_data_set_ooc_flag(*h, 0);
}

/* Completion of a compute task: whether its model has an estimate for its shape on
 * the architecture that ran it (StarPU has fed it this run's measure already). */
static void task_done(void *arg)
{
	dit_graph *g = arg;
	struct starpu_task *t = starpu_task_get_current();
	int w = starpu_worker_get_id();
	if (!t || w < 0 || !t->cl || !t->cl->model)
		return;
	struct starpu_perfmodel_arch *arch = starpu_worker_get_perf_archtype(w, t->sched_ctx);
	double len =
	    arch ? starpu_task_expected_length(t, arch, starpu_task_get_implementation(t)) : NAN;
	__atomic_add_fetch(&g->model_tasks, 1, __ATOMIC_RELAXED);
	if (isnan(len))
		__atomic_add_fetch(&g->model_uncalibrated, 1, __ATOMIC_RELAXED);
}

static void count_task(dit_task_counts *c, const char *name)
{
	for (int i = 0; i < c->n; i++) {
		if (c->name[i] == name || strcmp(c->name[i], name) == 0) {
			c->count[i]++;
			return;
		}
	}
	if (c->n < DIT_GRAPH_MAX_CODELETS) {
		c->name[c->n] = name;
		c->count[c->n++] = 1;
	}
}

/* The task's tag and the tag it waits for, its worker mask, its priority (the run's
 * scheme; the range given so far kept for the stats) and its completion callback. */
static void task_schedule(dit_graph *g, struct starpu_task *t, const struct starpu_codelet *cl,
                          const dit_task_opts *o)
{
	if (o && o->tag) {
		t->use_tag = 1;
		t->tag_id = o->tag;
		if (o->after) {
			starpu_tag_t dep = o->after;
			starpu_tag_declare_deps_array(t->tag_id, 1, &dep);
		}
	}
	t->priority = o ? o->priority : 0;
	uint32_t where = o && o->where ? o->where : g->where;
	if (where) /* else StarPU's default: any worker */
		t->where = (int32_t)where;
	if (g->priorities == DIT_PRIO_CRITICAL_PATH && t->priority == 0)
		t->priority = dit_graph_blevel_priority(g);
	else if (g->priorities == DIT_PRIO_OP_CLASS)
		t->priority = dit_graph_op_class_priority(t, cl);
	if (g->prio_lo > g->prio_hi)
		g->prio_lo = g->prio_hi = t->priority;
	else if (t->priority < g->prio_lo)
		g->prio_lo = t->priority;
	else if (t->priority > g->prio_hi)
		g->prio_hi = t->priority;
	if (o && o->done) {
		t->callback_func = o->done;
		t->callback_arg = o->done_arg;
	} else {
		t->callback_func = task_done;
		t->callback_arg = g;
	}
}

/* In the step being profiled, the task counted for its block (outside the blocks:
 * before them, -1, or after, -2). */
static void task_profile(dit_graph *g, struct starpu_task *t, const struct starpu_codelet *cl)
{
	if (!g->profile || g->step != g->profile->step || !cl->model || !cl->model->symbol)
		return;
	int64_t b = g->cur_block >= 0 ? g->cur_block : g->profile->seen_block ? -2 : -1;
	if (g->cur_block >= 0)
		g->profile->seen_block = 1;
	dit_profile_add(g->profile, g->cur_pool, b, cl->model->symbol,
	                cl->model->footprint ? cl->model->footprint(t) : 0, 1);
}

#ifdef DIT_SIMGRID
/* SimGrid takes each task's length from its model and stops the whole process when
 * there is none: the run refused here instead, naming the codelet and the worker. */
static dit_status task_sim_check(dit_graph *g, struct starpu_task *t, struct starpu_codelet *cl,
                                 const char *name, dit_error *err)
{
	if (g->use_codelet) /* --sim-roofline: the lengths are the roofline's */
		g->use_codelet(cl);
	for (unsigned w = 0; cl->model && w < starpu_worker_get_count(); w++) {
		if (!starpu_worker_can_execute_task(w, t, 0))
			continue;
		struct starpu_perfmodel_arch *arch = starpu_worker_get_perf_archtype((int)w, 0);
		double len = arch ? starpu_task_expected_length(t, arch, 0) : NAN;
		if (!(isnan(len) || len <= 0))
			continue;
		char wn[64];
		starpu_worker_get_name((int)w, wn, sizeof wn);
		const char *sym = cl->model->symbol ? cl->model->symbol : cl->name;
		if (cl->model->type == STARPU_PER_ARCH)
			return dit_error_set(err, DIT_EUNSUPPORTED,
			                     "task %s (%s) runs on %s, a kind of worker the "
			                     "--sim-roofline file does not describe",
			                     name, sym, wn);
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "task %s (%s) has no calibrated length for "
		                     "its shape on %s, which SimGrid needs; run ditstar "
		                     "(or ditstar calibrate) "
		                     "with the same options until it has",
		                     name, sym, wn);
	}
	return DIT_OK;
}
#endif

dit_status dit_graph_insert(dit_graph *g, struct starpu_codelet *cl, const char *name, void *args,
                            size_t args_size, double flops, int nbuf, const starpu_data_handle_t *h,
                            const enum starpu_data_access_mode *mode, const dit_task_opts *o,
                            dit_error *err)
{
	if (g->grid.act_bf16) {
		dit_status bst = dit_graph_bf16_check(cl, name, nbuf, h, err);
		if (bst)
			return bst;
	}
	for (int i = 0; i < nbuf; i++)
		dit_tiles_prepare(h[i]);
	const char *base = name;
	name = dit_graph_task_name(g, base);
	struct starpu_task *t = name ? starpu_task_create() : NULL;
	void *copy = t ? malloc(args_size) : NULL;
	if (!t || !copy) {
		free(copy);
		if (t) {
			t->destroy = 0;
			starpu_task_destroy(t);
		}
		return dit_error_set(err, DIT_ENOMEM, "out of memory submitting %s", base);
	}
	memcpy(copy, args, args_size);
	t->cl = cl;
	t->name = name;
	t->cl_arg = copy;
	t->cl_arg_size = args_size;
	t->cl_arg_free = 1;
	t->flops = flops;
	t->nbuffers = nbuf;
	task_schedule(g, t, cl, o);
	for (int i = 0; i < nbuf; i++) {
		t->handles[i] = h[i];
		t->modes[i] = mode[i];
	}
	task_profile(g, t, cl);
#ifdef DIT_SIMGRID
	dit_status sst = task_sim_check(g, t, cl, name, err);
	if (sst) {
		t->destroy = 0;
		starpu_task_destroy(t);
		return sst;
	}
#endif
	int ret = starpu_task_submit(t);
	if (ret != 0) {
		t->destroy = 0;
		starpu_task_destroy(t);
		return dit_error_set(err, DIT_ERUNTIME, "StarPU refused task %s (%s)", name,
		                     ret == -ENODEV ? "no worker can run it" : "submit failed");
	}
	count_task(&g->counts, cl->name);
	g->flops += flops;
	return DIT_OK;
}

void dit_graph_vector_fill(const dit_graph *g, starpu_data_handle_t *h, const float *src, int64_t n,
                           const char *name)
{
	dit_graph_vector(g, h, n, sizeof(float), name);
	if (!src)
		return;
	starpu_data_acquire(*h, STARPU_W);
	memcpy((void *)starpu_vector_get_local_ptr(*h), src, (size_t)n * sizeof(float));
	starpu_data_release(*h);
}

static const dit_block_kind *const block_kinds[] = {
#define DIT_BLOCK_KIND(n) &dit_block_##n,
#define DIT_STAGE_KIND(n)
#include "dit_kinds.def"
#undef DIT_BLOCK_KIND
#undef DIT_STAGE_KIND
};

const dit_block_kind *dit_block_kind_find(const char *name)
{
	for (size_t i = 0; i < sizeof block_kinds / sizeof block_kinds[0]; i++)
		if (strcmp(block_kinds[i]->name, name) == 0)
			return block_kinds[i];
	return NULL;
}

void dit_graph_globals_view(const dit_graph *g, dit_wview *v)
{
	const dit_graph_expert *m = g->model;
	memset(v, 0, sizeof *v);
	v->slab = m->h_globals;
	for (int t = 0; t < m->glob.n; t++) {
		v->off[t] = m->glob.off[t];
		v->numel[t] = m->glob.numel[t];
	}
}

void dit_graph_block_view(const dit_graph *g, int i, int64_t b, dit_wview *v)
{
	const dit_graph_pool *pl = &g->model->pool[i];
	int64_t base;
	memset(v, 0, sizeof *v);
	base = (b % pl->chunk_size) * pl->block_stride;
	v->slab = pl->h_chunks[b / pl->chunk_size];
	for (int t = 0; t < pl->lay.n; t++) {
		int w = pl->lay.wdt[t];
		v->off[t] = base + pl->lay.off[t];
		v->numel[t] = pl->lay.numel[t];
		v->wdt[t] = (unsigned char)w;
		v->soff[t] =
		    dit_wdt_is_f8(w) ? v->off[t] + dit_wdt_data_slots(w, pl->lay.numel[t]) : 0;
	}
}

dit_status dit_graph_submit_block(dit_graph *g, int i, int p, int64_t b, const dit_task_opts *first,
                                  const dit_task_opts *last, dit_error *err)
{
	g->cur_pool = i;
	g->cur_block = b;
	g->cur_pass = p;
	/* in a sampling loop (iteration: the step), the block's position in the step is
	 * the tasks' subiteration in traces (Paje's WS events, StarVZ); -1 after it */
	int sub = g->nsteps > 0;
	if (sub) {
		int64_t pos = b;
		for (int j = 0; j < i; j++)
			pos += g->model->pool[j].nblocks;
		starpu_iteration_push((unsigned long)pos);
	}
	dit_status st = g->kind[i]->submit(g, i, p, b, first, last, err);
	if (sub) {
		starpu_iteration_pop();
		starpu_iteration_push((unsigned long)-1); /* StarPU's pop leaves it set */
		starpu_iteration_pop();
	}
	g->cur_pool = -1;
	g->cur_block = -1;
	g->cur_pass = -1;
	return st;
}

starpu_data_handle_t dit_graph_buffer(const dit_graph *g, int p, const char *name)
{
	const dit_ws_buf *b = p < 0 ? g->spec.shared : g->spec.pass;
	for (int i = 0; i < DIT_MAX_WS; i++)
		if (b[i].n && strcmp(b[i].name, name) == 0)
			return p < 0 ? g->ws[i] : g->pass[p].ws[i];
	return NULL;
}

void dit_graph_set_expert(dit_graph *g, int e)
{
	g->expert = e;
	g->model = &g->w.expert[e];
}

/* Whether pass p owns its handle of work buffer i (else it uses pass p % slots's). */
static int ws_owned(const dit_graph *g, int p, int i)
{
	return g->spec.pass[i].life != DIT_LIVE_BLOCK || p < g->slots;
}

/* The block kinds of the pools and the family's stages and work buffers, refused when
 * this build implements none or the grid does not fit. */
static dit_status graph_kinds(const dit_graph_weights *wt, const dit_grid *grid, int npasses,
                              int64_t time_rows, const dit_block_kind **kind,
                              const dit_stage_kind **stages, dit_ws_spec *ws, dit_error *err)
{
	const dit_model_desc *d = wt->desc;
	const dit_hparams *c = &wt->expert[0].cfg;
	dit_status st = dit_graph_check_size(d, c, grid, err);
	if (st)
		return st;
	for (int i = 0; i < d->npools; i++)
		if (!(kind[i] = dit_block_kind_find(d->pools[i].kind)))
			return dit_error_set(err, DIT_EUNSUPPORTED,
			                     "%s: no block kind '%s' in this build", d->name,
			                     d->pools[i].kind);
	if (npasses < 1 || npasses > DIT_MAX_PASSES)
		return dit_error_set(err, DIT_EINVAL, "%d passes: 1..%d", npasses, DIT_MAX_PASSES);
	if (!(*stages = dit_graph_workspace(d, c, grid, time_rows, ws)))
		return dit_error_set(err, DIT_EUNSUPPORTED, "%s: no stage kind '%s' in this build",
		                     d->name, d->stages ? d->stages : "");
	return DIT_OK;
}

/* The interleaved RoPE table [L, head_dim] of (cos, sin) doubles; families of split
 * tables (DIT_ROPE_HALVES) build theirs in their stages. */
static dit_status graph_rope(dit_graph *g, dit_error *err)
{
	const dit_model_desc *d = g->w.desc;
	const dit_hparams *c = &g->model->cfg;
	const dit_grid *grid = &g->grid;
	int64_t L = grid->tokens, hd = c->dim / c->num_heads;
	if (d->rope.pairing != DIT_ROPE_INTERLEAVED)
		return DIT_OK;
	double *rope = malloc((size_t)(L * hd) * sizeof *rope);
	if (!rope)
		return dit_error_set(err, DIT_ENOMEM, "out of memory for the RoPE table");
	/* the config's split when it gives one (HunyuanVideo's rope_dim_list), else the
	 * family's */
	int64_t axes[3];
	if (c->rope_dims[0] > 0 && c->rope_dims[0] + c->rope_dims[1] + c->rope_dims[2] == hd)
		for (int i = 0; i < 3; i++)
			axes[i] = c->rope_dims[i] / 2;
	else
		d->rope.axes(hd, axes);
	double theta = c->rope_theta > 0 ? c->rope_theta : d->rope.theta;
	dit_cpu_rope_table(rope, grid->tf, grid->th, grid->tw, hd, theta, axes);
	dit_graph_vector(g, &g->rope, L * hd, sizeof(double), "rope");
	/* Fill the StarPU-owned copy from the host table. */
	starpu_data_acquire(g->rope, STARPU_W);
	memcpy((void *)starpu_vector_get_local_ptr(g->rope), rope, (size_t)(L * hd) * sizeof *rope);
	starpu_data_release(g->rope);
	free(rope);
	return DIT_OK;
}

/* A family's work buffer registered, zero-filled when an op writes only part of it
 * (its other parts, read by later tasks, must be valid data for StarPU). */
static void graph_ws_buffer(dit_graph *g, starpu_data_handle_t *h, const dit_ws_buf *b)
{
	dit_graph_vector(g, h, b->n, b->elemsize, b->name);
	if (!b->init)
		return;
	starpu_data_acquire(*h, STARPU_W);
	memset((void *)starpu_vector_get_local_ptr(*h), 0, (size_t)b->n * b->elemsize);
	starpu_data_release(*h);
}

/* The conditioning inputs: the model input of image concatenation (the latent, copied
 * in each step, then y) and the first-frame latent z. */
static dit_status graph_image_inputs(dit_graph *g, const float *y, const float *z, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	const dit_grid *grid = &g->grid;
	int64_t fhw = grid->f * grid->h * grid->w;
	if (y) {
		int64_t n = c->in_dim * fhw, lat = c->out_dim * fhw;
		float *tmp = calloc((size_t)n, sizeof *tmp);
		if (!tmp)
			return dit_error_set(err, DIT_ENOMEM, "out of memory for the model input");
		memcpy(tmp + lat, y, (size_t)(n - lat) * sizeof *tmp);
		dit_graph_vector_fill(g, &g->img.xin, tmp, n, "xin");
		free(tmp);
	}
	if (z)
		dit_graph_vector_fill(g, &g->img.z, z, c->out_dim * grid->h * grid->w, "z");
	return DIT_OK;
}

/* Pass p's handles: its context (the host rows zero-padded or cut to text_len), its
 * token stream and velocity, its work buffers (the block-lived ones shared with the
 * passes of the same slot). */
static void graph_pass(dit_graph *g, int p, const float *context, int64_t ctx_rows)
{
	const dit_hparams *c = &g->model->cfg;
	const dit_grid *grid = &g->grid;
	int64_t Lc = c->text_len;
	size_t fl = sizeof(float);
	dit_pass *ps = &g->pass[p];
	dit_graph_vector(g, &ps->context, Lc * c->text_dim, fl, "context");
	starpu_data_acquire(ps->context, STARPU_W);
	float *dst = (float *)starpu_vector_get_local_ptr(ps->context);
	memset(dst, 0, (size_t)(Lc * c->text_dim) * fl);
	int64_t rows = ctx_rows < Lc ? ctx_rows : Lc;
	memcpy(dst, context, (size_t)(rows * c->text_dim) * fl);
	starpu_data_release(ps->context);

	ps->text_valid = Lc;
	ps->aux_text_valid = Lc;
	dit_graph_vector(g, &ps->x, grid->tokens * c->dim, fl, "x");
	dit_graph_vector(g, &ps->out, c->out_dim * grid->f * grid->h * grid->w, fl, "velocity");
	for (int i = 0; i < DIT_MAX_WS; i++) {
		if (!g->spec.pass[i].n)
			continue;
		if (!ws_owned(g, p, i)) /* the copy of an earlier pass */
			ps->ws[i] = g->pass[p % g->slots].ws[i];
		else
			graph_ws_buffer(g, &ps->ws[i], &g->spec.pass[i]);
	}
}

dit_status dit_graph_init(dit_graph *g, const dit_graph_weights *wt, const dit_grid *grid,
                          int npasses, int slots, const float *const *context,
                          const int64_t *ctx_rows, int64_t time_rows, const float *y,
                          const float *z, dit_error *err)
{
	if (time_rows < 1)
		time_rows = 1;
	const dit_block_kind *kind[DIT_MAX_POOLS] = {0};
	const dit_stage_kind *stages = NULL;
	dit_ws_spec ws;
	dit_status st = graph_kinds(wt, grid, npasses, time_rows, kind, &stages, &ws, err);
	if (st)
		return st;
	memset(g, 0, sizeof *g);
	memcpy(g->kind, kind, sizeof kind);
	g->stages = stages;
	g->spec = ws;
	g->w = *wt;
	g->model = &g->w.expert[0];
	g->text_expert = -1;
	g->cur_pool = -1;
	g->cur_block = -1;
	g->cur_pass = -1;
	g->prio_lo = 1;
	g->prio_hi = 0;
	g->time_rows = time_rows;
	g->grid = *grid;
	g->npasses = npasses;
	g->slots = slots < 1 || slots > npasses ? npasses : slots;
	/* chunks homed on the planner's disk node: the planner counts activations in RAM */
	starpu_data_handle_t *hc = g->model->pool[0].h_chunks;
	g->ram_only = hc && starpu_node_get_kind((unsigned)starpu_data_get_home_node(hc[0])) ==
	                        STARPU_DISK_RAM;
	pthread_mutex_init(&g->step_lock, NULL);
	pthread_cond_init(&g->step_cond, NULL);
	if (stages->state_bytes && !(g->fam = calloc(1, stages->state_bytes)))
		return dit_error_set(err, DIT_ENOMEM, "out of memory for the %s state",
		                     stages->name);

	if ((st = graph_rope(g, err)) != DIT_OK)
		return st;
	for (int i = 0; i < DIT_MAX_WS; i++)
		if (ws.shared[i].n)
			graph_ws_buffer(g, &g->ws[i], &ws.shared[i]);
	if ((st = graph_image_inputs(g, y, z, err)) != DIT_OK)
		return st;
	for (int p = 0; p < npasses; p++)
		graph_pass(g, p, context[p], ctx_rows[p]);
	dit_act_plan act;
	dit_graph_act_plan(wt->desc, &g->model->cfg, grid, npasses, g->slots, time_rows, y != NULL,
	                   z != NULL, &act);
	g->activation_bytes = act.total;
	return DIT_OK;
}

dit_status dit_graph_set_cond(dit_graph *g, int p, int64_t text_valid, const float *pooled,
                              int64_t pooled_n, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	dit_pass *ps = &g->pass[p];
	if (text_valid >= 0) {
		if (text_valid < 1 || text_valid > c->text_len)
			return dit_error_set(err, DIT_EINVAL,
			                     "%lld text tokens: the model takes 1..%lld (text_len)",
			                     (long long)text_valid, (long long)c->text_len);
		ps->text_valid = text_valid;
	}
	if (pooled) {
		if (pooled_n != c->text_dim_2)
			return dit_error_set(
			    err, DIT_ESHAPE,
			    "pooled text embedding of %lld values, the model takes %lld",
			    (long long)pooled_n, (long long)c->text_dim_2);
		if (ps->pooled)
			starpu_data_unregister(ps->pooled);
		dit_graph_vector_fill(g, &ps->pooled, pooled, pooled_n, "pooled");
	}
	return DIT_OK;
}

dit_status dit_graph_buffer_fill(dit_graph *g, int p, const char *name, const void *src, size_t n,
                                 dit_error *err)
{
	const dit_ws_buf *spec = p < 0 ? g->spec.shared : g->spec.pass;
	for (int i = 0; i < DIT_MAX_WS; i++) {
		if (!spec[i].n || strcmp(spec[i].name, name) != 0)
			continue;
		if (n > (size_t)spec[i].n * spec[i].elemsize)
			return dit_error_set(err, DIT_ESHAPE,
			                     "%zu bytes for the %zu of buffer '%s'", n,
			                     (size_t)spec[i].n * spec[i].elemsize, name);
		starpu_data_handle_t h = p < 0 ? g->ws[i] : g->pass[p].ws[i];
		starpu_data_acquire(h, STARPU_W);
		memcpy((void *)starpu_vector_get_local_ptr(h), src, n);
		starpu_data_release(h);
		return DIT_OK;
	}
	return dit_error_set(err, DIT_ENOTFOUND, "%s: no work buffer '%s'", g->w.desc->name, name);
}

/* The row tiles of a token chunk's buffer of rows rows: about the graph's tile rows, in
 * a power of two of tiles and at least two (a chunk's ops are its parallelism, and the
 * workers split a power of two evenly where three tiles on two workers left one idle a
 * third of each op). */
static int64_t chunk_tile(int64_t tile_rows, int64_t rows)
{
	int64_t n = 2;
	/* the power of two nearest rows / tile_rows on a log scale */
	while (2 * n * tile_rows * 2 * n * tile_rows <= 2 * rows * rows && n < DIT_MAX_TILES / 2)
		n *= 2;
	return (rows + n - 1) / n;
}

dit_status dit_graph_set_tiles(dit_graph *g, int64_t tile_rows, dit_error *err)
{
	g->tile_rows = tile_rows > 0 ? tile_rows : 0;
	if (!g->tile_rows)
		return DIT_OK;
	const dit_hparams *c = &g->model->cfg;
	dit_status st = DIT_OK;
	for (int p = 0; p < g->npasses && !st; p++) {
		dit_pass *ps = &g->pass[p];
		st = dit_graph_tile(g, &ps->x, g->grid.tokens, c->dim, g->tile_rows, "x", err);
		for (int i = 0; i < DIT_MAX_WS && !st; i++) {
			const dit_ws_buf *b = &g->spec.pass[i];
			if (!b->n || b->rows <= 0 || b->n % b->rows || !ws_owned(g, p, i))
				continue;
			int64_t tile = b->chunk ? chunk_tile(g->tile_rows, b->rows) : g->tile_rows;
			st = dit_graph_tile(g, &ps->ws[i], b->rows, b->n / b->rows, tile, b->name,
			                    err);
			if (!st && b->chunk)
				dit_tiles_set_prefix(ps->ws[i]);
		}
	}
	/* tiling registered the owners' handles again: the passes sharing them follow */
	for (int p = 0; p < g->npasses; p++)
		for (int i = 0; i < DIT_MAX_WS; i++)
			if (g->spec.pass[i].n && !ws_owned(g, p, i))
				g->pass[p].ws[i] = g->pass[p % g->slots].ws[i];
	return st;
}

void dit_graph_free(dit_graph *g)
{
	dit_graph_tiles_free(g);
	starpu_data_handle_t *all[] = {&g->rope, &g->img.xin, &g->img.z, &g->img.cond_gt,
	                               &g->img.cond_v};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (*all[i])
			starpu_data_unregister(*all[i]);
	for (int i = 0; i < DIT_MAX_WS; i++)
		if (g->ws[i])
			starpu_data_unregister(g->ws[i]);
	for (int p = 0; p < g->npasses; p++) {
		dit_pass *ps = &g->pass[p];
		starpu_data_handle_t *h[] = {&ps->context, &ps->x, &ps->out, &ps->pooled};
		for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
			if (*h[i])
				starpu_data_unregister(*h[i]);
		for (int i = 0; i < DIT_MAX_WS; i++)
			if (ps->ws[i] && ws_owned(g, p, i))
				starpu_data_unregister(ps->ws[i]);
	}
	pthread_mutex_destroy(&g->step_lock);
	pthread_cond_destroy(&g->step_cond);
	dit_graph_task_names_free(g);
	free(g->fam);
	memset(g, 0, sizeof *g);
}
