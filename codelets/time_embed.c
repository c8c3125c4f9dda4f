/* time_embed: e = Linear2(SiLU(Linear1(sinusoid(t)))), e0 = Linear(SiLU(e)) [6D]. */
#include <stdlib.h>
#include <string.h>

#include "dit_codelets.h"
#include "dit_opencl.h"

/* One row: e [D] and e0 [6D] of timestep t, scratch [freq_dim + D]. */
static void time_embed_row(const dit_time_embed_args *a, const float *g, float *e, float *e0,
                           float *sin_t, double t)
{
	float *hid = sin_t + a->freq_dim; /* [D] */
	dit_cpu_timestep_embedding(sin_t, t, a->freq_dim);
	dit_cpu_linear(hid, a->dim, sin_t, a->freq_dim, g + a->w0, g + a->b0, 1, a->dim,
	               a->freq_dim, DIT_ACT_SILU);
	dit_cpu_linear(e, a->dim, hid, a->dim, g + a->w2, g + a->b2, 1, a->dim, a->dim,
	               DIT_ACT_NONE);
	memcpy(hid, e, (size_t)a->dim * sizeof *hid);
	dit_cpu_act(hid, a->dim, DIT_ACT_SILU);
	dit_cpu_linear(e0, 6 * a->dim, hid, a->dim, g + a->wp, g + a->bp, 1, 6 * a->dim, a->dim,
	               DIT_ACT_NONE);
}

static void time_embed_cpu(void *buffers[], void *cl_arg)
{
	const dit_time_embed_args *a = cl_arg;
	const float *g = DIT_BUF_F32(buffers, 0);
	float *e = DIT_BUF_F32(buffers, 1);
	float *e0 = DIT_BUF_F32(buffers, 2);
	float *scratch = DIT_BUF_F32(buffers, 3);
	if (a->nt <= 0) {
		time_embed_row(a, g, e, e0, scratch, a->t);
		return;
	}
	/* rows row0 .. row0 + nt of e [rows, D], e0 [rows, 6D], each as one timestep */
	for (int64_t i = 0; i < a->nt; i++) {
		int64_t r = a->row0 + i;
		time_embed_row(a, g, e + r * a->dim, e0 + r * 6 * a->dim, scratch, a->ts[i]);
	}
}

#ifdef STARPU_USE_OPENCL
static void time_embed_opencl(void *buffers[], void *cl_arg)
{
	const dit_time_embed_args *a = cl_arg;
	dit_ocl_ref g = dit_ocl_f32(buffers[0], 0), e = dit_ocl_f32(buffers[1], 0);
	dit_ocl_ref e0 = dit_ocl_f32(buffers[2], 0), sin_t = dit_ocl_f32(buffers[3], 0);
	dit_ocl_ref hid = {sin_t.mem, sin_t.off + a->freq_dim}; /* [D] */
	cl_int half = dit_ocl_int(a->freq_dim / 2, "time_embed freq_dim");
	if (dit_ocl_fp64()) {
		cl_kernel k = dit_ocl_kernel(DIT_OCL_TIMESTEP);
		cl_double t = a->t;
		dit_ocl_set_args(k, "dit_timestep_embedding", DIT_OCL_ARG(sin_t.mem),
		                 DIT_OCL_ARG(sin_t.off), DIT_OCL_ARG(t), DIT_OCL_ARG(half),
		                 DIT_OCL_END);
		size_t local = DIT_OCL_NORM_WG, global = (size_t)half;
		dit_ocl_enqueue(k, "dit_timestep_embedding", 1, &global, &local);
	} else if (a->freq_dim > 0) {
		/* Without float64 on the device the sinusoid is computed here, as on the
		 * CPU, and written to the scratch. */
		float *tmp = malloc((size_t)a->freq_dim * sizeof *tmp);
		if (!tmp)
			dit_ocl_fail("time_embed: out of host memory", CL_OUT_OF_HOST_MEMORY);
		dit_cpu_timestep_embedding(tmp, a->t, a->freq_dim);
		cl_command_queue q;
		starpu_opencl_get_current_queue(&q);
		cl_int err =
		    clEnqueueWriteBuffer(q, sin_t.mem, CL_TRUE, (size_t)sin_t.off * sizeof(float),
		                         (size_t)a->freq_dim * sizeof(float), tmp, 0, NULL, NULL);
		free(tmp);
		if (err != CL_SUCCESS)
			dit_ocl_fail("time_embed: writing the sinusoid", err);
	}
	dit_ocl_linear(hid, a->dim, sin_t, a->freq_dim, g, a->w0, a->b0, 1, a->dim, a->freq_dim,
	               DIT_ACT_SILU, 0);
	dit_ocl_linear(e, a->dim, hid, a->dim, g, a->w2, a->b2, 1, a->dim, a->dim, DIT_ACT_NONE, 0);
	dit_ocl_act_copy(hid, e, a->dim, DIT_ACT_SILU);
	dit_ocl_linear(e0, 6 * a->dim, hid, a->dim, g, a->wp, a->bp, 1, 6 * a->dim, a->dim,
	               DIT_ACT_NONE, 0);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
/* The same chain of kernels on the worker's stream; the GEMMs take fp32 weights. */
static void time_embed_cuda(void *buffers[], void *cl_arg)
{
	const dit_time_embed_args *a = cl_arg;
	cudaStream_t s = starpu_cuda_get_local_stream();
	cublasHandle_t h = starpu_cublas_get_local_handle();
	const float *g = DIT_BUF_F32(buffers, 0);
	float *e = DIT_BUF_F32(buffers, 1);
	float *e0 = DIT_BUF_F32(buffers, 2);
	float *sin_t = DIT_BUF_F32(buffers, 3); /* [freq_dim] */
	float *hid = sin_t + a->freq_dim;       /* [D] */

	DIT_CUDA_CHECK("time_embed", dit_cuda_timestep_embedding(s, sin_t, a->t, a->freq_dim));
	DIT_CUDA_CHECK("time_embed",
	               dit_cuda_linear(h, s, hid, a->dim, sin_t, a->freq_dim, g + a->w0, 0,
	                               g + a->b0, 1, a->dim, a->freq_dim, DIT_ACT_SILU, NULL, 0));
	DIT_CUDA_CHECK("time_embed",
	               dit_cuda_linear(h, s, e, a->dim, hid, a->dim, g + a->w2, 0, g + a->b2, 1,
	                               a->dim, a->dim, DIT_ACT_NONE, NULL, 0));
	DIT_CUDA_CHECK("time_embed", (int)cudaMemcpyAsync(hid, e, (size_t)a->dim * sizeof *hid,
	                                                  cudaMemcpyDeviceToDevice, s));
	DIT_CUDA_CHECK("time_embed", dit_cuda_act(s, hid, a->dim, DIT_ACT_SILU));
	DIT_CUDA_CHECK("time_embed",
	               dit_cuda_linear(h, s, e0, 6 * a->dim, hid, a->dim, g + a->wp, 0, g + a->bp,
	                               1, 6 * a->dim, a->dim, DIT_ACT_NONE, NULL, 0));
}
#endif

/* Several timesteps in one task (nt > 0) run on CPU workers only, for now. */
static int time_embed_can_execute(unsigned workerid, struct starpu_task *task, unsigned nimpl)
{
	(void)nimpl;
	const dit_time_embed_args *a = task->cl_arg;
	return a->nt <= 0 || starpu_worker_get_type((int)workerid) == STARPU_CPU_WORKER;
}

DIT_PERFMODEL(time_embed_model, "dit_time_embed");

struct starpu_codelet dit_cl_time_embed = {
    .name = "time_embed",
    .can_execute = time_embed_can_execute,
    .cpu_funcs = {time_embed_cpu},
    .cpu_funcs_name = {"time_embed_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {time_embed_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {time_embed_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_W, STARPU_W, STARPU_SCRATCH},
    .model = &time_embed_model,
};
