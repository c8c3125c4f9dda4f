/* Run statistics: per-step seconds, peak bytes per memory node, bytes moved per link,
 * tasks per codelet; written as JSON with --stats-json. */
#ifndef DIT_STATS_H
#define DIT_STATS_H

#include <pthread.h>
#include <stddef.h>

#include "dit_error.h"
#include "dit_hparams.h"
#include "dit_weights.h"

#define DIT_STATS_MAX_NODES 16
#define DIT_STATS_MAX_BUSES 64

/* What the report says of the run's task graph, given by the app (dit_session's
 * dit_session_stats_graph): the stats never read the graph. */
#define DIT_STATS_MAX_CODELETS 32
/* The version of the --stats-json layout (docs/stats.schema.json): 2 added schema, argv,
 * host, date and video, named rates MB_per_s, and dropped the repeated cpu_workers and
 * run.models_calibrated (perfmodels.calibrated, by the predictor's rule). */
#define DIT_STATS_SCHEMA 2

typedef struct dit_stats_graph {
	const char *family;
	int64_t tokens;              /* of the token stream */
	int64_t tile_rows;           /* rows per tile of the activations (0: no tiles) */
	int token_tiles, text_tiles; /* tiles of the token stream and of the text */
	double flops;                /* GEMM flops submitted */
	int ncodelets;               /* tasks submitted per codelet */
	const char *codelet[DIT_STATS_MAX_CODELETS];
	long count[DIT_STATS_MAX_CODELETS];
	long model_tasks;                  /* compute tasks finished, */
	long model_uncalibrated;           /* of which without a performance model's estimate */
	int expert;                        /* the expert computing last */
	int npasses, slots;                /* passes a step, and in flight at once */
	int64_t chunk_rows;                /* rows of the blocks' token chunks (0: none) */
	size_t activation_bytes;           /* the activations the plan counted */
	const char *priorities;            /* "none", "critical-path", "op-class" */
	int prio_lo, prio_hi;              /* the range given (lo > hi: none) */
	int64_t pool_moved[DIT_MAX_POOLS]; /* per pool index: bytes the weight transfers moved, */
	int64_t pool_kept[DIT_MAX_POOLS];  /* chunks kept on the compute node (every expert's) */
} dit_stats_graph;

typedef struct dit_stats {
	const char *command;        /* "generate" or "forward" */
	const dit_weights *weights; /* the run's weights (their sizes, dtypes and pools) */
	int nsteps;
	double *step_end;   /* [nsteps] seconds (runtime clock) when each step finished */
	double t_submit;    /* when submission started */
	double t_done;      /* when all tasks had finished */
	double t_submitted; /* when the whole graph was submitted */
	int nnodes;
	size_t peak_used[DIT_STATS_MAX_NODES];
	pthread_mutex_t lock;
	int progress; /* dit_progress_mode: a bar or lines on stderr, or nothing */
	int steps_done;
	/* bus counters: StarPU resets them when read, so they are summed here */
	int nbus;
	int64_t bus_bytes[DIT_STATS_MAX_BUSES];
	int bus_transfers[DIT_STATS_MAX_BUSES];
	int64_t *step_bytes; /* [nsteps] bytes moved on all links during each step */
	int64_t bytes_before_steps;
	/* weight transfers, from the xfer tasks (dit_stats_on_xfer) */
	long xfer_count;
	int64_t xfer_bytes;
	double xfer_stall;     /* s the xfer tasks waited for their data on their worker */
	double xfer_predicted; /* s StarPU's bus model gives the bytes moved on all links */
	/* weights resident outside StarPU's accounting (host slabs, the chunk store) */
	size_t weight_bytes[DIT_STATS_MAX_NODES];
	const char *offload_mode;
	int offload_auto;        /* the plan was chosen by --offload auto */
	int compute_node;        /* where the weights are brought (-1: not tracked) */
	const char *model_label; /* --model-dir or --model (NULL: not recorded) */
	int argc;                /* the command line (argv NULL: not recorded) */
	char *const *argv;
	int64_t video[3];  /* frames, height, width in pixels (0: unknown) */
	long long started; /* time(NULL) when the statistics started */
	uint64_t seed;     /* the noise seed (have_seed) */
	int have_seed;
	double predicted_step; /* its predicted s/step (0: none) */
	int64_t chunk_size, prefetch;
	size_t device_limit, host_limit;
	size_t device_outside;   /* CUDA: the codelets' own device memory at most */
	size_t budget;           /* keep what fits: the compute node's budget (0: none) */
	const char *budget_from; /* "limit", "memory" */
	size_t resident_bytes;   /* chunks kept on the compute node */
	const char *store;       /* chunk store directory, NULL without */
	int store_reused;
	const char *store_note; /* why it was written */
	/* disk mode: the chunk reads' bytes, nanoseconds and CPU nanoseconds (dit_diskops),
	 * else NULL */
	const unsigned long long *disk_read_bytes, *disk_read_ns, *disk_read_cpu_ns;
	/* and their values when the first step ended (the steady rate is what follows:
	 * the first step's reads land in buffers new to the process) */
	unsigned long long disk_first_bytes, disk_first_ns, disk_first_cpu_ns;
	/* the store check's plain sequential read of the blocks before the run (O_DIRECT
	 * where it works, one read in flight: the drive's rate), 0 when not checked; the
	 * reads in flight the disk node keeps */
	unsigned long long disk_seq_bytes, disk_seq_ns;
	int disk_reads;
	/* where the blocks were read from ("checkpoint", "store", or both joined by '+'
	 * when the pools differ), and why a pool was not read in place ("" when all were) */
	char disk_source[32];
	char disk_source_why[256];
	const struct dit_hostpool *pool;       /* the runtime's host buffer pool, or NULL */
	const struct dit_cuda_libs *cuda_libs; /* the CUDA workers' libraries, or NULL */
	int expert_steps[DIT_MAX_EXPERTS];     /* steps each expert computed */
} dit_stats;

dit_status dit_stats_init(dit_stats *s, const char *command, int nsteps, int progress,
                          dit_error *err);
void dit_stats_free(dit_stats *s);

/* Enables StarPU's bus profiling; call right after the runtime starts. */
void dit_stats_start(dit_stats *s);

/* Adds the bus counters read since the last call (reading resets them); returns the
 * bytes moved. Called with s->lock held. */
int64_t dit_stats_bus_sample(dit_stats *s);

/* Samples memory use of every node (keeps the peak). Thread-safe. */
void dit_stats_sample(dit_stats *s);

/* Completion callback of a weight transfer task (arg: the stats): accounts its bytes
 * and how long it waited for its data on its worker (time a compute worker lost to
 * the transfer). The hidden fraction reported is 1 - that wait / the time StarPU's
 * bus model gives the bytes moved on all links. */
void dit_stats_on_xfer(void *stats);

/* Step callback of the sampling driver: records the time, samples memory,
 * redraws the progress bar. */
void dit_stats_on_step(void *stats, int step);
/* Disk mode: the chunk reads' bytes, nanoseconds and the reading threads' CPU
 * nanoseconds after the first step (the steady ones); 0 when there were none. */
int dit_stats_disk_steady(const dit_stats *s, unsigned long long *bytes, unsigned long long *ns,
                          unsigned long long *cpu_ns);

/* Writes the JSON report to path atomically (temp file renamed into place);
 * src/obs/dit_stats_json.c. */
/* The stats' "cuda_libraries" object (src/obs/dit_stats_cuda.c), NULL without CUDA
 * workers. */
struct json_object *dit_stats_cuda_json(const struct dit_cuda_libs *L);

dit_status dit_stats_write_json(dit_stats *s, const struct dit_stats_graph *g, const char *path,
                                dit_error *err);

#endif
