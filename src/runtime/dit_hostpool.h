/* Host RAM buffers of chunks, kept across an eviction for the next chunk of the
 * same size. StarPU frees a chunk's RAM copy when it evicts it and allocates a fresh
 * one for the next chunk; the kernel then faults in and zeroes every page of it
 * during the chunk store's read, which made the disk link 2-3x slower than a read
 * into a used buffer (perf/results/bench-auto.md) and its rate depend on the plan.
 * The pool is StarPU's allocation hook (starpu_malloc_set_hooks) while the runtime
 * runs: a freed buffer of at least DIT_HOSTPOOL_MIN bytes is kept (at most
 * DIT_HOSTPOOL_MAX of them, the oldest freed first), and an allocation of the same
 * size takes it back. What it keeps is beside StarPU's own accounting, so RAM may
 * hold up to DIT_HOSTPOOL_MAX chunks more than --host-mem-limit for a moment.
 * Not used with CUDA workers (StarPU pins its RAM buffers there itself) nor when
 * simulating (StarPU's simulated buffers are not real). */
#ifndef DIT_HOSTPOOL_H
#define DIT_HOSTPOOL_H

#include <pthread.h>
#include <stddef.h>

#define DIT_HOSTPOOL_MAX 2
#define DIT_HOSTPOOL_MIN ((size_t)256 << 10)

typedef struct dit_hostpool {
	pthread_mutex_t mu;
	void *buf[DIT_HOSTPOOL_MAX];
	size_t dim[DIT_HOSTPOOL_MAX];
	int n;             /* buffers kept, oldest first */
	long hits, allocs; /* allocations served from the pool, and all pooled-size ones */
} dit_hostpool;

/* Makes hp StarPU's allocator of host RAM, before starpu_init. One pool at a time
 * (StarPU's hooks are process-wide, like StarPU itself). */
void dit_hostpool_install(dit_hostpool *hp);
/* After starpu_shutdown: StarPU's own allocator again, the kept buffers freed. */
void dit_hostpool_remove(dit_hostpool *hp);

#endif
