/* Building the OpenCL kernels for StarPU's OpenCL devices, and the launchers the
 * codelets share. The program source is dit_opencl_source, generated at build time
 * from the .cl files of codelets/opencl by codelets/opencl/embed.sh. */
#include "dit_codelets.h"
#include "dit_opencl.h"

#ifdef STARPU_USE_OPENCL

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char dit_opencl_source[];

/* CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (OpenCL 1.2; StarPU selects the 1.0 API). */
#define DIT_CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ((cl_device_fp_config)1 << 7)

static const struct {
	const char *name;
	size_t wg; /* work-items per group */
} dit_ocl_kernels[DIT_OCL_NKERNELS] = {
    [DIT_OCL_LINEAR] = {"dit_linear", DIT_OCL_GEMM_ITEMS},
    [DIT_OCL_LINEAR_DOT] = {"dit_linear_dot", DIT_OCL_DOT_WG},
    [DIT_OCL_LAYERNORM] = {"dit_layernorm", DIT_OCL_NORM_WG},
    [DIT_OCL_QK_NORM] = {"dit_qk_norm", DIT_OCL_NORM_WG},
    [DIT_OCL_ATTENTION] = {"dit_attention", DIT_OCL_ATT_BQ},
    [DIT_OCL_RESIDUAL] = {"dit_residual", DIT_OCL_ELEM_WG},
    [DIT_OCL_CFG] = {"dit_cfg", DIT_OCL_ELEM_WG},
    [DIT_OCL_LINCOMB] = {"dit_lincomb", DIT_OCL_ELEM_WG},
    [DIT_OCL_TIMESTEP] = {"dit_timestep_embedding", DIT_OCL_NORM_WG},
    [DIT_OCL_ACT_COPY] = {"dit_act_copy", DIT_OCL_ELEM_WG},
    [DIT_OCL_PATCHIFY] = {"dit_patchify", DIT_OCL_ELEM_WG},
    [DIT_OCL_UNPATCHIFY] = {"dit_unpatchify", DIT_OCL_ELEM_WG},
    [DIT_OCL_COPY2D] = {"dit_copy2d", DIT_OCL_ELEM_WG},
    [DIT_OCL_HEAD_GATE] = {"dit_head_gate", DIT_OCL_ELEM_WG},
};

typedef struct dit_ocl_device {
	int built;
	cl_program program;
	int fp64;
	int gemm_dot; /* linear by dit_linear_dot, else dit_linear */
	size_t local_mem;
} dit_ocl_device;

/* What one OpenCL worker launches: its device's program and its own kernels (a
 * cl_kernel's arguments must not be set by two threads). The codelets' OpenCL
 * functions receive only their buffers and arguments, so each worker thread reaches
 * its own through a thread-local pointer, set on the worker by dit_opencl_init and
 * cleared by dit_opencl_shutdown: the state lives and dies with the runtime's
 * workers, and nothing is shared between threads or between runtimes. */
typedef struct dit_ocl_worker {
	dit_ocl_device dev;
	cl_kernel kernel[DIT_OCL_NKERNELS];
} dit_ocl_worker;

static _Thread_local dit_ocl_worker *dit_ocl_self;

_Noreturn void dit_ocl_fail(const char *what, cl_int status)
{
	STARPU_OPENCL_REPORT_ERROR_WITH_MSG(what, status);
	abort();
}

/* Whether the space-separated list holds the word. */
static int dit_ocl_has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

/* Copies the first non-empty line of the program's build log into line. */
static void dit_ocl_build_log_line(cl_program prog, cl_device_id dev, char *line, size_t cap)
{
	size_t len = 0;
	line[0] = '\0';
	if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) != CL_SUCCESS ||
	    len == 0)
		return;
	char *log = malloc(len + 1);
	if (!log)
		return;
	if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log, NULL) == CL_SUCCESS) {
		log[len] = '\0';
		const char *p = log;
		while (*p == '\n' || *p == '\r' || *p == ' ')
			p++;
		size_t k = strcspn(p, "\r\n");
		if (k >= cap)
			k = cap - 1;
		memcpy(line, p, k);
		line[k] = '\0';
	}
	free(log);
}

static dit_status dit_ocl_build(dit_ocl_device *d, int devid, int gemm_force, int no_fp64,
                                dit_error *err)
{
	cl_device_id dev;
	cl_context ctx;
	starpu_opencl_get_device(devid, &dev);
	starpu_opencl_get_context(devid, &ctx);
	char name[256] = "?";
	clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
	name[sizeof name - 1] = '\0';

	size_t len = 0;
	cl_int e = clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &len);
	char *ext = e == CL_SUCCESS ? malloc(len + 1) : NULL;
	if (!ext || clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, len, ext, NULL) != CL_SUCCESS) {
		free(ext);
		return dit_error_set(err, DIT_ERUNTIME, "OpenCL device %d (%s): cannot query it",
		                     devid, name);
	}
	ext[len] = '\0';
	d->fp64 = !no_fp64 && dit_ocl_has_word(ext, "cl_khr_fp64");
	free(ext);
	cl_device_fp_config fpc = 0;
	clGetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fpc, &fpc, NULL);
	cl_ulong lmem = 0;
	clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
	d->local_mem = (size_t)lmem;
	cl_device_type type = 0;
	clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
	d->gemm_dot = gemm_force ? gemm_force > 0 : (type & CL_DEVICE_TYPE_CPU) != 0;
	/* the vector width of the dot products: the device's preferred one, 4 to 16 */
	cl_uint vw = 4;
	clGetDeviceInfo(dev, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof vw, &vw, NULL);
	vw = vw >= 16 ? 16 : vw >= 8 ? 8 : 4;

	/* No fast-math option: the kernels must round as written. */
	char opts[256];
	snprintf(opts, sizeof opts, "-DDIT_VEC_W=%u%s%s", (unsigned)vw,
	         d->fp64 ? " -DDIT_FP64=1" : "",
	         fpc & DIT_CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT
	             ? " -cl-fp32-correctly-rounded-divide-sqrt"
	             : "");
	const char *src = dit_opencl_source;
	cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
	if (!prog || e != CL_SUCCESS)
		return dit_error_set(err, DIT_ERUNTIME,
		                     "OpenCL device %d (%s): cannot create the program (error %d)",
		                     devid, name, (int)e);
	e = clBuildProgram(prog, 1, &dev, opts, NULL, NULL);
	if (e != CL_SUCCESS) {
		char line[256];
		dit_ocl_build_log_line(prog, dev, line, sizeof line);
		clReleaseProgram(prog);
		return dit_error_set(
		    err, DIT_ERUNTIME,
		    "OpenCL device %d (%s): the kernels do not build (error %d): %s", devid, name,
		    (int)e, line);
	}
	d->program = prog;
	d->built = 1;
	return DIT_OK;
}

static dit_status dit_ocl_make_kernels(dit_ocl_worker *w, int devid, dit_error *err)
{
	const dit_ocl_device *d = &w->dev;
	cl_device_id dev;
	starpu_opencl_get_device(devid, &dev);
	for (int i = 0; i < DIT_OCL_NKERNELS; i++) {
		if (i == DIT_OCL_TIMESTEP && !d->fp64)
			continue;
		cl_int e;
		cl_kernel k = clCreateKernel(d->program, dit_ocl_kernels[i].name, &e);
		if (!k || e != CL_SUCCESS)
			return dit_error_set(err, DIT_ERUNTIME,
			                     "OpenCL device %d: no kernel %s (error %d)", devid,
			                     dit_ocl_kernels[i].name, (int)e);
		w->kernel[i] = k;
		size_t wg = 0;
		e = clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg,
		                             NULL);
		if (e != CL_SUCCESS || wg < dit_ocl_kernels[i].wg)
			return dit_error_set(err, DIT_ERUNTIME,
			                     "OpenCL device %d runs kernel %s in work-groups of at "
			                     "most %zu work-items; it needs %zu",
			                     devid, dit_ocl_kernels[i].name, wg,
			                     dit_ocl_kernels[i].wg);
	}
	return DIT_OK;
}

static void dit_ocl_worker_free(dit_ocl_worker *w)
{
	for (int i = 0; i < DIT_OCL_NKERNELS; i++)
		if (w->kernel[i])
			clReleaseKernel(w->kernel[i]);
	if (w->dev.built)
		clReleaseProgram(w->dev.program);
	free(w);
}

/* dit_opencl_init's request to every OpenCL worker, and the first error back. */
typedef struct dit_ocl_init {
	int gemm_force, no_fp64;
	pthread_mutex_t lock;
	dit_status st;
	dit_error err;
} dit_ocl_init;

/* On an OpenCL worker: builds its device's program and its kernels. */
static void dit_ocl_init_worker(void *arg)
{
	dit_ocl_init *in = arg;
	if (dit_ocl_self)
		return;
	int devid = starpu_worker_get_devid(starpu_worker_get_id_check());
	dit_error err;
	dit_error_clear(&err);
	dit_status st = DIT_OK;
	dit_ocl_worker *w = calloc(1, sizeof *w);
	if (!w)
		st = dit_error_set(&err, DIT_ENOMEM, "out of memory for the OpenCL kernels");
	if (!st)
		st = dit_ocl_build(&w->dev, devid, in->gemm_force, in->no_fp64, &err);
	if (!st)
		st = dit_ocl_make_kernels(w, devid, &err);
	if (st) {
		if (w)
			dit_ocl_worker_free(w);
		pthread_mutex_lock(&in->lock);
		if (!in->st) {
			in->st = st;
			in->err = err;
		}
		pthread_mutex_unlock(&in->lock);
		return;
	}
	dit_ocl_self = w;
}

static void dit_ocl_shutdown_worker(void *arg)
{
	(void)arg;
	if (dit_ocl_self)
		dit_ocl_worker_free(dit_ocl_self);
	dit_ocl_self = NULL;
}

dit_status dit_opencl_init(dit_error *err)
{
	if (starpu_opencl_worker_get_count() == 0)
		return DIT_OK;
	dit_ocl_init in = {.gemm_force = 0}; /* 1: dot, -1: tiled, 0: by device type */
	const char *gemm = getenv("DIT_OPENCL_GEMM");
	if (gemm && *gemm) {
		if (strcmp(gemm, "dot") == 0)
			in.gemm_force = 1;
		else if (strcmp(gemm, "tiled") == 0)
			in.gemm_force = -1;
		else
			return dit_error_set(err, DIT_EINVAL,
			                     "DIT_OPENCL_GEMM=%.40s: expected tiled or dot", gemm);
	}
	const char *fp64 = getenv("DIT_OPENCL_FP64");
	in.no_fp64 = fp64 && strcmp(fp64, "0") == 0;
	pthread_mutex_init(&in.lock, NULL);
	starpu_execute_on_each_worker(dit_ocl_init_worker, &in, STARPU_OPENCL);
	pthread_mutex_destroy(&in.lock);
	if (in.st) {
		dit_opencl_shutdown();
		if (err)
			*err = in.err;
		return in.st;
	}
	return DIT_OK;
}

void dit_opencl_shutdown(void)
{
	if (starpu_opencl_worker_get_count() > 0)
		starpu_execute_on_each_worker(dit_ocl_shutdown_worker, NULL, STARPU_OPENCL);
}

static const dit_ocl_device *dit_ocl_current_device(void)
{
	if (!dit_ocl_self)
		dit_ocl_fail("no OpenCL program for this worker: dit_opencl_init was not run",
		             CL_INVALID_PROGRAM);
	return &dit_ocl_self->dev;
}

cl_kernel dit_ocl_kernel(dit_ocl_kernel_id id)
{
	cl_kernel k = dit_ocl_self ? dit_ocl_self->kernel[id] : NULL;
	if (!k)
		dit_ocl_fail(dit_ocl_kernels[id].name, CL_INVALID_KERNEL);
	return k;
}

int dit_ocl_fp64(void)
{
	return dit_ocl_current_device()->fp64;
}

size_t dit_ocl_local_mem(void)
{
	return dit_ocl_current_device()->local_mem;
}

static dit_ocl_ref dit_ocl_ref_of(void *buffer, int64_t off, size_t elemsize)
{
	/* a vector, or a matrix: an activation's column tile (tasks/dit_tiles.h) */
	int mat = *(const enum starpu_data_interface_id *)buffer == STARPU_MATRIX_INTERFACE_ID;
	size_t bytes = mat ? STARPU_MATRIX_GET_OFFSET(buffer) : STARPU_VECTOR_GET_OFFSET(buffer);
	if (bytes % elemsize)
		dit_ocl_fail("a buffer's byte offset is not a whole number of elements",
		             CL_INVALID_VALUE);
	uintptr_t dev =
	    mat ? STARPU_MATRIX_GET_DEV_HANDLE(buffer) : STARPU_VECTOR_GET_DEV_HANDLE(buffer);
	dit_ocl_ref r = {(cl_mem)dev, (cl_long)(bytes / elemsize) + (cl_long)off, elemsize == 2};
	return r;
}

dit_ocl_ref dit_ocl_act(void *buffer, int64_t off)
{
	return dit_ocl_ref_of(buffer, off, dit_buf_bf16(buffer) ? 2 : sizeof(float));
}

dit_ocl_ref dit_ocl_f32(void *buffer, int64_t off)
{
	return dit_ocl_ref_of(buffer, off, sizeof(float));
}

dit_ocl_ref dit_ocl_f64(void *buffer, int64_t off)
{
	return dit_ocl_ref_of(buffer, off, sizeof(double));
}

cl_int dit_ocl_int(int64_t v, const char *what)
{
	if (v < INT32_MIN || v > INT32_MAX)
		dit_ocl_fail(what, CL_INVALID_ARG_VALUE);
	return (cl_int)v;
}

void dit_ocl_set_args(cl_kernel k, const char *name, ...)
{
	va_list ap;
	va_start(ap, name);
	cl_uint i = 0;
	for (size_t size; (size = va_arg(ap, size_t)) != 0; i++) {
		const void *value = va_arg(ap, const void *);
		cl_int e = clSetKernelArg(k, i, size, value);
		if (e != CL_SUCCESS) {
			char what[160];
			snprintf(what, sizeof what, "argument %u of %s", (unsigned)i, name);
			va_end(ap);
			dit_ocl_fail(what, e);
		}
	}
	va_end(ap);
}

void dit_ocl_enqueue(cl_kernel k, const char *name, cl_uint dims, const size_t *global,
                     const size_t *local)
{
	size_t g[3];
	for (cl_uint i = 0; i < dims; i++) {
		if (global[i] == 0)
			return;
		g[i] = (global[i] + local[i] - 1) / local[i] * local[i];
	}
	cl_command_queue q;
	starpu_opencl_get_current_queue(&q);
	cl_int e = clEnqueueNDRangeKernel(q, k, dims, NULL, g, local, 0, NULL, NULL);
	if (e != CL_SUCCESS)
		dit_ocl_fail(name, e);
}

void dit_ocl_finish(void)
{
	cl_command_queue q;
	starpu_opencl_get_current_queue(&q);
	cl_int e = clFinish(q);
	if (e != CL_SUCCESS)
		dit_ocl_fail("clFinish", e);
}

void dit_ocl_linear(dit_ocl_ref y, int64_t ldy, dit_ocl_ref x, int64_t ldx, dit_ocl_ref slab,
                    int64_t w_byte, int64_t s_off, int64_t b_off, int64_t m, int64_t n, int64_t k,
                    int act, int wdt)
{
	int dot = dit_ocl_current_device()->gemm_dot;
	const char *name = dot ? "dit_linear_dot" : "dit_linear";
	cl_kernel kern = dit_ocl_kernel(dot ? DIT_OCL_LINEAR_DOT : DIT_OCL_LINEAR);
	cl_int cldy = dit_ocl_int(ldy, "linear ldy"), cldx = dit_ocl_int(ldx, "linear ldx");
	cl_int cm = dit_ocl_int(m, "linear m"), cn = dit_ocl_int(n, "linear n");
	cl_int ck = dit_ocl_int(k, "linear k"), cact = act, cwdt = wdt;
	cl_long cw = 4 * slab.off + w_byte, cb = b_off >= 0 ? slab.off + b_off : -1;
	cl_long cs = s_off > 0 ? slab.off + s_off : -1;
	dit_ocl_set_args(kern, name, DIT_OCL_ARG(y.mem), DIT_OCL_ARG(y.off), DIT_OCL_ARG(cldy),
	                 DIT_OCL_ARG(x.mem), DIT_OCL_ARG(x.off), DIT_OCL_ARG(cldx),
	                 DIT_OCL_ARG(slab.mem), DIT_OCL_ARG(cw), DIT_OCL_ARG(cb), DIT_OCL_ARG(cs),
	                 DIT_OCL_ARG(cm), DIT_OCL_ARG(cn), DIT_OCL_ARG(ck), DIT_OCL_ARG(cact),
	                 DIT_OCL_ARG(cwdt), DIT_OCL_ARG(x.bf16), DIT_OCL_ARG(y.bf16), DIT_OCL_END);
	if (dot) {
		size_t local[2] = {DIT_OCL_DOT_WG, 1};
		size_t global[2] = {(size_t)((n + DIT_OCL_DOT_R - 1) / DIT_OCL_DOT_R),
		                    (size_t)((m + DIT_OCL_DOT_R - 1) / DIT_OCL_DOT_R)};
		dit_ocl_enqueue(kern, name, 2, global, local);
	} else {
		size_t local[2] = {DIT_OCL_GEMM_WG, DIT_OCL_GEMM_WG};
		size_t global[2] = {
		    (size_t)((n + DIT_OCL_GEMM_T - 1) / DIT_OCL_GEMM_T) * DIT_OCL_GEMM_WG,
		    (size_t)((m + DIT_OCL_GEMM_T - 1) / DIT_OCL_GEMM_T) * DIT_OCL_GEMM_WG};
		dit_ocl_enqueue(kern, name, 2, global, local);
	}
}

void dit_ocl_layernorm(dit_ocl_ref y, dit_ocl_ref x, int64_t rows, int64_t dim, float eps, int rms,
                       int affine, int mod, dit_ocl_ref slab, int64_t w_off, int64_t b_off,
                       int64_t shift_off, int64_t scale_off, dit_ocl_ref vec, int64_t vshift_off,
                       int64_t vscale_off, int64_t mod_ld, int64_t mod_rows)
{
	cl_kernel kern = dit_ocl_kernel(DIT_OCL_LAYERNORM);
	cl_int cdim = dit_ocl_int(dim, "layernorm dim"), caff = affine != 0, cmod = mod != 0;
	cl_int crms = rms != 0;
	cl_float ceps = eps;
	cl_long cw = slab.off + w_off, cb = slab.off + b_off;
	cl_long csh = slab.off + shift_off, csc = slab.off + scale_off;
	cl_long cvsh = vec.off + vshift_off, cvsc = vec.off + vscale_off;
	int tab = mod_rows > 0 && mod_ld != 0; /* else one vector for every row */
	cl_long cld = tab ? mod_ld : 0, crows = tab ? mod_rows : 1;
	dit_ocl_set_args(kern, "dit_layernorm", DIT_OCL_ARG(y.mem), DIT_OCL_ARG(y.off),
	                 DIT_OCL_ARG(x.mem), DIT_OCL_ARG(x.off), DIT_OCL_ARG(cdim),
	                 DIT_OCL_ARG(ceps), DIT_OCL_ARG(caff), DIT_OCL_ARG(cmod),
	                 DIT_OCL_ARG(slab.mem), DIT_OCL_ARG(cw), DIT_OCL_ARG(cb), DIT_OCL_ARG(csh),
	                 DIT_OCL_ARG(csc), DIT_OCL_ARG(vec.mem), DIT_OCL_ARG(cvsh),
	                 DIT_OCL_ARG(cvsc), DIT_OCL_ARG(cld), DIT_OCL_ARG(crows), DIT_OCL_ARG(crms),
	                 DIT_OCL_ARG(x.bf16), DIT_OCL_ARG(y.bf16), DIT_OCL_END);
	if (dim <= 0)
		return;
	size_t local = DIT_OCL_NORM_WG, global = (size_t)rows * DIT_OCL_NORM_WG;
	dit_ocl_enqueue(kern, "dit_layernorm", 1, &global, &local);
}

void dit_ocl_act_copy(dit_ocl_ref dst, dit_ocl_ref src, int64_t n, int act)
{
	cl_kernel kern = dit_ocl_kernel(DIT_OCL_ACT_COPY);
	cl_long cn = n;
	cl_int cact = act;
	dit_ocl_set_args(kern, "dit_act_copy", DIT_OCL_ARG(dst.mem), DIT_OCL_ARG(dst.off),
	                 DIT_OCL_ARG(src.mem), DIT_OCL_ARG(src.off), DIT_OCL_ARG(cn),
	                 DIT_OCL_ARG(cact), DIT_OCL_END);
	size_t local = DIT_OCL_ELEM_WG, global = (size_t)n;
	dit_ocl_enqueue(kern, "dit_act_copy", 1, &global, &local);
}

/* The first device of type on any platform; 0 with none. */
static cl_device_id first_device(cl_device_type type)
{
	cl_platform_id plat[8];
	cl_uint np = 0;
	if (clGetPlatformIDs(8, plat, &np) != CL_SUCCESS)
		return 0;
	for (cl_uint p = 0; p < np && p < 8; p++) {
		cl_device_id dev;
		cl_uint nd = 0;
		if (clGetDeviceIDs(plat[p], type, 1, &dev, &nd) == CL_SUCCESS && nd > 0)
			return dev;
	}
	return 0;
}

size_t dit_opencl_device_memory(void)
{
	cl_device_id dev = first_device(CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR);
	if (!dev)
		dev = first_device(CL_DEVICE_TYPE_CPU);
	cl_ulong mem = 0;
	if (!dev ||
	    clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL) != CL_SUCCESS)
		return 0;
	return (size_t)mem;
}

#else /* !STARPU_USE_OPENCL */

size_t dit_opencl_device_memory(void)
{
	return 0;
}

dit_status dit_opencl_init(dit_error *err)
{
	(void)err;
	return DIT_OK;
}

void dit_opencl_shutdown(void)
{
}

#endif
