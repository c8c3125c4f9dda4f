/* The vendor libraries behind the CUDA codelets' fast paths, plain C (no StarPU), each
 * an object one CUDA worker owns (codelets/cuda_glue.c keeps them per worker):
 *
 * - dit_cudnn: cuDNN 9, loaded at run time with dlopen (so that the library, ~1 GB with
 *   its engines, is needed only where it is used: a build with cuDNN's headers runs on
 *   machines without it, and a machine with PyTorch brings one), its handle on the
 *   worker's stream, and the fused scaled-dot-product attention (the flash attention
 *   engine PyTorch's SDPA calls on Hopper) through cuDNN's graph API: one execution
 *   plan built per shape, then cached.
 * - dit_lt: cuBLASLt GEMMs, bf16 in and out, fp32 accumulation, the bias and the
 *   tanh-approximated GELU fused as epilogues, the algorithm chosen once per shape.
 *
 * Both refuse what they do not take with a reason (a constant string) instead of
 * failing: the caller then runs its own kernel (codelets/cuda/attention.cu, linear.cu)
 * and counts the reason for the stats. Every function only enqueues work on the given
 * stream, except the first use of a shape, which builds its plan and may allocate the
 * workspace (cudaMalloc, outside StarPU's memory manager: at most DIT_CUDNN_WS_MAX and
 * DIT_LT_WS bytes per worker). Results are deterministic: the same shape gives the same
 * plan, hence the same bits, in every run and offload mode. */
#ifndef DIT_CUDNN_H
#define DIT_CUDNN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "dit_cpu.h" /* dit_act */

#include "dit_cuda_mem.h" /* DIT_CUDNN_WS_MAX, DIT_LT_WS */

#ifdef __cplusplus
extern "C" {
#endif

#define DIT_CUDNN_ERR_BASE 2000 /* returned: 2000 + cudnnStatus_t */
#define DIT_LT_ERR_BASE    3000 /* returned: 3000 + cublasStatus_t */
#define DIT_LIB_REFUSED    (-1) /* the library does not take this case: run the own kernel */

/* ------------------------------------------------------------------ cuDNN */

typedef struct dit_cudnn dit_cudnn;

/* Loads cuDNN from path (NULL or "": "libcudnn.so.9" through the dynamic loader's
 * search), checks that it is 9.0 or later, and when with_handle creates its handle
 * (which needs a CUDA device). NULL on failure, with one line saying why in why[cap]. */
dit_cudnn *dit_cudnn_open(const char *path, int with_handle, char *why, size_t cap);
void dit_cudnn_close(dit_cudnn *c);

/* The loaded library's version, cudnnGetVersion(): 91900 for 9.19.0. */
long dit_cudnn_version(const dit_cudnn *c);

/* An attention call as the codelet sees it: q [lq, heads*hd] (ldq), k, v [lk, heads*hd]
 * (ldk, ldv), o [lq, heads*hd] (ldo), each bf16 or fp32; addr: the four pointers' bits
 * OR-ed (their common alignment). */
typedef struct dit_sdpa_shape {
	int64_t lq, lk, heads, hd;
	int64_t ldq, ldk, ldv, ldo;
	int q_bf16, kv_bf16, o_bf16;
	uintptr_t addr;
} dit_sdpa_shape;

/* NULL when cuDNN's fused attention (at library version `version`) takes this call,
 * else why not, e.g. "fp32 activations" (it takes bf16), "head_dim not a multiple of 8". */
const char *dit_cudnn_sdpa_refusal(long version, const dit_sdpa_shape *sh);

/* o = softmax(q k^T * scale) v per head through cuDNN on stream s. 0 when enqueued;
 * DIT_LIB_REFUSED with *why set when the shape is refused (by the rules above, or by
 * cuDNN when its plan is built: remembered, so a shape is tried once); else
 * DIT_CUDNN_ERR_BASE + the cudnnStatus_t, or a cudaError_t. */
int dit_cudnn_sdpa(dit_cudnn *c, cudaStream_t s, void *o, const void *q, const void *k,
                   const void *v, const dit_sdpa_shape *sh, float scale, const char **why);

/* The tensors and operations of the attention graph for shape sh, built and finalized
 * without a device (what can be checked of the graph on a machine without a GPU):
 * 0, or DIT_CUDNN_ERR_BASE + the status with the failing step in why[cap]. */
int dit_cudnn_sdpa_describe(dit_cudnn *c, const dit_sdpa_shape *sh, char *why, size_t cap);

/* ------------------------------------------------------------------ cuBLASLt */

typedef struct dit_lt dit_lt;

/* A cuBLASLt handle and its workspace (DIT_LT_WS bytes on the current device). NULL
 * with the reason in why on failure. */
dit_lt *dit_lt_open(char *why, size_t cap);
void dit_lt_close(dit_lt *l);

/* NULL when cuBLASLt takes y[m, n] = act(x[m, k] . w[n, k]^T + b[n]) with these
 * types, else why not: x and w must be bf16 (y bf16 or fp32), act none or GELU_TANH
 * (the epilogue's GELU is the tanh form), sizes within int. */
const char *dit_lt_linear_refusal(int x_bf16, int w_bf16, dit_act act, int64_t m, int64_t n,
                                  int64_t k, int64_t ldx, int64_t ldy);

/* The linear through one cublasLtMatmul on stream s, bias (fp32, may be NULL) and act
 * as the epilogue. 0, DIT_LIB_REFUSED with *why (the rules above, or no algorithm for
 * the shape: remembered), or DIT_LT_ERR_BASE + the cublasStatus_t. */
int dit_lt_linear(dit_lt *l, cudaStream_t s, void *y, int y_bf16, int64_t ldy, const void *x,
                  int64_t ldx, const void *w, const float *b, int64_t m, int64_t n, int64_t k,
                  dit_act act, const char **why);

#ifdef __cplusplus
}
#endif

#endif
