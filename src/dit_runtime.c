#include "dit_runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "config.h"
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
#include <cblas.h>
#endif

void dit_runtime_opts_default(dit_runtime_opts *o)
{
	o->sched = NULL;
	o->ncpus = -1;
}

double dit_runtime_now(void)
{
	return starpu_timing_now() * 1e-6;
}

static int sched_known(const char *name)
{
	struct starpu_sched_policy **p = starpu_sched_get_predefined_policies();
	for (; *p; p++)
		if (strcmp((*p)->policy_name, name) == 0)
			return 1;
	return 0;
}

dit_status dit_runtime_init(dit_runtime **out, const dit_runtime_opts *o, dit_error *err)
{
	dit_runtime_opts def;
	if (!o) {
		dit_runtime_opts_default(&def);
		o = &def;
	}
	dit_runtime *rt = calloc(1, sizeof *rt);
	if (!rt)
		return dit_error_set(err, DIT_ENOMEM, "out of memory starting the runtime");

	struct starpu_conf conf;
	starpu_conf_init(&conf);
	const char *sched = o->sched ? o->sched : getenv("STARPU_SCHED");
	if (!sched || !*sched)
		sched = "dmda";
	snprintf(rt->sched, sizeof rt->sched, "%s", sched);
	if (!sched_known(rt->sched)) {
		free(rt);
		return dit_error_set(err, DIT_EINVAL,
		                     "unknown StarPU scheduler '%s' (STARPU_SCHED=help lists them)",
		                     sched);
	}
	conf.sched_policy_name = rt->sched;
	if (o->ncpus >= 0)
		conf.ncpus = o->ncpus;
	/* Only CPU codelets exist so far: keep accelerator workers out. */
	conf.ncuda = 0;
	conf.nopencl = 0;

	/* StarPU owns the cores: one BLAS thread per worker. */
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
	openblas_set_num_threads(1);
#endif
	int ret = starpu_init(&conf);
	if (ret == -ENODEV) {
		free(rt);
		return dit_error_set(err, DIT_ERUNTIME, "StarPU found no worker to run on");
	}
	if (ret != 0) {
		free(rt);
		return dit_error_set(err, DIT_ERUNTIME, "StarPU failed to start (%s)",
		                     strerror(-ret));
	}
	rt->ncpus = (int)starpu_cpu_worker_get_count();
	if (rt->ncpus == 0) {
		starpu_shutdown();
		free(rt);
		return dit_error_set(err, DIT_ERUNTIME,
		                     "StarPU started without CPU workers (check STARPU_NCPU)");
	}
	rt->t_start = dit_runtime_now();
	*out = rt;
	return DIT_OK;
}

void dit_runtime_shutdown(dit_runtime *rt)
{
	if (!rt)
		return;
	starpu_shutdown();
	free(rt);
}
