/* The runtime context: StarPU started with the workers and scheduler asked for. The
 * state of a run hangs off this context and the session's objects, except the OpenCL
 * programs and kernels (codelets/opencl_glue.c keeps them per worker, as StarPU
 * allows one runtime per process). Variables StarPU reads at start (the planner's
 * memory limits) are set for starpu_init only and restored right after. */
#ifndef DIT_RUNTIME_H
#define DIT_RUNTIME_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "dit_error.h"

/* Which workers compute. Results are byte-identical run to run for cpu, opencl and
 * cuda; with all, a task may run on either kind, so results agree within a
 * tolerance. */
typedef enum dit_workers {
	DIT_WORKERS_CPU = 0, /* CPU cores */
	DIT_WORKERS_OPENCL,  /* the OpenCL devices; their memory is a node of its own */
	DIT_WORKERS_ALL,     /* CPU cores and the accelerators (CUDA GPUs when there are
	                        any, else OpenCL devices); the scheduler decides */
	DIT_WORKERS_CUDA,    /* the CUDA GPUs (one worker each) */
	DIT_WORKERS_AUTO,    /* the default: CUDA when the build has it and a GPU is there,
	                        else the CPU cores (dit_workers_resolve) */
} dit_workers;

dit_status dit_workers_parse(dit_workers *out, const char *name, dit_error *err);

/* w, or for DIT_WORKERS_AUTO the kind it means here: CUDA when the build has it and a
 * device answers, else CPU (ditstar-sim: CPU; its devices are the platform's, asked
 * for by name). Asked before the runtime starts; the entry points (generate, forward,
 * calibrate) resolve their options with it first. */
dit_workers dit_workers_resolve(dit_workers w);

/* The accelerator kind w computes with (DIT_WORKERS_CUDA, _OPENCL, or _CPU for none):
 * all means CUDA when the build has it and a GPU is there, else OpenCL. Can be asked
 * before the runtime starts. */
dit_workers dit_workers_accel(dit_workers w);
const char *dit_workers_name(dit_workers w);

/* A variable StarPU reads (a memory limit the planner chose, the trace settings), set
 * from starpu_init to starpu_shutdown only and then removed again, and never over a
 * value the user set. */
#define DIT_RUNTIME_MAX_ENV 8
typedef struct dit_env_var {
	const char *name; /* NULL: unused */
	char value[32];
	const char *text; /* when set, the value instead of value[] (must outlive the run) */
	int force;        /* set even over the environment's value (then restored) */
} dit_env_var;

/* --priorities: none (every compute task 0), critical-path (the b-level, dit_graph.h),
 * op-class (heteroprio's buckets, dit_heteroprio.h); the default: op-class with
 * heteroprio, else none */
enum {
	DIT_PRIORITIES_DEFAULT = -1,
	DIT_PRIORITIES_NONE = 0,
	DIT_PRIORITIES_CRITICAL_PATH = 1,
	DIT_PRIORITIES_OP_CLASS = 2
};

typedef struct dit_runtime_opts {
	const char *sched; /* StarPU scheduler name; NULL: $STARPU_SCHED or "dmda" */
	int ncpus;         /* CPU workers; -1: StarPU's choice ($STARPU_NCPU or all cores) */
	dit_workers workers;
	/* Rows per task of the activations (--tile-tokens): each op of a forward is one
	 * task per row tile (dit_tiles.h); 0: one task per op; -1: the default,
	 * dit_tile_default(tokens) when only CPU workers compute, else one per op. */
	int64_t tile_tokens;
	/* Watchdog: when tasks are pending and none has finished for watchdog_s seconds
	 * (0: off), on_hang(arg, idle seconds) is called from a watchdog thread; the
	 * caller decides what to do (the command reports the hang and exits). */
	double watchdog_s;
	void (*on_hang)(void *arg, double idle_s);
	void *on_hang_arg;
	/* check StarPU's performance-model files first (dit_starpu_models_check): only in
	 * a process's first runtime, as the command's */
	int check_models;
	/* held by the runtime while starpu_shutdown writes the performance models (NULL:
	 * none). StarPU truncates a model file and then writes it: a process ended in
	 * between leaves the model cut short, and every later run refuses it. A caller
	 * that ends the process on a signal (ditstar's Ctrl-C) takes this lock first. */
	pthread_mutex_t *models_lock;
	int workers_auto; /* workers is what --workers auto chose (said in the report) */
	/* the command line, recorded in the statistics (argv NULL: not recorded) */
	int argc;
	char *const *argv;
	int calibrate;  /* starpu_conf.calibrate: update the models with every measure */
	int priorities; /* --priorities: the compute tasks' priorities, DIT_PRIORITIES_* */
	const char *sim_roofline; /* ditstar-sim: task lengths from this roofline file */
	dit_env_var env[DIT_RUNTIME_MAX_ENV];
} dit_runtime_opts;

typedef struct dit_runtime {
	int ncpus;
	int nopencl;
	int ncuda;
	dit_workers workers;
	dit_workers accel; /* DIT_WORKERS_OPENCL or _CUDA: the accelerator kind in use, or
	                      DIT_WORKERS_CPU when none */
	uint32_t where;    /* StarPU worker mask of the compute tasks */
	int compute_node;  /* memory node the compute workers use */
	char sched[64];
	int priorities;            /* the scheme in force, DIT_PRIORITIES_* (never _DEFAULT) */
	struct dit_roofline *roof; /* ditstar-sim --sim-roofline, or NULL */
	struct dit_hostpool *pool; /* StarPU's host RAM allocator, or NULL (dit_hostpool.h) */
	struct dit_cuda_libs *cuda_libs; /* the CUDA workers' cuDNN/cuBLASLt, or NULL */
	double t_start;            /* seconds, starpu_timing_now() / 1e6 at init */
	/* watchdog */
	pthread_t watchdog;
	int watchdog_on;
	volatile int watchdog_stop;
	/* variables set for the run, removed after starpu_shutdown */
	const char *set_env[DIT_RUNTIME_MAX_ENV + 3];
	char *saved_env[DIT_RUNTIME_MAX_ENV + 3]; /* their earlier values (NULL: unset) */
	dit_runtime_opts opts;
} dit_runtime;

void dit_runtime_opts_default(dit_runtime_opts *o);

/* Where StarPU's tools are (the prefix ditstar was built against: starpu_fxt_tool and
 * the others traces and models are read with) and where StarPU keeps its performance
 * models and bus calibration (STARPU_PERF_MODEL_DIR, STARPU_HOME, HOME), one a line:
 * `ditstar --paths`. */
void dit_runtime_paths(FILE *out);

/* The scheduler when neither --sched nor STARPU_SCHED names one. */
#define DIT_SCHED_DEFAULT "dmda"

/* StarPU's scheduling policies, one a line: name, marks (`default`, `priorities`: it
 * reads the tasks' priorities, `models`: it places tasks by calibrated performance
 * models) and description (src/runtime/dit_sched_info.c). */
void dit_runtime_sched_list(FILE *out);
/* Whether policy name reads the tasks' priorities (its range is wider than one value),
 * and whether it places tasks by their performance models. */
int dit_sched_reads_priorities(const char *name);
int dit_sched_uses_models(const char *name);

/* Starts StarPU. One runtime per process at a time (a StarPU rule). */
dit_status dit_runtime_init(dit_runtime **out, const dit_runtime_opts *o, dit_error *err);
void dit_runtime_shutdown(dit_runtime *rt);

/* Seconds since an arbitrary origin, from StarPU's clock. */
double dit_runtime_now(void);

#endif
