/* head: LayerNorm with the head's modulation (head.modulation + e, where e is the
 * time embedding before projection, one vector or one row per token group), the
 * output Linear, then unpatchify. */
#include "dit_codelets.h"
#include "dit_opencl.h"

/* The tensors of a CPU or CUDA task (pointers into its buffers) and its sizes. */
typedef struct head_ptrs {
	const float *g, *x, *e, *mod; /* mod [2, D]: shift, scale */
	float *out, *h, *tok;         /* h [chunk, D], tok [tokens, C*P] (scratch) */
	int64_t tokens, cp, chunk;
} head_ptrs;

static head_ptrs head_unpack(void *buffers[], const dit_head_args *a)
{
	head_ptrs p = {.g = DIT_BUF_F32(buffers, 0),
	               .x = DIT_BUF_F32(buffers, 1),
	               .e = DIT_BUF_F32(buffers, 2),
	               .out = DIT_BUF_F32(buffers, 3),
	               .h = DIT_BUF_F32(buffers, 4),
	               .tokens = a->tf * a->th * a->tw,
	               .cp = a->c * a->pt * a->ph * a->pw};
	p.chunk = dit_head_chunk(a, p.tokens);
	p.tok = p.h + p.chunk * a->dim;
	p.mod = p.g + a->mod_off;
	return p;
}

/* The modulated LayerNorm of tokens r0 .. r0 + n of x into h [n, D] (CPU or CUDA). */
static void head_norm(const dit_head_args *a, const head_ptrs *p, int64_t r0, int64_t n,
                      void *stream)
{
	dit_mod_span sp[2];
	for (int s = 0, ns = dit_mod_spans(r0, n, a->mod_ld, a->mod_rows, sp); s < ns; s++) {
		float *h = p->h + sp[s].r0 * a->dim;
		const float *x = p->x + (r0 + sp[s].r0) * a->dim, *e = p->e + sp[s].toff;
#ifdef DIT_HAVE_CUDA
		if (stream) {
			DIT_CUDA_CHECK("head",
			               dit_cuda_layernorm((cudaStream_t)stream, h, a->dim, x,
			                                  a->dim, sp[s].n, a->dim, a->eps, NULL,
			                                  NULL, p->mod, e, p->mod + a->dim, e,
			                                  sp[s].mod_ld, sp[s].mod_rows));
			continue;
		}
#endif
		(void)stream;
		dit_cpu_layernorm(h, a->dim, x, a->dim, sp[s].n, a->dim, a->eps, NULL, NULL, p->mod,
		                  e, p->mod + a->dim, e, sp[s].mod_ld, sp[s].mod_rows);
	}
}

static void head_cpu(void *buffers[], void *cl_arg)
{
	const dit_head_args *a = cl_arg;
	head_ptrs p = head_unpack(buffers, a);
	for (int64_t r0 = 0; r0 < p.tokens; r0 += p.chunk) {
		int64_t n = p.tokens - r0 < p.chunk ? p.tokens - r0 : p.chunk;
		head_norm(a, &p, r0, n, NULL);
		dit_cpu_linear(p.tok + r0 * p.cp, p.cp, p.h, a->dim, p.g + a->w_off, p.g + a->b_off,
		               n, p.cp, a->dim, DIT_ACT_NONE);
	}
	dit_cpu_unpatchify(p.out, p.tok, a->c, a->tf, a->th, a->tw, a->pt, a->ph, a->pw);
}

#ifdef STARPU_USE_OPENCL
static void head_opencl(void *buffers[], void *cl_arg)
{
	const dit_head_args *a = cl_arg;
	dit_ocl_ref g = dit_ocl_f32(buffers[0], 0), out = dit_ocl_f32(buffers[3], 0);
	int64_t tokens = a->tf * a->th * a->tw, chunk = dit_head_chunk(a, tokens);
	int64_t cp = a->c * a->pt * a->ph * a->pw;
	dit_ocl_ref h = dit_ocl_f32(buffers[4], 0);                /* [chunk, D] */
	dit_ocl_ref tok = {h.mem, h.off + chunk * a->dim, h.bf16}; /* [tokens, C*P] */
	for (int64_t r0 = 0; r0 < tokens; r0 += chunk) {
		int64_t n = tokens - r0 < chunk ? tokens - r0 : chunk;
		dit_mod_span sp[2];
		for (int s = 0, ns = dit_mod_spans(r0, n, a->mod_ld, a->mod_rows, sp); s < ns; s++)
			dit_ocl_layernorm(dit_ocl_f32(buffers[4], sp[s].r0 * a->dim),
			                  dit_ocl_f32(buffers[1], (r0 + sp[s].r0) * a->dim),
			                  sp[s].n, a->dim, a->eps, 0, 0, 1, g, 0, 0, a->mod_off,
			                  a->mod_off + a->dim, dit_ocl_f32(buffers[2], 0),
			                  sp[s].toff, sp[s].toff, sp[s].mod_ld, sp[s].mod_rows);
		dit_ocl_ref tr = {tok.mem, tok.off + r0 * cp, tok.bf16};
		dit_ocl_linear(tr, cp, h, a->dim, g, 4 * a->w_off, 0, a->b_off, n, cp, a->dim,
		               DIT_ACT_NONE, 0);
	}
	cl_kernel k = dit_ocl_kernel(DIT_OCL_UNPATCHIFY);
	cl_int c = dit_ocl_int(a->c, "head c"), tf = dit_ocl_int(a->tf, "head tf");
	cl_int th = dit_ocl_int(a->th, "head th"), tw = dit_ocl_int(a->tw, "head tw");
	cl_int pt = dit_ocl_int(a->pt, "head pt"), ph = dit_ocl_int(a->ph, "head ph");
	cl_int pw = dit_ocl_int(a->pw, "head pw");
	dit_ocl_set_args(k, "dit_unpatchify", DIT_OCL_ARG(out.mem), DIT_OCL_ARG(out.off),
	                 DIT_OCL_ARG(tok.mem), DIT_OCL_ARG(tok.off), DIT_OCL_ARG(c),
	                 DIT_OCL_ARG(tf), DIT_OCL_ARG(th), DIT_OCL_ARG(tw), DIT_OCL_ARG(pt),
	                 DIT_OCL_ARG(ph), DIT_OCL_ARG(pw), DIT_OCL_END);
	size_t local = DIT_OCL_ELEM_WG, global = (size_t)(tokens * cp);
	dit_ocl_enqueue(k, "dit_unpatchify", 1, &global, &local);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void head_cuda(void *buffers[], void *cl_arg)
{
	const dit_head_args *a = cl_arg;
	cudaStream_t s = starpu_cuda_get_local_stream();
	head_ptrs p = head_unpack(buffers, a);
	for (int64_t r0 = 0; r0 < p.tokens; r0 += p.chunk) {
		int64_t n = p.tokens - r0 < p.chunk ? p.tokens - r0 : p.chunk;
		head_norm(a, &p, r0, n, s);
		DIT_CUDA_CHECK("head", dit_cuda_linear(starpu_cublas_get_local_handle(), s,
		                                       p.tok + r0 * p.cp, p.cp, p.h, a->dim,
		                                       p.g + a->w_off, 0, p.g + a->b_off, n, p.cp,
		                                       a->dim, DIT_ACT_NONE, NULL, 0));
	}
	DIT_CUDA_CHECK("head", dit_cuda_unpatchify(s, p.out, p.tok, a->c, a->tf, a->th, a->tw,
	                                           a->pt, a->ph, a->pw));
}
#endif

DIT_PERFMODEL(head_model, "dit_head");

struct starpu_codelet dit_cl_head = {
    .name = "head",
    .cpu_funcs = {head_cpu},
    .cpu_funcs_name = {"head_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {head_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {head_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = 5,
    .modes = {STARPU_R, STARPU_R, STARPU_R, STARPU_W, STARPU_SCRATCH},
    .model = &head_model,
};
