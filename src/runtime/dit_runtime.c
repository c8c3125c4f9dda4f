#include "dit_runtime.h"

#include "dit_heteroprio.h"
#include "dit_hostpool.h"
#include "dit_roofline.h"
#include "dit_starpu_env.h"
#include "dit_starpu_home.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>

#include "config.h"
#include "dit_cuda_env.h"
#include "dit_cuda_libs.h"
#include "dit_names.h"
#include "dit_opencl.h"
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
#include <cblas.h>
#endif

void dit_runtime_opts_default(dit_runtime_opts *o)
{
	memset(o, 0, sizeof *o); /* no watchdog */
	o->sched = NULL;
	o->ncpus = -1;
	o->tile_tokens = -1;
	o->workers = DIT_WORKERS_AUTO;
	o->priorities = DIT_PRIORITIES_DEFAULT;
}

static const char *const workers_names[] = {"cpu", "opencl", "all", "cuda", "auto"};

const char *dit_workers_name(dit_workers w)
{
	return dit_name_of(workers_names, 5, (int)w);
}

dit_workers dit_workers_resolve(dit_workers w)
{
	if (w != DIT_WORKERS_AUTO)
		return w;
#ifdef DIT_SIMGRID
	return DIT_WORKERS_CPU;
#else
	return dit_cuda_device_count() > 0 ? DIT_WORKERS_CUDA : DIT_WORKERS_CPU;
#endif
}

dit_status dit_workers_parse(dit_workers *out, const char *name, dit_error *err)
{
	int i = 0;
	dit_status st = dit_name_parse(&i, workers_names, 5, name, "workers", err);
	if (st == DIT_OK)
		*out = (dit_workers)i;
	return st;
}

dit_workers dit_workers_accel(dit_workers w)
{
	w = dit_workers_resolve(w);
	if (w == DIT_WORKERS_ALL)
		return dit_cuda_device_count() > 0 ? DIT_WORKERS_CUDA : DIT_WORKERS_OPENCL;
	return w;
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

/* starpu_shutdown, which writes the performance models, under o->models_lock */
static void shutdown_starpu(const dit_runtime_opts *o)
{
	if (o->models_lock)
		pthread_mutex_lock(o->models_lock);
	starpu_shutdown();
	if (o->models_lock)
		pthread_mutex_unlock(o->models_lock);
}

/* after starpu_shutdown, or when StarPU did not start */
static void rt_free(dit_runtime *rt)
{
	if (rt->pool)
		dit_hostpool_remove(rt->pool);
	free(rt->pool);
	free(rt->roof);
	free(rt);
}

/* Puts back the variables the run set: their earlier value, or none. */
static void restore_env(dit_runtime *rt)
{
	for (int i = 0; rt->set_env[i]; i++) {
		if (rt->saved_env[i])
			setenv(rt->set_env[i], rt->saved_env[i], 1);
		else
			unsetenv(rt->set_env[i]);
		free(rt->saved_env[i]);
		rt->saved_env[i] = NULL;
		rt->set_env[i] = NULL;
	}
}

/* The scheduler of the run: o->sched, else STARPU_SCHED, else dmda, into rt->sched; a
 * name StarPU does not know is a usage error that lists StarPU's. */
static dit_status sched_pick(dit_runtime *rt, const dit_runtime_opts *o, dit_error *err)
{
	const char *sched = o->sched ? o->sched : getenv("STARPU_SCHED");
	if (!sched || !*sched)
		sched = DIT_SCHED_DEFAULT;
	snprintf(rt->sched, sizeof rt->sched, "%s", sched);
	if (sched_known(rt->sched))
		return DIT_OK;
	/* the names, the modular ones counted (the message stays one line) */
	char known[320];
	size_t k = 0;
	int modular = 0;
	known[0] = 0;
	for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); *p; p++) {
		if (strncmp((*p)->policy_name, "modular-", 8) == 0)
			modular++;
		else if (k < sizeof known)
			k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", k ? ", " : "",
			                      (*p)->policy_name);
	}
	return dit_error_set(err, DIT_EUSAGE,
	                     "unknown StarPU scheduler '%.60s' (StarPU's: %s and %d modular-* "
	                     "ones; 'ditstar sched list' describes them)",
	                     sched, known, modular);
}

/* --sim-roofline's figures into rt->roof (attached once StarPU runs); only a simulating
 * build takes them. */
static dit_status roofline_read(dit_runtime *rt, const dit_runtime_opts *o, dit_error *err)
{
	if (!o->sim_roofline)
		return DIT_OK;
#ifdef DIT_SIMGRID
	return (rt->roof = malloc(sizeof *rt->roof))
	           ? dit_roofline_load(rt->roof, o->sim_roofline, err)
	           : dit_error_set(err, DIT_ENOMEM, "out of memory");
#else
	(void)rt;
	return dit_error_set(err, DIT_EUSAGE, "--sim-roofline: only ditstar-sim simulates");
#endif
}

/* The priority scheme into rt->priorities (heteroprio: op-class unless told otherwise);
 * returns whether heteroprio takes the op-class buckets with ditstar's mapping,
 * instead of its auto-calibration (which would overwrite it). */
static int priorities_pick(dit_runtime *rt, const dit_runtime_opts *o, struct starpu_conf *conf)
{
	int heteroprio = strcmp(rt->sched, "heteroprio") == 0;
	rt->priorities = o->priorities != DIT_PRIORITIES_DEFAULT ? o->priorities
	                 : heteroprio                            ? DIT_PRIORITIES_OP_CLASS
	                                                         : DIT_PRIORITIES_NONE;
	int hp_map = heteroprio && rt->priorities == DIT_PRIORITIES_OP_CLASS;
	if (hp_map)
		conf->sched_policy_callback = dit_heteroprio_init_sched;
	return hp_map;
}

/* The workers StarPU is to start (rt->workers, rt->accel, conf's device counts): an
 * accelerator this build or machine lacks is an error. *ocl_on_cpus: whether
 * STARPU_OPENCL_ON_CPUS was set here, to unset after starpu_init.
 *
 * StarPU sees the same devices whatever the workers: a kind not asked for starts no
 * worker (conf's count 0) but its devices are still counted. Its bus model
 * (<host>.config) records the device counts and is measured again whenever they differ
 * from the file's: CPU-type OpenCL devices (PoCL), counted by OpenCL runs, are counted
 * by every run once the bus model has OpenCL devices (else each switch between
 * --workers cpu and opencl measured the bus again); before that a run does not start
 * the OpenCL platform it does not use. */
static dit_status workers_pick(dit_runtime *rt, const dit_runtime_opts *o, struct starpu_conf *conf,
                               int *ocl_on_cpus, dit_error *err)
{
	(void)err; /* unused when this build has every kind of worker */
	rt->workers = o->workers;
	/* all: CUDA GPUs when this build has CUDA and the machine a GPU, else OpenCL */
	dit_workers accel = dit_workers_accel(o->workers);
	if (accel == DIT_WORKERS_CUDA) {
#if !defined(DIT_HAVE_CUDA) && !defined(DIT_SIMGRID)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "--workers %s: ditstar was built without CUDA (configure "
		                     "--with-cuda, with a CUDA-enabled StarPU)",
		                     dit_workers_name(o->workers));
#endif
#ifndef DIT_SIMGRID /* simulated: the platform's CUDA devices */
		if (dit_cuda_device_count() <= 0)
			return dit_error_set(
			    err, DIT_ERUNTIME,
			    "--workers %s: no usable CUDA device (the CUDA runtime says: %s)",
			    dit_workers_name(o->workers), dit_cuda_device_error());
#endif
		/* CPU workers stay for the few CPU-only tasks (--check-finite); the
		 * compute tasks are restricted to the GPUs by their worker mask */
		conf->nopencl = 0;
	} else if (accel == DIT_WORKERS_OPENCL) {
#ifndef STARPU_USE_OPENCL
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "--workers %s: this StarPU was built without OpenCL",
		                     dit_workers_name(o->workers));
#endif
		conf->ncuda = 0;
	} else {
		conf->ncuda = 0;
		conf->nopencl = 0;
	}
	/* CPU-type OpenCL devices: OpenCL runs', and every run's once the bus model counts
	 * OpenCL devices (set for starpu_init only; a value of the user's is kept) */
	if (!getenv("STARPU_OPENCL_ON_CPUS") &&
	    (accel == DIT_WORKERS_OPENCL || dit_starpu_bus_opencl_nodes() > 0)) {
		setenv("STARPU_OPENCL_ON_CPUS", "1", 1);
		*ocl_on_cpus = 1;
	}
	rt->accel = accel;
	return DIT_OK;
}

/* The planner's limits and the trace settings, for this run only: each variable set
 * is noted in rt->set_env with its earlier value, for restore_env. */
static void run_env_set(dit_runtime *rt, const dit_runtime_opts *o, int ocl_on_cpus, int hp_map)
{
	int nset = 0;
	for (int i = 0; i < DIT_RUNTIME_MAX_ENV; i++) {
		const char *name = o->env[i].name, *have = name ? getenv(name) : NULL;
		if (!name || (have && !o->env[i].force))
			continue;
		rt->saved_env[nset] = have ? strdup(have) : NULL;
		setenv(name, o->env[i].text ? o->env[i].text : o->env[i].value, 1);
		rt->set_env[nset++] = name;
	}
	if (ocl_on_cpus)
		rt->set_env[nset++] = "STARPU_OPENCL_ON_CPUS";
	static const char auto_cal[] = "STARPU_HETEROPRIO_USE_AUTO_CALIBRATION";
	if (hp_map && !getenv(auto_cal)) { /* for starpu_init only */
		setenv(auto_cal, "0", 1);
		rt->saved_env[nset] = NULL;
		rt->set_env[nset++] = auto_cal;
	}
}

/* starpu_init, with the host chunk pool installed first; on failure the run's
 * variables are put back. */
static dit_status starpu_start(dit_runtime *rt, struct starpu_conf *conf, dit_error *err)
{
#ifndef DIT_SIMGRID
	/* chunk buffers reused across evictions; StarPU pins its own with CUDA */
	if (rt->accel != DIT_WORKERS_CUDA && (rt->pool = malloc(sizeof *rt->pool)) != NULL)
		dit_hostpool_install(rt->pool);
#endif
	int ret = starpu_init(conf);
	if (ret != 0)
		restore_env(rt);
	if (ret == -ENODEV)
		return dit_error_set(err, DIT_ERUNTIME, "StarPU found no worker to run on");
	if (ret != 0)
		return dit_error_set(err, DIT_ERUNTIME, "StarPU failed to start (%s)",
		                     strerror(-ret));
	return DIT_OK;
}

/* The workers StarPU started, counted into rt: none of the kind asked for is an
 * error; OpenCL workers get the codelets' kernels built. */
static dit_status workers_check(dit_runtime *rt, const dit_runtime_opts *o, dit_error *err)
{
	rt->ncpus = (int)starpu_cpu_worker_get_count();
	rt->nopencl = (int)starpu_opencl_worker_get_count();
	rt->ncuda = (int)starpu_cuda_worker_get_count();
	dit_status st = DIT_OK;
	if (rt->accel == DIT_WORKERS_CUDA && rt->ncuda == 0)
		st = dit_error_set(err, DIT_ERUNTIME,
		                   "--workers %s: StarPU started no CUDA worker (check "
		                   "STARPU_NCUDA)",
		                   dit_workers_name(o->workers));
	else if (rt->accel == DIT_WORKERS_OPENCL && rt->nopencl == 0)
		st = dit_error_set(err, DIT_ERUNTIME,
		                   "--workers %s: no OpenCL device found (install an OpenCL "
		                   "driver, e.g. Debian's pocl-opencl-icd)",
		                   dit_workers_name(o->workers));
	else if (o->workers != DIT_WORKERS_OPENCL && o->workers != DIT_WORKERS_CUDA &&
	         rt->ncpus == 0)
		st = dit_error_set(err, DIT_ERUNTIME,
		                   "StarPU started without CPU workers (check STARPU_NCPU)");
#ifdef STARPU_USE_OPENCL
	/* the OpenCL codelets' kernels, built for every OpenCL device StarPU took */
	if (st == DIT_OK && rt->nopencl > 0)
		st = dit_opencl_init(err);
#endif
	return st;
}

/* Where the compute tasks run: their worker mask (rt->where) and the memory node their
 * workers use (the first accelerator's when only accelerators compute). */
static void compute_place(dit_runtime *rt, const dit_runtime_opts *o)
{
	uint32_t accel_mask = rt->accel == DIT_WORKERS_CUDA ? STARPU_CUDA : STARPU_OPENCL;
	switch (o->workers) {
	case DIT_WORKERS_AUTO: /* resolved when the runtime started: never here */
	case DIT_WORKERS_CPU: rt->where = STARPU_CPU; break;
	case DIT_WORKERS_OPENCL: rt->where = STARPU_OPENCL; break;
	case DIT_WORKERS_CUDA: rt->where = STARPU_CUDA; break;
	case DIT_WORKERS_ALL: rt->where = STARPU_CPU | accel_mask; break;
	}
	rt->compute_node = STARPU_MAIN_RAM;
	if (o->workers == DIT_WORKERS_OPENCL || o->workers == DIT_WORKERS_CUDA) {
		int id;
		enum starpu_worker_archtype t =
		    rt->accel == DIT_WORKERS_CUDA ? STARPU_CUDA_WORKER : STARPU_OPENCL_WORKER;
		if (starpu_worker_get_ids_by_type(t, &id, 1) == 1)
			rt->compute_node = (int)starpu_worker_get_memory_node((unsigned)id);
	}
}

dit_status dit_runtime_init(dit_runtime **out, const dit_runtime_opts *o, dit_error *err)
{
	dit_runtime_opts def;
	if (!o) {
		dit_runtime_opts_default(&def);
		o = &def;
	}
	dit_runtime_opts ro = *o; /* --workers auto: the kind it means here */
	ro.workers_auto |= o->workers == DIT_WORKERS_AUTO;
	ro.workers = dit_workers_resolve(o->workers);
	o = &ro;
	/* what StarPU would abort on, as one-line errors */
	dit_status st = dit_starpu_env_check(err);
	if (st == DIT_OK && o->check_models)
		st = dit_starpu_models_check(err);
	if (st != DIT_OK)
		return st;
	dit_runtime *rt = calloc(1, sizeof *rt);
	if (!rt)
		return dit_error_set(err, DIT_ENOMEM, "out of memory starting the runtime");

	struct starpu_conf conf;
	int ocl_on_cpus = 0, hp_map = 0;
	starpu_conf_init(&conf);
	st = sched_pick(rt, o, err);
	if (st == DIT_OK) {
		conf.sched_policy_name = rt->sched;
		st = roofline_read(rt, o, err);
	}
	if (st == DIT_OK) {
		hp_map = priorities_pick(rt, o, &conf);
		if (o->calibrate)
			conf.calibrate = 1;
		if (o->ncpus >= 0)
			conf.ncpus = o->ncpus;
		st = workers_pick(rt, o, &conf, &ocl_on_cpus, err);
	}
	if (st != DIT_OK) {
		rt_free(rt);
		return st;
	}
	/* StarPU owns the cores: one BLAS thread per worker. */
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
	openblas_set_num_threads(1);
#endif
	run_env_set(rt, o, ocl_on_cpus, hp_map);
	st = starpu_start(rt, &conf, err);
	if (st != DIT_OK) {
		rt_free(rt);
		return st;
	}
	st = workers_check(rt, o, err);
	if (st != DIT_OK) {
		shutdown_starpu(o);
		restore_env(rt);
		rt_free(rt);
		return st;
	}
#ifdef DIT_HAVE_CUDA
	/* one cuBLAS handle per CUDA worker, bound to the worker's stream, then each
	 * worker's cuDNN and cuBLASLt (dit_cuda_libs.h) */
	if (rt->ncuda > 0) {
		starpu_cublas_init();
		st = dit_cuda_libs_init(&rt->cuda_libs, err);
		if (st != DIT_OK) {
			starpu_cublas_shutdown();
			shutdown_starpu(o);
			restore_env(rt);
			rt_free(rt);
			return st;
		}
	}
#endif
	compute_place(rt, o);
	if (rt->roof)
		dit_roofline_attach(rt->roof);
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
#ifdef DIT_HAVE_CUDA
	if (rt->ncuda > 0) {
		dit_cuda_libs_shutdown(rt->cuda_libs);
		rt->cuda_libs = NULL;
		starpu_cublas_shutdown();
	}
#endif
	shutdown_starpu(&rt->opts);
	if (rt->roof)
		dit_roofline_attach(NULL);
	restore_env(rt);
	rt_free(rt);
}
