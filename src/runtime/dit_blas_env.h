/* OpenBLAS picks its kernels from the CPU model when the library loads. Some
 * virtualised CPUs report a generic model and get the slow Prescott kernels although
 * they have AVX2 or AVX-512. When OPENBLAS_CORETYPE is unset, the core OpenBLAS chose is
 * a generic one and the CPU has the instructions of a better one, the program re-runs
 * itself once with OPENBLAS_CORETYPE set (a value already in the environment is never
 * changed). */
#ifndef DIT_BLAS_ENV_H
#define DIT_BLAS_ENV_H

/* Call first in main; returns only when no re-run is needed (or possible). */
void dit_blas_env_prepare(char **argv);

/* The OpenBLAS core in use ("?" when unknown), for benchmark reports. */
const char *dit_blas_core_name(void);

#endif
