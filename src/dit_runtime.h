/* The runtime context: StarPU started with the workers and scheduler asked for. All
 * mutable state of a run hangs off this context or objects created from it. */
#ifndef DIT_RUNTIME_H
#define DIT_RUNTIME_H

#include "dit_error.h"

typedef struct dit_runtime_opts {
	const char *sched; /* StarPU scheduler name; NULL: $STARPU_SCHED or "dmda" */
	int ncpus;         /* CPU workers; -1: StarPU's choice ($STARPU_NCPU or all cores) */
} dit_runtime_opts;

typedef struct dit_runtime {
	int ncpus;
	char sched[64];
	double t_start; /* seconds, starpu_timing_now() / 1e6 at init */
} dit_runtime;

void dit_runtime_opts_default(dit_runtime_opts *o);

/* Starts StarPU. One runtime per process at a time (a StarPU rule). */
dit_status dit_runtime_init(dit_runtime **out, const dit_runtime_opts *o, dit_error *err);
void dit_runtime_shutdown(dit_runtime *rt);

/* Seconds since an arbitrary origin, from StarPU's clock. */
double dit_runtime_now(void);

#endif
