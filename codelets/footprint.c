/* The footprint every op's performance model uses: a hash of the sizes at the start
 * of its argument struct, so ops of different shapes on the same buffers (the slab)
 * get separate histories; and its size, the product of those sizes (a GEMM's
 * m x n x k), so that starpu_perfmodel_plot puts each shape at its own abscissa. */
#include "dit_codelets.h"

uint32_t dit_codelet_footprint(struct starpu_task *task)
{
	const dit_fp *fp = task->cl_arg;
	uint32_t h = 0;
	for (int i = 0; i < 4; i++)
		h = starpu_hash_crc32c_be_n(&fp->v[i], sizeof fp->v[i], h);
	return h;
}

size_t dit_codelet_size_base(struct starpu_task *task, unsigned nimpl)
{
	(void)nimpl;
	const dit_fp *fp = task->cl_arg;
	double n = 1.0;
	for (int i = 0; i < 4; i++)
		if (fp->v[i] > 0)
			n *= (double)fp->v[i];
	return n < 1.8e19 ? (size_t)n : SIZE_MAX;
}

#if defined(DIT_SIMGRID) && !defined(DIT_HAVE_CUDA)
void dit_sim_kernel(void *buffers[], void *cl_arg)
{
	(void)buffers;
	(void)cl_arg;
}
#endif
