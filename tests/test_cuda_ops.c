/* The CUDA codelets against the CPU kernels: the cases of test_opencl_ops
 * (tests/ops_cases.c), each op run as a StarPU task restricted to CUDA workers and
 * compared with the dit_cpu_* kernels on host copies, and run twice: the two results
 * must be the same bytes (every op; determinism is a requirement on CUDA too).
 *
 * Tolerances, max |cuda - cpu| / max |cpu|:
 * - 1e-5 for everything computed in fp32: the norms (float64 statistics as on the
 *   CPU), residual, cfg, lincomb, the time, text and patch embeddings, the head,
 *   linear with fp32 weights (cuBLAS fp32 without TF32), attention with a head dim
 *   the tensor-core kernel does not take (160: the fp32 kernel);
 * - 2e-2 for the bf16 tensor-core paths: linear with bf16 weights (activations
 *   narrowed to bf16) and attention with head dims 16, 32, 64 and 128.
 *
 * TAP; without a CUDA device (or a StarPU without CUDA): "1..0 # SKIP", exit 0. */
#include <stdio.h>
#include <string.h>

#include <starpu.h>

#include "dit_codelets.h"
#include "ops_cases.h"

#if defined(STARPU_USE_CUDA) && defined(DIT_HAVE_CUDA)
#define DIT_TOL_F32  1e-5
#define DIT_TOL_BF16 2e-2

static double cuda_tol(const char *op, int wbf16, int64_t head_dim)
{
	if (!strcmp(op, "linear") && wbf16)
		return DIT_TOL_BF16;
	if (!strcmp(op, "attention") &&
	    (head_dim == 16 || head_dim == 32 || head_dim == 64 || head_dim == 128))
		return DIT_TOL_BF16;
	return DIT_TOL_F32;
}

static const dit_backend cuda = {"CUDA", STARPU_CUDA, STARPU_CUDA_WORKER, cuda_tol};
#endif

int main(void)
{
#if !defined(STARPU_USE_CUDA) || !defined(DIT_HAVE_CUDA)
	printf("1..0 # SKIP StarPU or ditstar has no CUDA driver\n");
	return 0;
#else
	/* CUDA workers, and one CPU worker for the bf16 cases' references: every task
	 * names its kind of worker. */
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.ncpus = 1;
	conf.nopencl = 0;
	conf.ncuda = -1;
	int rc = ops_start(&cuda, &conf);
	if (rc >= 0)
		return rc;
	starpu_cublas_init();
	double t0 = starpu_timing_now();
	dit_ops ops;
	dit_ops *o = &ops;
	ops_init(o, &cuda);

	ops_cases_gemm(o);
	ops_cases_time_embed(o);
	ops_cases_fp64(o);
	ops_cases_other(o);
	/* the head dims of the tensor-core attention that test_opencl_ops does not run */
	test_attention(o, 50, 50, 2, 32, 0);
	test_attention(o, 41, 77, 2, 64, 1);
	test_attention_valid(o, 50, 50, 17, 2, 32, 0); /* valid keys on the tensor cores */
	test_attention_valid(o, 41, 77, 65, 2, 64, 1);
	test_attention_valid(o, 41, 77, 40, 2, 40, 1); /* and on the fp32 kernel */
	test_act_bf16(o, 1); /* bf16 activations beside bf16 weights, as CUDA runs them */
	test_act_bf16(o, 0); /* and beside fp32 weights (--weight-dtype f32) */
	test_linear_wdt(o);  /* compact weights widened to bf16 tiles */

	double secs = (starpu_timing_now() - t0) * 1e-6;
	starpu_cublas_shutdown();
	starpu_shutdown();
	return ops_report(o, secs);
#endif
}
