/* What a CUDA codelet does when its kernel cannot be launched. */
#include "dit_codelets.h"
#ifdef DIT_HAVE_CUDA
#include <stdio.h>
#include <stdlib.h>

void dit_cuda_fail(const char *op, int rc)
{
	const char *why =
	    rc >= DIT_CUDA_CUBLAS_ERR_BASE
	        ? cublasGetStatusString((cublasStatus_t)(rc - DIT_CUDA_CUBLAS_ERR_BASE))
	        : cudaGetErrorString((cudaError_t)rc);
	fprintf(stderr, "ditstar: CUDA error in the %s codelet: %s\n", op, why);
	abort();
}
#endif
