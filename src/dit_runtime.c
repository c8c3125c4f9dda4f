#include "dit_runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>

#include "config.h"
#include "dit_opencl.h"
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
#include <cblas.h>
#endif

void dit_runtime_opts_default(dit_runtime_opts *o)
{
	o->sched = NULL;
	o->ncpus = -1;
	o->workers = DIT_WORKERS_CPU;
}

static const char *const workers_names[] = {"cpu", "opencl", "all"};

const char *dit_workers_name(dit_workers w)
{
	return (unsigned)w < 3 ? workers_names[w] : "?";
}

dit_status dit_workers_parse(dit_workers *out, const char *name, dit_error *err)
{
	for (int i = 0; i < 3; i++) {
		if (strcmp(name, workers_names[i]) == 0) {
			*out = (dit_workers)i;
			return DIT_OK;
		}
	}
	return dit_error_set(err, DIT_EINVAL, "unknown workers '%s' (cpu, opencl or all)", name);
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

/* Polls StarPU's count of submitted tasks not yet finished: pending tasks and no
 * change for watchdog_s seconds is a hang. */
static void *watchdog_main(void *arg)
{
	dit_runtime *rt = arg;
	int last = -1;
	double since = dit_runtime_now();
	while (!rt->watchdog_stop) {
		struct timespec ts = {0, 200 * 1000 * 1000};
		nanosleep(&ts, NULL);
		int pending = starpu_task_nsubmitted();
		double now = dit_runtime_now();
		if (pending != last || pending == 0) {
			last = pending;
			since = now;
		} else if (now - since > rt->opts.watchdog_s) {
			rt->opts.on_hang(rt->opts.on_hang_arg, now - since);
			since = now;
		}
	}
	return NULL;
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
	conf.ncuda = 0;
	rt->workers = o->workers;
	if (o->workers == DIT_WORKERS_CPU) {
		conf.nopencl = 0;
	} else {
#ifndef STARPU_USE_OPENCL
		free(rt);
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "--workers %s: this StarPU was built without OpenCL",
		                     dit_workers_name(o->workers));
#endif
		/* CPU-type OpenCL devices (PoCL) count too when OpenCL is asked for. */
		setenv("STARPU_OPENCL_ON_CPUS", "1", 0);
	}

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
	rt->nopencl = (int)starpu_opencl_worker_get_count();
	if (o->workers != DIT_WORKERS_CPU && rt->nopencl == 0) {
		starpu_shutdown();
		free(rt);
		return dit_error_set(err, DIT_ERUNTIME,
		                     "--workers %s: no OpenCL device found (install an OpenCL "
		                     "driver, e.g. Debian's pocl-opencl-icd)",
		                     dit_workers_name(o->workers));
	}
	if (o->workers != DIT_WORKERS_OPENCL && rt->ncpus == 0) {
		starpu_shutdown();
		free(rt);
		return dit_error_set(err, DIT_ERUNTIME,
		                     "StarPU started without CPU workers (check STARPU_NCPU)");
	}
#ifdef STARPU_USE_OPENCL
	/* the OpenCL codelets' kernels, built for every OpenCL device StarPU took */
	if (rt->nopencl > 0) {
		dit_status st = dit_opencl_init(err);
		if (st != DIT_OK) {
			starpu_shutdown();
			free(rt);
			return st;
		}
	}
#endif
	switch (o->workers) {
	case DIT_WORKERS_CPU: rt->where = STARPU_CPU; break;
	case DIT_WORKERS_OPENCL: rt->where = STARPU_OPENCL; break;
	case DIT_WORKERS_ALL: rt->where = STARPU_CPU | STARPU_OPENCL; break;
	}
	rt->compute_node = STARPU_MAIN_RAM;
	if (o->workers == DIT_WORKERS_OPENCL) {
		int id;
		if (starpu_worker_get_ids_by_type(STARPU_OPENCL_WORKER, &id, 1) == 1)
			rt->compute_node = (int)starpu_worker_get_memory_node((unsigned)id);
	}
	rt->t_start = dit_runtime_now();
	rt->opts = *o;
	if (o->watchdog_s > 0 && o->on_hang)
		rt->watchdog_on = pthread_create(&rt->watchdog, NULL, watchdog_main, rt) == 0;
	*out = rt;
	return DIT_OK;
}

void dit_runtime_shutdown(dit_runtime *rt)
{
	if (!rt)
		return;
	if (rt->watchdog_on) {
		rt->watchdog_stop = 1;
		pthread_join(rt->watchdog, NULL);
	}
#ifdef STARPU_USE_OPENCL
	dit_opencl_shutdown();
#endif
	starpu_shutdown();
	free(rt);
}
