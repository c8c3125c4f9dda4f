/* The offload planner: where the weight chunks live and how they reach the compute
 * node. It decides, per mode, each chunk handle's home node, the memory limit of each
 * node, which transfer tasks are submitted when, and when StarPU may evict a chunk.
 *
 *   none  every chunk resident on the compute node: fetched once, kept across steps
 *   cpu   chunks in (pinned) host RAM, streamed to the accelerator; at most prefetch+1
 *         chunks live on it at once
 *   disk  chunks in a chunk store on a StarPU disk node, read into host RAM (at most
 *         --disk-ram-slots chunks there) and on to the accelerator when there is one
 *
 * The planner (src/plan/dit_offload.c) only decides; src/plan/dit_place.c registers the handles
 * where it decided, and tasks/xfer.c submits the transfer tasks it decided on.
 *
 * Transfers are tasks: once the chunk used prefetch + 1 places earlier (counting every
 * chunk use of the run in order, whatever the pool or expert) has been computed, a
 * task-less task (task tags give the order) starts an asynchronous prefetch of the
 * chunk to the compute node; this
 * bounds what is in flight, which StarPU's own prefetching does not do (with both host
 * and device memory limited it can livelock). A no-op "xfer" task that reads the
 * chunk on the compute node then runs right before the chunk's first block task,
 * which waits for it, so the copy shows in traces and its unhidden part in the stats.
 * A streamed chunk is evicted by the prefetch that waited for the end of its use.
 * Offload changes only transfers, limits and evictions, never which kernel computes
 * what: outputs are byte-identical across modes, chunk sizes and prefetch depths. */
#ifndef DIT_OFFLOAD_H
#define DIT_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"
#include "dit_model_desc.h"

typedef enum dit_offload_mode {
	DIT_OFFLOAD_NONE = 0,
	DIT_OFFLOAD_CPU,
	DIT_OFFLOAD_DISK,
	DIT_OFFLOAD_AUTO, /* chosen by the session from the time model (dit_auto.h) */
} dit_offload_mode;

/* How the block GEMM matrices (--weight-dtype) or a block's activations (--act-dtype,
 * dit_grid.act_bf16) are stored: auto picks bf16 when CUDA computes, fp32 otherwise.
 * Everything else stays fp32. */
typedef enum dit_weight_dtype {
	DIT_WDTYPE_AUTO = 0,
	DIT_WDTYPE_F32,
	DIT_WDTYPE_BF16,
} dit_weight_dtype;

/* Where --offload disk reads a pool's blocks (--disk-source): auto, the checkpoint's
 * files where they lie when every tensor allows it (dit_extent.h), else the store. */
typedef enum dit_disk_source {
	DIT_DISK_SOURCE_AUTO = 0,
	DIT_DISK_SOURCE_CHECKPOINT,
	DIT_DISK_SOURCE_STORE,
} dit_disk_source;

typedef struct dit_offload_opts {
	dit_offload_mode mode;
	dit_weight_dtype weight_dtype; /* auto */
	dit_weight_dtype act_dtype;    /* --act-dtype: auto */
	/* blocks per chunk of each pool (of the family's pools in order; a 0 after the
	 * first: the same as the one before); must divide the pool's block count (1) */
	int64_t chunk_size[DIT_MAX_POOLS];
	/* sizes given by name (--chunk POOL=N; --offload-chunk-size-double N): the pools
	 * whose prefix is name then "." or begins with name then "_" ("double_blocks",
	 * "double"), or every pool of the expert labelled name ("high", "low"); they override
	 * chunk_size, a later one an earlier */
	struct {
		const char *name;
		int64_t size;
	} chunk_named[DIT_MAX_POOLS];
	int nchunk_named;
	int prefetch;            /* chunks transferred ahead of their use (1) */
	int disk_ram_slots;      /* chunks host RAM may hold in disk mode (2) */
	int disk_source;         /* DIT_DISK_SOURCE_*: where disk mode reads the blocks */
	const char *dir;         /* chunk store; NULL: <cache root>/chunks/<checkpoint id> */
	const char *cache_root;  /* for the default store; NULL: the default cache root */
	size_t device_mem_limit; /* bytes; 0: planned */
	size_t host_mem_limit;   /* bytes; 0: planned in disk mode, none otherwise */
	int64_t resident;        /* --resident-chunks: at most this many chunks kept on the
	                            compute node (-1, auto: as many as its budget holds) */
	int pass_major;          /* --pass-order pass: each pass walks every chunk, so a chunk
	                            moves once per pass (the official order; for comparison);
	                            0: chunk by chunk for every pass, once per step */
	int passes_in_flight;    /* --passes-in-flight: guidance passes computed side by side,
	                            each with its own block-lived buffers (1..the run's passes;
	                            0: all of them unless the memory budget holds fewer) */
	int64_t chunk_rows;      /* --token-chunk: each block in token chunks of about this
	                            many tokens, its per-token transients that size (0:
	                            whole, unless the budget needs chunks; families that
	                            take it) */
} dit_offload_opts;

void dit_offload_opts_default(dit_offload_opts *o);
dit_status dit_offload_mode_parse(dit_offload_mode *out, const char *name, dit_error *err);
const char *dit_offload_mode_name(dit_offload_mode m);
dit_status dit_weight_dtype_parse(dit_weight_dtype *out, const char *name, dit_error *err);
const char *dit_weight_dtype_name(dit_weight_dtype d);
/* Whether d stores the block matrices in bf16 when CUDA computes (cuda) or not. */
int dit_weight_dtype_bf16(dit_weight_dtype d, int cuda);

#endif
