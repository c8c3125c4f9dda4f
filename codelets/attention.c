/* attention: multi-head softmax attention, flash style (see dit_cpu_attention).
 * Self-attention reads q, k, v from one qkv buffer; cross-attention reads q from one
 * buffer and k, v from a kv buffer. Every backend's kernel visits exactly the keys it
 * is given, so lk_valid is passed as their key count. */
#include "dit_codelets.h"
#include "dit_opencl.h"

#include <math.h>

/* With bf16 activations: head by head, that head's q, k, v and output as fp32 copies
 * (the kernel is per head: the same sums as all heads at once). */
static void attention_cpu_heads(void *buffers[], const dit_attention_args *a, float scale,
                                float *scratch)
{
	void *qb = buffers[0], *kvb = buffers[a->cross ? 1 : 0], *ob = buffers[a->cross ? 2 : 1];
	int64_t lk = dit_attention_keys(a);
	for (int64_t h = 0; h < a->heads; h++) {
		int64_t c = h * a->hd;
		dit_f32rows q, k, v, o;
		dit_f32rows_open(&q, qb, a->q_off + c, a->ldq, a->lq, a->hd, 1, "attention");
		dit_f32rows_open(&k, kvb, a->k_off + c, a->ldk, lk, a->hd, 1, "attention");
		dit_f32rows_open(&v, kvb, a->v_off + c, a->ldk, lk, a->hd, 1, "attention");
		dit_f32rows_open(&o, ob, c, a->ldo, a->lq, a->hd, 0, "attention");
		dit_cpu_attention(o.p, o.ld, q.p, q.ld, k.p, k.ld, v.p, v.ld, a->lq, lk, 1, a->hd,
		                  scale, scratch);
		dit_f32rows_close(&q, 0);
		dit_f32rows_close(&k, 0);
		dit_f32rows_close(&v, 0);
		dit_f32rows_close(&o, 1);
	}
}

static void attention_cpu(void *buffers[], void *cl_arg)
{
	const dit_attention_args *a = cl_arg;
	float *scratch = DIT_BUF_F32(buffers, a->cross ? 3 : 2);
	float scale = (float)(1.0 / sqrt((double)a->hd));
	if (dit_bufs_bf16(buffers, a->cross ? 3 : 2)) {
		attention_cpu_heads(buffers, a, scale, scratch);
		return;
	}
	const float *qb = DIT_BUF_F32(buffers, 0);
	const float *kvb = a->cross ? DIT_BUF_F32(buffers, 1) : qb;
	float *o = DIT_BUF_F32(buffers, a->cross ? 2 : 1);
	dit_cpu_attention(o, a->ldo, qb + a->q_off, a->ldq, kvb + a->k_off, a->ldk, kvb + a->v_off,
	                  a->ldk, a->lq, dit_attention_keys(a), a->heads, a->hd, scale, scratch);
}

#ifdef STARPU_USE_OPENCL
static void attention_opencl(void *buffers[], void *cl_arg)
{
	const dit_attention_args *a = cl_arg;
	cl_kernel k = dit_ocl_kernel(DIT_OCL_ATTENTION);
	dit_ocl_ref o = dit_ocl_act(buffers[a->cross ? 2 : 1], 0);
	dit_ocl_ref qb = dit_ocl_act(buffers[0], a->q_off);
	dit_ocl_ref kvb = dit_ocl_act(buffers[a->cross ? 1 : 0], 0);
	cl_long k_off = kvb.off + a->k_off, v_off = kvb.off + a->v_off;
	cl_int ldo = dit_ocl_int(a->ldo, "attention ldo"),
	       ldq = dit_ocl_int(a->ldq, "attention ldq");
	cl_int ldk = dit_ocl_int(a->ldk, "attention ldk"), lq = dit_ocl_int(a->lq, "attention lq");
	cl_int lk = dit_ocl_int(dit_attention_keys(a), "attention lk");
	cl_int hd = dit_ocl_int(a->hd, "attention hd");
	cl_float scale = (float)(1.0 / sqrt((double)a->hd));
	/* Keys per tile: as many as the local memory holds, up to DIT_OCL_ATT_BK; the
	 * tiles are kt [bk, hd] and vt [bk, min(hd, DIT_OCL_ATT_DC)]. */
	size_t dc = a->hd < DIT_OCL_ATT_DC ? (size_t)a->hd : DIT_OCL_ATT_DC;
	size_t per_key = ((size_t)a->hd + dc) * sizeof(float);
	size_t budget = dit_ocl_local_mem();
	budget = budget > 1024 ? budget - 1024 : 0;
	size_t nbk = per_key ? budget / per_key : DIT_OCL_ATT_BK;
	if (nbk > DIT_OCL_ATT_BK)
		nbk = DIT_OCL_ATT_BK;
	if (nbk < 1)
		dit_ocl_fail("attention: head_dim too large for the device's local memory",
		             CL_OUT_OF_RESOURCES);
	cl_int bk = (cl_int)nbk;
	size_t kt = nbk * (size_t)a->hd * sizeof(float), vt = nbk * dc * sizeof(float);
	if (kt == 0)
		kt = vt = sizeof(float);
	dit_ocl_set_args(k, "dit_attention", DIT_OCL_ARG(o.mem), DIT_OCL_ARG(o.off),
	                 DIT_OCL_ARG(ldo), DIT_OCL_ARG(qb.mem), DIT_OCL_ARG(qb.off),
	                 DIT_OCL_ARG(ldq), DIT_OCL_ARG(kvb.mem), DIT_OCL_ARG(k_off),
	                 DIT_OCL_ARG(v_off), DIT_OCL_ARG(ldk), DIT_OCL_ARG(lq), DIT_OCL_ARG(lk),
	                 DIT_OCL_ARG(hd), DIT_OCL_ARG(scale), DIT_OCL_ARG(bk), kt,
	                 (const void *)NULL, vt, (const void *)NULL, DIT_OCL_ARG(qb.bf16),
	                 DIT_OCL_ARG(kvb.bf16), DIT_OCL_ARG(o.bf16), DIT_OCL_END);
	size_t local[2] = {DIT_OCL_ATT_BQ, 1};
	size_t global[2] = {(size_t)a->lq, (size_t)a->heads};
	dit_ocl_enqueue(k, "dit_attention", 2, global, local);
	dit_ocl_finish();
}
#endif

#ifdef DIT_HAVE_CUDA
static void attention_cuda(void *buffers[], void *cl_arg)
{
	const dit_attention_args *a = cl_arg;
	void *qb = buffers[0], *kvb = buffers[a->cross ? 1 : 0], *ob = buffers[a->cross ? 2 : 1];
	float scale = (float)(1.0 / sqrt((double)a->hd));
	cudaStream_t s = starpu_cuda_get_local_stream();
	void *o = dit_buf_at(ob, 0), *q = dit_buf_at(qb, a->q_off);
	void *k = dit_buf_at(kvb, a->k_off), *v = dit_buf_at(kvb, a->v_off);
	dit_sdpa_shape sh = {.lq = a->lq,
	                     .lk = dit_attention_keys(a),
	                     .heads = a->heads,
	                     .hd = a->hd,
	                     .ldq = a->ldq,
	                     .ldk = a->ldk,
	                     .ldv = a->ldk,
	                     .ldo = a->ldo,
	                     .q_bf16 = dit_buf_bf16(qb),
	                     .kv_bf16 = dit_buf_bf16(kvb),
	                     .o_bf16 = dit_buf_bf16(ob),
	                     .addr = (uintptr_t)o | (uintptr_t)q | (uintptr_t)k | (uintptr_t)v};
	if (dit_cuda_lib_attention(s, o, q, k, v, &sh, scale))
		return;
	DIT_CUDA_CHECK("attention", dit_cuda_attention_act(s, o, sh.o_bf16, a->ldo, q, sh.q_bf16,
	                                                   a->ldq, k, v, sh.kv_bf16, a->ldk, a->ldk,
	                                                   a->lq, sh.lk, a->heads, a->hd, scale));
}
#endif

DIT_PERFMODEL(attention_model, "dit_attention");

struct starpu_codelet dit_cl_attention = {
    .name = "attention",
    .cpu_funcs = {attention_cpu},
    .cpu_funcs_name = {"attention_cpu"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {attention_opencl},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {attention_cuda},
    .cuda_flags = {STARPU_CUDA_ASYNC},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &attention_model,
};
