/* Row tiles of the activations (see dit_tiles.h). */
#include <stdlib.h>
#include <string.h>

#include "dit_graph.h"
#include "dit_tiles.h"

int dit_tile_count(int64_t rows, int64_t tile)
{
	if (tile <= 0 || tile >= rows || rows <= 1)
		return 1;
	int64_t n = (rows + tile - 1) / tile;
	return n > DIT_MAX_TILES ? DIT_MAX_TILES : (int)n;
}

int64_t dit_tile_default(int64_t rows)
{
	if (rows <= DIT_TILE_TARGET)
		return 0;
	/* n: the largest power of two <= r = rows / target; then 2n when r is nearer to
	 * it on a log scale (r >= n * sqrt 2) */
	double r = (double)rows / DIT_TILE_TARGET;
	int64_t n = 1;
	while (2.0 * (double)n <= r && n < DIT_MAX_TILES / 2)
		n *= 2;
	if (r * r >= 2.0 * (double)n * (double)n && n < DIT_MAX_TILES / 2)
		n *= 2;
	return n <= 1 ? 0 : (rows + n - 1) / n;
}

void dit_tile_bounds(int64_t rows, int n, int64_t *row0)
{
	int64_t base = rows / n, rem = rows % n;
	row0[0] = 0;
	for (int i = 0; i < n; i++)
		row0[i + 1] = row0[i] + base + (i < rem);
}

static void tiles_drop(dit_tiles *t)
{
	if (t->mem)
		starpu_free_flags(t->mem, t->bytes, STARPU_MALLOC_COUNT);
	free(t->row0);
	free(t->child);
	free(t->col0);
	free(t->cchild);
	free(t);
}

/* Column tile id of the vector father [rows, width] (filter_arg_ptr: the tiles) as a
 * matrix view [rows, cols] with row stride width. */
static void col_filter(void *father, void *child, struct starpu_data_filter *f, unsigned id,
                       unsigned nparts)
{
	(void)nparts;
	const struct starpu_vector_interface *v = father;
	struct starpu_matrix_interface *m = child;
	const dit_tiles *t = f->filter_arg_ptr;
	int64_t c0 = t->col0[id], nc = t->col0[id + 1] - c0;
	size_t off = (size_t)c0 * v->elemsize;
	m->id = STARPU_MATRIX_INTERFACE_ID;
	m->nx = (uint32_t)nc;
	m->ny = (uint32_t)t->rows;
	m->ld = (uint32_t)t->width;
	m->elemsize = v->elemsize;
	m->allocsize = (size_t)((t->rows - 1) * t->width + nc) * v->elemsize;
	m->ptr = v->ptr ? v->ptr + off : 0;
	m->dev_handle = v->dev_handle;
	m->offset = v->dev_handle ? v->offset + off : 0;
}

static struct starpu_data_interface_ops *col_ops(struct starpu_data_filter *f, unsigned id)
{
	(void)f;
	(void)id;
	return &starpu_interface_matrix_ops;
}

/* The column plan of t: as many tiles as rows, bounds on multiples of 16 columns;
 * none when the width is too narrow for that. */
static int plan_columns(dit_tiles *t)
{
	int nc = t->n;
	if (t->width < 32 * (int64_t)nc)
		return 0;
	t->col0 = malloc((size_t)(nc + 1) * sizeof *t->col0);
	t->cchild = calloc((size_t)nc, sizeof *t->cchild);
	if (!t->col0 || !t->cchild)
		return -1;
	for (int j = 0; j <= nc; j++)
		t->col0[j] = j == nc ? t->width : (t->width * j / nc + 8) / 16 * 16;
	struct starpu_data_filter f = {.filter_func = col_filter,
	                               .nchildren = (unsigned)nc,
	                               .get_child_ops = col_ops,
	                               .filter_arg_ptr = t};
	starpu_data_partition_plan(t->parent, &f, t->cchild);
	t->nc = nc;
	return 0;
}

dit_status dit_graph_tile(dit_graph *g, starpu_data_handle_t *hp, int64_t rows, int64_t width,
                          int64_t tile, const char *name, dit_error *err)
{
	int n = dit_tile_count(rows, tile);
	if (n < 2 || !*hp)
		return DIT_OK;
	if (g->ntiled >= DIT_GRAPH_MAX_TILED)
		return dit_error_set(err, DIT_EINVAL, "too many tiled activations");
	dit_tiles *t = calloc(1, sizeof *t);
	long *len = malloc((size_t)n * sizeof *len);
	if (t) {
		t->row0 = malloc((size_t)(n + 1) * sizeof *t->row0);
		t->child = calloc((size_t)n, sizeof *t->child);
	}
	if (!t || !len || !t->row0 || !t->child) {
		free(len);
		if (t)
			tiles_drop(t);
		return dit_error_set(err, DIT_ENOMEM, "out of memory planning the row tiles");
	}
	/* The parent gets RAM of its own that StarPU never frees or hands to another
	 * handle while the plan lives, so the tiles stay views into it (StarPU would
	 * recycle a lazily allocated buffer once the partition invalidates the parent). */
	size_t es = starpu_vector_get_elemsize(*hp); /* fp32, or bf16 activations */
	t->bytes = (size_t)(rows * width) * es;
	if (starpu_malloc_flags(&t->mem, t->bytes, STARPU_MALLOC_COUNT) != 0) {
		free(len);
		tiles_drop(t);
		return dit_error_set(err, DIT_ENOMEM, "out of memory for the tiled '%s'", name);
	}
	starpu_data_unregister(*hp); /* registered lazily, never used yet */
	starpu_vector_data_register(hp, STARPU_MAIN_RAM, (uintptr_t)t->mem,
	                            (uint32_t)(rows * width), es);
	starpu_data_handle_t h = *hp;
	starpu_data_set_name(h, name);
	if (g->ram_only)
		starpu_data_set_ooc_flag(h, 0);
	t->slot = hp;
	t->parent = h;
	t->rows = rows;
	t->width = width;
	t->n = n;
	dit_tile_bounds(rows, n, t->row0);
	for (int i = 0; i < n; i++)
		len[i] = (long)((t->row0[i + 1] - t->row0[i]) * width);
	struct starpu_data_filter f = {.filter_func = starpu_vector_filter_list_long,
	                               .nchildren = (unsigned)n,
	                               .filter_arg_ptr = len};
	starpu_data_partition_plan(h, &f, t->child);
	free(len);
	g->tiled[g->ntiled++] = t; /* freed with the graph from here on */
	if (plan_columns(t) != 0)
		return dit_error_set(err, DIT_ENOMEM, "out of memory planning the column tiles");
	for (int k = 0; k < 3; k++)
		t->tag[k] = (dit_tile_tag){t, k};
	for (int k = 1; k <= 2; k++) {
		starpu_data_handle_t *c = k == 1 ? t->child : t->cchild;
		for (int i = 0; i < (k == 1 ? t->n : t->nc); i++) {
			starpu_data_set_name(c[i], name);
			if (g->ram_only)
				starpu_data_set_ooc_flag(c[i], 0);
			starpu_data_set_user_data(c[i], &t->tag[k]);
		}
	}
	starpu_data_set_user_data(h, &t->tag[0]);
	return DIT_OK;
}

const dit_tiles *dit_tiles_of(starpu_data_handle_t h, int64_t rows, int64_t width)
{
	const dit_tile_tag *tg = h ? starpu_data_get_user_data(h) : NULL;
	const dit_tiles *t = tg ? tg->t : NULL;
	if (!t || t->parent != h || t->rows != rows || t->width != width)
		return NULL;
	return t;
}

void dit_tiles_set_prefix(starpu_data_handle_t h)
{
	const dit_tile_tag *tg = h ? starpu_data_get_user_data(h) : NULL;
	if (tg && tg->t->parent == h)
		tg->t->prefix = 1;
}

const dit_tiles *dit_tiles_view(starpu_data_handle_t h, int64_t rows, int64_t width,
                                dit_tiles *view)
{
	const dit_tile_tag *tg = h ? starpu_data_get_user_data(h) : NULL;
	const dit_tiles *t = tg ? tg->t : NULL;
	if (!t || t->parent != h || t->width != width || rows <= 0 || rows > t->rows)
		return NULL;
	if (rows == t->rows)
		return t;
	if (!t->prefix)
		return NULL;
	int n = 0;
	while (n < t->n && t->row0[n] < rows)
		n++;
	if (n < 2)
		return NULL;
	*view = *t;
	view->rows = rows;
	view->n = n;
	return view;
}

int64_t dit_tiles_rows(const dit_tiles *t, int i)
{
	int64_t end = t->row0[i + 1] < t->rows ? t->row0[i + 1] : t->rows;
	return end - t->row0[i];
}

void dit_tiles_prepare(starpu_data_handle_t h)
{
	const dit_tile_tag *tg = h ? starpu_data_get_user_data(h) : NULL;
	if (!tg || tg->t->split == tg->plan)
		return;
	dit_tiles *t = tg->t;
	if (t->split == 1)
		starpu_data_unpartition_submit(t->parent, (unsigned)t->n, t->child, -1);
	else if (t->split == 2)
		starpu_data_unpartition_submit(t->parent, (unsigned)t->nc, t->cchild, -1);
	if (tg->plan == 1)
		starpu_data_partition_submit(t->parent, (unsigned)t->n, t->child);
	else if (tg->plan == 2)
		starpu_data_partition_submit(t->parent, (unsigned)t->nc, t->cchild);
	t->split = tg->plan;
}

void dit_graph_tiles_join(dit_graph *g)
{
	for (int i = 0; i < g->ntiled; i++)
		dit_tiles_prepare(g->tiled[i]->parent);
}

void dit_graph_tiles_free(dit_graph *g)
{
	for (int i = 0; i < g->ntiled; i++) {
		dit_tiles *t = g->tiled[i];
		dit_tiles_prepare(t->parent);
		starpu_data_partition_clean(t->parent, (unsigned)t->n, t->child);
		if (t->nc)
			starpu_data_partition_clean(t->parent, (unsigned)t->nc, t->cchild);
		starpu_data_unregister(t->parent);
		*t->slot = NULL;
		tiles_drop(t);
	}
	g->ntiled = 0;
}
