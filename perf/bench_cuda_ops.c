/* Benchmark of the CUDA kernels that dominate a Wan2.1 block, printed as TFLOP/s and
 * ratios (no StarPU: the dit_cuda_* functions are called directly on cudaMalloc'ed
 * buffers, timed with CUDA events on one stream):
 *
 *   (a) dit_cuda_attention at the self-attention shape (default: Wan2.1-14B at 480P,
 *       32 760 tokens, 40 heads of 128), FLOPs 4 L Lk hd heads;
 *   (b) dit_cuda_linear with bf16 weights on the block's GEMM shapes (m = tokens;
 *       n x k = qkv 3D x D, o D x D, ffn.0 F x D with GELU-tanh, ffn.2 D x F), FLOPs
 *       2 m n k, against cuBLAS's own best on the same shapes: bf16 A and B already
 *       in memory, fp32 C, fp32 compute, no conversion, no bias, the best of
 *       cublasGemmEx (default algorithm) and every algorithm cublasLt's heuristic
 *       offers. The ratio ours / cuBLAS is the fraction of that ceiling we reach; the
 *       fp32 -> bf16 conversion of x that dit_cuda_linear does is timed apart.
 *
 * Data is random (a pool of pseudo-normal values copied over each buffer), scaled like
 * the synthetic checkpoints. Every figure is the median of --reps runs after --warmup
 * runs; the best run is printed too. Lines starting with "result " are for scripts
 * (perf/gpu-check.sh reads them). Without a CUDA device it prints "no CUDA device" and
 * exits 77 (the automake code for a skipped test). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "bench_stats.h"
#include "dit_cuda.h"

#define MAX_ALGOS    32
#define POOL_ELEMS   (1 << 22) /* 16 MiB of fp32 random values, tiled over each buffer */
#define LT_WORKSPACE ((size_t)64 << 20)

/* ------------------------------------------------------------------ options */

typedef struct bench_opts {
	int64_t tokens, lk, heads, hd, dim, ffn;
	int64_t scratch_rows; /* 0: one tile of all m rows */
	int reps, warmup, algos;
	int do_attention, do_linear;
} bench_opts;

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_cuda_ops [options]\n"
	           "  --tokens N        query tokens L, the GEMMs' m (32760: 14B at 480P)\n"
	           "  --lk N            key tokens of the attention (same as --tokens)\n"
	           "  --heads N         attention heads (40)\n"
	           "  --hd N            head dimension (128)\n"
	           "  --dim N           hidden size D of the GEMMs (5120)\n"
	           "  --ffn N           feed-forward size F (13824)\n"
	           "  --scratch-rows N  rows of x converted to bf16 per cuBLAS call in\n"
	           "                    dit_cuda_linear (0: all rows, one call)\n"
	           "  --reps N          timed runs, the median is reported (5)\n"
	           "  --warmup N        untimed runs before them (2)\n"
	           "  --algos N         cublasLt algorithms tried per shape (8)\n"
	           "  --only LIST       comma list of attention, linear (all)\n");
}

static int parse_args(bench_opts *o, int argc, char **argv)
{
	*o = (bench_opts){.tokens = 32760,
	                  .lk = 0,
	                  .heads = 40,
	                  .hd = 128,
	                  .dim = 5120,
	                  .ffn = 13824,
	                  .reps = 5,
	                  .warmup = 2,
	                  .algos = 8,
	                  .do_attention = 1,
	                  .do_linear = 1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		int64_t *dst = NULL, v, min = 1;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			exit(0);
		} else if (!val) {
			fprintf(stderr, "bench_cuda_ops: %s: unknown option or missing value\n", a);
			return -1;
		} else if (strcmp(a, "--only") == 0) {
			o->do_attention = strstr(val, "attention") != NULL;
			o->do_linear = strstr(val, "linear") != NULL;
			if (!o->do_attention && !o->do_linear) {
				fprintf(stderr,
				        "bench_cuda_ops: --only: attention and/or linear\n");
				return -1;
			}
			i++;
			continue;
		} else if (strcmp(a, "--tokens") == 0) {
			dst = &o->tokens;
		} else if (strcmp(a, "--lk") == 0) {
			dst = &o->lk;
		} else if (strcmp(a, "--heads") == 0) {
			dst = &o->heads;
		} else if (strcmp(a, "--hd") == 0) {
			dst = &o->hd;
		} else if (strcmp(a, "--dim") == 0) {
			dst = &o->dim;
		} else if (strcmp(a, "--ffn") == 0) {
			dst = &o->ffn;
		} else if (strcmp(a, "--scratch-rows") == 0) {
			dst = &o->scratch_rows;
			min = 0;
		} else if (strcmp(a, "--reps") == 0 || strcmp(a, "--warmup") == 0 ||
		           strcmp(a, "--algos") == 0) {
			int is_reps = strcmp(a, "--reps") == 0,
			    is_algos = strcmp(a, "--algos") == 0;
			int64_t lim = is_algos ? MAX_ALGOS : DIT_BENCH_MAX_REPS;
			if (dit_bench_parse_i64(val, &v, is_reps || is_algos ? 1 : 0) || v > lim) {
				fprintf(
				    stderr,
				    "bench_cuda_ops: %s needs an integer up to %lld, not '%s'\n", a,
				    (long long)lim, val);
				return -1;
			}
			*(is_reps ? &o->reps : is_algos ? &o->algos : &o->warmup) = (int)v;
			i++;
			continue;
		} else {
			fprintf(stderr, "bench_cuda_ops: unknown option %s\n", a);
			return -1;
		}
		if (dit_bench_parse_i64(val, dst, min)) {
			fprintf(stderr, "bench_cuda_ops: %s needs an integer >= %lld, not '%s'\n",
			        a, (long long)min, val);
			return -1;
		}
		i++;
	}
	if (o->lk == 0)
		o->lk = o->tokens;
	return 0;
}

/* ------------------------------------------------------------------ helpers */

#define CUDA_OK(call)                                                                              \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "bench_cuda_ops: %s:%d: %s: %s\n", __FILE__, __LINE__,     \
			        #call, cudaGetErrorString(e_));                                    \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CUBLAS_OK(call)                                                                            \
	do {                                                                                       \
		cublasStatus_t s_ = (call);                                                        \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
			fprintf(stderr, "bench_cuda_ops: %s:%d: %s: cuBLAS status %d\n", __FILE__, \
			        __LINE__, #call, (int)s_);                                         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* A dit_cuda_* return code: 0, a cudaError_t, or 1000 + a cublasStatus_t. */
static void dit_ok(int rc, const char *what)
{
	if (rc == 0)
		return;
	if (rc >= DIT_CUDA_CUBLAS_ERR_BASE)
		fprintf(stderr, "bench_cuda_ops: %s: cuBLAS status %d\n", what,
		        rc - DIT_CUDA_CUBLAS_ERR_BASE);
	else
		fprintf(stderr, "bench_cuda_ops: %s: %s\n", what,
		        cudaGetErrorString((cudaError_t)rc));
	exit(1);
}

/* Pseudo-normal values (sum of 4 uniforms, centred, unit variance) from a fixed
 * xorshift: the pool is the same on every run. */
static float *pool_f32;
static uint16_t *pool_bf16;

static void pool_init(void)
{
	pool_f32 = malloc(POOL_ELEMS * sizeof *pool_f32);
	pool_bf16 = malloc(POOL_ELEMS * sizeof *pool_bf16);
	if (!pool_f32 || !pool_bf16) {
		fprintf(stderr, "bench_cuda_ops: out of host memory\n");
		exit(1);
	}
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (int64_t i = 0; i < POOL_ELEMS; i++) {
		double s = 0;
		for (int j = 0; j < 4; j++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			s += (double)(x >> 11) * (1.0 / 9007199254740992.0);
		}
		float f = (float)((s - 2.0) * sqrt(3.0));
		uint32_t u;
		memcpy(&u, &f, sizeof u);
		pool_f32[i] = f;
		pool_bf16[i] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
	}
}

/* Fills n elements of a device buffer by copying the host pool over it, starting at
 * a different place of the pool for each buffer (seed). */
static void fill(void *dev, int64_t n, size_t elem, int seed)
{
	const char *src = elem == 2 ? (const char *)pool_bf16 : (const char *)pool_f32;
	int64_t start = ((int64_t)seed * 7919) % (POOL_ELEMS / 2), done = 0;
	while (done < n) {
		int64_t chunk = n - done < POOL_ELEMS - start ? n - done : POOL_ELEMS - start;
		CUDA_OK(cudaMemcpy((char *)dev + (size_t)done * elem, src + (size_t)start * elem,
		                   (size_t)chunk * elem, cudaMemcpyHostToDevice));
		done += chunk;
		start = 0;
	}
}

static void *dalloc(int64_t n, size_t elem)
{
	void *p = NULL;
	cudaError_t e = cudaMalloc(&p, (size_t)n * elem);
	if (e != cudaSuccess) {
		fprintf(stderr, "bench_cuda_ops: cudaMalloc of %.2f GiB: %s\n",
		        (double)n * (double)elem / 1073741824.0, cudaGetErrorString(e));
		exit(1);
	}
	return p;
}

/* Runs op warmup + reps times on stream s, each timed with a pair of events; the
 * times in ms go to t[reps]. */
typedef int (*op_fn)(void *ctx, cudaStream_t s);

static void time_op(op_fn op, void *ctx, cudaStream_t s, const char *what, int warmup, int reps,
                    double *t)
{
	cudaEvent_t e0, e1;
	CUDA_OK(cudaEventCreate(&e0));
	CUDA_OK(cudaEventCreate(&e1));
	for (int i = 0; i < warmup; i++)
		dit_ok(op(ctx, s), what);
	CUDA_OK(cudaStreamSynchronize(s));
	for (int i = 0; i < reps; i++) {
		CUDA_OK(cudaEventRecord(e0, s));
		dit_ok(op(ctx, s), what);
		CUDA_OK(cudaEventRecord(e1, s));
		CUDA_OK(cudaEventSynchronize(e1));
		float ms = 0;
		CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
		t[i] = ms;
	}
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaEventDestroy(e0));
	CUDA_OK(cudaEventDestroy(e1));
}

static double tflops(double flops, double ms)
{
	return flops / (ms * 1e-3) / 1e12;
}

/* ------------------------------------------------------------------ (a) attention */

typedef struct att_ctx {
	float *o, *q, *k, *v;
	int64_t ld, lq, lk, heads, hd;
	float scale;
} att_ctx;

static int att_op(void *p, cudaStream_t s)
{
	att_ctx *c = p;
	return dit_cuda_attention(s, c->o, c->ld, c->q, c->ld, c->k, c->ld, c->v, c->ld, c->lq,
	                          c->lk, c->heads, c->hd, c->scale);
}

static void bench_attention(const bench_opts *o, cudaStream_t s)
{
	att_ctx c = {.ld = o->heads * o->hd,
	             .lq = o->tokens,
	             .lk = o->lk,
	             .heads = o->heads,
	             .hd = o->hd,
	             .scale = (float)(1.0 / sqrt((double)o->hd))};
	int64_t w = c.ld;
	c.q = dalloc(c.lq * w, 4);
	c.k = dalloc(c.lk * w, 4);
	c.v = dalloc(c.lk * w, 4);
	c.o = dalloc(c.lq * w, 4);
	fill(c.q, c.lq * w, 4, 1);
	fill(c.k, c.lk * w, 4, 2);
	fill(c.v, c.lk * w, 4, 3);
	double t[DIT_BENCH_MAX_REPS];
	time_op(att_op, &c, s, "dit_cuda_attention", o->warmup, o->reps, t);
	double flops = 4.0 * (double)c.lq * (double)c.lk * (double)c.hd * (double)c.heads;
	double med = dit_bench_median(t, o->reps), best = dit_bench_min(t, o->reps);
	printf("\n(a) dit_cuda_attention: L %lld, Lk %lld, %lld heads of %lld, fp32 in/out "
	       "(%.2f TFLOP per call)\n",
	       (long long)c.lq, (long long)c.lk, (long long)c.heads, (long long)c.hd, flops / 1e12);
	printf("    median %.3f ms (%.1f TFLOP/s), best %.3f ms (%.1f TFLOP/s); runs (ms):", med,
	       tflops(flops, med), best, tflops(flops, best));
	for (int i = 0; i < o->reps; i++)
		printf(" %.3f", t[i]);
	printf("\n");
	printf("result attention_ms %.4f\n", med);
	printf("result attention_tflops %.2f\n", tflops(flops, med));
	cudaFree(c.q);
	cudaFree(c.k);
	cudaFree(c.v);
	cudaFree(c.o);
}

/* ------------------------------------------------------------------ (b) linear */

typedef struct lin_ctx {
	cublasHandle_t h;
	cublasLtHandle_t lt;
	float *y, *x, *b;
	uint16_t *w, *xb, *scratch;
	size_t scratch_elems;
	int64_t m, n, k;
	dit_act act;
	/* cublasLt */
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulAlgo_t algo;
	void *ws;
} lin_ctx;

static int ours_op(void *p, cudaStream_t s)
{
	lin_ctx *c = p;
	return dit_cuda_linear(c->h, s, c->y, c->n, c->x, c->k, c->w, 1, c->b, c->m, c->n, c->k,
	                       c->act, c->scratch, c->scratch_elems);
}

static int convert_op(void *p, cudaStream_t s)
{
	lin_ctx *c = p;
	return dit_cuda_f32_to_bf16(s, c->xb, c->k, c->x, c->k, c->m, c->k);
}

/* y[m, n] = xb[m, k] w[n, k]^T, row-major: column-major y^T[n, m] = w^T . xb^T. */
static int gemmex_op(void *p, cudaStream_t s)
{
	lin_ctx *c = p;
	const float one = 1.0f, zero = 0.0f;
	(void)s; /* the handle is bound to s */
	cublasStatus_t st =
	    cublasGemmEx(c->h, CUBLAS_OP_T, CUBLAS_OP_N, (int)c->n, (int)c->m, (int)c->k, &one,
	                 c->w, CUDA_R_16BF, (int)c->k, c->xb, CUDA_R_16BF, (int)c->k, &zero, c->y,
	                 CUDA_R_32F, (int)c->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	return st == CUBLAS_STATUS_SUCCESS ? 0 : DIT_CUDA_CUBLAS_ERR_BASE + (int)st;
}

static int lt_op(void *p, cudaStream_t s)
{
	lin_ctx *c = p;
	const float one = 1.0f, zero = 0.0f;
	cublasStatus_t st =
	    cublasLtMatmul(c->lt, c->desc, &one, c->w, c->la, c->xb, c->lb, &zero, c->y, c->lc,
	                   c->y, c->lc, &c->algo, c->ws, LT_WORKSPACE, s);
	return st == CUBLAS_STATUS_SUCCESS ? 0 : DIT_CUDA_CUBLAS_ERR_BASE + (int)st;
}

/* The best time (ms, median of reps) cuBLAS gives the shape: cublasGemmEx with the
 * default algorithm, then each algorithm of cublasLt's heuristic. *tried: how many. */
static double cublas_best(const bench_opts *o, lin_ctx *c, cudaStream_t s, int *tried,
                          double *gemmex_ms)
{
	double t[DIT_BENCH_MAX_REPS];
	time_op(gemmex_op, c, s, "cublasGemmEx", o->warmup, o->reps, t);
	double best = dit_bench_median(t, o->reps);
	*gemmex_ms = best;
	*tried = 1;

	cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
	CUBLAS_OK(cublasLtMatmulDescCreate(&c->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	CUBLAS_OK(
	    cublasLtMatmulDescSetAttribute(c->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
	CUBLAS_OK(
	    cublasLtMatmulDescSetAttribute(c->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
	CUBLAS_OK(
	    cublasLtMatrixLayoutCreate(&c->la, CUDA_R_16BF, (uint64_t)c->k, (uint64_t)c->n, c->k));
	CUBLAS_OK(
	    cublasLtMatrixLayoutCreate(&c->lb, CUDA_R_16BF, (uint64_t)c->k, (uint64_t)c->m, c->k));
	CUBLAS_OK(
	    cublasLtMatrixLayoutCreate(&c->lc, CUDA_R_32F, (uint64_t)c->n, (uint64_t)c->m, c->n));
	cublasLtMatmulPreference_t pref;
	CUBLAS_OK(cublasLtMatmulPreferenceCreate(&pref));
	size_t wsz = LT_WORKSPACE;
	CUBLAS_OK(cublasLtMatmulPreferenceSetAttribute(
	    pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof wsz));
	cublasLtMatmulHeuristicResult_t res[MAX_ALGOS];
	int nres = 0;
	cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(c->lt, c->desc, c->la, c->lb, c->lc,
	                                                   c->lc, pref, o->algos, res, &nres);
	if (st != CUBLAS_STATUS_SUCCESS)
		nres = 0; /* GemmEx's figure stands */
	for (int i = 0; i < nres; i++) {
		if (res[i].state != CUBLAS_STATUS_SUCCESS)
			continue;
		c->algo = res[i].algo;
		time_op(lt_op, c, s, "cublasLtMatmul", 1, o->reps, t);
		double med = dit_bench_median(t, o->reps);
		best = med < best ? med : best;
		(*tried)++;
	}
	cublasLtMatmulPreferenceDestroy(pref);
	cublasLtMatrixLayoutDestroy(c->la);
	cublasLtMatrixLayoutDestroy(c->lb);
	cublasLtMatrixLayoutDestroy(c->lc);
	cublasLtMatmulDescDestroy(c->desc);
	return best;
}

static void bench_linear(const bench_opts *o, cudaStream_t s)
{
	const int64_t D = o->dim, F = o->ffn, m = o->tokens;
	const struct {
		const char *name, *key;
		int64_t n, k;
		dit_act act;
	} shapes[] = {
	    {"sa.qkv", "qkv", 3 * D, D, DIT_ACT_NONE},
	    {"sa.o", "o", D, D, DIT_ACT_NONE},
	    {"ffn.0 (GELU)", "ffn0", F, D, DIT_ACT_GELU_TANH},
	    {"ffn.2", "ffn2", D, F, DIT_ACT_NONE},
	};
	const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
	int64_t kmax = 0, nmax = 0;
	for (int i = 0; i < nshapes; i++) {
		kmax = shapes[i].k > kmax ? shapes[i].k : kmax;
		nmax = shapes[i].n > nmax ? shapes[i].n : nmax;
	}
	lin_ctx c = {.m = m};
	CUBLAS_OK(cublasCreate(&c.h));
	CUBLAS_OK(cublasSetStream(c.h, s));
	CUBLAS_OK(cublasLtCreate(&c.lt));
	int64_t srows = o->scratch_rows > 0 && o->scratch_rows < m ? o->scratch_rows : m;
	c.scratch_elems = (size_t)(srows * kmax);
	c.x = dalloc(m * kmax, 4);
	c.xb = dalloc(m * kmax, 2);
	c.scratch = dalloc((int64_t)c.scratch_elems, 2);
	c.y = dalloc(m * nmax, 4);
	c.w = dalloc(nmax * kmax, 2);
	c.b = dalloc(nmax, 4);
	c.ws = dalloc((int64_t)LT_WORKSPACE, 1);
	fill(c.x, m * kmax, 4, 4);
	fill(c.w, nmax * kmax, 2, 5);
	fill(c.b, nmax, 4, 6);

	printf("\n(b) dit_cuda_linear, bf16 weights, fp32 x and y, m = %lld, x -> bf16 in tiles of "
	       "%lld rows,\n    against cuBLAS on bf16 x (no conversion, no bias): best of "
	       "cublasGemmEx and up to %d cublasLt algorithms\n",
	       (long long)m, (long long)srows, o->algos);
	printf("    %-13s %6s %6s %9s %8s %9s %8s %10s %8s %9s\n", "op", "n", "k", "ours ms",
	       "TFLOP/s", "cuBLAS ms", "TFLOP/s", "ours/cuBLAS", "cvt ms", "GemmEx ms");
	double sum_ours = 0, sum_peak = 0, sum_flops = 0;
	for (int i = 0; i < nshapes; i++) {
		double t[DIT_BENCH_MAX_REPS];
		c.n = shapes[i].n;
		c.k = shapes[i].k;
		c.act = shapes[i].act;
		double flops = 2.0 * (double)m * (double)c.n * (double)c.k;
		time_op(ours_op, &c, s, "dit_cuda_linear", o->warmup, o->reps, t);
		double ours = dit_bench_median(t, o->reps);
		time_op(convert_op, &c, s, "dit_cuda_f32_to_bf16", o->warmup, o->reps, t);
		double cvt = dit_bench_median(t, o->reps);
		int tried;
		double gemmex;
		double peak = cublas_best(o, &c, s, &tried, &gemmex);
		double ratio = peak / ours; /* = ours TFLOP/s / cuBLAS TFLOP/s */
		printf("    %-13s %6lld %6lld %9.3f %8.1f %9.3f %8.1f %10.3f %8.3f %9.3f\n",
		       shapes[i].name, (long long)c.n, (long long)c.k, ours, tflops(flops, ours),
		       peak, tflops(flops, peak), ratio, cvt, gemmex);
		printf("result linear_%s_tflops %.2f\n", shapes[i].key, tflops(flops, ours));
		printf("result cublas_%s_tflops %.2f\n", shapes[i].key, tflops(flops, peak));
		printf("result linear_%s_ratio %.4f\n", shapes[i].key, ratio);
		sum_ours += ours;
		sum_peak += peak;
		sum_flops += flops;
	}
	printf("    %-13s %6s %6s %9.3f %8.1f %9.3f %8.1f %10.3f\n", "the 4 GEMMs", "", "",
	       sum_ours, tflops(sum_flops, sum_ours), sum_peak, tflops(sum_flops, sum_peak),
	       sum_peak / sum_ours);
	printf("result linear_all_ratio %.4f\n", sum_peak / sum_ours);
	cudaFree(c.x);
	cudaFree(c.xb);
	cudaFree(c.scratch);
	cudaFree(c.y);
	cudaFree(c.w);
	cudaFree(c.b);
	cudaFree(c.ws);
	cublasLtDestroy(c.lt);
	cublasDestroy(c.h);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	bench_opts o;
	if (parse_args(&o, argc, argv)) {
		usage(stderr);
		return 2;
	}
	int ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev == 0) {
		printf("no CUDA device (%s)\n",
		       e != cudaSuccess ? cudaGetErrorString(e) : "none found");
		return 77;
	}
	struct cudaDeviceProp p;
	CUDA_OK(cudaGetDeviceProperties(&p, 0));
	int rt = 0, drv = 0, cublas_ver = 0;
	cudaRuntimeGetVersion(&rt);
	cudaDriverGetVersion(&drv);
	cublasHandle_t h;
	CUBLAS_OK(cublasCreate(&h));
	cublasGetVersion(h, &cublas_ver);
	cublasDestroy(h);
	printf("device: %s, compute capability %d.%d, %d SMs, %.1f GiB, L2 %d MiB\n", p.name,
	       p.major, p.minor, p.multiProcessorCount, (double)p.totalGlobalMem / 1073741824.0,
	       p.l2CacheSize >> 20);
	printf("CUDA runtime %d, driver %d, cuBLAS %d; median of %d runs after %d warm-up runs\n",
	       rt, drv, cublas_ver, o.reps, o.warmup);
	if (o.do_attention && o.hd * o.heads <= 0) {
		fprintf(stderr, "bench_cuda_ops: bad attention shape\n");
		return 2;
	}
	pool_init();
	cudaStream_t s;
	CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	if (o.do_attention)
		bench_attention(&o, s);
	if (o.do_linear)
		bench_linear(&o, s);
	CUDA_OK(cudaStreamDestroy(s));
	free(pool_f32);
	free(pool_bf16);
	return 0;
}
