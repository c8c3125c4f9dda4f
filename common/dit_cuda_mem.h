/* Device memory the CUDA codelets allocate outside StarPU's memory manager (cudaMalloc,
 * held until the worker ends), per CUDA worker: the planner counts it inside a
 * --device-mem-limit and gives StarPU the rest (src/plan/dit_offload.c). */
#ifndef DIT_CUDA_MEM_H
#define DIT_CUDA_MEM_H

#include <stddef.h>

/* cuBLASLt's workspace (codelets/cuda/linear_lt.c), allocated at the worker's start */
#define DIT_LT_WS ((size_t)32 << 20)
/* the largest cuDNN attention workspace taken (a plan that wants more runs the own
 * kernel: codelets/cuda/cudnn_sdpa.c), grown to what the plans need */
#define DIT_CUDNN_WS_MAX ((size_t)256 << 20)
/* the tile of compact weights widened to bf16 (codelets/linear.c), allocated at the
 * worker's first GEMM of fp16, float8 or Q8_0 matrices */
#define DIT_CUDA_WTILE_BYTES ((size_t)64 << 20)

/* What one CUDA worker may hold outside StarPU; compact: the run has matrices the
 * CUDA GEMM widens (not fp32, not bf16). */
static inline size_t dit_cuda_outside_bytes(int compact)
{
	return DIT_LT_WS + DIT_CUDNN_WS_MAX + (compact ? DIT_CUDA_WTILE_BYTES : 0);
}

#endif
