/* Insert helpers for the generic ops (see dit_ops.h). A row-wise op whose activations
 * are cut into row tiles (dit_tiles.h) is one task per tile; attention is one task
 * per query tile reading the whole K, V. A task that carries a tag (the offload's
 * order: the first task of a block waits for its chunk, the last one ends its use)
 * stays one task on the whole handles, as the tag names one task. */
#include "dit_ops.h"
#include "dit_tiles.h"

#define R   STARPU_R
#define W   STARPU_W
#define RW  STARPU_RW
#define SCR STARPU_SCRATCH

/* Whether a and b cut the same rows alike (b NULL: no). */
static int tiles_alike(const dit_tiles *a, const dit_tiles *b)
{
	if (!b || b->n != a->n || b->rows != a->rows)
		return 0;
	for (int i = 1; i < a->n; i++)
		if (b->row0[i] != a->row0[i])
			return 0;
	return 1;
}

/* The tiles an op over the first rows rows of buffers a [.., wa] and b [.., wb] runs on
 * (dit_tiles_view; views kept in v): both tiled alike (b NULL: a alone, v[1] unused)
 * and no tag on the task; else NULL. */
static const dit_tiles *op_tiles(const dit_task_opts *o, starpu_data_handle_t a, int64_t wa,
                                 starpu_data_handle_t b, int64_t wb, int64_t rows, dit_tiles v[2])
{
	if (o && o->tag)
		return NULL;
	const dit_tiles *ta = dit_tiles_view(a, rows, wa, &v[0]);
	if (!ta || !b)
		return ta;
	const dit_tiles *tb = dit_tiles_view(b, rows, wb, &v[1]);
	if (!tiles_alike(ta, tb))
		return NULL;
	v[1] = *tb; /* b's tile i: v[1].child[i] */
	return ta;
}

/* Whether h holds bf16 activations (dit_grid.act_bf16). */
static int is_bf16(starpu_data_handle_t h)
{
	return starpu_data_get_interface_id(h) == STARPU_VECTOR_INTERFACE_ID &&
	       starpu_vector_get_elemsize(h) == 2;
}

static int64_t tile_rows(const dit_tiles *t, int i)
{
	return dit_tiles_rows(t, i);
}

/* A row-wise op over x and y [rows, dim] whose args (copied into c, args_size
 * bytes) hold fp, rows and row0 at the given places: one task per tile of x and y
 * (x, y the first two of the nbuf handles h) when x's rows start at its row 0 (x_off,
 * floats into x, 0), else one task. */
static dit_status rows_op(dit_graph *g, const dit_task_opts *o, const char *name,
                          struct starpu_codelet *cl, void *c, size_t args_size, dit_fp *fp,
                          int64_t *rows, int64_t *row0, int64_t dim, int64_t x_off, int nbuf,
                          starpu_data_handle_t *h, const enum starpu_data_access_mode *md,
                          dit_error *err)
{
	starpu_data_handle_t x = h[0], y = h[1];
	int64_t all = *rows, first = *row0;
	dit_tiles v[2];
	const dit_tiles *t = x_off == 0 ? op_tiles(o, x, dim, y, dim, all, v) : NULL;
	for (int i = 0; i < (t ? t->n : 1); i++) {
		if (t) {
			*rows = fp->v[0] = tile_rows(t, i);
			*row0 = first + t->row0[i];
			h[0] = t->child[i];
			h[1] = v[1].child[i];
		}
		dit_status st = dit_graph_insert(g, cl, name, c, args_size, 0, nbuf, h, md, o, err);
		if (st)
			return st;
	}
	return DIT_OK;
}

/* The access mode of an op's output h, of which it writes rows rows of width floats,
 * ld apart, from element off: W when that is all of h, else RW, so that the rest of h
 * stays valid wherever StarPU runs the task (an op writing only some columns or rows
 * of a buffer: HunyuanVideo's joint attention, its concatenated MLP input). */
static enum starpu_data_access_mode out_mode(starpu_data_handle_t h, int64_t rows, int64_t ld,
                                             int64_t width, int64_t off)
{
	if (off == 0 && ld == width &&
	    (starpu_data_get_interface_id(h) != STARPU_VECTOR_INTERFACE_ID ||
	     (int64_t)starpu_vector_get_nx(h) == rows * ld))
		return W;
	return RW;
}

/* The column tiles of y for a GEMM of m rows writing all n columns of y [m, n]: when
 * m < n (the input, m x k, is smaller than the weights, n x k, so reading the input
 * once per tile costs less than packing the weights once per row tile) and no tag. */
static const dit_tiles *gemm_columns(const dit_task_opts *o, const dit_linear_args *a,
                                     starpu_data_handle_t y)
{
	if ((o && o->tag) || a->m >= a->n || a->y_off != 0 || a->ldy != a->n)
		return NULL;
	const dit_tiles *t = dit_tiles_of(y, a->m, a->n);
	return t && t->nc >= 2 ? t : NULL;
}

static dit_status op_linear_part(dit_graph *g, const dit_task_opts *o, const char *name,
                                 const dit_linear_args *a, const dit_linear_args *all, int first,
                                 starpu_data_handle_t x, starpu_data_handle_t slab,
                                 starpu_data_handle_t y, starpu_data_handle_t scratch,
                                 dit_error *err);

/* Whether rows [w_row, w_row + n) from tensor wt of v lie in tensors of one dtype, fp32
 * or bf16, laid end to end: one matrix a single GEMM can read. */
static int linear_span_whole(const dit_wview *v, int wt, int64_t w_row, int64_t n, int64_t k)
{
	int w = v->wdt[wt];
	if (w != DIT_WDT_F32 && w != DIT_WDT_BF16)
		return 0;
	int64_t end = w_row + n;
	for (int t = wt; t < DIT_MAX_TENSORS && k > 0; t++) {
		if (v->wdt[t] != w)
			return 0;
		int64_t rows = v->numel[t] / k;
		if (end <= rows)
			return 1;
		end -= rows;
	}
	return 0;
}

dit_status dit_op_linear_w(dit_graph *g, const dit_task_opts *o, const char *name,
                           const dit_linear_args *a, const dit_wview *v, int wt, int64_t w_row,
                           starpu_data_handle_t x, starpu_data_handle_t y,
                           starpu_data_handle_t scratch, dit_error *err)
{
	dit_linear_args c = *a;
	dit_linear_weight(&c, v, wt, w_row);
	if (linear_span_whole(v, wt, w_row, a->n, a->k))
		return dit_op_linear(g, o, name, &c, x, v->slab, y, scratch, err);
	int64_t done = 0, row = w_row;
	for (int t = wt; done < a->n; t++) {
		int64_t rows = a->k > 0 && t < DIT_MAX_TENSORS ? v->numel[t] / a->k : 0;
		if (t >= DIT_MAX_TENSORS || (rows == 0 && a->k > 0 && v->numel[t] > 0))
			return dit_error_set(err, DIT_EINVAL, "%s: %lld rows past the weights",
			                     name, (long long)(a->n - done));
		if (row >= rows) {
			row -= rows;
			continue;
		}
		int64_t nt = rows - row < a->n - done ? rows - row : a->n - done;
		c = *a;
		dit_linear_weight(&c, v, t, row);
		c.n = c.fp.v[1] = nt;
		c.y_off = a->y_off + done;
		c.b_off = a->b_off >= 0 ? a->b_off + done : -1;
		TRY(op_linear_part(g, o, name, &c, a, done == 0, x, v->slab, y, scratch, err));
		done += nt;
		row = 0;
	}
	return DIT_OK;
}

/* dit_op_linear for the columns of y a writes, part of a GEMM whose columns are those
 * of all (the same args when it is whole): the first part writes y as all does (W when
 * that is all of y), a later one keeps the columns the others wrote (RW). */
static dit_status op_linear_part(dit_graph *g, const dit_task_opts *o, const char *name,
                                 const dit_linear_args *a, const dit_linear_args *all, int first,
                                 starpu_data_handle_t x, starpu_data_handle_t slab,
                                 starpu_data_handle_t y, starpu_data_handle_t scratch,
                                 dit_error *err)
{
	dit_linear_args c = *a;
	enum starpu_data_access_mode md[] = {R, R, W, SCR};
	int nbuf = dit_linear_nbuf(a->wdt, is_bf16(x), is_bf16(y));
	const dit_tiles *tc = gemm_columns(o, a, y);
	for (int j = 0; tc && j < tc->nc; j++) {
		/* columns c0.. of y from rows c0.. of W */
		int64_t c0 = tc->col0[j];
		c.n = c.fp.v[1] = tc->col0[j + 1] - c0;
		c.w_row0 = a->w_row0 + c0;
		c.b_off = a->b_off >= 0 ? a->b_off + c0 : -1;
		starpu_data_handle_t h[] = {x, slab, tc->cchild[j], scratch};
		dit_status st = dit_graph_insert(g, &dit_cl_linear, name, &c, sizeof c,
		                                 2.0 * a->m * c.n * a->k, nbuf, h, md, o, err);
		if (st)
			return st;
	}
	if (tc)
		return DIT_OK;
	dit_tiles v[2];
	const dit_tiles *t = a->x_off < a->ldx && a->y_off < a->ldy
	                         ? op_tiles(o, x, a->ldx, y, a->ldy, a->m, v)
	                         : NULL;
	for (int i = 0; i < (t ? t->n : 1); i++) {
		if (t) {
			c.m = c.fp.v[0] = tile_rows(t, i);
		}
		starpu_data_handle_t h[] = {t ? t->child[i] : x, slab, t ? v[1].child[i] : y,
		                            scratch};
		md[2] = first ? out_mode(h[2], c.m, all->ldy, all->n, all->y_off) : RW;
		dit_status st = dit_graph_insert(g, &dit_cl_linear, name, &c, sizeof c,
		                                 2.0 * c.m * a->n * a->k, nbuf, h, md, o, err);
		if (st)
			return st;
	}
	return DIT_OK;
}

dit_status dit_op_linear(dit_graph *g, const dit_task_opts *o, const char *name,
                         const dit_linear_args *a, starpu_data_handle_t x,
                         starpu_data_handle_t slab, starpu_data_handle_t y,
                         starpu_data_handle_t scratch, dit_error *err)
{
	return op_linear_part(g, o, name, a, a, 1, x, slab, y, scratch, err);
}

dit_status dit_op_layernorm(dit_graph *g, const dit_task_opts *o, const char *name,
                            const dit_layernorm_args *a, starpu_data_handle_t x,
                            starpu_data_handle_t y, starpu_data_handle_t slab,
                            starpu_data_handle_t vec, dit_error *err)
{
	dit_layernorm_args c = *a;
	starpu_data_handle_t h[] = {x, y, slab, vec};
	enum starpu_data_access_mode md[] = {R, W, R, R};
	return rows_op(g, o, name, &dit_cl_layernorm, &c, sizeof c, &c.fp, &c.rows, &c.row0, a->dim,
	               a->x_off, a->mod ? 4 : 3, h, md, err);
}

dit_status dit_op_rmsnorm(dit_graph *g, const dit_task_opts *o, const char *name,
                          const dit_qknorm_args *a, starpu_data_handle_t t,
                          starpu_data_handle_t slab, starpu_data_handle_t rope, dit_error *err)
{
	dit_qknorm_args c = *a;
	enum starpu_data_access_mode md[] = {RW, R, R};
	dit_tiles v[2];
	const dit_tiles *tt = a->t_off < a->ld ? op_tiles(o, t, a->ld, NULL, 0, a->rows, v) : NULL;
	for (int i = 0; i < (tt ? tt->n : 1); i++) {
		if (tt) {
			c.rows = c.fp.v[0] = tile_rows(tt, i);
			/* a row's table: head_dim doubles, split: heads * head_dim */
			c.rope_off =
			    a->rope_off + tt->row0[i] * a->head_dim *
			                      (a->rope_split && !a->rope_shared ? a->heads : 1);
		}
		starpu_data_handle_t h[] = {tt ? tt->child[i] : t, slab, rope};
		dit_status st = dit_graph_insert(g, &dit_cl_qk_norm, name, &c, sizeof c, 0,
		                                 a->rope ? 3 : 2, h, md, o, err);
		if (st)
			return st;
	}
	return DIT_OK;
}

dit_status dit_op_attention(dit_graph *g, const dit_task_opts *o, const char *name,
                            const dit_attention_args *a, starpu_data_handle_t q,
                            starpu_data_handle_t kv, starpu_data_handle_t out,
                            starpu_data_handle_t scratch, dit_error *err)
{
	dit_attention_args c = *a;
	c.cross = kv != NULL;
	int64_t lk = a->lk_valid > 0 ? a->lk_valid : a->lk;
	/* query tiles: the output's row tiles; cross-attention reads q's matching tile
	 * when q is tiled alike, else (and self-attention, whose K, V share q's buffer)
	 * the whole q from the tile's first row */
	dit_tiles v[2], vq[2];
	const dit_tiles *t = op_tiles(o, out, a->ldo, NULL, 0, a->lq, v);
	const dit_tiles *tq =
	    t && kv && a->q_off < a->ldq ? op_tiles(o, q, a->ldq, NULL, 0, a->lq, vq) : NULL;
	if (tq && !tiles_alike(t, tq))
		tq = NULL;
	for (int i = 0; i < (t ? t->n : 1); i++) {
		if (t) {
			c.lq = c.fp.v[0] = tile_rows(t, i);
			c.q_off = a->q_off + (tq ? 0 : t->row0[i] * a->ldq);
		}
		starpu_data_handle_t qi = tq ? tq->child[i] : q, oi = t ? t->child[i] : out;
		enum starpu_data_access_mode mo = out_mode(oi, c.lq, a->ldo, a->heads * a->hd, 0);
		double flops = 4.0 * (double)c.lq * (double)lk * (double)(a->heads * a->hd);
		dit_status st;
		if (kv) {
			starpu_data_handle_t h[] = {qi, kv, oi, scratch};
			enum starpu_data_access_mode md[] = {R, R, mo, SCR};
			st = dit_graph_insert(g, &dit_cl_attention, name, &c, sizeof c, flops, 4, h,
			                      md, o, err);
		} else {
			starpu_data_handle_t h[] = {qi, oi, scratch};
			enum starpu_data_access_mode md[] = {R, mo, SCR};
			st = dit_graph_insert(g, &dit_cl_attention, name, &c, sizeof c, flops, 3, h,
			                      md, o, err);
		}
		if (st)
			return st;
	}
	return DIT_OK;
}

dit_status dit_op_residual(dit_graph *g, const dit_task_opts *o, const char *name,
                           const dit_residual_args *a, starpu_data_handle_t x,
                           starpu_data_handle_t y, starpu_data_handle_t slab,
                           starpu_data_handle_t vec, dit_error *err)
{
	dit_residual_args c = *a;
	starpu_data_handle_t h[] = {x, y, slab, vec};
	enum starpu_data_access_mode md[] = {RW, R, R, R};
	return rows_op(g, o, name, &dit_cl_residual, &c, sizeof c, &c.fp, &c.rows, &c.row0, a->dim,
	               a->x_off, a->gate_off >= 0 ? 4 : 2, h, md, err);
}

dit_status dit_op_copy2d(dit_graph *g, const dit_task_opts *o, const char *name,
                         const dit_copy2d_args *a, starpu_data_handle_t dst,
                         starpu_data_handle_t src, dit_error *err)
{
	dit_copy2d_args c = *a;
	if (is_bf16(dst) != is_bf16(src))
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: copy2d between an fp32 and a bf16 buffer", name);
	starpu_data_handle_t h[] = {dst, src};
	int whole = a->count == 1 || a->dst_ld == a->len;
	enum starpu_data_access_mode md[] = {
	    whole ? out_mode(dst, a->count, a->len, a->len, a->dst_off) : RW, R};
	return dit_graph_insert(g, &dit_cl_copy2d, name, &c, sizeof c, 0, 2, h, md, o, err);
}

dit_status dit_op_patch_embed(dit_graph *g, const char *name, int64_t w_off, int64_t b_off,
                              starpu_data_handle_t latent, starpu_data_handle_t x,
                              starpu_data_handle_t scratch, dit_error *err)
{
	const dit_hparams *c = &g->model->cfg;
	const dit_grid *gr = &g->grid;
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
	                           .w_off = w_off,
	                           .b_off = b_off};
	dit_wview gv;
	dit_graph_globals_view(g, &gv);
	starpu_data_handle_t h[] = {gv.slab, latent, x, scratch};
	enum starpu_data_access_mode md[] = {R, R, W, SCR};
	return dit_graph_insert(g, &dit_cl_patch_embed, name, &pa, sizeof pa,
	                        2.0 * gr->tokens * c->dim * c->in_dim * P, 4, h, md, NULL, err);
}

dit_status dit_op_head_gate(dit_graph *g, const dit_task_opts *o, const char *name,
                            const dit_head_gate_args *a, starpu_data_handle_t out,
                            starpu_data_handle_t logits, dit_error *err)
{
	dit_head_gate_args c = *a;
	enum starpu_data_access_mode md[] = {RW, R};
	/* row tiles of o; logits' matching tile when it is tiled alike, else the whole
	 * logits from the tile's first row */
	dit_tiles v[2], vg[2];
	const dit_tiles *t =
	    a->o_off < a->ldo ? op_tiles(o, out, a->ldo, NULL, 0, a->rows, v) : NULL;
	const dit_tiles *tg =
	    t && a->g_off < a->ldg ? op_tiles(o, logits, a->ldg, NULL, 0, a->rows, vg) : NULL;
	if (tg && !tiles_alike(t, tg))
		tg = NULL;
	for (int i = 0; i < (t ? t->n : 1); i++) {
		if (t) {
			c.rows = c.fp.v[0] = tile_rows(t, i);
			c.g_off = a->g_off + (tg ? 0 : t->row0[i] * a->ldg);
		}
		starpu_data_handle_t h[] = {t ? t->child[i] : out, tg ? tg->child[i] : logits};
		dit_status st =
		    dit_graph_insert(g, &dit_cl_head_gate, name, &c, sizeof c, 0, 2, h, md, o, err);
		if (st)
			return st;
	}
	return DIT_OK;
}

dit_status dit_op_add_rows(dit_graph *g, const dit_task_opts *o, const char *name,
                           const dit_add_rows_args *a, starpu_data_handle_t x,
                           starpu_data_handle_t slab, dit_error *err)
{
	dit_task_opts on_cpu = o ? *o : (dit_task_opts){0};
	on_cpu.where = STARPU_CPU;
	dit_add_rows_args c = *a;
	enum starpu_data_access_mode md[] = {RW, R};
	/* the row tiles of x (when x is a tiled [total, ld]) that hold rows of [r0, r0 +
	 * rows), each with its part; else one task on x */
	int64_t total = 0;
	if (starpu_data_get_interface_id(x) == STARPU_VECTOR_INTERFACE_ID && a->ld > 0 &&
	    (int64_t)starpu_vector_get_nx(x) % a->ld == 0)
		total = (int64_t)starpu_vector_get_nx(x) / a->ld;
	dit_tiles v[2];
	const dit_tiles *t = total > 0 ? op_tiles(o, x, a->ld, NULL, 0, total, v) : NULL;
	for (int i = 0; i < (t ? t->n : 1); i++) {
		starpu_data_handle_t h[] = {x, slab};
		if (t) {
			int64_t lo = t->row0[i], hi = t->row0[i + 1];
			int64_t b = a->r0 > lo ? a->r0 : lo,
			        e = a->r0 + a->rows < hi ? a->r0 + a->rows : hi;
			if (b >= e)
				continue;
			c.r0 = b - lo;
			c.rows = c.fp.v[0] = e - b;
			c.v_off = a->v_off + (b - a->r0) * a->v_ld;
			h[0] = t->child[i];
		}
		dit_status st = dit_graph_insert(g, &dit_cl_add_rows, name, &c, sizeof c, 0, 2, h,
		                                 md, &on_cpu, err);
		if (st)
			return st;
	}
	return DIT_OK;
}
