/* heteroprio's bucket mapping under --priorities op-class (see dit_heteroprio.h). */
#include "dit_heteroprio.h"

#include <starpu.h>
#include <starpu_heteroprio.h>

static void map(unsigned ctx, enum starpu_worker_archtype arch, const unsigned *order, unsigned n)
{
	starpu_heteroprio_set_nb_prios(ctx, arch, n);
	for (unsigned i = 0; i < n; i++)
		starpu_heteroprio_set_mapping(ctx, arch, i, order[i]);
}

void dit_heteroprio_init_sched(unsigned ctx)
{
	static const unsigned cpu_order[] = {DIT_BUCKET_HOST, DIT_BUCKET_LIGHT,
	                                     DIT_BUCKET_ATTENTION, DIT_BUCKET_GEMM};
	static const unsigned dev_order[] = {DIT_BUCKET_DEVICE, DIT_BUCKET_GEMM,
	                                     DIT_BUCKET_ATTENTION, DIT_BUCKET_LIGHT};
	static const unsigned shared[] = {DIT_BUCKET_GEMM, DIT_BUCKET_ATTENTION, DIT_BUCKET_LIGHT};
	static const float slow[] = {DIT_HETEROPRIO_SLOW_GEMM, DIT_HETEROPRIO_SLOW_ATTENTION,
	                             DIT_HETEROPRIO_SLOW_LIGHT};
	const enum starpu_worker_archtype devs[] = {STARPU_OPENCL_WORKER, STARPU_CUDA_WORKER};
	int cpu = starpu_worker_get_count_by_type(STARPU_CPU_WORKER) > 0;
	if (cpu)
		map(ctx, STARPU_CPU_WORKER, cpu_order, 4);
	for (unsigned d = 0; d < sizeof devs / sizeof devs[0]; d++) {
		if (starpu_worker_get_count_by_type(devs[d]) <= 0)
			continue;
		map(ctx, devs[d], dev_order, 4);
		for (unsigned b = 0; cpu && b < 3; b++) {
			starpu_heteroprio_set_faster_arch(ctx, devs[d], shared[b]);
			starpu_heteroprio_set_arch_slow_factor(ctx, STARPU_CPU_WORKER, shared[b],
			                                       slow[b]);
		}
	}
}
