/* layernorm: LayerNorm (or, with rms, the RMS normalisation) without affine, then an affine
 * transform (norm3) or the adaptive modulation (1 + scale) * . + shift, with shift and scale the
 * sums of a slab table and a per-step vector (block.modulation + e0), or a row of a per-step table
 * (one row per token or per frame). */
#include "dit_codelets.h"
#include "dit_opencl.h"

/* The tensors of a CPU or CUDA task (pointers into its buffers). */
typedef struct ln_ptrs {
	const float *x, *w, *b, *sha, *shb, *sca, *scb;
	float *y;
} ln_ptrs;

static ln_ptrs ln_unpack(void *buffers[], const dit_layernorm_args *a)
{
	const float *slab = DIT_BUF_F32(buffers, 2);
	ln_ptrs p = {.x = DIT_BUF_F32(buffers, 0) + a->x_off, .y = DIT_BUF_F32(buffers, 1)};
	if (a->affine) {
		p.w = slab + a->w_off;
		p.b = slab + a->b_off;
	}
	if (a->mod) {
		const float *vec = DIT_BUF_F32(buffers, 3);
		p.sha = slab + a->shift_off;
		p.shb = vec + a->vshift_off;
		p.sca = slab + a->scale_off;
		p.scb = vec + a->vscale_off;
	}
	return p;
}

static void layernorm_cpu(void *buffers[], void *cl_arg)
{
	const dit_layernorm_args *a = cl_arg;
	ln_ptrs p = ln_unpack(buffers, a);
	dit_mod_span sp[2];
	for (int s = 0, n = dit_mod_spans(a->row0, a->rows, a->mod_ld, a->mod_rows, sp); s < n;
	     s++) {
		int64_t t = sp[s].toff;
		/* a block of rows at a time (fp32 views of bf16 activations), blocks of
		 * whole table rows: a block's table starts on its first row */
		int64_t blk = dit_stage_rows(buffers, 2, sp[s].n, sp[s].mod_ld, sp[s].mod_rows);
		for (int64_t r0 = 0; r0 < sp[s].n; r0 += blk) {
			int64_t nr = sp[s].n - r0 < blk ? sp[s].n - r0 : blk;
			int64_t o = (sp[s].r0 + r0) * a->dim;
			int64_t tb = sp[s].mod_rows > 0 && sp[s].mod_ld != 0
			                 ? t + r0 / sp[s].mod_rows * sp[s].mod_ld
			                 : t;
			dit_f32rows x, y;
			dit_f32rows_open(&x, buffers[0], a->x_off + o, a->dim, nr, a->dim, 1,
			                 "layernorm");
			dit_f32rows_open(&y, buffers[1], o, a->dim, nr, a->dim, 0, "layernorm");
			(a->rms ? dit_cpu_layernorm_rms : dit_cpu_layernorm)(
			    y.p, y.ld, x.p, x.ld, nr, a->dim, a->eps, p.w, p.b, p.sha,
			    p.shb ? p.shb + tb : NULL, p.sca, p.scb ? p.scb + tb : NULL,
			    sp[s].mod_ld, sp[s].mod_rows);
			dit_f32rows_close(&x, 0);
			dit_f32rows_close(&y, 1);
		}
	}
}

#ifdef STARPU_USE_OPENCL
static void layernorm_opencl(void *buffers[], void *cl_arg)
{
	const dit_layernorm_args *a = cl_arg;
	dit_ocl_ref none = {NULL, 0, 0};
	dit_ocl_ref vec = a->mod ? dit_ocl_f32(buffers[3], 0) : none;
	dit_mod_span sp[2];
	for (int s = 0, n = dit_mod_spans(a->row0, a->rows, a->mod_ld, a->mod_rows, sp); s < n;
	     s++) {
		int64_t o = sp[s].r0 * a->dim, t = sp[s].toff;
		dit_ocl_layernorm(dit_ocl_act(buffers[1], o), dit_ocl_act(buffers[0], a->x_off + o),
		                  sp[s].n, a->dim, a->eps, a->rms, a->affine, a->mod,
		                  dit_ocl_f32(buffers[2], 0), a->w_off, a->b_off, a->shift_off,
		                  a->scale_off, vec, a->vshift_off + t, a->vscale_off + t,
		                  sp[s].mod_ld, sp[s].mod_rows);
	}
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void layernorm_cuda(void *buffers[], void *cl_arg)
{
	const dit_layernorm_args *a = cl_arg;
	ln_ptrs p = ln_unpack(buffers, a);
	dit_mod_span sp[2];
	for (int s = 0, n = dit_mod_spans(a->row0, a->rows, a->mod_ld, a->mod_rows, sp); s < n;
	     s++) {
		int64_t o = sp[s].r0 * a->dim, t = sp[s].toff;
		DIT_CUDA_CHECK("layernorm",
		               dit_cuda_layernorm_act(
		                   starpu_cuda_get_local_stream(), dit_buf_at(buffers[1], o),
		                   dit_buf_bf16(buffers[1]), a->dim,
		                   dit_buf_at(buffers[0], a->x_off + o), dit_buf_bf16(buffers[0]),
		                   a->dim, sp[s].n, a->dim, a->eps, a->rms, p.w, p.b, p.sha,
		                   p.shb ? p.shb + t : NULL, p.sca, p.scb ? p.scb + t : NULL,
		                   sp[s].mod_ld, sp[s].mod_rows));
	}
}
#endif

DIT_PERFMODEL(layernorm_model, "dit_layernorm");

struct starpu_codelet dit_cl_layernorm = {
    .name = "layernorm",
    .cpu_funcs = {layernorm_cpu},
    .cpu_funcs_name = {"layernorm_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {layernorm_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {layernorm_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &layernorm_model,
};
