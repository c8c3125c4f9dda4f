/* qk_norm: RMSNorm over the whole width of q or k (all heads together, Wan) or over
 * each head's features (group), times its weight, then 3D RoPE for self-attention
 * (interleaved pairs and one table row per token, or LTX-2's split pairs and a table
 * per head, or Cosmos' split pairs and one table for the heads). */
#include "dit_codelets.h"
#include "dit_opencl.h"

/* The calls one task makes: one, or with a table shared by the heads one a head, each
 * head's columns as a row of one head (*one: the arguments of head 0; head h's start
 * h * head_dim further). */
static int64_t qk_calls(const dit_qknorm_args *a, dit_qknorm_args *one)
{
	*one = *a;
	if (!a->rope || !a->rope_split || !a->rope_shared)
		return 1;
	one->dim = one->group = a->head_dim;
	one->heads = 1;
	return a->heads;
}

/* rows rows of t (fp32, ld apart) and their RoPE table from row 0's (cs). */
static void qk_norm_cpu_rows(const dit_qknorm_args *a, float *t, int64_t ld, int64_t rows,
                             const float *slab, const double *cs)
{
	if (a->group > 0)
		dit_cpu_rmsnorm_group(t, ld, rows, a->dim, a->group, a->eps, slab + a->w_off);
	else
		dit_cpu_rmsnorm(t, ld, rows, a->dim, a->eps, slab + a->w_off);
	if (a->rope)
		(a->rope_split ? dit_cpu_rope_split_apply
		               : dit_cpu_rope_apply)(t, ld, rows, a->heads, a->head_dim, cs);
}

static void qk_norm_cpu_one(void *buffers[], const dit_qknorm_args *a)
{
	const float *slab = DIT_BUF_F32(buffers, 1);
	/* the columns the op touches, and the RoPE table's doubles per row */
	int64_t width = a->dim > a->heads * a->head_dim ? a->dim : a->heads * a->head_dim;
	int64_t row_cs = a->head_dim * (a->rope_split && !a->rope_shared ? a->heads : 1);
	int64_t blk = dit_stage_rows(buffers, 1, a->rows, 0, 0);
	for (int64_t r0 = 0; r0 < a->rows; r0 += blk) {
		int64_t nr = a->rows - r0 < blk ? a->rows - r0 : blk;
		dit_f32rows t;
		dit_f32rows_open(&t, buffers[0], a->t_off + r0 * a->ld, a->ld, nr, width, 1,
		                 "qk_norm");
		qk_norm_cpu_rows(a, t.p, t.ld, nr, slab,
		                 a->rope ? DIT_BUF_F64(buffers, 2) + a->rope_off + r0 * row_cs
		                         : NULL);
		dit_f32rows_close(&t, 1);
	}
}

static void qk_norm_cpu(void *buffers[], void *cl_arg)
{
	dit_qknorm_args one;
	for (int64_t h = 0, n = qk_calls(cl_arg, &one); h < n; h++, one.t_off += one.head_dim)
		qk_norm_cpu_one(buffers, &one);
}

#ifdef STARPU_USE_OPENCL
static void qk_norm_opencl_one(void *buffers[], const dit_qknorm_args *a)
{
	cl_kernel k = dit_ocl_kernel(DIT_OCL_QK_NORM);
	dit_ocl_ref t = dit_ocl_act(buffers[0], a->t_off);
	dit_ocl_ref slab = dit_ocl_f32(buffers[1], a->w_off);
	dit_ocl_ref cs = {NULL, 0, 0};
	if (a->rope)
		cs = dit_ocl_f64(buffers[2], a->rope_off);
	cl_int ld = dit_ocl_int(a->ld, "qk_norm ld"), dim = dit_ocl_int(a->dim, "qk_norm dim");
	cl_int rope = a->rope != 0, heads = dit_ocl_int(a->heads, "qk_norm heads");
	cl_int hd = dit_ocl_int(a->head_dim, "qk_norm head_dim");
	cl_int group = a->group > 0 ? dit_ocl_int(a->group, "qk_norm group") : 0;
	if (group > 0 && (a->dim % group != 0 || (a->rope && group % 2 != 0)))
		dit_ocl_fail("qk_norm: group must divide dim (and be even with rope)",
		             CL_INVALID_ARG_VALUE);
	if (a->rope && group == 0 && a->heads * a->head_dim != a->dim)
		dit_ocl_fail("qk_norm: RoPE over the whole row needs heads * head_dim == dim",
		             CL_INVALID_ARG_VALUE);
	cl_int split = a->rope && a->rope_split;
	if (split && group > 0 && group % hd != 0)
		dit_ocl_fail("qk_norm: with split RoPE group must be a multiple of head_dim",
		             CL_INVALID_ARG_VALUE);
	int64_t runs = group > 0 ? a->dim / group : 1; /* work-groups per row */
	cl_float eps = a->eps;
	dit_ocl_set_args(k, "dit_qk_norm", DIT_OCL_ARG(t.mem), DIT_OCL_ARG(t.off), DIT_OCL_ARG(ld),
	                 DIT_OCL_ARG(dim), DIT_OCL_ARG(eps), DIT_OCL_ARG(slab.mem),
	                 DIT_OCL_ARG(slab.off), DIT_OCL_ARG(rope), DIT_OCL_ARG(heads),
	                 DIT_OCL_ARG(hd), DIT_OCL_ARG(cs.mem), DIT_OCL_ARG(cs.off),
	                 DIT_OCL_ARG(group), DIT_OCL_ARG(split), DIT_OCL_ARG(t.bf16), DIT_OCL_END);
	if (a->dim > 0) {
		size_t local = DIT_OCL_NORM_WG, global = (size_t)(a->rows * runs) * local;
		dit_ocl_enqueue(k, "dit_qk_norm", 1, &global, &local);
	}
}

static void qk_norm_opencl(void *buffers[], void *cl_arg)
{
	dit_qknorm_args one;
	for (int64_t h = 0, n = qk_calls(cl_arg, &one); h < n; h++, one.t_off += one.head_dim)
		qk_norm_opencl_one(buffers, &one);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void qk_norm_cuda_one(void *buffers[], const dit_qknorm_args *a)
{
	const float *slab = DIT_BUF_F32(buffers, 1);
	const double *cs = a->rope ? DIT_BUF_F64(buffers, 2) + a->rope_off : NULL;
	DIT_CUDA_CHECK("qk_norm",
	               dit_cuda_rmsnorm_rope_act(
	                   starpu_cuda_get_local_stream(), dit_buf_at(buffers[0], a->t_off),
	                   dit_buf_bf16(buffers[0]), a->ld, a->rows, a->dim, a->eps,
	                   slab + a->w_off, cs, a->heads, a->head_dim, a->group, a->rope_split));
}

static void qk_norm_cuda(void *buffers[], void *cl_arg)
{
	dit_qknorm_args one;
	for (int64_t h = 0, n = qk_calls(cl_arg, &one); h < n; h++, one.t_off += one.head_dim)
		qk_norm_cuda_one(buffers, &one);
}
#endif

DIT_PERFMODEL(qk_norm_model, "dit_qk_norm");

struct starpu_codelet dit_cl_qk_norm = {
    .name = "qk_norm",
    .cpu_funcs = {qk_norm_cpu},
    .cpu_funcs_name = {"qk_norm_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {qk_norm_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {qk_norm_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &qk_norm_model,
};
