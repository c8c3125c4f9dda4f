/* The planner's time model: a step's seconds predicted from StarPU's calibrated
 * performance models (the codelets' history models and the bus model) and from the
 * step profile `ditstar calibrate` records (tasks/dit_profile.h: which tasks, of which
 * shape, each block and the rest of a step submit).
 *
 * Compute: each profiled task costs its model's mean at its footprint on the compute
 * workers' architecture; a block costs the sum over its passes, divided by the workers
 * that share it (CPU workers, at most passes x row tiles; one accelerator). Links: a
 * chunk's transfer from host RAM to a device costs what StarPU's bus model predicts
 * for its bytes; from the disk node, its bytes at the read rate `ditstar calibrate`
 * measured on the chunk store (StarPU's own figure for a disk node is a write-and-
 * fsync test at plug time, not the rate of its reads). The step is then played as the
 * runtime orders it: chunk uses in submission order, one transfer at a time on the
 * link, fetch j starting once the use of fetch j - prefetch - 1 was computed and the
 * link is free, each use computed once its chunk is there and the use before it is
 * done, resident chunks brought once; the third step of three is the steady step.
 * Exposed transfer = step - compute alone. */
#ifndef DIT_PREDICT_H
#define DIT_PREDICT_H

#include "dit_planner.h"
#include "dit_profile.h"

/* The profile priced on one architecture. */
typedef struct dit_step_price {
	double pre, post;             /* seconds outside the blocks, before and after them */
	double *block[DIT_MAX_POOLS]; /* [nblocks]: each block's seconds, passes together */
	int64_t nblocks[DIT_MAX_POOLS];
	int npools, npasses;
	long tasks, uncalibrated; /* tasks priced, and those whose model had no estimate */
	int width;                /* workers sharing a step's tasks */
	/* the CPU workers take every core: the disk node's reads (and checksums) run on
	 * their cores, so a step is at least its compute + the link's busy time / width */
	int reads_share_cores;
	char arch[64]; /* the architecture priced on */
} dit_step_price;

typedef struct dit_prediction {
	int available; /* else why says what is missing */
	char why[600];
	double step_s;    /* a steady step */
	double compute_s; /* its compute alone */
	double exposed_s; /* step - compute: transfer time not hidden */
	double link_s;    /* the links' busy time in a step */
	long tasks, uncalibrated;
	double disk_bps;       /* the disk read rate used (0: no disk link) */
	double disk_cpu_bps;   /* bytes per CPU second of the reads (0: not measured) */
	const char *disk_from; /* "calibrated reads", "StarPU's plug-time estimate" */
	char profile[4096];    /* the profile file */
} dit_prediction;

/* The profile's key: the family, its shapes and dtype, the grid, passes, the
 * conditioning, the accelerator kind, the row tiles and the token chunks (what decides
 * the tasks). */
void dit_profile_key(char *buf, size_t len, const dit_plan_req *rq, int accel, int64_t tile_rows,
                     int64_t chunk_rows);

/* The folder StarPU keeps its models in: $STARPU_PERF_MODEL_DIR, else
 * ${STARPU_HOME:-$HOME}/.starpu/sampling. */
void dit_perf_model_dir(char *buf, size_t len);
/* <StarPU's model folder>/ditstar/profile-<hash of key>.txt, and the disk rate's file. */
void dit_profile_path(char *buf, size_t len, const char *key);
void dit_disk_rate_path(char *buf, size_t len);
/* Written atomically (a temporary file renamed); the folder is made when missing. */
dit_status dit_profile_save(const dit_profile *p, const char *key, dit_error *err);
/* 1 when the file for key exists and holds key (p initialised then), else 0. */
int dit_profile_load(dit_profile *p, const char *key);
/* The chunk store's reads: bytes per second of a run's wall clock (the disk link),
 * and bytes per CPU second of the threads that read them (what the reads take from
 * workers sharing their cores). */
typedef struct dit_disk_rate {
	double bps;
	double cpu_bps; /* 0: not measured */
} dit_disk_rate;
/* The rates of reads of bytes in ns nanoseconds and cpu_ns CPU nanoseconds (ns > 0). */
static inline dit_disk_rate dit_disk_rate_of(unsigned long long bytes, unsigned long long ns,
                                             unsigned long long cpu_ns)
{
	dit_disk_rate r = {(double)bytes / ((double)ns * 1e-9),
	                   cpu_ns ? (double)bytes / ((double)cpu_ns * 1e-9) : 0};
	return r;
}
/* The disk rate's file: "read_bytes_per_second R" and "read_cpu_bytes_per_second C",
 * the medians of the "sample S C" lines below them (bytes/s; C 0 when not measured,
 * a missing C an older file's), the last DIT_DISK_SAMPLES measured: calibrate's
 * rounds, then each disk-mode run's steady reads (dit_disk_rate_add), as StarPU's
 * models take every run's measures. save replaces the samples with rates[0..n). */
#define DIT_DISK_SAMPLES 8
dit_status dit_disk_rate_save(const dit_disk_rate *rates, int n, dit_error *err);
/* Appends a run's rates when the file exists (a calibrated store), dropping the oldest
 * beyond DIT_DISK_SAMPLES; 1 when it was added. */
int dit_disk_rate_add(dit_disk_rate r);
/* The medians (the CPU one over the samples that have it); bps 0 when none was
 * measured. */
dit_disk_rate dit_disk_rate_load(void);

/* Prices p with StarPU's models on the compute workers of rt (StarPU running):
 * tiles row tiles per activation. A run whose CPU and accelerator workers share the
 * tasks has no single architecture: DIT_EUNSUPPORTED. */
dit_status dit_step_price_make(dit_step_price *sp, const dit_profile *p, const dit_runtime *rt,
                               int npasses, int tiles, dit_error *err);
void dit_step_price_free(dit_step_price *sp);
/* Whether at most 5% of the priced tasks lacked an estimate. */
int dit_step_price_calibrated(const dit_step_price *sp);
/* dit_step_price_make for the run rq with rto (its row tiles). */
dit_status dit_predict_price(dit_step_price *sp, const dit_profile *p, const dit_runtime *rt,
                             const dit_plan_req *rq, const dit_runtime_opts *rto, dit_error *err);

/* The steady step of off's plan (expert 0's pools) with sp's compute; disk the
 * chunk store's read rates (bps 0: none measured, no prediction in disk mode).
 * rt gives the compute node for the bus model. */
void dit_predict_step(const dit_step_price *sp, const dit_offload *off, const dit_runtime *rt,
                      const dit_disk_rate *disk, dit_prediction *out);

/* Loads the profile of the run rq with rto and its blocks in token chunks of chunk_rows
 * rows (0: whole; key receives its key): 1 when found. */
int dit_predict_find(dit_profile *p, char *key, size_t len, const dit_plan_req *rq,
                     int64_t chunk_rows, const dit_runtime_opts *rto);
/* The prediction of off's plan for the run rq from p, StarPU running as rt. */
void dit_predict_plan(const dit_offload *off, const dit_plan_req *rq, const dit_runtime_opts *rto,
                      const dit_profile *p, const dit_runtime *rt, dit_prediction *out);

/* The rows per tile a run's graph uses (the session's rule). */
int64_t dit_predict_tile_rows(const dit_runtime_opts *rto, int accel, int64_t tokens);

#endif
