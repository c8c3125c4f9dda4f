/* Benchmark of the CUDA codelets' library paths against their own kernels on the bf16
 * activations a CUDA run stores (codelets/cuda/dit_cudnn.h), at a Wan2.1 block's shapes
 * (default: 14B at 480P, 32 760 tokens):
 *
 *   (a) attention, q/k/v read from one qkv row [L, 3D] and o [L, D] as the codelet
 *       does: dit_cuda_attention_act (own tensor-core kernel) and cuDNN's fused SDPA
 *       (dit_cudnn_sdpa), FLOPs 4 L Lk hd heads;
 *   (b) the block's linears with bf16 x, w and y and an fp32 bias, GELU-tanh on ffn.0:
 *       dit_cuda_linear_act (cublasGemmEx, then the own bias/activation kernel) and
 *       cuBLASLt with the bias and GELU as epilogues (dit_lt_linear), FLOPs 2 m n k.
 *
 * Each figure is the median of --reps runs after --warmup runs, timed with CUDA events.
 * Lines starting with "result " are for perf/gpu-check.sh. Without a CUDA device it
 * exits 77; without cuDNN (absent, or the build has no headers) part (a) prints why. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "bench_stats.h"
#include "config.h"
#include "dit_cuda.h"
#include "dit_cudnn.h"

#define POOL (1 << 22)

typedef struct opts {
	int64_t tokens, lk, heads, hd, dim, ffn;
	int reps, warmup;
} opts;

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_cuda_libs: %s failed (%d)\n", what, rc);
	exit(1);
}

/* n bf16 values from a fixed pseudo-random pool of values in [-2, 2). */
static uint16_t *dev_bf16(int64_t n, int seed)
{
	static uint16_t pool[POOL];
	uint64_t x = 0x9E3779B97F4A7C15ull + (uint64_t)seed;
	for (int i = 0; i < POOL; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		float f = (float)((double)(x >> 11) / 9007199254740992.0 * 4.0 - 2.0);
		uint32_t u;
		memcpy(&u, &f, sizeof u);
		pool[i] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
	}
	uint16_t *d = NULL;
	if (cudaMalloc((void **)&d, (size_t)n * 2))
		die("cudaMalloc", 0);
	for (int64_t done = 0; done < n; done += POOL) {
		int64_t c = n - done < POOL ? n - done : POOL;
		if (cudaMemcpy(d + done, pool, (size_t)c * 2, cudaMemcpyHostToDevice))
			die("cudaMemcpy", 0);
	}
	return d;
}

typedef int (*op_fn)(void *ctx, cudaStream_t s);

/* Median ms of reps timed runs of op after warmup runs. */
static double time_op(op_fn op, void *ctx, cudaStream_t s, const opts *o)
{
	double t[DIT_BENCH_MAX_REPS];
	cudaEvent_t e0, e1;
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	for (int i = 0; i < o->warmup; i++) {
		int rc = op(ctx, s);
		if (rc)
			return rc == DIT_LIB_REFUSED ? -1.0 : (die("op", rc), 0.0);
	}
	for (int i = 0; i < o->reps; i++) {
		float ms = 0;
		cudaEventRecord(e0, s);
		int rc = op(ctx, s);
		if (rc)
			die("op", rc);
		cudaEventRecord(e1, s);
		cudaEventSynchronize(e1);
		cudaEventElapsedTime(&ms, e0, e1);
		t[i] = ms;
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	return dit_bench_median(t, o->reps);
}

static double tflops(double flops, double ms)
{
	return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0;
}

/* ------------------------------------------------------------------ (a) attention */

typedef struct att {
	uint16_t *qkv, *o;
	int64_t lq, lk, heads, hd, w;
	float scale;
	dit_cudnn *dnn;
	const char *why;
} att;

static int att_own(void *p, cudaStream_t s)
{
	att *a = p;
	return dit_cuda_attention_act(s, a->o, 1, a->w, a->qkv, 1, 3 * a->w, a->qkv + a->w,
	                              a->qkv + 2 * a->w, 1, 3 * a->w, 3 * a->w, a->lq, a->lk,
	                              a->heads, a->hd, a->scale);
}

#ifdef DIT_HAVE_CUDNN
static int att_cudnn(void *p, cudaStream_t s)
{
	att *a = p;
	dit_sdpa_shape sh = {.lq = a->lq,
	                     .lk = a->lk,
	                     .heads = a->heads,
	                     .hd = a->hd,
	                     .ldq = 3 * a->w,
	                     .ldk = 3 * a->w,
	                     .ldv = 3 * a->w,
	                     .ldo = a->w,
	                     .q_bf16 = 1,
	                     .kv_bf16 = 1,
	                     .o_bf16 = 1,
	                     .addr = (uintptr_t)a->qkv | (uintptr_t)a->o};
	return dit_cudnn_sdpa(a->dnn, s, a->o, a->qkv, a->qkv + a->w, a->qkv + 2 * a->w, &sh,
	                      a->scale, &a->why);
}
#endif

static void bench_attention(const opts *o, cudaStream_t s)
{
	att a = {.lq = o->tokens,
	         .lk = o->lk,
	         .heads = o->heads,
	         .hd = o->hd,
	         .w = o->heads * o->hd,
	         .scale = (float)(1.0 / sqrt((double)o->hd))};
	int64_t rows = a.lq > a.lk ? a.lq : a.lk;
	a.qkv = dev_bf16(rows * 3 * a.w, 1);
	a.o = dev_bf16(a.lq * a.w, 2);
	double flops = 4.0 * (double)a.lq * (double)a.lk * (double)a.hd * (double)a.heads;
	double own = time_op(att_own, &a, s, o);
	printf("(a) attention L %lld, Lk %lld, %lld heads of %lld, bf16 q/k/v/o\n", (long long)a.lq,
	       (long long)a.lk, (long long)a.heads, (long long)a.hd);
	printf("    own kernel: %.3f ms, %.1f TFLOP/s\n", own, tflops(flops, own));
	printf("result own_attention_bf16_tflops %.2f\n", tflops(flops, own));
	char why[256] = "built without cuDNN's headers";
#ifdef DIT_HAVE_CUDNN
	a.dnn = dit_cudnn_open(getenv("DIT_CUDNN_LIBRARY"), 1, why, sizeof why);
#endif
	if (!a.dnn) {
		printf("    cuDNN: not run (%s)\n", why);
	}
#ifdef DIT_HAVE_CUDNN
	else {
		double lib = time_op(att_cudnn, &a, s, o);
		if (lib < 0) {
			printf("    cuDNN %ld: refused (%s)\n", dit_cudnn_version(a.dnn), a.why);
		} else {
			printf("    cuDNN %ld: %.3f ms, %.1f TFLOP/s (%.3fx the own kernel)\n",
			       dit_cudnn_version(a.dnn), lib, tflops(flops, lib), own / lib);
			printf("result cudnn_attention_tflops %.2f\n", tflops(flops, lib));
			printf("result cudnn_attention_vs_own %.4f\n", own / lib);
		}
		dit_cudnn_close(a.dnn);
	}
#endif
	cudaFree(a.qkv);
	cudaFree(a.o);
}

/* ------------------------------------------------------------------ (b) linear */

typedef struct lin {
	cublasHandle_t h;
	dit_lt *lt;
	uint16_t *x, *w, *y;
	float *b;
	int64_t m, n, k;
	dit_act act;
	const char *why;
} lin;

static int lin_own(void *p, cudaStream_t s)
{
	lin *l = p;
	return dit_cuda_linear_act(l->h, s, l->y, 1, l->n, l->x, 1, l->k, l->w, 1, l->b, l->m, l->n,
	                           l->k, l->act, NULL, 0);
}

static int lin_lt(void *p, cudaStream_t s)
{
	lin *l = p;
	return dit_lt_linear(l->lt, s, l->y, 1, l->n, l->x, l->k, l->w, l->b, l->m, l->n, l->k,
	                     l->act, &l->why);
}

static void bench_linear(const opts *o, cudaStream_t s)
{
	const int64_t D = o->dim, F = o->ffn, m = o->tokens;
	const struct {
		const char *key;
		int64_t n, k;
		dit_act act;
	} sh[] = {{"qkv", 3 * D, D, DIT_ACT_NONE},
	          {"o", D, D, DIT_ACT_NONE},
	          {"ffn0", F, D, DIT_ACT_GELU_TANH},
	          {"ffn2", D, F, DIT_ACT_NONE}};
	lin l = {.m = m};
	char why[256];
	if (cublasCreate(&l.h) || cublasSetStream(l.h, s))
		die("cublasCreate", 0);
	l.lt = dit_lt_open(why, sizeof why);
	l.x = dev_bf16(m * F, 3);
	l.y = dev_bf16(m * F, 4);
	l.w = dev_bf16(F * D > 3 * D * D ? F * D : 3 * D * D, 5);
	if (cudaMalloc((void **)&l.b, (size_t)F * 4) || cudaMemset(l.b, 0, (size_t)F * 4))
		die("cudaMalloc", 0);
	printf("(b) linears, bf16 x/w/y, fp32 bias, m = %lld: own (GemmEx + bias/act kernel) and "
	       "cuBLASLt (epilogue)%s%s\n",
	       (long long)m, l.lt ? "" : ": cuBLASLt not opened, ", l.lt ? "" : why);
	double so = 0, sl = 0, sf = 0;
	for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
		l.n = sh[i].n, l.k = sh[i].k, l.act = sh[i].act;
		double flops = 2.0 * (double)m * (double)l.n * (double)l.k;
		double own = time_op(lin_own, &l, s, o);
		double lt = l.lt ? time_op(lin_lt, &l, s, o) : -1;
		printf("    %-5s n %6lld k %6lld: own %.3f ms (%.1f TFLOP/s)", sh[i].key,
		       (long long)l.n, (long long)l.k, own, tflops(flops, own));
		if (lt > 0)
			printf(", cuBLASLt %.3f ms (%.1f TFLOP/s, %.3fx)\n", lt, tflops(flops, lt),
			       own / lt);
		else
			printf(", cuBLASLt refused (%s)\n", l.lt ? l.why : why);
		printf("result own_bf16_%s_tflops %.2f\n", sh[i].key, tflops(flops, own));
		if (lt > 0)
			printf("result lt_%s_tflops %.2f\n", sh[i].key, tflops(flops, lt));
		so += own, sl += lt > 0 ? lt : own, sf += flops;
	}
	printf("result lt_all_vs_own %.4f\n", so / sl);
	dit_lt_close(l.lt);
	cublasDestroy(l.h);
	cudaFree(l.x), cudaFree(l.y), cudaFree(l.w), cudaFree(l.b);
}

int main(int argc, char **argv)
{
	opts o = {.tokens = 32760,
	          .lk = 0,
	          .heads = 40,
	          .hd = 128,
	          .dim = 5120,
	          .ffn = 13824,
	          .reps = 5,
	          .warmup = 2};
	for (int i = 1; i + 1 < argc; i += 2) {
		int64_t v = strtoll(argv[i + 1], NULL, 10);
		if (strcmp(argv[i], "--tokens") == 0)
			o.tokens = v;
		else if (strcmp(argv[i], "--heads") == 0)
			o.heads = v;
		else if (strcmp(argv[i], "--head-dim") == 0)
			o.hd = v;
		else if (strcmp(argv[i], "--dim") == 0)
			o.dim = v;
		else if (strcmp(argv[i], "--ffn") == 0)
			o.ffn = v;
		else if (strcmp(argv[i], "--reps") == 0)
			o.reps = (int)v;
		else {
			fprintf(stderr,
			        "usage: bench_cuda_libs [--tokens N] [--heads N] [--head-dim N] "
			        "[--dim N] [--ffn N] [--reps N]\n");
			return 2;
		}
	}
	if (o.reps < 1 || o.reps > DIT_BENCH_MAX_REPS || o.tokens < 1 || o.heads < 1 || o.hd < 1) {
		fprintf(stderr, "bench_cuda_libs: bad sizes\n");
		return 2;
	}
	o.lk = o.tokens;
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("no CUDA device\n");
		return 77;
	}
	cudaStream_t s;
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	bench_attention(&o, s);
	bench_linear(&o, s);
	cudaStreamDestroy(s);
	return 0;
}
