#include "dit_cuda_env.h"

#include "config.h"

#ifdef DIT_HAVE_CUDA
#include <cuda_runtime.h>

int dit_cuda_device_count(void)
{
	int n = 0;
	return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

const char *dit_cuda_device_error(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess)
		return cudaGetErrorString(e);
	return n ? "no error" : "the driver reports 0 devices";
}

size_t dit_cuda_free_bytes(int dev)
{
	int old = 0;
	size_t free_b = 0, total = 0;
	if (cudaGetDevice(&old) != cudaSuccess || cudaSetDevice(dev) != cudaSuccess)
		return 0;
	cudaError_t e = cudaMemGetInfo(&free_b, &total);
	cudaSetDevice(old);
	return e == cudaSuccess ? free_b : 0;
}
#else
size_t dit_cuda_free_bytes(int dev)
{
	(void)dev;
	return 0;
}

int dit_cuda_device_count(void)
{
	return 0;
}

const char *dit_cuda_device_error(void)
{
	return "ditstar was built without CUDA";
}
#endif
