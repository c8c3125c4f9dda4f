/* GEMMs through cuBLASLt (see dit_cudnn.h): y[m, n] = act(x[m, k] . w[n, k]^T + b[n]),
 * x and w bf16, y bf16 or fp32, fp32 accumulation, the bias and GELU (tanh form) as
 * the matmul's epilogue. In cuBLAS's column-major view y^T[n, m] = w^T . x^T: A = w
 * (k x n, ld k, transposed), B = x (k x m, ld ldx), D = y (n x m, ld ldy). Each shape's
 * descriptors and algorithm (the heuristic's first, for the pointers' alignment) are
 * made once and cached. */
#include "dit_cudnn.h"

#include "dit_cuda.h" /* dit_cuda_f32_to_bf16 */

#include <cublasLt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIT_LT_CACHE 64

typedef struct lt_key {
	int64_t m, n, k, ldx, ldy;
	int y_bf16, bias, act;
	int align; /* the pointers' common alignment in bytes, up to 256 */
} lt_key;

typedef struct lt_plan {
	int used;
	lt_key key;
	const char *refused;
	int bias_bf16; /* the epilogue reads a bf16 copy of the bias (no fp32 bias here) */
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t a, b, d;
	cublasLtMatmulAlgo_t algo;
	uint64_t last_use;
} lt_plan;

struct dit_lt {
	cublasLtHandle_t h;
	void *ws;
	uint16_t *bias16; /* bf16 copies of biases, bias16_n elements */
	int64_t bias16_n;
	uint64_t clock;
	lt_plan cache[DIT_LT_CACHE];
};

dit_lt *dit_lt_open(char *why, size_t cap)
{
	dit_lt *l = calloc(1, sizeof *l);
	if (!l) {
		snprintf(why, cap, "out of memory");
		return NULL;
	}
	cublasStatus_t st = cublasLtCreate(&l->h);
	if (st != CUBLAS_STATUS_SUCCESS) {
		snprintf(why, cap, "cublasLtCreate: %s", cublasGetStatusString(st));
		free(l);
		return NULL;
	}
	cudaError_t e = cudaMalloc(&l->ws, DIT_LT_WS);
	if (e != cudaSuccess) {
		snprintf(why, cap, "cuBLASLt workspace: %s", cudaGetErrorString(e));
		cublasLtDestroy(l->h);
		free(l);
		return NULL;
	}
	return l;
}

static void lt_plan_clear(lt_plan *p)
{
	if (p->a)
		cublasLtMatrixLayoutDestroy(p->a);
	if (p->b)
		cublasLtMatrixLayoutDestroy(p->b);
	if (p->d)
		cublasLtMatrixLayoutDestroy(p->d);
	if (p->op)
		cublasLtMatmulDescDestroy(p->op);
	memset(p, 0, sizeof *p);
}

void dit_lt_close(dit_lt *l)
{
	if (!l)
		return;
	for (int i = 0; i < DIT_LT_CACHE; i++)
		lt_plan_clear(&l->cache[i]);
	cudaFree(l->ws);
	cudaFree(l->bias16);
	cublasLtDestroy(l->h);
	free(l);
}

const char *dit_lt_linear_refusal(int x_bf16, int w_bf16, dit_act act, int64_t m, int64_t n,
                                  int64_t k, int64_t ldx, int64_t ldy)
{
	if (!w_bf16)
		return "fp32 weights";
	if (!x_bf16)
		return "fp32 activations";
	if (act != DIT_ACT_NONE && act != DIT_ACT_GELU_TANH)
		return "an activation with no cuBLASLt epilogue (SiLU, exact GELU)";
	if (m <= 0 || n <= 0 || k <= 0 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX ||
	    ldx > INT32_MAX || ldy > INT32_MAX)
		return "sizes outside int";
	return NULL;
}

static int lt_align(uintptr_t bits)
{
	int a = 256;
	while (a > 2 && bits % (uintptr_t)a)
		a /= 2;
	return a;
}

/* The heuristic's first algorithm for p's descriptors into p->algo: 0, or -1 when
 * cuBLASLt has none. */
static int lt_algo(dit_lt *l, lt_plan *p)
{
	cublasLtMatmulPreference_t pref = NULL;
	uint64_t ws = DIT_LT_WS;
	uint32_t al = (uint32_t)p->key.align;
	cublasLtMatmulHeuristicResult_t res;
	int got = 0;
	memset(&res, 0, sizeof res);
	int ok =
	    cublasLtMatmulPreferenceCreate(&pref) == 0 &&
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
	                                         &ws, sizeof ws) == 0 &&
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
	                                         &al, sizeof al) == 0 &&
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
	                                         &al, sizeof al) == 0 &&
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
	                                         &al, sizeof al) == 0 &&
	    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
	                                         &al, sizeof al) == 0 &&
	    cublasLtMatmulAlgoGetHeuristic(l->h, p->op, p->a, p->b, p->d, p->d, pref, 1, &res,
	                                   &got) == 0 &&
	    got > 0 && res.state == CUBLAS_STATUS_SUCCESS;
	if (pref)
		cublasLtMatmulPreferenceDestroy(pref);
	if (ok)
		p->algo = res.algo;
	return ok ? 0 : -1;
}

/* Descriptors and algorithm of the key into p; p->refused when cuBLASLt has none. A
 * bf16 output with a bias first asks for an fp32 bias (the slab's, added unrounded),
 * then, where cuBLASLt has no such epilogue, for the bf16 bias that its documentation
 * names for a bf16 output (p->bias_bf16: a rounded copy made per call). */
static void lt_plan_build(dit_lt *l, lt_plan *p)
{
	const lt_key *kk = &p->key;
	cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
	cublasLtEpilogue_t epi =
	    kk->act == DIT_ACT_GELU_TANH
	        ? (kk->bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU)
	        : (kk->bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
	int32_t bias_type = CUDA_R_32F;
	cudaDataType_t yt = kk->y_bf16 ? CUDA_R_16BF : CUDA_R_32F;
	int ok =
	    cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == 0 &&
	    cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) ==
	        0 &&
	    cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) ==
	        0 &&
	    cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
	                                   sizeof epi) == 0 &&
	    (!kk->bias || cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
	                                                 &bias_type, sizeof bias_type) == 0) &&
	    cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, (uint64_t)kk->k, (uint64_t)kk->n,
	                               kk->k) == 0 &&
	    cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, (uint64_t)kk->k, (uint64_t)kk->m,
	                               kk->ldx) == 0 &&
	    cublasLtMatrixLayoutCreate(&p->d, yt, (uint64_t)kk->n, (uint64_t)kk->m, kk->ldy) == 0;
	if (!ok) {
		p->refused = "cuBLASLt refused the matmul's descriptors";
		return;
	}
	if (lt_algo(l, p) == 0)
		return;
	if (kk->bias && kk->y_bf16) {
		bias_type = CUDA_R_16BF;
		if (cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
		                                   &bias_type, sizeof bias_type) == 0 &&
		    lt_algo(l, p) == 0) {
			p->bias_bf16 = 1;
			return;
		}
	}
	p->refused = "no cuBLASLt algorithm for this shape";
}

/* A bf16 copy of the fp32 bias b[n] on stream s, in the handle's scratch. */
static int lt_bias16(dit_lt *l, cudaStream_t s, const float *b, int64_t n, const void **out)
{
	if (n > l->bias16_n) {
		cudaFree(l->bias16); /* synchronises: once per larger bias */
		l->bias16 = NULL;
		l->bias16_n = 0;
		cudaError_t e = cudaMalloc((void **)&l->bias16, (size_t)n * sizeof(uint16_t));
		if (e != cudaSuccess)
			return (int)e;
		l->bias16_n = n;
	}
	*out = l->bias16;
	return dit_cuda_f32_to_bf16(s, l->bias16, n, b, n, 1, n);
}

static lt_plan *lt_plan_get(dit_lt *l, const lt_key *key)
{
	lt_plan *victim = &l->cache[0];
	l->clock++;
	for (int i = 0; i < DIT_LT_CACHE; i++) {
		lt_plan *p = &l->cache[i];
		if (p->used && memcmp(&p->key, key, sizeof *key) == 0) {
			p->last_use = l->clock;
			return p;
		}
		if (!p->used || (victim->used && p->last_use < victim->last_use))
			victim = p;
	}
	lt_plan_clear(victim);
	victim->used = 1;
	victim->key = *key;
	victim->last_use = l->clock;
	lt_plan_build(l, victim);
	return victim;
}

int dit_lt_linear(dit_lt *l, cudaStream_t s, void *y, int y_bf16, int64_t ldy, const void *x,
                  int64_t ldx, const void *w, const float *b, int64_t m, int64_t n, int64_t k,
                  dit_act act, const char **why)
{
	const char *r = l ? dit_lt_linear_refusal(1, 1, act, m, n, k, ldx, ldy) : "no cuBLASLt";
	if (r) {
		*why = r;
		return DIT_LIB_REFUSED;
	}
	lt_key key;
	memset(&key, 0, sizeof key); /* compared bytewise: no padding garbage */
	key.m = m;
	key.n = n;
	key.k = k;
	key.ldx = ldx;
	key.ldy = ldy;
	key.y_bf16 = y_bf16;
	key.bias = b != NULL;
	key.act = (int)act;
	key.align = lt_align((uintptr_t)x | (uintptr_t)w | (uintptr_t)y | (uintptr_t)b |
	                     (uintptr_t)(ldx * 2) | (uintptr_t)(ldy * (y_bf16 ? 2 : 4)) |
	                     (uintptr_t)(k * 2));
	lt_plan *p = lt_plan_get(l, &key);
	if (p->refused) {
		*why = p->refused;
		return DIT_LIB_REFUSED;
	}
	const void *bias = b;
	if (b && p->bias_bf16) {
		int rc = lt_bias16(l, s, b, n, &bias);
		if (rc)
			return rc;
	}
	if (b && cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
	                                        sizeof bias) != 0) {
		*why = "cuBLASLt refused the bias pointer";
		return DIT_LIB_REFUSED;
	}
	const float alpha = 1.0f, beta = 0.0f;
	cublasStatus_t st = cublasLtMatmul(l->h, p->op, &alpha, w, p->a, x, p->b, &beta, y, p->d, y,
	                                   p->d, &p->algo, l->ws, DIT_LT_WS, s);
	return st == CUBLAS_STATUS_SUCCESS ? 0 : DIT_LT_ERR_BASE + (int)st;
}
