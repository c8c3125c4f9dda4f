/* Benchmark of the Wan2.1 block on the CPU, printed as ratios:
 *
 *   (a) one block forward through the dit_cpu_* kernels on one thread, in the order of
 *       tasks/wan_block.c, against cblas_sgemm alone on the block's own GEMM shapes
 *       (GFLOP/s of the block over GFLOP/s of its GEMMs);
 *   (b) the forward pass (time and patch embeddings, the blocks, the head) as the
 *       StarPU task graph against the same kernels called in a plain loop: one pass on
 *       one worker, and the two guidance passes (cond, uncond) on two workers against
 *       the loop doing both passes one after the other and on two threads.
 *
 * Weights are random, made in memory with the scales of the synthetic checkpoints;
 * no file is read. The text embedding runs once before the timed runs, as it does
 * once per sampling run. Every figure is the median of --reps runs after --warmup
 * runs. StarPU keeps its performance models under $STARPU_HOME (default: the home
 * directory); the first run on a fresh one calibrates them, which the warm-up runs
 * absorb. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <starpu.h>

#include "bench_direct.h"
#include "bench_stats.h"
#include "config.h"
#include "dit_blas_env.h"
#include "dit_config.h"
#include "dit_codelets.h"
#include "dit_place.h"
#include "dit_graph.h"
#include "dit_rng.h"
#include "dit_run.h"
#include "dit_runtime.h"
#include "dit_wan.h"
#include "dit_tiles.h"
#include "dit_weights.h"

#define WEIGHT_SEED 7

/* ------------------------------------------------------------------ options */

typedef struct bench_opts {
	int64_t dim, ffn, heads, blocks, text_len, text_dim;
	int64_t tokens;
	int64_t grid[3]; /* token grid tf x th x tw */
	int reps, warmup;
	int do_block, do_graph, do_cfg, do_tiles;
	int64_t tile;
	int profiling;
	const char *sched;
	double t;
} bench_opts;

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: bench_block [options]\n"
	        "  --dim N        hidden size (1536)\n"
	        "  --ffn N        feed-forward size (8960)\n"
	        "  --heads N      attention heads (12)\n"
	        "  --tokens N     tokens; the token grid is chosen from N (2340)\n"
	        "  --grid FxHxW   token grid (6x15x26: 21 frames, height 240, width 416)\n"
	        "  --blocks N     blocks of the forward pass in (b) (2)\n"
	        "  --text-len N   context rows (512)\n"
	        "  --text-dim N   context features (4096)\n"
	        "  --reps N       timed runs, the median is reported (3)\n"
	        "  --warmup N     untimed runs before them (1)\n"
	        "  --only LIST    comma list of block, graph, cfg, tiles (all)\n"
	        "  --tile-tokens N rows per tile in (c) (default: as the ditstar command)\n"
	        "  --sched NAME   StarPU scheduler (dmda, as the ditstar command)\n"
	        "  --no-profiling leave StarPU profiling off (the ditstar command turns it on)\n");
}

/* Token grid for n tokens: the fewest frames with at most 30 x 52 tokens each (one
 * 480x832 frame), each frame as square as the divisors of n allow. */
static void grid_for_tokens(int64_t n, int64_t g[3])
{
	int64_t tf = 1;
	while (tf < n && (n % tf != 0 || n / tf > 30 * 52))
		tf++;
	int64_t rest = n / tf, th = 1;
	for (int64_t d = 1; d * d <= rest; d++)
		if (rest % d == 0)
			th = d;
	g[0] = tf;
	g[1] = th;
	g[2] = rest / th;
}

static int parse_args(bench_opts *o, int argc, char **argv)
{
	*o = (bench_opts){.dim = 1536,
	                  .ffn = 8960,
	                  .heads = 12,
	                  .blocks = 2,
	                  .text_len = 512,
	                  .text_dim = 4096,
	                  .grid = {6, 15, 26},
	                  .reps = 3,
	                  .warmup = 1,
	                  .do_block = 1,
	                  .do_graph = 1,
	                  .do_cfg = 1,
	                  .do_tiles = 1,
	                  .tile = -1,
	                  .profiling = 1,
	                  .t = 900.0};
	int64_t v;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		int64_t *dst = NULL, min = 1;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			exit(0);
		} else if (strcmp(a, "--no-profiling") == 0) {
			o->profiling = 0;
			continue;
		} else if (!val) {
			fprintf(stderr, "bench_block: %s: unknown option or missing value\n", a);
			return -1;
		} else if (strcmp(a, "--dim") == 0) {
			dst = &o->dim;
		} else if (strcmp(a, "--ffn") == 0) {
			dst = &o->ffn;
		} else if (strcmp(a, "--heads") == 0) {
			dst = &o->heads;
		} else if (strcmp(a, "--blocks") == 0) {
			dst = &o->blocks;
		} else if (strcmp(a, "--text-len") == 0) {
			dst = &o->text_len;
		} else if (strcmp(a, "--text-dim") == 0) {
			dst = &o->text_dim;
		} else if (strcmp(a, "--tokens") == 0) {
			if (dit_bench_parse_i64(val, &v, 1))
				goto bad;
			grid_for_tokens(v, o->grid);
		} else if (strcmp(a, "--grid") == 0) {
			long long f, h, w;
			char tail;
			if (sscanf(val, "%lldx%lldx%lld%c", &f, &h, &w, &tail) != 3 || f < 1 ||
			    h < 1 || w < 1)
				goto bad;
			o->grid[0] = f;
			o->grid[1] = h;
			o->grid[2] = w;
		} else if (strcmp(a, "--reps") == 0 || strcmp(a, "--warmup") == 0) {
			int warm = a[2] == 'w';
			if (dit_bench_parse_i64(val, &v, warm ? 0 : 1) || v > DIT_BENCH_MAX_REPS)
				goto bad;
			*(warm ? &o->warmup : &o->reps) = (int)v;
		} else if (strcmp(a, "--only") == 0) {
			o->do_block = strstr(val, "block") != NULL;
			o->do_graph = strstr(val, "graph") != NULL;
			o->do_cfg = strstr(val, "cfg") != NULL;
			o->do_tiles = strstr(val, "tiles") != NULL;
			if (!o->do_block && !o->do_graph && !o->do_cfg && !o->do_tiles)
				goto bad;
		} else if (strcmp(a, "--tile-tokens") == 0) {
			dst = &o->tile;
		} else if (strcmp(a, "--sched") == 0) {
			o->sched = val;
		} else {
			fprintf(stderr, "bench_block: %s: unknown option\n", a);
			usage(stderr);
			return -1;
		}
		if (dst && dit_bench_parse_i64(val, dst, min))
			goto bad;
		i++;
		continue;
	bad:
		fprintf(stderr, "bench_block: %s %s: bad value\n", a, val);
		return -1;
	}
	o->tokens = o->grid[0] * o->grid[1] * o->grid[2];
	return 0;
}

/* ------------------------------------------------------------------ helpers */

static void ratio_line(const char *label, double med, double min, const char *goal)
{
	printf("%-60s %7.3f %7.3f%s%s\n", label, med, min, goal ? "   " : "", goal ? goal : "");
}

static void print_runs(const double *v, int n)
{
	printf(" [runs:");
	for (int i = 0; i < n; i++)
		printf(" %.4g", v[i]);
	printf("]");
}

static void machine_line(void)
{
	char model[256] = "?", line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		while (fgets(line, sizeof line, f)) {
			if (strncmp(line, "model name", 10) == 0) {
				const char *c = strchr(line, ':');
				if (c) {
					c += 1 + (c[1] == ' ');
					snprintf(model, sizeof model, "%s", c);
					model[strcspn(model, "\n")] = '\0';
				}
				break;
			}
		}
		fclose(f);
	}
	printf("machine: %ld CPUs online, \"%s\"", sysconf(_SC_NPROCESSORS_ONLN), model);
	f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fgets(line, sizeof line, f)) {
			line[strcspn(line, "\n")] = '\0';
			printf(", loadavg %s", line);
		}
		fclose(f);
	}
	printf("\n");
}

static void blas_line(void)
{
#ifdef HAVE_OPENBLAS_GET_CORENAME
	char cfg[256];
	snprintf(cfg, sizeof cfg, "%s", openblas_get_config());
	cfg[strcspn(cfg, "\n")] = '\0';
	printf("BLAS: %s; core %s; OPENBLAS_CORETYPE=%s\n", cfg, dit_blas_core_name(),
	       getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)");
#else
	printf("BLAS: CBLAS (not OpenBLAS); core %s\n", dit_blas_core_name());
#endif
}

/* CPU seconds of the whole machine (busy, and stolen by the hypervisor) from
 * /proc/stat, and of this process, so that a report can tell how much other work ran
 * during the benchmark. */
typedef struct cpu_clock {
	double busy, steal, self;
} cpu_clock;

static void cpu_clock_read(cpu_clock *c)
{
	unsigned long long v[8] = {0};
	long hz = sysconf(_SC_CLK_TCK);
	memset(c, 0, sizeof *c);
	FILE *f = fopen("/proc/stat", "r");
	if (f) {
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		           &v[3], &v[4], &v[5], &v[6], &v[7]) == 8 &&
		    hz > 0) {
			/* user nice system idle iowait irq softirq steal */
			c->busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / (double)hz;
			c->steal = (double)v[7] / (double)hz;
		}
		fclose(f);
	}
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		c->self = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		          1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

/* ------------------------------------------------------------------ model */

/* Scale and shift of the random values of a tensor: those of the synthetic
 * checkpoints (src/checkpoint/dit_synth.h). */
static void init_rule(const char *name, const int64_t *shape, int ndim, int64_t dim, double *scale,
                      double *shift)
{
	size_t n = strlen(name);
	int is_bias = n > 5 && strcmp(name + n - 5, ".bias") == 0;
	*shift = 0.0;
	if (strstr(name, "modulation")) {
		*scale = 1.0 / sqrt((double)dim);
	} else if (strstr(name, "norm") && !is_bias) {
		*scale = 0.1;
		*shift = 1.0;
	} else if (is_bias) {
		*scale = 0.02;
	} else {
		int64_t fan_in = 1;
		for (int i = 1; i < ndim; i++)
			fan_in *= shape[i];
		*scale = 1.0 / sqrt((double)fan_in);
	}
}

static void fill_tensor(float *dst, const dit_hparams *cfg, const dit_tensor_desc *r,
                        const char *name)
{
	int64_t shape[DIT_T_MAX_DIMS], n = 1;
	int nd = dit_tensor_shape(cfg, r, shape);
	for (int i = 0; i < nd; i++)
		n *= shape[i];
	double scale, shift;
	init_rule(name, shape, nd, cfg->dim, &scale, &shift);
	dit_rng_fill_normal(dst, n, WEIGHT_SEED, dit_rng_stream(name), scale, shift);
}

/* A model in memory; every block gets the weights of block 0 in its own slab. */
static dit_model *model_new(const dit_hparams *cfg)
{
	dit_model *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->cfg = *cfg;
	m->desc = dit_model_desc_find("wan2.1-t2v");
	dit_layout_init(&m->glob, cfg, dit_wan_global_rules, DIT_WG_COUNT, 0);
	dit_pool *pl = &m->pool[0];
	m->npools = 1;
	pl->d = &m->desc->pools[0];
	pl->model = m;
	dit_layout_init(&pl->lay, cfg, dit_wan_block_rules, DIT_WB_COUNT, 0);
	m->globals = falloc(m->glob.size);
	pl->nblocks = cfg->layers[0];
	pl->chunk_size = 1;
	pl->nchunks = cfg->layers[0];
	pl->block_stride = pl->lay.size;
	pl->blocks = calloc((size_t)cfg->layers[0], sizeof *pl->blocks);
	pl->chunks = calloc((size_t)cfg->layers[0], sizeof *pl->chunks);
	if (!pl->blocks || !pl->chunks)
		return NULL;
	for (int i = 0; i < DIT_WG_COUNT; i++)
		fill_tensor(m->globals + m->glob.off[i], cfg, &dit_wan_global_rules[i],
		            dit_wan_global_rules[i].name);
	for (int64_t b = 0; b < cfg->layers[0]; b++) {
		pl->blocks[b] = pl->chunks[b] = falloc(pl->lay.size);
		if (b > 0) {
			memcpy(pl->blocks[b], pl->blocks[0], (size_t)pl->lay.size * sizeof(float));
			continue;
		}
		for (int i = 0; i < DIT_WB_COUNT; i++) {
			char name[160];
			snprintf(name, sizeof name, "blocks.0.%s", dit_wan_block_rules[i].name);
			fill_tensor(pl->blocks[0] + pl->lay.off[i], cfg, &dit_wan_block_rules[i],
			            name);
		}
	}
	return m;
}

/* Drops the StarPU handles of the slabs, keeping the slabs. */
static void model_unregister(dit_model *m)
{
	dit_model_unregister(m);
}

/* ------------------------------------------------------------------ FLOPs */

static double block_gemm_flops(const dit_hparams *c, int64_t L)
{
	double D = (double)c->dim, F = (double)c->ffn_dim, Lc = (double)c->text_len;
	return 2.0 * L * (3 * D) * D                /* sa.qkv */
	       + 3 * 2.0 * L * D * D                /* sa.o, ca.q, ca.o */
	       + 2.0 * Lc * (2 * D) * D             /* ca.kv */
	       + 2.0 * L * F * D + 2.0 * L * D * F; /* ffn.0, ffn.2 */
}

static double block_attention_flops(const dit_hparams *c, int64_t L)
{
	double D = (double)c->dim;
	return 4.0 * L * L * D + 4.0 * L * (double)c->text_len * D;
}

/* Forward pass without the text embedding: patch embedding, blocks, head (the time
 * embedding, under 0.1 GFLOP, is left out). */
static double forward_flops(const dit_hparams *c, int64_t L)
{
	double P = (double)(c->patch[0] * c->patch[1] * c->patch[2]), D = (double)c->dim;
	return 2.0 * L * D * c->in_dim * P +
	       (double)c->layers[0] * (block_gemm_flops(c, L) + block_attention_flops(c, L)) +
	       2.0 * L * D * c->out_dim * P;
}

/* ------------------------------------------------------------------ (a) block */

typedef struct gemm_shape {
	int op;
	const float *x, *w;
	float *y;
	int64_t m, n, k, ldx, ldy;
} gemm_shape;

typedef struct block_result {
	double block_s, gemm_s, gemm_flops, attn_flops;
	double op_s[NOPS], gemm_op_s[NOPS];
	double runs[DIT_BENCH_MAX_REPS], gemm_runs[DIT_BENCH_MAX_REPS];
} block_result;

static void bench_block_kernels(const bench_opts *o, direct *ds, block_result *r)
{
	const dit_model *m = ds->m;
	const dit_hparams *c = &m->cfg;
	const int64_t *off = m->pool[0].lay.off;
	const float *w = m->pool[0].blocks[0];
	dpass *ps = &ds->p[0];
	int64_t L = ds->g.tokens, D = c->dim, F = c->ffn_dim, Lc = c->text_len;
	int nrun = o->warmup + o->reps;
	double ops[NOPS][DIT_BENCH_MAX_REPS], gops[NOPS][DIT_BENCH_MAX_REPS];
	memset(r, 0, sizeof *r);
	memset(gops, 0, sizeof gops);

	/* The block's input: the embedded latent of pass 0, restored before each run. */
	direct_time(ds);
	direct_patch(ds, 0);
	float *x0 = falloc(L * D);
	memcpy(x0, ps->x, (size_t)(L * D) * sizeof(float));
	for (int i = 0; i < nrun; i++) {
		memcpy(ps->x, x0, (size_t)(L * D) * sizeof(float));
		memset(ds->op_s, 0, sizeof ds->op_s);
		ds->time_ops = 1;
		double t0 = now_s();
		direct_block(ds, 0, 0);
		double t1 = now_s();
		ds->time_ops = 0;
		if (i >= o->warmup) {
			r->runs[i - o->warmup] = t1 - t0;
			for (int k = 0; k < NOPS; k++)
				ops[k][i - o->warmup] = ds->op_s[k];
		}
	}
	free(x0);

	/* The same GEMMs alone, on the same buffers: y = x . W^T as dit_cpu_linear. */
	const gemm_shape g[] = {
	    {OP_SA_QKV, ps->h, w + off[DIT_WB_SA_QW], ps->qkv, L, 3 * D, D, D, 3 * D},
	    {OP_SA_O, ps->o, w + off[DIT_WB_SA_OW], ps->y, L, D, D, D, D},
	    {OP_CA_Q, ps->h, w + off[DIT_WB_CA_QW], ps->q, L, D, D, D, D},
	    {OP_CA_KV, ps->ctx, w + off[DIT_WB_CA_KW], ps->kv, Lc, 2 * D, D, D, 2 * D},
	    {OP_CA_O, ps->o, w + off[DIT_WB_CA_OW], ps->y, L, D, D, D, D},
	    {OP_FFN0, ps->h, w + off[DIT_WB_F0W], ps->ffn, L, F, D, D, F},
	    {OP_FFN2, ps->ffn, w + off[DIT_WB_F2W], ps->y, L, D, F, F, D},
	};
	double gsum[DIT_BENCH_MAX_REPS];
	for (int i = 0; i < nrun; i++) {
		double sum = 0;
		for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
			double t0 = now_s();
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g[k].m,
			            (int)g[k].n, (int)g[k].k, 1.0f, g[k].x, (int)g[k].ldx, g[k].w,
			            (int)g[k].k, 0.0f, g[k].y, (int)g[k].ldy);
			double dt = now_s() - t0;
			sum += dt;
			if (i >= o->warmup)
				gops[g[k].op][i - o->warmup] = dt;
		}
		if (i >= o->warmup)
			gsum[i - o->warmup] = r->gemm_runs[i - o->warmup] = sum;
	}

	r->block_s = dit_bench_median(r->runs, o->reps);
	r->gemm_s = dit_bench_median(gsum, o->reps);
	for (int k = 0; k < NOPS; k++) {
		r->op_s[k] = dit_bench_median(ops[k], o->reps);
		r->gemm_op_s[k] = dit_bench_median(gops[k], o->reps);
	}
	r->gemm_flops = block_gemm_flops(c, L);
	r->attn_flops = block_attention_flops(c, L);
}

static double op_flops(const dit_hparams *c, int64_t L, int op)
{
	double D = (double)c->dim, F = (double)c->ffn_dim, Lc = (double)c->text_len;
	switch (op) {
	case OP_SA_QKV: return 2.0 * L * 3 * D * D;
	case OP_SA_O:
	case OP_CA_Q:
	case OP_CA_O: return 2.0 * L * D * D;
	case OP_CA_KV: return 2.0 * Lc * 2 * D * D;
	case OP_FFN0:
	case OP_FFN2: return 2.0 * L * D * F;
	case OP_SA_ATT: return 4.0 * L * L * D;
	case OP_CA_ATT: return 4.0 * L * Lc * D;
	default: return 0.0;
	}
}

/* ------------------------------------------------------------------ (b) graph */

typedef struct graph_result {
	double wall_s, submit_s, exec_s, sleep_s;
	double gap_s; /* worker time outside codelets: ncpus * wall - executing */
	long tasks;   /* per run */
	double max_diff, max_ref;
	double runs[DIT_BENCH_MAX_REPS];
	int ncpus;
} graph_result;

static double ts_s(struct timespec *ts)
{
	return starpu_timing_timespec_to_us(ts) * 1e-6;
}

static long count_tasks(const dit_graph *g)
{
	long n = 0;
	for (int i = 0; i < g->counts.n; i++)
		n += g->counts.count[i];
	return n;
}

/* Runs the forward graph: StarPU with ncpus workers, npasses passes per run. ref
 * (the direct loop's velocity of pass 0) is compared with the graph's. */
static int bench_graph(const bench_opts *o, dit_model *m, const dit_grid *gr, float *latent,
                       const float *const *context, const int64_t *ctx_rows, int ncpus, int npasses,
                       int64_t tile, const float *ref, graph_result *r)
{
	const dit_hparams *c = &m->cfg;
	dit_error err;
	dit_runtime *rt = NULL;
	dit_runtime_opts ro;
	dit_graph g;
	starpu_data_handle_t hlat = NULL;
	int nrun = o->warmup + o->reps;
	double sub[DIT_BENCH_MAX_REPS], exe[DIT_BENCH_MAX_REPS], slp[DIT_BENCH_MAX_REPS],
	    gap[DIT_BENCH_MAX_REPS];
	memset(r, 0, sizeof *r);

	dit_runtime_opts_default(&ro);
	ro.ncpus = ncpus;
	ro.sched = o->sched;
	if (dit_runtime_init(&rt, &ro, &err) != DIT_OK) {
		fprintf(stderr, "bench_block: %s\n", err.msg);
		return -1;
	}
	r->ncpus = rt->ncpus;
	if (o->profiling)
		starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
	dit_weights wt = {.desc = dit_model_desc_find("wan2.1-t2v"), .nexperts = 1, .expert = {m}};
	dit_graph_weights gw;
	dit_status st = dit_model_register(m, &err);
	if (st == DIT_OK) {
		dit_place_graph_weights(&wt, &gw);
		st =
		    dit_graph_init(&g, &gw, gr, npasses, 0, context, ctx_rows, 1, NULL, NULL, &err);
	}
	if (st == DIT_OK)
		st = dit_graph_set_tiles(&g, tile, &err);
	if (st != DIT_OK) {
		fprintf(stderr, "bench_block: %s\n", err.msg);
		model_unregister(m);
		dit_runtime_shutdown(rt);
		return -1;
	}
	int64_t nlat = c->in_dim * gr->f * gr->h * gr->w;
	starpu_vector_data_register(&hlat, STARPU_MAIN_RAM, (uintptr_t)latent, (uint32_t)nlat,
	                            sizeof(float));
	starpu_data_set_name(hlat, "latent");

	int rc = 0;
	if (dit_graph_submit_text(&g, &err) != DIT_OK) {
		fprintf(stderr, "bench_block: %s\n", err.msg);
		rc = -1;
		goto out;
	}
	starpu_task_wait_for_all();
	int nw = (int)starpu_worker_get_count();
	for (int i = 0; i < nrun && rc == 0; i++) {
		struct starpu_profiling_worker_info info;
		if (o->profiling) /* reading resets the counters */
			for (int wk = 0; wk < nw; wk++)
				starpu_profiling_worker_get_info(wk, &info);
		long before = count_tasks(&g);
		double t0 = now_s();
		if (dit_graph_submit_time(&g, o->t, &err) != DIT_OK)
			rc = -1;
		if (rc == 0 && dit_graph_submit_passes(&g, hlat, &err) != DIT_OK)
			rc = -1;
		double t1 = now_s();
		starpu_task_wait_for_all();
		double t2 = now_s();
		if (rc) {
			fprintf(stderr, "bench_block: %s\n", err.msg);
			break;
		}
		r->tasks = count_tasks(&g) - before;
		double ex = 0, sl = 0;
		if (o->profiling) {
			for (int wk = 0; wk < nw; wk++) {
				starpu_profiling_worker_get_info(wk, &info);
				ex += ts_s(&info.executing_time);
				sl += ts_s(&info.sleeping_time);
			}
		}
		if (i >= o->warmup) {
			int k = i - o->warmup;
			r->runs[k] = t2 - t0;
			sub[k] = t1 - t0;
			exe[k] = ex;
			slp[k] = sl;
			gap[k] = nw * (t2 - t0) - ex;
		}
	}
	if (rc == 0) {
		r->wall_s = dit_bench_median(r->runs, o->reps);
		r->submit_s = dit_bench_median(sub, o->reps);
		r->exec_s = dit_bench_median(exe, o->reps);
		r->sleep_s = dit_bench_median(slp, o->reps);
		r->gap_s = dit_bench_median(gap, o->reps);
		int64_t n = c->out_dim * gr->f * gr->h * gr->w;
		starpu_data_acquire(g.pass[0].out, STARPU_R);
		const float *out = (const float *)starpu_vector_get_local_ptr(g.pass[0].out);
		for (int64_t i = 0; i < n; i++) {
			double d = fabs((double)out[i] - ref[i]);
			r->max_diff = d > r->max_diff || isnan(d) ? d : r->max_diff;
			r->max_ref = fabs(ref[i]) > r->max_ref ? fabs(ref[i]) : r->max_ref;
		}
		starpu_data_release(g.pass[0].out);
	}
out:
	starpu_task_wait_for_all();
	starpu_data_unregister(hlat);
	dit_graph_free(&g);
	model_unregister(m);
	dit_runtime_shutdown(rt);
	return rc;
}

/* Where the graph's time goes, against the direct loop's time direct_s. */
static void graph_detail(const graph_result *r, double direct_s, int profiling)
{
	printf("\n      %ld tasks/run, submit %.2f ms, graph - direct %+.1f ms", r->tasks,
	       r->submit_s * 1e3, (r->wall_s - direct_s) * 1e3);
	if (profiling)
		printf("; worker time outside codelets %.1f ms (%.1f us/task, %d workers), "
		       "codelet time / (workers x direct) %.3f",
		       r->gap_s * 1e3, r->gap_s / (double)r->tasks * 1e6, r->ncpus,
		       r->exec_s / (r->ncpus * direct_s));
}

/* Median seconds of direct_step over the timed runs. */
static double bench_direct(const bench_opts *o, direct *ds, int npasses, int threads, double *runs)
{
	for (int i = 0; i < o->warmup + o->reps; i++) {
		double t0 = now_s();
		direct_step(ds, npasses, threads);
		double dt = now_s() - t0;
		if (i >= o->warmup)
			runs[i - o->warmup] = dt;
	}
	return dit_bench_median(runs, o->reps);
}

/* Median seconds of direct_step_tiles over the timed runs. */
static double bench_direct_tiles(const bench_opts *o, direct *ds, int threads, double *runs)
{
	for (int i = 0; i < o->warmup + o->reps; i++) {
		double t0 = now_s();
		direct_step_tiles(ds, o->tile, threads);
		double dt = now_s() - t0;
		if (i >= o->warmup)
			runs[i - o->warmup] = dt;
	}
	return dit_bench_median(runs, o->reps);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	dit_blas_env_prepare(argv);
	setenv("STARPU_SILENT", "1", 0);
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
	openblas_set_num_threads(1);
#endif
	bench_opts o;
	if (parse_args(&o, argc, argv))
		return 2;

	const dit_preset *pre = dit_preset_find("wan2.1-t2v-1.3b");
	dit_error err;
	if (!pre) {
		fprintf(stderr, "bench_block: no preset wan2.1-t2v-1.3b\n");
		return 1;
	}
	dit_hparams cfg = dit_preset_hparams(pre);
	cfg.dim = o.dim;
	cfg.ffn_dim = o.ffn;
	cfg.num_heads = o.heads;
	cfg.layers[0] = o.blocks;
	cfg.text_len = o.text_len;
	cfg.text_dim = o.text_dim;
	if (dit_config_check(&cfg, NULL, &err) != DIT_OK) {
		fprintf(stderr, "bench_block: %s\n", err.msg);
		return 2;
	}
	dit_grid gr;
	if (dit_grid_from_latent(&gr, &cfg, cfg.in_dim, o.grid[0] * cfg.patch[0],
	                         o.grid[1] * cfg.patch[1], o.grid[2] * cfg.patch[2],
	                         &err) != DIT_OK) {
		fprintf(stderr, "bench_block: %s\n", err.msg);
		return 2;
	}
	int64_t L = gr.tokens;
	if (o.tile < 0)
		o.tile = dit_tile_default(L);

	char date[64];
	time_t now = time(NULL);
	struct tm tmv;
	strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime_r(&now, &tmv));
	int smaj, smin, srev;
	starpu_get_version(&smaj, &smin, &srev);
	printf("ditstar bench_block, %s\n", date);
	machine_line();
	blas_line();
	printf("StarPU %d.%d.%d: scheduler %s, profiling %s, STARPU_HOME=%s, STARPU_CALIBRATE=%s, "
	       "STARPU_SILENT=%s\n",
	       smaj, smin, srev, o.sched ? o.sched : env_or("STARPU_SCHED", "dmda"),
	       o.profiling ? "on" : "off", env_or("STARPU_HOME", "(unset: $HOME)"),
	       env_or("STARPU_CALIBRATE", "(unset)"), env_or("STARPU_SILENT", "(unset)"));
	printf("config: dim %lld, ffn %lld, %lld heads of %lld, %lld tokens (token grid "
	       "%lldx%lldx%lld, latent %lldx%lldx%lldx%lld), text_len %lld, text_dim %lld, "
	       "%lld blocks in (b); median of %d runs after %d warm-up\n",
	       (long long)cfg.dim, (long long)cfg.ffn_dim, (long long)cfg.num_heads,
	       (long long)(cfg.dim / cfg.num_heads), (long long)L, (long long)gr.tf,
	       (long long)gr.th, (long long)gr.tw, (long long)gr.c, (long long)gr.f,
	       (long long)gr.h, (long long)gr.w, (long long)cfg.text_len, (long long)cfg.text_dim,
	       (long long)cfg.layers[0], o.reps, o.warmup);
	fflush(stdout);

	double t_start = now_s();
	cpu_clock c_start, c_end;
	cpu_clock_read(&c_start);
	dit_model *m = model_new(&cfg);
	if (!m) {
		fprintf(stderr, "bench_block: out of memory for the weights\n");
		return 1;
	}
	int64_t nlat = cfg.in_dim * gr.f * gr.h * gr.w;
	float *latent = falloc(nlat);
	dit_rng_fill_normal(latent, nlat, 42, dit_rng_stream("noise"), 1.0, 0.0);
	float *context[2];
	int64_t ctx_rows[2];
	context[0] = dit_synthetic_context(cfg.text_len, cfg.text_dim, 0, &ctx_rows[0]);
	context[1] = dit_synthetic_context(cfg.text_len, cfg.text_dim, 1, &ctx_rows[1]);
	if (!context[0] || !context[1]) {
		fprintf(stderr, "bench_block: out of memory\n");
		return 1;
	}

	direct ds;
	direct_init(&ds, m, &gr, 2, context, ctx_rows, o.t);
	ds.latent = latent;
	direct_text(&ds, 0);
	direct_text(&ds, 1);

	int64_t nout = cfg.out_dim * gr.f * gr.h * gr.w;
	float *ref = falloc(nout);
	block_result br;
	double d1_runs[DIT_BENCH_MAX_REPS], dseq_runs[DIT_BENCH_MAX_REPS],
	    dthr_runs[DIT_BENCH_MAX_REPS];
	double d1 = 0, dseq = 0, dthr = 0;
	graph_result g1, g2, gt1, gt2;
	int ok1 = 0, ok2 = 0, okt1 = 0, okt2 = 0;
	double dt1_runs[DIT_BENCH_MAX_REPS], dt2_runs[DIT_BENCH_MAX_REPS], dt1 = 0, dt2 = 0;
	float *tref = falloc(nout);

	/* Everything direct first, while no StarPU worker exists. */
	if (o.do_block)
		bench_block_kernels(&o, &ds, &br);
	if (o.do_graph) {
		d1 = bench_direct(&o, &ds, 1, 0, d1_runs);
		memcpy(ref, ds.p[0].out, (size_t)nout * sizeof(float));
	}
	if (o.do_cfg) {
		dseq = bench_direct(&o, &ds, 2, 0, dseq_runs);
		memcpy(ref, ds.p[0].out, (size_t)nout * sizeof(float));
		dthr = bench_direct(&o, &ds, 2, 1, dthr_runs);
	}
	if (o.do_tiles) {
		dt1 = bench_direct_tiles(&o, &ds, 1, dt1_runs);
		memcpy(tref, ds.p[0].out, (size_t)nout * sizeof(float));
		dt2 = bench_direct_tiles(&o, &ds, 2, dt2_runs);
	}
	const float *ctx_c[2] = {context[0], context[1]};
	if (o.do_graph)
		ok1 = bench_graph(&o, m, &gr, latent, ctx_c, ctx_rows, 1, 1, 0, ref, &g1) == 0;
	if (o.do_cfg)
		ok2 = bench_graph(&o, m, &gr, latent, ctx_c, ctx_rows, 2, 2, 0, ref, &g2) == 0;
	if (o.do_tiles) {
		okt1 =
		    bench_graph(&o, m, &gr, latent, ctx_c, ctx_rows, 1, 1, o.tile, tref, &gt1) == 0;
		okt2 =
		    bench_graph(&o, m, &gr, latent, ctx_c, ctx_rows, 2, 1, o.tile, tref, &gt2) == 0;
	}

	double fwd_fl = forward_flops(&cfg, L);
	printf("\nRATIOS%61s%8s   goal\n", "median", "min");
	if (o.do_block) {
		double fl = br.gemm_flops + br.attn_flops, n = br.gemm_flops;
		double rmin = (fl / dit_bench_min(br.runs, o.reps)) /
		              (n / dit_bench_min(br.gemm_runs, o.reps));
		ratio_line("(a) block GFLOP/s / sgemm GFLOP/s on the block's GEMMs",
		           (fl / br.block_s) / (n / br.gemm_s), rmin, NULL);
		ratio_line("(a) block time / time of its GEMMs alone", br.block_s / br.gemm_s,
		           dit_bench_min(br.runs, o.reps) / dit_bench_min(br.gemm_runs, o.reps),
		           NULL);
	}
	if (ok1)
		ratio_line("(b) graph / direct, 1 pass, 1 worker", g1.wall_s / d1,
		           dit_bench_min(g1.runs, o.reps) / dit_bench_min(d1_runs, o.reps),
		           "<= 1.03");
	if (ok2) {
		ratio_line("(b) graph 2 workers / direct 2 threads, cond+uncond", g2.wall_s / dthr,
		           dit_bench_min(g2.runs, o.reps) / dit_bench_min(dthr_runs, o.reps),
		           "<= 1.03");
		ratio_line("(b) graph 2 workers / direct 1 thread, cond+uncond", g2.wall_s / dseq,
		           dit_bench_min(g2.runs, o.reps) / dit_bench_min(dseq_runs, o.reps),
		           "(1/speedup)");
	}

	if (okt1)
		ratio_line(
		    "(c) tiled graph / direct over the same tiles, 1 worker", gt1.wall_s / dt1,
		    dit_bench_min(gt1.runs, o.reps) / dit_bench_min(dt1_runs, o.reps), "<= 1.03");
	if (okt2) {
		ratio_line(
		    "(c) tiled graph / direct over the same tiles, 2 workers", gt2.wall_s / dt2,
		    dit_bench_min(gt2.runs, o.reps) / dit_bench_min(dt2_runs, o.reps), "<= 1.03");
		if (ok1)
			ratio_line("(c) tiled graph 2 workers / untiled graph 1 worker, 1 pass",
			           gt2.wall_s / g1.wall_s,
			           dit_bench_min(gt2.runs, o.reps) / dit_bench_min(g1.runs, o.reps),
			           "(1/speedup)");
	}

	if (o.do_block) {
		printf("\n(a) one block, %lld tokens, 1 thread: %.3f s, %.1f GFLOP (GEMM %.1f + "
		       "attention %.1f) = %.1f GFLOP/s",
		       (long long)L, br.block_s, (br.gemm_flops + br.attn_flops) * 1e-9,
		       br.gemm_flops * 1e-9, br.attn_flops * 1e-9,
		       (br.gemm_flops + br.attn_flops) / br.block_s * 1e-9);
		print_runs(br.runs, o.reps);
		printf("\n    sgemm alone on its 7 GEMMs: %.3f s for %.1f GFLOP = %.1f GFLOP/s\n",
		       br.gemm_s, br.gemm_flops * 1e-9, br.gemm_flops / br.gemm_s * 1e-9);
		printf("    %-14s %9s %7s %8s %9s %9s\n", "op", "ms", "share", "GFLOP/s",
		       "sgemm ms", "op/sgemm");
		double sum = 0;
		for (int k = 0; k < NOPS; k++) {
			double fl = op_flops(&cfg, L, k);
			sum += br.op_s[k];
			printf("    %-14s %9.2f %6.1f%%", op_name[k], br.op_s[k] * 1e3,
			       100.0 * br.op_s[k] / br.block_s);
			if (fl > 0)
				printf(" %8.1f", fl / br.op_s[k] * 1e-9);
			else
				printf(" %8s", "-");
			if (br.gemm_op_s[k] > 0)
				printf(" %9.2f %9.3f", br.gemm_op_s[k] * 1e3,
				       br.op_s[k] / br.gemm_op_s[k]);
			printf("\n");
		}
		printf("    (sum of the op medians: %.3f s)\n", sum);
	}
	if (o.do_graph || o.do_cfg) {
		printf("\n(b) forward: %lld blocks, %.1f GFLOP per pass (text embedding once, "
		       "untimed)\n",
		       (long long)cfg.layers[0], fwd_fl * 1e-9);
		if (o.do_graph) {
			printf("    direct, 1 pass, 1 thread:           %8.3f s  %6.1f GFLOP/s", d1,
			       fwd_fl / d1 * 1e-9);
			print_runs(d1_runs, o.reps);
			printf("\n");
		}
	}
	if (ok1) {
		printf("    graph, 1 pass, %d worker:            %8.3f s  %6.1f GFLOP/s", g1.ncpus,
		       g1.wall_s, fwd_fl / g1.wall_s * 1e-9);
		print_runs(g1.runs, o.reps);
		graph_detail(&g1, d1, o.profiling);
		printf("\n      velocity vs direct: max |diff| %.3g (max |v| %.3g)\n", g1.max_diff,
		       g1.max_ref);
	}
	if (o.do_cfg) {
		printf("    direct, 2 passes, 1 thread:         %8.3f s  %6.1f GFLOP/s", dseq,
		       2 * fwd_fl / dseq * 1e-9);
		print_runs(dseq_runs, o.reps);
		printf("\n    direct, 2 passes, 2 threads:        %8.3f s  %6.1f GFLOP/s", dthr,
		       2 * fwd_fl / dthr * 1e-9);
		print_runs(dthr_runs, o.reps);
		printf("\n");
	}
	if (ok2) {
		printf("    graph, 2 passes, %d workers:         %8.3f s  %6.1f GFLOP/s", g2.ncpus,
		       g2.wall_s, 2 * fwd_fl / g2.wall_s * 1e-9);
		print_runs(g2.runs, o.reps);
		graph_detail(&g2, dthr, o.profiling);
		printf("\n      velocity vs direct: max |diff| %.3g (max |v| %.3g)\n", g2.max_diff,
		       g2.max_ref);
	}
	if (o.do_tiles) {
		printf("\n(c) one pass over row tiles of %lld tokens (%d tiles)\n",
		       (long long)o.tile, dit_tile_count(L, o.tile));
		printf("    direct, 1 thread:                   %8.3f s  %6.1f GFLOP/s", dt1,
		       fwd_fl / dt1 * 1e-9);
		print_runs(dt1_runs, o.reps);
		printf("\n    direct, 2 threads (barrier per op): %8.3f s  %6.1f GFLOP/s", dt2,
		       fwd_fl / dt2 * 1e-9);
		print_runs(dt2_runs, o.reps);
		printf("\n");
	}
	const graph_result *gts[2] = {okt1 ? &gt1 : NULL, okt2 ? &gt2 : NULL};
	for (int k = 0; k < 2; k++) {
		if (!gts[k])
			continue;
		printf("    graph, %d worker%s:                   %8.3f s  %6.1f GFLOP/s",
		       gts[k]->ncpus, gts[k]->ncpus > 1 ? "s" : " ", gts[k]->wall_s,
		       fwd_fl / gts[k]->wall_s * 1e-9);
		print_runs(gts[k]->runs, o.reps);
		graph_detail(gts[k], k ? dt2 : dt1, o.profiling);
		printf("\n      velocity vs direct tiles: max |diff| %.3g (max |v| %.3g)\n",
		       gts[k]->max_diff, gts[k]->max_ref);
	}
	cpu_clock_read(&c_end);
	printf("\ntotal %.1f s; CPU time of other processes during the run %.1f s, stolen "
	       "%.1f s\n",
	       now_s() - t_start,
	       fmax(0.0, (c_end.busy - c_start.busy) - (c_end.self - c_start.self)),
	       c_end.steal - c_start.steal);
	machine_line();

	direct_free(&ds);
	free(ref);
	free(tref);
	free(latent);
	free(context[0]);
	free(context[1]);
	dit_model_free(m);
	return ((o.do_graph && !ok1) || (o.do_cfg && !ok2) || (o.do_tiles && !(okt1 && okt2))) ? 1
	                                                                                       : 0;
}
