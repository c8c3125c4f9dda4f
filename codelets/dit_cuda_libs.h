/* The CUDA workers' vendor-library paths (cuDNN's fused attention, cuBLASLt's GEMMs;
 * codelets/cuda/dit_cudnn.h) and what they did: each CUDA worker opens its own
 * libraries when the runtime starts (dit_cuda_libs_init), the attention and linear
 * codelets try them first and run their own kernels where a library refuses, and the
 * counts and reasons end in the stats and the run's report.
 *
 * Chosen by the environment (read once, at dit_cuda_libs_init):
 *   DIT_CUDA_ATTENTION  auto (default: cuDNN when it loads and takes the call), cudnn
 *                       (the same, but a cuDNN that does not load, or refuses a call
 *                       that its rules take, fails the run with the reason: for
 *                       checks), own (never cuDNN)
 *   DIT_CUDA_GEMM       auto (default), cublaslt (likewise), own (cuBLAS + own epilogue)
 * Calls outside a library's rules (fp32 activations, SiLU, ...: dit_cudnn.h) run the
 * own kernels in every mode.
 *   DIT_CUDNN_LIBRARY   the cuDNN library to load (default: libcudnn.so.9 on the
 *                       loader's path) */
#ifndef DIT_CUDA_LIBS_H
#define DIT_CUDA_LIBS_H

#include <stdint.h>

#include "dit_error.h"

#define DIT_CUDA_LIBS_WORKERS 64 /* CUDA workers counted (more share the last slot) */
#define DIT_CUDA_LIBS_REASONS 6  /* distinct reasons kept per path */

typedef enum { DIT_LIBMODE_AUTO = 0, DIT_LIBMODE_LIB, DIT_LIBMODE_OWN } dit_libmode;

/* One op's tasks on one worker: by the library, by the own kernel and why. */
typedef struct dit_cuda_path {
	int64_t lib, own;
	const char *why[DIT_CUDA_LIBS_REASONS]; /* constant strings; the last: "other" */
	int64_t why_n[DIT_CUDA_LIBS_REASONS];
} dit_cuda_path;

typedef struct dit_cuda_libs {
	dit_libmode att_mode, gemm_mode;
	long cudnn_version;     /* 0: not loaded */
	char cudnn_absent[200]; /* why not, when not loaded and not turned off */
	int lt_loaded;
	char lt_absent[200];
	int nworkers;
	dit_cuda_path att[DIT_CUDA_LIBS_WORKERS], gemm[DIT_CUDA_LIBS_WORKERS];
} dit_cuda_libs;

/* On every CUDA worker (after starpu_init and starpu_cublas_init): opens the libraries
 * the modes ask for. A library that does not load is recorded (cudnn_absent) and the
 * own kernels run, unless its mode is `cudnn`/`cublaslt`: then an error. *out is NULL
 * without CUDA workers. */
dit_status dit_cuda_libs_init(dit_cuda_libs **out, dit_error *err);
void dit_cuda_libs_shutdown(dit_cuda_libs *L);

/* One task of p run by the own kernel for reason why (a constant string): counted
 * under its reason, the first DIT_CUDA_LIBS_REASONS - 1 distinct ones by name, the
 * rest as "other". */
void dit_cuda_path_own(dit_cuda_path *p, const char *why);

/* Every worker's counts summed into one path each (reasons merged by text). */
void dit_cuda_libs_sum(const dit_cuda_libs *L, dit_cuda_path *att, dit_cuda_path *gemm);

/* "cuDNN 9.19.0", or "own kernel (why)" / "own kernel (DIT_CUDA_ATTENTION=own)". */
void dit_cuda_libs_attention_name(const dit_cuda_libs *L, char *buf, unsigned long cap);
void dit_cuda_libs_gemm_name(const dit_cuda_libs *L, char *buf, unsigned long cap);

/* The mode named by an environment value (NULL/"" : auto); -1 when unknown. */
int dit_libmode_parse(const char *v, const char *lib_word);

#endif
