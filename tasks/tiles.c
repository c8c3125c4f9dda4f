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
	/* the power of two n nearest rows / target: n <= q < 2n, then n or 2n (the
	 * nearer on a log scale: 2n when q^2 >= 2 n^2, compared in integers) */
	int64_t q = rows / DIT_TILE_TARGET, n = 1;
	while (n * 2 <= q && n < DIT_MAX_TILES / 2)
		n *= 2;
	double r = (double)rows / DIT_TILE_TARGET;
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
	free(t);
}

dit_status dit_graph_tile(dit_graph *g, starpu_data_handle_t *hp, int64_t rows, int64_t width,
                          const char *name, dit_error *err)
{
	int n = dit_tile_count(rows, g->tile_rows);
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
	t->bytes = (size_t)(rows * width) * sizeof(float);
	if (starpu_malloc_flags(&t->mem, t->bytes, STARPU_MALLOC_COUNT) != 0) {
		free(len);
		tiles_drop(t);
		return dit_error_set(err, DIT_ENOMEM, "out of memory for the tiled '%s'", name);
	}
	starpu_data_unregister(*hp); /* registered lazily, never used yet */
	starpu_vector_data_register(hp, STARPU_MAIN_RAM, (uintptr_t)t->mem,
	                            (uint32_t)(rows * width), sizeof(float));
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
	for (int i = 0; i < n; i++) {
		if (name)
			starpu_data_set_name(t->child[i], name);
		if (g->ram_only)
			starpu_data_set_ooc_flag(t->child[i], 0);
		starpu_data_set_user_data(t->child[i], t);
	}
	starpu_data_set_user_data(h, t);
	g->tiled[g->ntiled++] = t;
	return DIT_OK;
}

const dit_tiles *dit_tiles_of(starpu_data_handle_t h, int64_t rows, int64_t width)
{
	const dit_tiles *t = h ? starpu_data_get_user_data(h) : NULL;
	if (!t || t->parent != h || t->rows != rows || t->width != width)
		return NULL;
	return t;
}

void dit_tiles_prepare(starpu_data_handle_t h)
{
	dit_tiles *t = h ? starpu_data_get_user_data(h) : NULL;
	if (!t)
		return;
	if (h == t->parent && t->split) {
		starpu_data_unpartition_submit(t->parent, (unsigned)t->n, t->child, -1);
		t->split = 0;
	} else if (h != t->parent && !t->split) {
		starpu_data_partition_submit(t->parent, (unsigned)t->n, t->child);
		t->split = 1;
	}
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
		starpu_data_unregister(t->parent);
		*t->slot = NULL;
		tiles_drop(t);
	}
	g->ntiled = 0;
}
