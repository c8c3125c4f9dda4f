/* residual: x += y * gate, gate = block.modulation chunk + e0 chunk (or the row of a
 * per-token / per-frame e0 table), or x += y. */
#include "dit_codelets.h"
#include "dit_opencl.h"

/* The gate pair of a CPU or CUDA task (both NULL: no gate). */
static void residual_gates(void *buffers[], const dit_residual_args *a, const float **ga,
                           const float **gb)
{
	*ga = *gb = NULL;
	if (a->gate_off >= 0) {
		*ga = DIT_BUF_F32(buffers, 2) + a->gate_off;
		*gb = DIT_BUF_F32(buffers, 3) + a->vgate_off;
	}
}

static void residual_cpu(void *buffers[], void *cl_arg)
{
	const dit_residual_args *a = cl_arg;
	const float *ga, *gb;
	residual_gates(buffers, a, &ga, &gb);
	dit_mod_span sp[2];
	for (int s = 0, n = dit_mod_spans(a->row0, a->rows, a->mod_ld, a->mod_rows, sp); s < n;
	     s++) {
		/* a block of whole table rows at a time (fp32 views of bf16 activations) */
		int64_t blk = dit_stage_rows(buffers, 2, sp[s].n, sp[s].mod_ld, sp[s].mod_rows);
		for (int64_t r0 = 0; r0 < sp[s].n; r0 += blk) {
			int64_t nr = sp[s].n - r0 < blk ? sp[s].n - r0 : blk;
			int64_t o = (sp[s].r0 + r0) * a->dim;
			int64_t tb = sp[s].toff + (sp[s].mod_rows > 0 && sp[s].mod_ld != 0
			                               ? r0 / sp[s].mod_rows * sp[s].mod_ld
			                               : 0);
			dit_f32rows x, y;
			dit_f32rows_open(&x, buffers[0], a->x_off + o, a->dim, nr, a->dim, 1,
			                 "residual");
			dit_f32rows_open(&y, buffers[1], o, a->dim, nr, a->dim, 1, "residual");
			dit_cpu_residual(x.p, x.ld, y.p, y.ld, nr, a->dim, ga, gb ? gb + tb : NULL,
			                 sp[s].mod_ld, sp[s].mod_rows);
			dit_f32rows_close(&y, 0);
			dit_f32rows_close(&x, 1);
		}
	}
}

#ifdef STARPU_USE_OPENCL
static void residual_opencl(void *buffers[], void *cl_arg)
{
	const dit_residual_args *a = cl_arg;
	cl_kernel k = dit_ocl_kernel(DIT_OCL_RESIDUAL);
	cl_int gated = a->gate_off >= 0;
	cl_int dim = dit_ocl_int(a->dim, "residual dim");
	dit_mod_span sp[2];
	for (int s = 0, n = dit_mod_spans(a->row0, a->rows, a->mod_ld, a->mod_rows, sp); s < n;
	     s++) {
		int64_t o = sp[s].r0 * a->dim;
		dit_ocl_ref x = dit_ocl_act(buffers[0], a->x_off + o),
		            y = dit_ocl_act(buffers[1], o);
		dit_ocl_ref ga = {NULL, 0, 0}, gb = {NULL, 0, 0};
		if (gated) {
			ga = dit_ocl_f32(buffers[2], a->gate_off);
			gb = dit_ocl_f32(buffers[3], a->vgate_off + sp[s].toff);
		}
		cl_long rows = sp[s].n;
		int tab = sp[s].mod_rows > 0 && sp[s].mod_ld != 0; /* else one gate vector */
		cl_long mod_ld = tab ? sp[s].mod_ld : 0, mod_rows = tab ? sp[s].mod_rows : 1;
		dit_ocl_set_args(k, "dit_residual", DIT_OCL_ARG(x.mem), DIT_OCL_ARG(x.off),
		                 DIT_OCL_ARG(y.mem), DIT_OCL_ARG(y.off), DIT_OCL_ARG(rows),
		                 DIT_OCL_ARG(dim), DIT_OCL_ARG(gated), DIT_OCL_ARG(ga.mem),
		                 DIT_OCL_ARG(ga.off), DIT_OCL_ARG(gb.mem), DIT_OCL_ARG(gb.off),
		                 DIT_OCL_ARG(mod_ld), DIT_OCL_ARG(mod_rows), DIT_OCL_ARG(x.bf16),
		                 DIT_OCL_ARG(y.bf16), DIT_OCL_END);
		size_t local = DIT_OCL_ELEM_WG, global = (size_t)(sp[s].n * a->dim);
		dit_ocl_enqueue(k, "dit_residual", 1, &global, &local);
	}
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void residual_cuda(void *buffers[], void *cl_arg)
{
	const dit_residual_args *a = cl_arg;
	const float *ga, *gb;
	residual_gates(buffers, a, &ga, &gb);
	dit_mod_span sp[2];
	for (int s = 0, n = dit_mod_spans(a->row0, a->rows, a->mod_ld, a->mod_rows, sp); s < n;
	     s++) {
		int64_t o = sp[s].r0 * a->dim;
		DIT_CUDA_CHECK("residual",
		               dit_cuda_residual_act(
		                   starpu_cuda_get_local_stream(),
		                   dit_buf_at(buffers[0], a->x_off + o), dit_buf_bf16(buffers[0]),
		                   a->dim, dit_buf_at(buffers[1], o), dit_buf_bf16(buffers[1]),
		                   a->dim, sp[s].n, a->dim, ga, gb ? gb + sp[s].toff : NULL,
		                   sp[s].mod_ld, sp[s].mod_rows));
	}
}
#endif

DIT_PERFMODEL(residual_model, "dit_residual");

struct starpu_codelet dit_cl_residual = {
    .name = "residual",
    .cpu_funcs = {residual_cpu},
    .cpu_funcs_name = {"residual_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {residual_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {residual_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &residual_model,
};
