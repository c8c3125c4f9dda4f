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
 * The plan is a function of the shapes and of the tile size alone (never of the
 * workers or the scheduler): rows are cut into n = ceil(rows / tile) tiles of
 * floor(rows / n) or one more rows, the longer ones first. */
#ifndef DIT_TILES_H
#define DIT_TILES_H

#include <starpu.h>

#include "dit_error.h"

struct dit_graph;

typedef struct dit_tiles {
	starpu_data_handle_t parent; /* [rows, width] */
	int64_t rows, width;
	int n;                       /* tiles */
	int64_t *row0;               /* [n + 1]: tile i holds rows row0[i] .. row0[i+1) */
	starpu_data_handle_t *child; /* [n] */
	int split;                   /* the partition is submitted: the tiles are in use */
	starpu_data_handle_t *slot;  /* where the graph keeps parent */
	void *mem;                   /* the parent's RAM */
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
 * the graph's row tiles (nothing when the plan gives one tile): *hp is registered
 * anew on RAM of its own (its home node), the tiles named name in traces. */
dit_status dit_graph_tile(struct dit_graph *g, starpu_data_handle_t *hp, int64_t rows,
                          int64_t width, const char *name, dit_error *err);

/* The tiles of h when h is a tiled activation of exactly rows rows and width
 * columns; NULL otherwise (the op then runs as one task). */
const dit_tiles *dit_tiles_of(starpu_data_handle_t h, int64_t rows, int64_t width);

/* Before a task accesses h: unpartitions h when it is a split parent, partitions its
 * parent when h is a tile of a whole one. */
void dit_tiles_prepare(starpu_data_handle_t h);

/* Unpartitions every split activation of g (the end of a forward: every buffer is
 * whole again for the stages, the solver and the reads of the results). */
void dit_graph_tiles_join(struct dit_graph *g);

/* Drops the partition plans (before the handles are unregistered). */
void dit_graph_tiles_free(struct dit_graph *g);

#endif
