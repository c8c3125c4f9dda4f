/* lincomb: one solver update, dst = sum_i coef_i * src_i over latent buffers. */
#include "dit_codelets.h"
#include "dit_opencl.h"

static void lincomb_cpu(void *buffers[], void *cl_arg)
{
	const dit_lincomb_args *a = cl_arg;
	const float *in[DIT_LINCOMB_MAX];
	for (int i = 0; i < a->nterms; i++)
		in[i] = DIT_BUF_F32(buffers, a->src[i]);
	dit_cpu_lincomb(DIT_BUF_F32(buffers, 0), a->n, a->nterms, in, a->coef);
}

#ifdef STARPU_USE_OPENCL
static void lincomb_opencl(void *buffers[], void *cl_arg)
{
	const dit_lincomb_args *a = cl_arg;
	cl_kernel k = dit_ocl_kernel(DIT_OCL_LINCOMB);
	dit_ocl_ref out = dit_ocl_f32(buffers[0], 0), in[DIT_LINCOMB_MAX];
	cl_double cd[DIT_LINCOMB_MAX];
	cl_float cf[DIT_LINCOMB_MAX];
	for (int i = 0; i < DIT_LINCOMB_MAX; i++) {
		in[i] = i < a->nterms ? dit_ocl_f32(buffers[a->src[i]], 0) : out;
		cd[i] = i < a->nterms ? a->coef[i] : 0.0;
		cf[i] = (cl_float)cd[i];
	}
	/* The coefficients are float64 where the device computes in float64. */
	int fp64 = dit_ocl_fp64();
	size_t cs = fp64 ? sizeof(cl_double) : sizeof(cl_float);
	const void *c[DIT_LINCOMB_MAX];
	for (int i = 0; i < DIT_LINCOMB_MAX; i++)
		c[i] = fp64 ? (const void *)&cd[i] : (const void *)&cf[i];
	cl_long n = a->n;
	cl_int nterms = a->nterms;
	dit_ocl_set_args(k, "dit_lincomb", DIT_OCL_ARG(out.mem), DIT_OCL_ARG(out.off),
	                 DIT_OCL_ARG(n), DIT_OCL_ARG(nterms), DIT_OCL_ARG(in[0].mem),
	                 DIT_OCL_ARG(in[0].off), cs, c[0], DIT_OCL_ARG(in[1].mem),
	                 DIT_OCL_ARG(in[1].off), cs, c[1], DIT_OCL_ARG(in[2].mem),
	                 DIT_OCL_ARG(in[2].off), cs, c[2], DIT_OCL_ARG(in[3].mem),
	                 DIT_OCL_ARG(in[3].off), cs, c[3], DIT_OCL_END);
	size_t local = DIT_OCL_ELEM_WG, global = (size_t)a->n;
	dit_ocl_enqueue(k, "dit_lincomb", 1, &global, &local);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void lincomb_cuda(void *buffers[], void *cl_arg)
{
	const dit_lincomb_args *a = cl_arg;
	const float *in[DIT_LINCOMB_MAX];
	for (int i = 0; i < a->nterms; i++)
		in[i] = DIT_BUF_F32(buffers, a->src[i]);
	DIT_CUDA_CHECK("lincomb",
	               dit_cuda_lincomb(starpu_cuda_get_local_stream(), DIT_BUF_F32(buffers, 0),
	                                a->n, a->nterms, in, a->coef));
}
#endif

DIT_PERFMODEL(lincomb_model, "dit_lincomb");

struct starpu_codelet dit_cl_lincomb = {
    .name = "lincomb",
    .cpu_funcs = {lincomb_cpu},
    .cpu_funcs_name = {"lincomb_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {lincomb_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {lincomb_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &lincomb_model,
};
