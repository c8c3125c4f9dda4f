/* The forward of bench_block as plain kernel calls, in the order of the task graph
 * (tasks/wan_block.c): the reference the graph's overhead is measured against. Whole
 * ops on one thread, or the graph's row tiles (tasks/dit_tiles.h) on n threads that
 * meet at a barrier after every op. */
#ifndef BENCH_DIRECT_H
#define BENCH_DIRECT_H

#include <stdint.h>

#include "dit_graph.h"
#include "dit_weights.h"

double now_s(void);
/* n floats, 64-byte aligned and zeroed; exits when out of memory. */
float *falloc(int64_t n);

enum {
	OP_NORM1,
	OP_SA_QKV,
	OP_SA_NQ,
	OP_SA_NK,
	OP_SA_ATT,
	OP_SA_O,
	OP_SA_RES,
	OP_NORM3,
	OP_CA_Q,
	OP_CA_NQ,
	OP_CA_KV,
	OP_CA_NK,
	OP_CA_ATT,
	OP_CA_O,
	OP_CA_RES,
	OP_NORM2,
	OP_FFN0,
	OP_FFN2,
	OP_FFN_RES,
	NOPS
};

static const char *const op_name[NOPS] = {"norm1",        "sa.qkv",    "sa.norm_q",   "sa.norm_k",
                                          "sa.attention", "sa.o",      "sa.residual", "norm3",
                                          "ca.q",         "ca.norm_q", "ca.kv",       "ca.norm_k",
                                          "ca.attention", "ca.o",      "ca.residual", "norm2",
                                          "ffn.0",        "ffn.2",     "ffn.residual"};

/* Activations of one pass, as the graph's handles (tasks/dit_graph.h). */
typedef struct dpass {
	float *context, *ctx, *x, *h, *qkv, *q, *kv, *o, *y, *ffn, *out;
	float *s_attn, *s_patch, *s_head, *s_text;
} dpass;

typedef struct direct {
	const dit_model *m;
	dit_grid g;
	double t;
	double *rope;
	float *latent, *e, *e0, *s_time;
	dpass p[2];
	int time_ops;      /* accumulate per-op seconds in op_s */
	double op_s[NOPS]; /* only with time_ops */
} direct;

void direct_init(direct *ds, const dit_model *m, const dit_grid *g, int npasses,
                 float *const *context, const int64_t *ctx_rows, double t);
void direct_free(direct *ds);
/* As codelets/text_embed.c, time_embed.c, patch_embed.c and head.c. */
void direct_text(direct *ds, int p);
void direct_time(direct *ds);
void direct_patch(direct *ds, int p);
void direct_head(direct *ds, int p);
/* One block on pass p, the task chain of tasks/wan_block.c as plain calls. */
void direct_block(direct *ds, int p, int64_t b);
void direct_forward(direct *ds, int p);
/* One sampling step's worth of forward work: the time embedding, then npasses
 * passes, one after the other or (threads) pass 1 on a second thread. */
void direct_step(direct *ds, int npasses, int threads);
/* The time embedding, then the forward of pass 0 over row tiles of tile rows (as
 * dit_tile_count and dit_tile_bounds cut them) on nthreads threads: thread i
 * computes tiles i, i + nthreads, ... of each op, then waits for the others. */
#define DIRECT_MAX_THREADS 8
void direct_step_tiles(direct *ds, int64_t tile, int nthreads);

#endif
