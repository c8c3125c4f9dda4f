/* xfer: a weight transfer as a task. It computes nothing; it reads its buffers on the
 * memory node of the worker that runs it, so StarPU brings the data there, and the
 * transfer shows in traces and statistics as a task of its own. */
#include "dit_codelets.h"

static void xfer_noop(void *buffers[], void *cl_arg)
{
	(void)buffers;
	(void)cl_arg;
}

/* The default footprint (the buffers' sizes) keeps one history per chunk size. */
static struct starpu_perfmodel xfer_model = {.type = STARPU_HISTORY_BASED, .symbol = "dit_xfer"};

struct starpu_codelet dit_cl_xfer = {
    .name = "xfer",
    .cpu_funcs = {xfer_noop},
    .cpu_funcs_name = {"xfer_noop"},
#ifdef STARPU_USE_OPENCL
    .opencl_funcs = {xfer_noop},
#endif
#ifdef DIT_HAVE_CUDA
    .cuda_funcs = {xfer_noop},
#elif defined(DIT_SIMGRID)
    .cuda_funcs = {dit_sim_kernel},
#endif
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &xfer_model,
};
