/* What a CUDA codelet does when its kernel cannot be launched. */
#include "dit_codelets.h"
#ifdef DIT_HAVE_CUDA
#include <stdio.h>
#include <stdlib.h>

void dit_cuda_fail(const char *op, int rc)
{
	if (rc >= DIT_LT_ERR_BASE)
		fprintf(stderr, "ditstar: cuBLASLt error in the %s codelet: %s\n", op,
		        cublasGetStatusString((cublasStatus_t)(rc - DIT_LT_ERR_BASE)));
	else if (rc >= DIT_CUDNN_ERR_BASE)
		fprintf(stderr, "ditstar: cuDNN error in the %s codelet: status %d\n", op,
		        rc - DIT_CUDNN_ERR_BASE);
	else
		fprintf(stderr, "ditstar: CUDA error in the %s codelet: %s\n", op,
		        rc >= DIT_CUDA_CUBLAS_ERR_BASE
		            ? cublasGetStatusString((cublasStatus_t)(rc - DIT_CUDA_CUBLAS_ERR_BASE))
		            : cudaGetErrorString((cudaError_t)rc));
	abort();
}
#endif
