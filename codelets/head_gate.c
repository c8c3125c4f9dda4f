/* head_gate: the output of each attention head times 2 sigmoid of its gate logit
 * (LTX-2's gated attention), in place. */
#include "dit_codelets.h"
#include "dit_opencl.h"

static void head_gate_cpu(void *buffers[], void *cl_arg)
{
	const dit_head_gate_args *a = cl_arg;
	/* a block of rows at a time: fp32 views of bf16 activations */
	int64_t blk = dit_stage_rows(buffers, 2, a->rows, 0, 0);
	for (int64_t r0 = 0; r0 < a->rows; r0 += blk) {
		int64_t nr = a->rows - r0 < blk ? a->rows - r0 : blk;
		dit_f32rows o, g;
		dit_f32rows_open(&o, buffers[0], a->o_off + r0 * a->ldo, a->ldo, nr,
		                 a->heads * a->hd, 1, "head_gate");
		dit_f32rows_open(&g, buffers[1], a->g_off + r0 * a->ldg, a->ldg, nr, a->heads, 1,
		                 "head_gate");
		dit_cpu_head_gate(o.p, o.ld, g.p, g.ld, nr, a->heads, a->hd);
		dit_f32rows_close(&g, 0);
		dit_f32rows_close(&o, 1);
	}
}

#ifdef STARPU_USE_OPENCL
static void head_gate_opencl(void *buffers[], void *cl_arg)
{
	const dit_head_gate_args *a = cl_arg;
	cl_kernel k = dit_ocl_kernel(DIT_OCL_HEAD_GATE);
	dit_ocl_ref o = dit_ocl_act(buffers[0], a->o_off), gl = dit_ocl_act(buffers[1], a->g_off);
	cl_long ldo = a->ldo, ldg = a->ldg, rows = a->rows;
	cl_int heads = dit_ocl_int(a->heads, "head_gate heads");
	cl_int hd = dit_ocl_int(a->hd, "head_gate hd");
	dit_ocl_set_args(k, "dit_head_gate", DIT_OCL_ARG(o.mem), DIT_OCL_ARG(o.off),
	                 DIT_OCL_ARG(ldo), DIT_OCL_ARG(gl.mem), DIT_OCL_ARG(gl.off),
	                 DIT_OCL_ARG(ldg), DIT_OCL_ARG(rows), DIT_OCL_ARG(heads), DIT_OCL_ARG(hd),
	                 DIT_OCL_ARG(o.bf16), DIT_OCL_ARG(gl.bf16), DIT_OCL_END);
	size_t local = DIT_OCL_ELEM_WG, global = (size_t)(a->rows * a->heads * a->hd);
	dit_ocl_enqueue(k, "dit_head_gate", 1, &global, &local);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void head_gate_cuda(void *buffers[], void *cl_arg)
{
	const dit_head_gate_args *a = cl_arg;
	DIT_CUDA_CHECK("head_gate",
	               dit_cuda_head_gate_act(
	                   starpu_cuda_get_local_stream(), dit_buf_at(buffers[0], a->o_off),
	                   dit_buf_bf16(buffers[0]), a->ldo, dit_buf_at(buffers[1], a->g_off),
	                   dit_buf_bf16(buffers[1]), a->ldg, a->rows, a->heads, a->hd));
}
#endif

DIT_PERFMODEL(head_gate_model, "dit_head_gate");

struct starpu_codelet dit_cl_head_gate = {
    .name = "head_gate",
    .cpu_funcs = {head_gate_cpu},
    .cpu_funcs_name = {"head_gate_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {head_gate_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {head_gate_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &head_gate_model,
};
