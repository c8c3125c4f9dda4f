/* time_embed: e = Linear2(SiLU(Linear1(sinusoid(t)))), e0 = Linear(SiLU(e)) [P], P =
 * nproj D (6 D unless nproj says otherwise), for
 * one timestep (row 0) or for nt timesteps (rows row0 .. row0 + nt - 1), one row at a
 * time: every row is the same chain as a single-timestep task. */
#include <stdlib.h>
#include <string.h>

#include "dit_codelets.h"
#include "dit_opencl.h"

/* The timesteps of a task, how many, and the first row they go to. */
static const double *time_embed_steps(const dit_time_embed_args *a, int64_t *nt, int64_t *row0)
{
	STARPU_ASSERT_MSG(a->nt <= DIT_TIME_MAX_T, "time_embed: nt %lld > DIT_TIME_MAX_T",
	                  (long long)a->nt);
	if (a->nt <= 0) {
		*nt = 1;
		*row0 = 0;
		return &a->t;
	}
	*nt = a->nt;
	*row0 = a->row0;
	return a->ts;
}

static void time_embed_cpu(void *buffers[], void *cl_arg)
{
	const dit_time_embed_args *a = cl_arg;
	const float *g = DIT_BUF_F32(buffers, 0);
	int64_t nt, row0;
	const double *ts = time_embed_steps(a, &nt, &row0);
	int64_t P = dit_time_embed_proj(a);
	float *e = DIT_BUF_F32(buffers, 1) + row0 * a->dim; /* [nt, D] */
	float *e0 = DIT_BUF_F32(buffers, 2) + row0 * P;     /* [nt, P] */
	dit_cpu_time_embed(e, e0, ts, nt, g + a->w0, g + a->b0, g + a->w2, g + a->b2, g + a->wp,
	                   g + a->bp, a->dim, a->freq_dim, P / a->dim, DIT_BUF_F32(buffers, 3));
}

#ifdef STARPU_USE_OPENCL
static void time_embed_opencl(void *buffers[], void *cl_arg)
{
	const dit_time_embed_args *a = cl_arg;
	int64_t nt, row0, D = a->dim, F = a->freq_dim, P = dit_time_embed_proj(a);
	const double *ts = time_embed_steps(a, &nt, &row0);
	dit_ocl_ref g = dit_ocl_f32(buffers[0], 0), e = dit_ocl_f32(buffers[1], row0 * D);
	dit_ocl_ref e0 = dit_ocl_f32(buffers[2], row0 * P), sin_t = dit_ocl_f32(buffers[3], 0);
	dit_ocl_ref hid = {sin_t.mem, sin_t.off + nt * F,
	                   sin_t.bf16}; /* [nt, D] after the sinusoids */
	cl_int half = dit_ocl_int(F / 2, "time_embed freq_dim");
	if (dit_ocl_fp64()) {
		cl_kernel k = dit_ocl_kernel(DIT_OCL_TIMESTEP);
		for (int64_t i = 0; i < nt; i++) {
			cl_double t = ts[i];
			cl_long off = sin_t.off + i * F;
			dit_ocl_set_args(k, "dit_timestep_embedding", DIT_OCL_ARG(sin_t.mem),
			                 DIT_OCL_ARG(off), DIT_OCL_ARG(t), DIT_OCL_ARG(half),
			                 DIT_OCL_END);
			size_t local = DIT_OCL_NORM_WG, global = (size_t)half;
			dit_ocl_enqueue(k, "dit_timestep_embedding", 1, &global, &local);
		}
	} else if (F > 0) {
		/* Without float64 on the device the sinusoids are computed here, as on the
		 * CPU, and written to the scratch. */
		float *tmp = malloc((size_t)(nt * F) * sizeof *tmp);
		if (!tmp)
			dit_ocl_fail("time_embed: out of host memory", CL_OUT_OF_HOST_MEMORY);
		for (int64_t i = 0; i < nt; i++)
			dit_cpu_timestep_embedding(tmp + i * F, ts[i], F);
		cl_command_queue q;
		starpu_opencl_get_current_queue(&q);
		cl_int err =
		    clEnqueueWriteBuffer(q, sin_t.mem, CL_TRUE, (size_t)sin_t.off * sizeof(float),
		                         (size_t)(nt * F) * sizeof(float), tmp, 0, NULL, NULL);
		free(tmp);
		if (err != CL_SUCCESS)
			dit_ocl_fail("time_embed: writing the sinusoid", err);
	}
	for (int64_t i = 0; i < nt; i++) {
		dit_ocl_ref si = {sin_t.mem, sin_t.off + i * F, sin_t.bf16},
		            hi = {hid.mem, hid.off + i * D, hid.bf16};
		dit_ocl_ref ei = {e.mem, e.off + i * D, e.bf16},
		            e0i = {e0.mem, e0.off + i * P, e0.bf16};
		dit_ocl_linear(hi, D, si, F, g, 4 * a->w0, 0, a->b0, 1, D, F, DIT_ACT_SILU, 0);
		dit_ocl_linear(ei, D, hi, D, g, 4 * a->w2, 0, a->b2, 1, D, D, DIT_ACT_NONE, 0);
		dit_ocl_act_copy(hi, ei, D, DIT_ACT_SILU);
		dit_ocl_linear(e0i, P, hi, D, g, 4 * a->wp, 0, a->bp, 1, P, D, DIT_ACT_NONE, 0);
	}
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
/* The same chain of kernels on the worker's stream, row by row; the GEMMs take fp32
 * weights. */
static void time_embed_cuda(void *buffers[], void *cl_arg)
{
	const dit_time_embed_args *a = cl_arg;
	cudaStream_t s = starpu_cuda_get_local_stream();
	cublasHandle_t h = starpu_cublas_get_local_handle();
	const float *g = DIT_BUF_F32(buffers, 0);
	int64_t nt, row0, D = a->dim, F = a->freq_dim, P = dit_time_embed_proj(a);
	const double *ts = time_embed_steps(a, &nt, &row0);
	float *e = DIT_BUF_F32(buffers, 1) + row0 * D;  /* [nt, D] */
	float *e0 = DIT_BUF_F32(buffers, 2) + row0 * P; /* [nt, P] */
	float *scratch = DIT_BUF_F32(buffers, 3);       /* sinusoids [nt, F], then [nt, D] */

	for (int64_t i = 0; i < nt; i++) {
		float *sin_t = scratch + i * F, *hid = scratch + nt * F + i * D;
		float *ei = e + i * D, *e0i = e0 + i * P;
		DIT_CUDA_CHECK("time_embed", dit_cuda_timestep_embedding(s, sin_t, ts[i], F));
		DIT_CUDA_CHECK("time_embed",
		               dit_cuda_linear(h, s, hid, D, sin_t, F, g + a->w0, 0, g + a->b0, 1,
		                               D, F, DIT_ACT_SILU, NULL, 0));
		DIT_CUDA_CHECK("time_embed",
		               dit_cuda_linear(h, s, ei, D, hid, D, g + a->w2, 0, g + a->b2, 1, D,
		                               D, DIT_ACT_NONE, NULL, 0));
		DIT_CUDA_CHECK("time_embed", (int)cudaMemcpyAsync(hid, ei, (size_t)D * sizeof *hid,
		                                                  cudaMemcpyDeviceToDevice, s));
		DIT_CUDA_CHECK("time_embed", dit_cuda_act(s, hid, D, DIT_ACT_SILU));
		DIT_CUDA_CHECK("time_embed",
		               dit_cuda_linear(h, s, e0i, P, hid, D, g + a->wp, 0, g + a->bp, 1, P,
		                               D, DIT_ACT_NONE, NULL, 0));
	}
}
#endif

DIT_PERFMODEL(time_embed_model, "dit_time_embed");

/* The access modes are the task's (buffers 1 and 2: W when every row is written, RW
 * to keep the rows other tasks fill). */
struct starpu_codelet dit_cl_time_embed = {
    .name = "time_embed",
    .cpu_funcs = {time_embed_cpu},
    .cpu_funcs_name = {"time_embed_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {time_embed_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {time_embed_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &time_embed_model,
};
