/* The compute tasks' priorities (--priorities, see dit_graph.h): the critical path's
 * b-level and heteroprio's op classes. */
#include <stdint.h>
#include <string.h>

#include "dit_graph.h"
#include "dit_task_class.h"

/* The heteroprio bucket of task t (--priorities op-class, codelets/dit_task_class.h): by the
 * kinds of worker of the run that can run it, then by its op. */
int dit_graph_op_class_priority(const struct starpu_task *t, const struct starpu_codelet *cl)
{
	uint32_t have = 0, can = 0;
	if (starpu_worker_get_count_by_type(STARPU_CPU_WORKER) > 0)
		have |= STARPU_CPU;
	if (starpu_worker_get_count_by_type(STARPU_OPENCL_WORKER) > 0)
		have |= STARPU_OPENCL;
	if (starpu_worker_get_count_by_type(STARPU_CUDA_WORKER) > 0)
		have |= STARPU_CUDA;
	uint32_t where =
	    t->where != -1 ? (uint32_t)t->where : STARPU_CPU | STARPU_OPENCL | STARPU_CUDA;
	if (cl->cpu_funcs[0])
		can |= STARPU_CPU;
	if (cl->opencl_funcs[0])
		can |= STARPU_OPENCL;
	if (cl->cuda_funcs[0])
		can |= STARPU_CUDA;
	can &= where & have;
	int xfer = strcmp(cl->name, "xfer") == 0;
	if (can != have || xfer)
		return can == STARPU_CPU || !(can & ~(uint32_t)STARPU_CPU) ? DIT_BUCKET_HOST
		                                                           : DIT_BUCKET_DEVICE;
	if (strcmp(cl->name, "attention") == 0)
		return DIT_BUCKET_ATTENTION;
	return t->flops > 0 ? DIT_BUCKET_GEMM : DIT_BUCKET_LIGHT;
}

/* The b-level of the task being submitted, in blocks: a run is one chain of steps, each
 * the blocks of the current expert's pools in order (tasks outside the blocks count as
 * at the step's start), so the path from a task to the end is the blocks left in its
 * step and every later step. The priority is the b-level itself, from 0 (or the
 * scheduler's minimum when above 0), where the scheduler's range below its maximum
 * holds every level (prio, dmdas: any int); else the b-level scaled into that range
 * (a range of 11 priorities: each level a run's eleventh). */
int dit_graph_blevel_priority(const dit_graph *g)
{
	int64_t B = 0, pos = 0;
	for (int i = 0; i < g->model->npools; i++) {
		if (i < g->cur_pool)
			pos += g->model->pool[i].nblocks;
		B += g->model->pool[i].nblocks;
	}
	pos = g->cur_block >= 0 ? pos + g->cur_block + 1 : 0;
	int64_t n = g->nsteps > 0 ? g->nsteps : 1, s = g->step < n ? g->step : n - 1;
	double total = (double)(n * (B + 1)), rem = (double)((n - s) * (B + 1) - pos);
	int lo = starpu_sched_get_min_priority(), hi = starpu_sched_get_max_priority() - 1;
	if (hi <= lo)
		return 0;
	int64_t base = lo < 0 && hi > 0 ? 0 : lo;
	if ((double)(hi - base) >= total)
		return (int)(base + (int64_t)rem);
	int p = lo + (int)((double)(hi - lo) * rem / total + 0.5);
	return p < lo ? lo : p > hi ? hi : p;
}
