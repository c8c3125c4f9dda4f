/* Whether CUDA can be used here: the build has the CUDA codelets and the machine a
 * GPU with a working driver. Asked before StarPU starts, so that --workers cuda on a
 * machine without a GPU fails with a reason instead of a StarPU abort. */
#ifndef DIT_CUDA_ENV_H
#define DIT_CUDA_ENV_H

/* CUDA devices visible (0 without CUDA support, a driver or a device). */
int dit_cuda_device_count(void);

/* Why there is no device ("built without CUDA", the CUDA runtime's message, ...). */
const char *dit_cuda_device_error(void);

#endif
