/* Row tiles of the activations: one forward keeps every worker busy.
 *
 * An activation [rows, width] (the token stream, the normed input, q/k/v, the FFN
 * hidden rows, the text context) is cut into row tiles through a StarPU partition
 * plan (a vector filter of explicit lengths: children are views into the parent, no
 * copies). The op helpers (tasks/ops.c) submit one task per tile for the row-wise ops
 * (linear, norms, modulation, residuals) and one per query tile for attention, which
 * reads the whole K, V. Whether a handle is used whole or as tiles is settled when a
 * task is submitted (dit_graph_insert): a task on the whole handle first submits the
 * unpartition, a task on a tile the partition, so StarPU orders them by their data.
 *
 * A GEMM whose tokens are fewer than its output features runs instead as one task
 * per column tile of its output (the same number of tiles; a column tile is a StarPU
 * matrix view [rows, cols] with the activation's row stride): each task then reads
 * its own rows of the weights and the whole input, so the weights are packed once in
 * all, not once per row tile.
 *
 * The plan is a function of the shapes and of the tile size alone (never of the
 * workers or the scheduler): rows are cut into n = ceil(rows / tile) tiles of
 * floor(rows / n) or one more rows, the longer ones first; columns
 * likewise into as many tiles, their bounds rounded to 16 columns. */
#ifndef DIT_TILES_H
#define DIT_TILES_H

#include <starpu.h>

#include "dit_error.h"

struct dit_graph;

struct dit_tiles;
/* What a handle of a tiled activation is: the parent (plan 0), a row tile (1) or a
 * column tile (2); its StarPU user data. */
typedef struct dit_tile_tag {
	struct dit_tiles *t;
	int plan;
} dit_tile_tag;

typedef struct dit_tiles {
	starpu_data_handle_t parent; /* [rows, width] */
	int64_t rows, width;
	int n;                        /* row tiles */
	int64_t *row0;                /* [n + 1]: tile i holds rows row0[i] .. row0[i+1) */
	starpu_data_handle_t *child;  /* [n] vectors */
	int nc;                       /* column tiles (0: none) */
	int64_t *col0;                /* [nc + 1]: tile j holds columns col0[j] .. col0[j+1) */
	starpu_data_handle_t *cchild; /* [nc] matrices [rows, cols] of row stride width */
	int split;                    /* the plan in use: 0 none (whole), 1 rows, 2 columns */
	int prefix; /* ops over its first rows alone may run on its first tiles (a token
	             * chunk's buffer, sized for the longest chunk, serving a shorter one) */
	dit_tile_tag tag[3];
	starpu_data_handle_t *slot; /* where the graph keeps parent */
	void *mem;                  /* the parent's RAM */
	size_t bytes;
} dit_tiles;

/* The default rows per tile for rows rows when only CPU workers compute (no
 * --tile-tokens): a power-of-two number of tiles of about DIT_TILE_TARGET rows (the
 * power of two nearest rows / DIT_TILE_TARGET, at least 1), so that the tiles of an op
 * split evenly over 2, 4, 8, ... workers while a GEMM tile keeps enough rows to reuse
 * its packed weights: 1 170 tokens give 2 tiles of 585, 4 000 give 8 of 500, 32 760
 * give 64 of 512. A function of rows alone. */
#define DIT_TILE_TARGET 512
int64_t dit_tile_default(int64_t rows);

/* Tiles of rows rows at most tile rows each (1 when tile <= 0 or tile >= rows), and
 * their first rows row0[0 .. n] (row0 may be NULL). */
int dit_tile_count(int64_t rows, int64_t tile);
void dit_tile_bounds(int64_t rows, int n, int64_t *row0);

/* Cuts g's activation *hp [rows, width] of floats, registered and never used yet, into
 * row tiles of at most tile rows (nothing when that gives one tile): *hp is registered
 * anew on RAM of its own (its home node), the tiles named name in traces. */
dit_status dit_graph_tile(struct dit_graph *g, starpu_data_handle_t *hp, int64_t rows,
                          int64_t width, int64_t tile, const char *name, dit_error *err);

/* The tiles of h when h is a tiled activation of exactly rows rows and width
 * columns; NULL otherwise (the op then runs as one task). */
const dit_tiles *dit_tiles_of(starpu_data_handle_t h, int64_t rows, int64_t width);

/* Marks h's row tiles (when h is tiled) as a token chunk's: an op over its first rows
 * alone runs on the tiles holding them (dit_tiles_view), the last one cut short. */
void dit_tiles_set_prefix(starpu_data_handle_t h);

/* The tiles an op over the first rows rows of h [.., width] runs on: h's plan when it
 * holds exactly rows rows; when h's plan is a prefix one (dit_tiles_set_prefix) and
 * rows are fewer but span two tiles or more, *view filled as a view of the tiles that
 * hold them (view->rows = rows, view->n of them; the last one's rows are cut at rows:
 * dit_tiles_rows); NULL otherwise. */
const dit_tiles *dit_tiles_view(starpu_data_handle_t h, int64_t rows, int64_t width,
                                dit_tiles *view);
/* The rows of tile i of t: its bounds, the last one cut at t->rows. */
int64_t dit_tiles_rows(const dit_tiles *t, int i);

/* Before a task accesses h: makes the plan h belongs to the one in use (the parent:
 * none; a row or column tile: its plan), submitting the unpartition and partition
 * that takes. */
void dit_tiles_prepare(starpu_data_handle_t h);

/* Unpartitions every split activation of g (the end of a forward: every buffer is
 * whole again for the stages, the solver and the reads of the results). */
void dit_graph_tiles_join(struct dit_graph *g);

/* Drops the partition plans (before the handles are unregistered). */
void dit_graph_tiles_free(struct dit_graph *g);

#endif
