/* The forward as plain kernel calls (see bench_direct.h). */
#include "bench_direct.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dit_cpu.h"
#include "dit_tiles.h"
#include "dit_wan.h"

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

float *falloc(int64_t n)
{
	void *p = NULL;
	if (n < 1)
		n = 1;
	if (posix_memalign(&p, 64, (size_t)n * sizeof(float)) != 0) {
		fprintf(stderr, "bench_block: out of memory (%lld floats)\n", (long long)n);
		exit(1);
	}
	memset(p, 0, (size_t)n * sizeof(float));
	return p;
}
void direct_init(direct *ds, const dit_model *m, const dit_grid *g, int npasses,
                 float *const *context, const int64_t *ctx_rows, double t)
{
	const dit_hparams *c = &m->cfg;
	int64_t L = g->tokens, D = c->dim, Lc = c->text_len, hd = D / c->num_heads;
	int64_t P = c->patch[0] * c->patch[1] * c->patch[2];
	memset(ds, 0, sizeof *ds);
	ds->m = m;
	ds->g = *g;
	ds->t = t;
	if (posix_memalign((void **)&ds->rope, 64, (size_t)(L * hd) * sizeof(double)) != 0) {
		fprintf(stderr, "bench_block: out of memory\n");
		exit(1);
	}
	int64_t axes[3];
	dit_rope_axes_wan(hd, axes);
	dit_cpu_rope_table(ds->rope, g->tf, g->th, g->tw, hd, 10000.0, axes);
	ds->e = falloc(D);
	ds->e0 = falloc(6 * D);
	ds->s_time = falloc(c->freq_dim + D);
	for (int p = 0; p < npasses; p++) {
		dpass *ps = &ds->p[p];
		ps->context = falloc(Lc * c->text_dim);
		int64_t rows = ctx_rows[p] < Lc ? ctx_rows[p] : Lc;
		memcpy(ps->context, context[p], (size_t)(rows * c->text_dim) * sizeof(float));
		ps->ctx = falloc(Lc * D);
		ps->x = falloc(L * D);
		ps->h = falloc(L * D);
		ps->qkv = falloc(L * 3 * D);
		ps->q = falloc(L * D);
		ps->kv = falloc(Lc * 2 * D);
		ps->o = falloc(L * D);
		ps->y = falloc(L * D);
		ps->ffn = falloc(L * c->ffn_dim);
		ps->out = falloc(c->out_dim * g->f * g->h * g->w);
		ps->s_attn = falloc(DIRECT_MAX_THREADS * (int64_t)dit_cpu_attention_scratch(hd));
		ps->s_patch = falloc(L * c->in_dim * P);
		ps->s_head = falloc(L * (D + c->out_dim * P));
		ps->s_text = falloc(Lc * D);
	}
}

void direct_free(direct *ds)
{
	free(ds->rope);
	free(ds->e);
	free(ds->e0);
	free(ds->s_time);
	for (int p = 0; p < 2; p++) {
		dpass *ps = &ds->p[p];
		float *all[] = {ps->context, ps->ctx,    ps->x,       ps->h,      ps->qkv,
		                ps->q,       ps->kv,     ps->o,       ps->y,      ps->ffn,
		                ps->out,     ps->s_attn, ps->s_patch, ps->s_head, ps->s_text};
		for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
			free(all[i]);
	}
	memset(ds, 0, sizeof *ds);
}

void direct_text(direct *ds, int p)
{
	const dit_hparams *c = &ds->m->cfg;
	const float *g = ds->m->globals;
	const int64_t *off = ds->m->glob.off;
	dpass *ps = &ds->p[p];
	dit_cpu_linear(ps->s_text, c->dim, ps->context, c->text_dim, g + off[DIT_WG_TEXT0_W],
	               g + off[DIT_WG_TEXT0_B], c->text_len, c->dim, c->text_dim,
	               DIT_ACT_GELU_TANH);
	dit_cpu_linear(ps->ctx, c->dim, ps->s_text, c->dim, g + off[DIT_WG_TEXT2_W],
	               g + off[DIT_WG_TEXT2_B], c->text_len, c->dim, c->dim, DIT_ACT_NONE);
}

void direct_time(direct *ds)
{
	const dit_hparams *c = &ds->m->cfg;
	const float *g = ds->m->globals;
	const int64_t *off = ds->m->glob.off;
	int64_t D = c->dim;
	float *sin_t = ds->s_time, *hid = sin_t + c->freq_dim;
	dit_cpu_timestep_embedding(sin_t, ds->t, c->freq_dim);
	dit_cpu_linear(hid, D, sin_t, c->freq_dim, g + off[DIT_WG_TIME0_W], g + off[DIT_WG_TIME0_B],
	               1, D, c->freq_dim, DIT_ACT_SILU);
	dit_cpu_linear(ds->e, D, hid, D, g + off[DIT_WG_TIME2_W], g + off[DIT_WG_TIME2_B], 1, D, D,
	               DIT_ACT_NONE);
	memcpy(hid, ds->e, (size_t)D * sizeof *hid);
	dit_cpu_act(hid, D, DIT_ACT_SILU);
	dit_cpu_linear(ds->e0, 6 * D, hid, D, g + off[DIT_WG_TPROJ_W], g + off[DIT_WG_TPROJ_B], 1,
	               6 * D, D, DIT_ACT_NONE);
}

void direct_patch(direct *ds, int p)
{
	const dit_hparams *c = &ds->m->cfg;
	const float *g = ds->m->globals;
	const int64_t *off = ds->m->glob.off;
	const dit_grid *gr = &ds->g;
	dpass *ps = &ds->p[p];
	int64_t cp = c->in_dim * c->patch[0] * c->patch[1] * c->patch[2];
	dit_cpu_patchify(ps->s_patch, ds->latent, gr->c, gr->f, gr->h, gr->w, c->patch[0],
	                 c->patch[1], c->patch[2]);
	dit_cpu_linear(ps->x, c->dim, ps->s_patch, cp, g + off[DIT_WG_PATCH_W],
	               g + off[DIT_WG_PATCH_B], gr->tokens, c->dim, cp, DIT_ACT_NONE);
}

void direct_head(direct *ds, int p)
{
	const dit_hparams *c = &ds->m->cfg;
	const float *g = ds->m->globals;
	const int64_t *off = ds->m->glob.off;
	const dit_grid *gr = &ds->g;
	dpass *ps = &ds->p[p];
	int64_t L = gr->tokens, D = c->dim,
	        cp = c->out_dim * c->patch[0] * c->patch[1] * c->patch[2];
	float *h = ps->s_head, *tok = h + L * D;
	const float *mod = g + off[DIT_WG_HEAD_MOD];
	dit_cpu_layernorm(h, D, ps->x, D, L, D, (float)c->eps, NULL, NULL, mod, ds->e, mod + D,
	                  ds->e, 0, 0);
	dit_cpu_linear(tok, cp, h, D, g + off[DIT_WG_HEAD_W], g + off[DIT_WG_HEAD_B], L, cp, D,
	               DIT_ACT_NONE);
	dit_cpu_unpatchify(ps->out, tok, c->out_dim, gr->tf, gr->th, gr->tw, c->patch[0],
	                   c->patch[1], c->patch[2]);
}

#define OP(id, stmt)                                                                               \
	do {                                                                                       \
		double t0_ = ds->time_ops ? now_s() : 0.0;                                         \
		stmt;                                                                              \
		if (ds->time_ops)                                                                  \
			ds->op_s[id] += now_s() - t0_;                                             \
	} while (0)

void direct_block(direct *ds, int p, int64_t b)
{
	const dit_hparams *c = &ds->m->cfg;
	const float *w = ds->m->pool[0].blocks[b];
	const int64_t *off = ds->m->pool[0].lay.off;
	dpass *ps = &ds->p[p];
	int64_t L = ds->g.tokens, D = c->dim, F = c->ffn_dim, Lc = c->text_len;
	int64_t heads = c->num_heads, hd = D / heads;
	float eps = (float)c->eps, scale = (float)(1.0 / sqrt((double)hd));
	const float *mod = w + off[DIT_WB_MOD], *e0 = ds->e0;

	OP(OP_NORM1, dit_cpu_layernorm(ps->h, D, ps->x, D, L, D, eps, NULL, NULL, mod, e0, mod + D,
	                               e0 + D, 0, 0));
	OP(OP_SA_QKV, dit_cpu_linear(ps->qkv, 3 * D, ps->h, D, w + off[DIT_WB_SA_QW],
	                             w + off[DIT_WB_SA_QB], L, 3 * D, D, DIT_ACT_NONE));
	OP(OP_SA_NQ, {
		dit_cpu_rmsnorm(ps->qkv, 3 * D, L, D, eps, w + off[DIT_WB_SA_NQ]);
		dit_cpu_rope_apply(ps->qkv, 3 * D, L, heads, hd, ds->rope);
	});
	OP(OP_SA_NK, {
		dit_cpu_rmsnorm(ps->qkv + D, 3 * D, L, D, eps, w + off[DIT_WB_SA_NK]);
		dit_cpu_rope_apply(ps->qkv + D, 3 * D, L, heads, hd, ds->rope);
	});
	OP(OP_SA_ATT,
	   dit_cpu_attention(ps->o, D, ps->qkv, 3 * D, ps->qkv + D, 3 * D, ps->qkv + 2 * D, 3 * D,
	                     L, L, heads, hd, scale, ps->s_attn));
	OP(OP_SA_O, dit_cpu_linear(ps->y, D, ps->o, D, w + off[DIT_WB_SA_OW], w + off[DIT_WB_SA_OB],
	                           L, D, D, DIT_ACT_NONE));
	OP(OP_SA_RES, dit_cpu_residual(ps->x, D, ps->y, D, L, D, mod + 2 * D, e0 + 2 * D, 0, 0));

	OP(OP_NORM3, dit_cpu_layernorm(ps->h, D, ps->x, D, L, D, eps, w + off[DIT_WB_N3W],
	                               w + off[DIT_WB_N3B], NULL, NULL, NULL, NULL, 0, 0));
	OP(OP_CA_Q, dit_cpu_linear(ps->q, D, ps->h, D, w + off[DIT_WB_CA_QW], w + off[DIT_WB_CA_QB],
	                           L, D, D, DIT_ACT_NONE));
	OP(OP_CA_NQ, dit_cpu_rmsnorm(ps->q, D, L, D, eps, w + off[DIT_WB_CA_NQ]));
	OP(OP_CA_KV, dit_cpu_linear(ps->kv, 2 * D, ps->ctx, D, w + off[DIT_WB_CA_KW],
	                            w + off[DIT_WB_CA_KB], Lc, 2 * D, D, DIT_ACT_NONE));
	OP(OP_CA_NK, dit_cpu_rmsnorm(ps->kv, 2 * D, Lc, D, eps, w + off[DIT_WB_CA_NK]));
	OP(OP_CA_ATT, dit_cpu_attention(ps->o, D, ps->q, D, ps->kv, 2 * D, ps->kv + D, 2 * D, L, Lc,
	                                heads, hd, scale, ps->s_attn));
	OP(OP_CA_O, dit_cpu_linear(ps->y, D, ps->o, D, w + off[DIT_WB_CA_OW], w + off[DIT_WB_CA_OB],
	                           L, D, D, DIT_ACT_NONE));
	OP(OP_CA_RES, dit_cpu_residual(ps->x, D, ps->y, D, L, D, NULL, NULL, 0, 0));

	OP(OP_NORM2, dit_cpu_layernorm(ps->h, D, ps->x, D, L, D, eps, NULL, NULL, mod + 3 * D,
	                               e0 + 3 * D, mod + 4 * D, e0 + 4 * D, 0, 0));
	OP(OP_FFN0, dit_cpu_linear(ps->ffn, F, ps->h, D, w + off[DIT_WB_F0W], w + off[DIT_WB_F0B],
	                           L, F, D, DIT_ACT_GELU_TANH));
	OP(OP_FFN2, dit_cpu_linear(ps->y, D, ps->ffn, F, w + off[DIT_WB_F2W], w + off[DIT_WB_F2B],
	                           L, D, F, DIT_ACT_NONE));
	OP(OP_FFN_RES, dit_cpu_residual(ps->x, D, ps->y, D, L, D, mod + 5 * D, e0 + 5 * D, 0, 0));
}

void direct_forward(direct *ds, int p)
{
	direct_patch(ds, p);
	for (int64_t b = 0; b < ds->m->cfg.layers[0]; b++)
		direct_block(ds, p, b);
	direct_head(ds, p);
}

typedef struct pass_job {
	direct *ds;
	int p;
} pass_job;

static void *pass_thread(void *arg)
{
	pass_job *j = arg;
	direct_forward(j->ds, j->p);
	return NULL;
}

void direct_step(direct *ds, int npasses, int threads)
{
	direct_time(ds);
	if (npasses == 2 && threads) {
		pthread_t th;
		pass_job j = {ds, 1};
		if (pthread_create(&th, NULL, pass_thread, &j) != 0) {
			fprintf(stderr, "bench_block: cannot start a thread\n");
			exit(1);
		}
		direct_forward(ds, 0);
		pthread_join(th, NULL);
		return;
	}
	for (int p = 0; p < npasses; p++)
		direct_forward(ds, p);
}

/* ------------------------------------------------------------------ over row tiles */

typedef struct tile_job {
	direct *ds;
	int tid, nthreads;
	int64_t tile;
	pthread_barrier_t *bar;
} tile_job;

/* Rows [r0, r0 + n) of each of this thread's tiles of a rows-row op run body, then
 * the thread waits for the others. */
#define TILES(rows, body)                                                                          \
	do {                                                                                       \
		int nt_ = dit_tile_count((rows), j->tile);                                         \
		int64_t b_[DIT_MAX_TILES + 1];                                                     \
		dit_tile_bounds((rows), nt_, b_);                                                  \
		for (int i_ = j->tid; i_ < nt_; i_ += j->nthreads) {                               \
			int64_t r0 = b_[i_], n = b_[i_ + 1] - b_[i_];                              \
			(void)r0;                                                                  \
			body;                                                                      \
		}                                                                                  \
		pthread_barrier_wait(j->bar);                                                      \
	} while (0)

/* Block b of pass 0 as direct_block, each op over this thread's tiles. */
static void block_tiles(const tile_job *j, int64_t b)
{
	direct *ds = j->ds;
	const dit_hparams *c = &ds->m->cfg;
	const float *w = ds->m->pool[0].blocks[b];
	const int64_t *off = ds->m->pool[0].lay.off;
	dpass *ps = &ds->p[0];
	int64_t L = ds->g.tokens, D = c->dim, F = c->ffn_dim, Lc = c->text_len;
	int64_t heads = c->num_heads, hd = D / heads, D3 = 3 * D;
	float eps = (float)c->eps, scale = (float)(1.0 / sqrt((double)hd));
	const float *mod = w + off[DIT_WB_MOD], *e0 = ds->e0;
	float *s_attn = ps->s_attn + (size_t)j->tid * dit_cpu_attention_scratch(hd);
	float *x = ps->x, *h = ps->h, *qkv = ps->qkv, *o = ps->o, *y = ps->y;

	TILES(L, dit_cpu_layernorm(h + r0 * D, D, x + r0 * D, D, n, D, eps, NULL, NULL, mod, e0,
	                           mod + D, e0 + D, 0, 0));
	TILES(L, dit_cpu_linear(qkv + r0 * D3, D3, h + r0 * D, D, w + off[DIT_WB_SA_QW],
	                        w + off[DIT_WB_SA_QB], n, D3, D, DIT_ACT_NONE));
	TILES(L, {
		dit_cpu_rmsnorm(qkv + r0 * D3, D3, n, D, eps, w + off[DIT_WB_SA_NQ]);
		dit_cpu_rope_apply(qkv + r0 * D3, D3, n, heads, hd, ds->rope + r0 * hd);
		dit_cpu_rmsnorm(qkv + r0 * D3 + D, D3, n, D, eps, w + off[DIT_WB_SA_NK]);
		dit_cpu_rope_apply(qkv + r0 * D3 + D, D3, n, heads, hd, ds->rope + r0 * hd);
	});
	TILES(L, dit_cpu_attention(o + r0 * D, D, qkv + r0 * D3, D3, qkv + D, D3, qkv + 2 * D, D3,
	                           n, L, heads, hd, scale, s_attn));
	TILES(L, {
		dit_cpu_linear(y + r0 * D, D, o + r0 * D, D, w + off[DIT_WB_SA_OW],
		               w + off[DIT_WB_SA_OB], n, D, D, DIT_ACT_NONE);
		dit_cpu_residual(x + r0 * D, D, y + r0 * D, D, n, D, mod + 2 * D, e0 + 2 * D, 0, 0);
		dit_cpu_layernorm(h + r0 * D, D, x + r0 * D, D, n, D, eps, w + off[DIT_WB_N3W],
		                  w + off[DIT_WB_N3B], NULL, NULL, NULL, NULL, 0, 0);
		dit_cpu_linear(ps->q + r0 * D, D, h + r0 * D, D, w + off[DIT_WB_CA_QW],
		               w + off[DIT_WB_CA_QB], n, D, D, DIT_ACT_NONE);
		dit_cpu_rmsnorm(ps->q + r0 * D, D, n, D, eps, w + off[DIT_WB_CA_NQ]);
	});
	TILES(Lc, {
		dit_cpu_linear(ps->kv + r0 * 2 * D, 2 * D, ps->ctx + r0 * D, D,
		               w + off[DIT_WB_CA_KW], w + off[DIT_WB_CA_KB], n, 2 * D, D,
		               DIT_ACT_NONE);
		dit_cpu_rmsnorm(ps->kv + r0 * 2 * D, 2 * D, n, D, eps, w + off[DIT_WB_CA_NK]);
	});
	TILES(L, {
		dit_cpu_attention(o + r0 * D, D, ps->q + r0 * D, D, ps->kv, 2 * D, ps->kv + D,
		                  2 * D, n, Lc, heads, hd, scale, s_attn);
		dit_cpu_linear(y + r0 * D, D, o + r0 * D, D, w + off[DIT_WB_CA_OW],
		               w + off[DIT_WB_CA_OB], n, D, D, DIT_ACT_NONE);
		dit_cpu_residual(x + r0 * D, D, y + r0 * D, D, n, D, NULL, NULL, 0, 0);
		dit_cpu_layernorm(h + r0 * D, D, x + r0 * D, D, n, D, eps, NULL, NULL, mod + 3 * D,
		                  e0 + 3 * D, mod + 4 * D, e0 + 4 * D, 0, 0);
		dit_cpu_linear(ps->ffn + r0 * F, F, h + r0 * D, D, w + off[DIT_WB_F0W],
		               w + off[DIT_WB_F0B], n, F, D, DIT_ACT_GELU_TANH);
		dit_cpu_linear(y + r0 * D, D, ps->ffn + r0 * F, F, w + off[DIT_WB_F2W],
		               w + off[DIT_WB_F2B], n, D, F, DIT_ACT_NONE);
		dit_cpu_residual(x + r0 * D, D, y + r0 * D, D, n, D, mod + 5 * D, e0 + 5 * D, 0, 0);
	});
}

static void *tiles_thread(void *arg)
{
	tile_job *j = arg;
	if (j->tid == 0)
		direct_patch(j->ds, 0);
	pthread_barrier_wait(j->bar);
	for (int64_t b = 0; b < j->ds->m->cfg.layers[0]; b++)
		block_tiles(j, b);
	if (j->tid == 0)
		direct_head(j->ds, 0);
	return NULL;
}

void direct_step_tiles(direct *ds, int64_t tile, int nthreads)
{
	enum { MAX_THREADS = DIRECT_MAX_THREADS };
	if (nthreads > MAX_THREADS)
		nthreads = MAX_THREADS;
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
	tile_job jobs[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	direct_time(ds);
	for (int i = 0; i < nthreads; i++) {
		jobs[i] = (tile_job){ds, i, nthreads, tile, &bar};
		if (i > 0 && pthread_create(&th[i], NULL, tiles_thread, &jobs[i]) != 0) {
			fprintf(stderr, "bench_block: cannot start a thread\n");
			exit(1);
		}
	}
	tiles_thread(&jobs[0]);
	for (int i = 1; i < nthreads; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
}
