/* Whether CUDA can be used here: the build has the CUDA codelets and the machine a
 * GPU with a working driver. Asked before StarPU starts, so that --workers cuda on a
 * machine without a GPU fails with a reason instead of a StarPU abort. */
#ifndef DIT_CUDA_ENV_H
#define DIT_CUDA_ENV_H

#include <stddef.h>

/* CUDA devices visible (0 without CUDA support, a driver or a device). */
int dit_cuda_device_count(void);

/* The free memory of CUDA device dev now (cudaMemGetInfo), 0 when unknown. */
size_t dit_cuda_free_bytes(int dev);

/* Why there is no device ("built without CUDA", the CUDA runtime's message, ...). */
const char *dit_cuda_device_error(void);

#endif
