/* The OpenCL codelets against the CPU kernels. Every op runs as a StarPU task
 * restricted to OpenCL workers (whose memory is a node of its own; without a GPU,
 * PoCL's CPU device, which StarPU takes with STARPU_OPENCL_ON_CPUS=1) on random
 * inputs of odd shapes: strides and offsets into bigger buffers, sub-vectors (a
 * nonzero byte offset), weight slabs registered as 2 elements of a whole block's
 * bytes with the op reading the second, sequence lengths that are not multiples of
 * the tiles, 1 to 3 heads of 16 or 128 (and 160) columns. Each result is compared
 * with the dit_cpu_* kernels run on host copies (max |opencl - cpu| / max |cpu| at
 * most DIT_TOL), and each op runs twice and must give the same bytes. The GEMM ops
 * run with both GEMM kernels (GPU tiles and CPU dot products), and the ops that
 * reduce in float64 run with and without it. Then every case runs once more on the
 * CPU codelets (a CPU worker; tag /cpu), against the same kernels called directly:
 * that checks the codelets' handling of every argument. The cases are
 * tests/ops_cases.c's, shared with test_cuda_ops. TAP; without an OpenCL device:
 * "1..0 # SKIP". */
#include <stdio.h>
#include <stdlib.h>

#include <starpu.h>

#include "dit_codelets.h"
#include "dit_opencl.h"
#include "ops_cases.h"

#ifdef STARPU_USE_OPENCL
#define DIT_TOL 1e-5 /* max |opencl - cpu| / max |cpu|, every op */

static double opencl_tol(const char *op, int wbf16, int64_t head_dim)
{
	(void)op;
	(void)wbf16;
	(void)head_dim;
	return DIT_TOL;
}

static const dit_backend opencl = {"OpenCL", STARPU_OPENCL, STARPU_OPENCL_WORKER, opencl_tol};
/* The CPU codelets run the same cases (on a CPU worker, in StarPU's main RAM): the same
 * kernels as the references, called through the codelets' glue. */
static const dit_backend cpu = {"CPU", STARPU_CPU, STARPU_CPU_WORKER, opencl_tol};
#endif

int main(void)
{
#ifndef STARPU_USE_OPENCL
	printf("1..0 # SKIP StarPU has no OpenCL driver\n");
	return 0;
#else
	/* CPU-type OpenCL devices (PoCL) count; one CPU worker, for the CPU pass: the
	 * other tasks may run on OpenCL workers only. */
	setenv("STARPU_OPENCL_ON_CPUS", "1", 0);
	struct starpu_conf conf;
	starpu_conf_init(&conf);
	conf.ncpus = 1;
	conf.ncuda = 0;
	int rc = ops_start(&opencl, &conf);
	if (rc >= 0)
		return rc;
	dit_error err;
	double t0 = starpu_timing_now();
	dit_ops ops;
	dit_ops *o = &ops;
	ops_init(o, &opencl);

	/* Three kernel sets (dit_opencl_init reads DIT_OPENCL_GEMM and DIT_OPENCL_FP64):
	 * the GEMM of GPUs, the GEMM of CPU devices, and the latter without float64 (the
	 * path of devices without cl_khr_fp64). */
	static const struct {
		const char *tag, *gemm, *fp64;
	} sets[] = {{"/tiled", "tiled", "1"}, {"/dot", "dot", "1"}, {"/fp32", "dot", "0"}};
	for (int set = 0; set < 3; set++) {
		setenv("DIT_OPENCL_GEMM", sets[set].gemm, 1);
		setenv("DIT_OPENCL_FP64", sets[set].fp64, 1);
		o->w.tag = sets[set].tag;
		if (dit_opencl_init(&err) != DIT_OK) {
			printf("Bail out! %s\n", err.msg);
			starpu_shutdown();
			return 1;
		}
		if (set < 2) {
			ops_cases_gemm(o);
			test_act_bf16(o, 0); /* fp32 weights, then bf16 weights */
			test_act_bf16(o, 1);
			test_linear_wdt(o);
		}
		ops_cases_time_embed(o);
		if (set == 0) {
			dit_opencl_shutdown();
			continue;
		}
		/* the ops that compute in float64 where they can: with and without it */
		o->w.tag = set == 1 ? "/fp64" : "/fp32";
		ops_cases_fp64(o);
		if (set == 2)
			break;
		/* the others once */
		o->w.tag = "";
		ops_cases_other(o);
		dit_opencl_shutdown();
	}
	unsetenv("DIT_OPENCL_GEMM");
	unsetenv("DIT_OPENCL_FP64");

	/* every case once more on the CPU codelets */
	o->be = &cpu;
	o->w.tag = "/cpu";
	ops_cases_gemm(o);
	test_linear_wdt(o);
	ops_cases_time_embed(o);
	ops_cases_fp64(o);
	ops_cases_other(o);
	o->be = &opencl;

	double secs = (starpu_timing_now() - t0) * 1e-6;
	dit_opencl_shutdown();
	starpu_shutdown();

	return ops_report(o, secs);
#endif
}
