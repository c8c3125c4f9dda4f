/* The OpenCL backend of the codelets: builds the kernels of the .cl files of
 * codelets/opencl (embedded in the library at build time) for every OpenCL device
 * StarPU uses, and the launchers that the codelets' OpenCL functions share.
 *
 * A tensor on the device is a cl_mem plus the element offset of its first value
 * (dit_ocl_ref): the byte offset StarPU gives the vector (a sub-vector of a bigger
 * buffer) plus the element offset of the op's arguments. Every launcher enqueues on
 * the calling worker's queue; an op's function ends with dit_ocl_finish, so the
 * codelets run synchronously. Any OpenCL error is reported and aborts: a kernel never
 * fails silently. */
#ifndef DIT_OPENCL_H
#define DIT_OPENCL_H

#include <stdint.h>

#include <starpu.h>

#include "dit_error.h"

/* Builds the program and creates the kernels for every OpenCL worker of the running
 * StarPU. Call once after starpu_init; a second call before dit_opencl_shutdown
 * does nothing, and so does a call without OpenCL workers. Fails (DIT_ERUNTIME) with
 * the device's name and the first line of its build log.
 *
 * The GEMM kernel is chosen per device: local-memory tiles (dit_linear) on GPUs and
 * other accelerators, vector dot products (dit_linear_dot) on CPU devices; the
 * environment variable DIT_OPENCL_GEMM=tiled or dot, read here, forces one. The
 * reductions that the CPU does in float64 are done in float64 where the device has
 * cl_khr_fp64, else in float; DIT_OPENCL_FP64=0 forces float (to test that path). */
dit_status dit_opencl_init(dit_error *err);

/* Releases the kernels and programs; call before starpu_shutdown. */
void dit_opencl_shutdown(void);

/* The global memory of the OpenCL device StarPU's first OpenCL worker would run on
 * (the first GPU or accelerator of the platforms, else the first CPU device, as
 * ditstar starts StarPU), asked of OpenCL itself, before StarPU starts; 0 when there is
 * none or this build has no OpenCL. */
size_t dit_opencl_device_memory(void);

#ifdef STARPU_USE_OPENCL

/* Work-group shapes and tiles the kernels are written for (the .cl files define the
 * same values under DIT_ names without OCL_). */
#define DIT_OCL_GEMM_WG    16 /* linear: work-group DIT_OCL_GEMM_WG x DIT_OCL_GEMM_WG */
#define DIT_OCL_GEMM_T     64 /* linear: output tile DIT_OCL_GEMM_T x DIT_OCL_GEMM_T */
#define DIT_OCL_GEMM_ITEMS (DIT_OCL_GEMM_WG * DIT_OCL_GEMM_WG) /* linear: work-items per group */
#define DIT_OCL_DOT_WG     64  /* linear on CPU devices: work-items per group */
#define DIT_OCL_DOT_R      4   /* linear on CPU devices: outputs R x R per work-item */
#define DIT_OCL_NORM_WG    64  /* layernorm, qk_norm: one work-group per row */
#define DIT_OCL_ELEM_WG    256 /* elementwise kernels */
#define DIT_OCL_ATT_BQ     64  /* attention: query rows per work-group */
#define DIT_OCL_ATT_BK     32  /* attention: most keys per tile */
#define DIT_OCL_ATT_DC     128 /* attention: head-dim columns accumulated per pass */

typedef enum dit_ocl_kernel_id {
	DIT_OCL_LINEAR = 0, /* local-memory tiles, for GPUs */
	DIT_OCL_LINEAR_DOT, /* vector dot products, for CPU devices */
	DIT_OCL_LAYERNORM,
	DIT_OCL_QK_NORM,
	DIT_OCL_ATTENTION,
	DIT_OCL_RESIDUAL,
	DIT_OCL_CFG,
	DIT_OCL_LINCOMB,
	DIT_OCL_TIMESTEP, /* only on devices with float64 */
	DIT_OCL_ACT_COPY,
	DIT_OCL_PATCHIFY,
	DIT_OCL_UNPATCHIFY,
	DIT_OCL_COPY2D,
	DIT_OCL_HEAD_GATE,
	DIT_OCL_NKERNELS
} dit_ocl_kernel_id;

/* A float (or double) tensor on the device: its buffer and the element offset of its
 * first value. */
typedef struct dit_ocl_ref {
	cl_mem mem;
	cl_long off;
	cl_int bf16; /* the buffer holds bf16 activations (dit_ocl_act); off counts them */
} dit_ocl_ref;

/* Reports an OpenCL failure (what, status) through StarPU and aborts. */
_Noreturn void dit_ocl_fail(const char *what, cl_int status);

/* Element off of the float vector buffer (a codelet's buffers[i]). */
dit_ocl_ref dit_ocl_f32(void *buffer, int64_t off);
/* Element off of the activation buffer (a vector or a column tile): fp32, or bf16
 * when its elements are two bytes (--act-dtype bf16), then with bf16 set. */
dit_ocl_ref dit_ocl_act(void *buffer, int64_t off);
/* Element off of the double vector buffer. */
dit_ocl_ref dit_ocl_f64(void *buffer, int64_t off);

/* The calling worker's kernel; aborts when dit_opencl_init did not create it. */
cl_kernel dit_ocl_kernel(dit_ocl_kernel_id id);
/* Whether the calling worker's device computes in float64. */
int dit_ocl_fp64(void);
/* Local memory of the calling worker's device, in bytes. */
size_t dit_ocl_local_mem(void);

/* Sets the arguments of k from (size_t size, const void *value) pairs ended by
 * DIT_OCL_END; a NULL value with a nonzero size is a local memory argument. */
void dit_ocl_set_args(cl_kernel k, const char *name, ...);
#define DIT_OCL_ARG(v) sizeof(v), (const void *)&(v)
#define DIT_OCL_END    ((size_t)0)

/* Enqueues k over global[dims] work-items in groups of local[dims] (global is rounded
 * up to a multiple of local); nothing when global is empty. */
void dit_ocl_enqueue(cl_kernel k, const char *name, cl_uint dims, const size_t *global,
                     const size_t *local);
/* Waits for everything enqueued by the calling worker. */
void dit_ocl_finish(void);

/* y[m, n] (stride ldy) = act(x[m, k] (stride ldx) . W^T + b): W [n, k] in weight dtype
 * wdt (dit_wdt.h) from byte w_byte of slab, b [n] at float b_off (b_off < 0: none), an
 * f8 W's scale at float s_off (0: none, 1), as dit_cpu_linear_wdt. */
void dit_ocl_linear(dit_ocl_ref y, int64_t ldy, dit_ocl_ref x, int64_t ldx, dit_ocl_ref slab,
                    int64_t w_byte, int64_t s_off, int64_t b_off, int64_t m, int64_t n, int64_t k,
                    int act, int wdt);

/* y[rows, dim] = LN(x[rows, dim]) (rms: x / sqrt(mean(x^2) + eps), as
 * dit_cpu_layernorm_rms) [* slab[w_off..] + slab[b_off..]] (affine)
 * [* (1 + slab[scale_off..] + vec[vscale_off..]) + slab[shift_off..] +
 * vec[vshift_off..]] (mod), as dit_cpu_layernorm. vec is unused without mod. vec may
 * be a table of rows mod_ld floats apart, row r using table row r / mod_rows
 * (mod_rows <= 0 or mod_ld == 0: row 0 for all). */
void dit_ocl_layernorm(dit_ocl_ref y, dit_ocl_ref x, int64_t rows, int64_t dim, float eps, int rms,
                       int affine, int mod, dit_ocl_ref slab, int64_t w_off, int64_t b_off,
                       int64_t shift_off, int64_t scale_off, dit_ocl_ref vec, int64_t vshift_off,
                       int64_t vscale_off, int64_t mod_ld, int64_t mod_rows);

/* dst[n] = act(src[n]). */
void dit_ocl_act_copy(dit_ocl_ref dst, dit_ocl_ref src, int64_t n, int act);

/* v as a kernel int; aborts (naming what) when it does not fit. */
cl_int dit_ocl_int(int64_t v, const char *what);

#endif /* STARPU_USE_OPENCL */

#endif
