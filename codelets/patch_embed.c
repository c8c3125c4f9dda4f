/* patch_embed: the Conv3d patch embedding as one GEMM over patch rows (with or
 * without its bias). */
#include "dit_codelets.h"
#include "dit_opencl.h"

/* Features of a patch row (c * P) and patch rows (tokens). */
static int64_t pe_features(const dit_patch_embed_args *a)
{
	return a->c * a->pt * a->ph * a->pw;
}

static int64_t pe_tokens(const dit_patch_embed_args *a)
{
	return (a->f / a->pt) * (a->h / a->ph) * (a->w / a->pw);
}

static void patch_embed_cpu(void *buffers[], void *cl_arg)
{
	const dit_patch_embed_args *a = cl_arg;
	const float *g = DIT_BUF_F32(buffers, 0);
	const float *latent = DIT_BUF_F32(buffers, 1);
	float *x = DIT_BUF_F32(buffers, 2);
	float *rows = DIT_BUF_F32(buffers, 3);
	const float *b = a->b_off >= 0 ? g + a->b_off : NULL;
	int64_t cp = pe_features(a), tokens = pe_tokens(a);
	dit_cpu_patchify(rows, latent, a->c, a->f, a->h, a->w, a->pt, a->ph, a->pw);
	dit_cpu_linear(x, a->dim, rows, cp, g + a->w_off, b, tokens, a->dim, cp, DIT_ACT_NONE);
}

#ifdef STARPU_USE_OPENCL
static void patch_embed_opencl(void *buffers[], void *cl_arg)
{
	const dit_patch_embed_args *a = cl_arg;
	dit_ocl_ref g = dit_ocl_f32(buffers[0], 0), latent = dit_ocl_f32(buffers[1], 0);
	dit_ocl_ref x = dit_ocl_f32(buffers[2], 0), rows = dit_ocl_f32(buffers[3], 0);
	int64_t cp = pe_features(a), tokens = pe_tokens(a);
	cl_kernel k = dit_ocl_kernel(DIT_OCL_PATCHIFY);
	cl_int c = dit_ocl_int(a->c, "patch_embed c"), f = dit_ocl_int(a->f, "patch_embed f");
	cl_int h = dit_ocl_int(a->h, "patch_embed h"), w = dit_ocl_int(a->w, "patch_embed w");
	cl_int pt = dit_ocl_int(a->pt, "patch_embed pt"), ph = dit_ocl_int(a->ph, "patch_embed ph");
	cl_int pw = dit_ocl_int(a->pw, "patch_embed pw");
	dit_ocl_set_args(k, "dit_patchify", DIT_OCL_ARG(rows.mem), DIT_OCL_ARG(rows.off),
	                 DIT_OCL_ARG(latent.mem), DIT_OCL_ARG(latent.off), DIT_OCL_ARG(c),
	                 DIT_OCL_ARG(f), DIT_OCL_ARG(h), DIT_OCL_ARG(w), DIT_OCL_ARG(pt),
	                 DIT_OCL_ARG(ph), DIT_OCL_ARG(pw), DIT_OCL_END);
	size_t local = DIT_OCL_ELEM_WG, global = (size_t)(tokens * cp);
	dit_ocl_enqueue(k, "dit_patchify", 1, &global, &local);
	/* b_off < 0: no bias, as dit_ocl_linear takes it */
	dit_ocl_linear(x, a->dim, rows, cp, g, 4 * a->w_off, 0, a->b_off, tokens, a->dim, cp,
	               DIT_ACT_NONE, 0);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void patch_embed_cuda(void *buffers[], void *cl_arg)
{
	const dit_patch_embed_args *a = cl_arg;
	cudaStream_t s = starpu_cuda_get_local_stream();
	const float *g = DIT_BUF_F32(buffers, 0);
	const float *latent = DIT_BUF_F32(buffers, 1);
	float *x = DIT_BUF_F32(buffers, 2);
	float *rows = DIT_BUF_F32(buffers, 3);
	const float *b = a->b_off >= 0 ? g + a->b_off : NULL;
	int64_t cp = pe_features(a), tokens = pe_tokens(a);
	DIT_CUDA_CHECK("patch_embed", dit_cuda_patchify(s, rows, latent, a->c, a->f, a->h, a->w,
	                                                a->pt, a->ph, a->pw));
	DIT_CUDA_CHECK("patch_embed", dit_cuda_linear(starpu_cublas_get_local_handle(), s, x,
	                                              a->dim, rows, cp, g + a->w_off, 0, b, tokens,
	                                              a->dim, cp, DIT_ACT_NONE, NULL, 0));
}
#endif

DIT_PERFMODEL(patch_embed_model, "dit_patch_embed");

struct starpu_codelet dit_cl_patch_embed = {
    .name = "patch_embed",
    .cpu_funcs = {patch_embed_cpu},
    .cpu_funcs_name = {"patch_embed_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {patch_embed_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {patch_embed_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = 4,
    .modes = {STARPU_R, STARPU_R, STARPU_W, STARPU_SCRATCH},
    .model = &patch_embed_model,
};
