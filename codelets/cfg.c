/* cfg: classifier-free guidance, out = uncond + scale * (cond - uncond). */
#include "dit_codelets.h"
#include "dit_opencl.h"

static void cfg_cpu(void *buffers[], void *cl_arg)
{
	const dit_cfg_args *a = cl_arg;
	dit_cpu_cfg(DIT_BUF_F32(buffers, 2), DIT_BUF_F32(buffers, 0), DIT_BUF_F32(buffers, 1), a->n,
	            a->scale);
}

#ifdef STARPU_USE_OPENCL
static void cfg_opencl(void *buffers[], void *cl_arg)
{
	const dit_cfg_args *a = cl_arg;
	cl_kernel k = dit_ocl_kernel(DIT_OCL_CFG);
	dit_ocl_ref out = dit_ocl_f32(buffers[2], 0), cond = dit_ocl_f32(buffers[0], 0);
	dit_ocl_ref uncond = dit_ocl_f32(buffers[1], 0);
	cl_long n = a->n;
	cl_float scale = a->scale;
	dit_ocl_set_args(k, "dit_cfg", DIT_OCL_ARG(out.mem), DIT_OCL_ARG(out.off),
	                 DIT_OCL_ARG(cond.mem), DIT_OCL_ARG(cond.off), DIT_OCL_ARG(uncond.mem),
	                 DIT_OCL_ARG(uncond.off), DIT_OCL_ARG(n), DIT_OCL_ARG(scale), DIT_OCL_END);
	size_t local = DIT_OCL_ELEM_WG, global = (size_t)a->n;
	dit_ocl_enqueue(k, "dit_cfg", 1, &global, &local);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void cfg_cuda(void *buffers[], void *cl_arg)
{
	const dit_cfg_args *a = cl_arg;
	DIT_CUDA_CHECK("cfg", dit_cuda_cfg(starpu_cuda_get_local_stream(), DIT_BUF_F32(buffers, 2),
	                                   DIT_BUF_F32(buffers, 0), DIT_BUF_F32(buffers, 1), a->n,
	                                   a->scale));
}
#endif

DIT_PERFMODEL(cfg_model, "dit_cfg");

struct starpu_codelet dit_cl_cfg = {
    .name = "cfg",
    .cpu_funcs = {cfg_cpu},
    .cpu_funcs_name = {"cfg_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {cfg_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {cfg_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = 3,
    .modes = {STARPU_R, STARPU_R, STARPU_W},
    .model = &cfg_model,
};
