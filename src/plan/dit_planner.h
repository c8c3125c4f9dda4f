/* The offload planner's state and steps; see dit_offload.h for what it does. */
#ifndef DIT_PLANNER_H
#define DIT_PLANNER_H

#include "dit_stage.h"
#include <starpu.h>

#include "dit_diskops.h"
#include "dit_graph.h"
#include "dit_offload.h"
#include "dit_runtime.h"
#include "dit_store.h"
#include "dit_weights.h"
#include "dit_xfer.h"

#define DIT_OFFLOAD_MAX_POOLS DIT_XFER_MAX_POOLS

/* Why a run has the passes in flight it has (dit_offload.act_from): every pass (the
 * default), fewer because the memory limit holds no more, or --passes-in-flight. */
#define DIT_SLOTS_ALL    0
#define DIT_SLOTS_LIMIT  1
#define DIT_SLOTS_OPTION 2
#define DIT_SLOTS_MEMORY                                                                           \
	3 /* fewer because the device's memory holds no more (no limit                             \
	     given) */

/* The kind of accelerator whose memory is the compute node. */
#define DIT_DEVICE_NONE   0
#define DIT_DEVICE_OPENCL 1
#define DIT_DEVICE_CUDA   2

/* The planner's view of the weights: the pools of blocks of every expert (expert 0's
 * pools first), each with its own chunk size, and each expert's non-block weights.
 * Chunk uses are numbered in the order the graph submits them, whatever the pool. */
typedef struct dit_offload {
	dit_offload_opts o;
	dit_pool *pool[DIT_OFFLOAD_MAX_POOLS];
	int npools;
	dit_model *expert[DIT_MAX_EXPERTS];
	int nexperts;
	char pool_label[DIT_OFFLOAD_MAX_POOLS][48]; /* "high", "low", "double_blocks";
	                                               "" for one pool */
	int device;                                 /* DIT_DEVICE_*: the compute node's kind */
	size_t activation_bytes; /* activations of the run, on the compute node */
	size_t device_memory;    /* the device's memory the limit was taken from (0: none) */
	dit_act_plan act;        /* the family's part of them by lifetime (set by the session) */
	size_t act_extra;        /* the caller's own buffers among them */
	int act_from;            /* what set act.slots: DIT_SLOTS_* */
	int chunk_from;          /* what set act.chunk_rows: the same (ALL: none) */
	size_t refused_need;     /* a plan refused because the memory limit is below what it
	                            needs: those bytes (0: not refused for that) */
	size_t device_limit;     /* bytes given to StarPU for the device (0: none) */
	size_t host_limit;       /* bytes given to StarPU for host RAM (0: none) */
	dit_env_var env[3];      /* the limits, for dit_runtime_opts.env */
	char *store;             /* chunk store directory (disk mode); pool p's chunks are in
	                            its folder pool_dir[p] ("" for one pool) */
	char pool_dir[DIT_OFFLOAD_MAX_POOLS][96];
	dit_store_lock lock;  /* held on the store from prepare to release */
	int store_reused;     /* the store was already there, intact */
	char store_note[512]; /* why it was written, when it was */
	/* the store check's reads (a plain sequential read of the blocks, O_DIRECT where it
	 * works: the drive's rate): bytes and nanoseconds, 0 when it was written */
	unsigned long long seq_read_bytes, seq_read_ns;
	int disk_reads; /* reads in flight on the disk node */
	/* disk mode: each pool's blocks read where they lie in the checkpoint (inplace[p],
	 * its extents) or from the store, and why not in place (dit_offload_sources) */
	int sources_known;
	int inplace[DIT_OFFLOAD_MAX_POOLS];
	dit_extents extents[DIT_OFFLOAD_MAX_POOLS];
	char source_why[DIT_OFFLOAD_MAX_POOLS][256];
	int disk_node;                          /* StarPU disk node, -1 without */
	void **disk_obj[DIT_OFFLOAD_MAX_POOLS]; /* per chunk, from starpu_disk_open */
	int pinned;                             /* host chunks pinned with starpu_memory_pin */
	uint32_t where;                         /* where xfer tasks run: the compute workers */
	int compute_node;                       /* memory node the chunks are brought to */
	dit_diskops disk; /* the disk node's ops and fault record; StarPU keeps pointers to
	                   * them while the node lives */
	/* keep what fits (src/plan/dit_fit.c): chunks of each pool kept on the compute node
	 * after their first fetch, never evicted; the rest stream */
	int64_t nresident[DIT_OFFLOAD_MAX_POOLS];
	unsigned char *resident[DIT_OFFLOAD_MAX_POOLS]; /* per chunk DIT_CHUNK_*, from
	                                                   dit_fit_mark */
	/* disk mode with a device: chunks of each pool host RAM keeps among those the
	 * device streams (pinned in RAM after their first read, so later uses cross only
	 * the RAM -> device link); the rest are read from the store at every use */
	int64_t nram[DIT_OFFLOAD_MAX_POOLS];
	unsigned char *ram[DIT_OFFLOAD_MAX_POOLS]; /* per chunk DIT_CHUNK_*, from dit_fit_mark */
	size_t ram_budget;   /* the host RAM bytes that fit was made in (0: none) */
	size_t budget;       /* the compute node's bytes the plan fits in (0: no fit made) */
	int budget_from;     /* DIT_BUDGET_*: where the budget comes from */
	int fit_pending;     /* the budget is the device's memory, known once StarPU runs */
	size_t fit_fixed;    /* what the compute node holds besides chunks, with slack */
	size_t slack_wanted; /* the slack a limit cut (0: the slack is whole) */
	/* CUDA: what the codelets may hold on the device outside StarPU (dit_cuda_mem.h),
	 * inside a --device-mem-limit, which StarPU gets the rest of */
	size_t outside_bytes;
	/* where the chunk store's writing and the checkpoint's hashing report how far they
	 * are (fn NULL: nowhere) */
	dit_stage_progress progress;
	/* the graph's view of these decisions and its transfers' state (tasks/dit_xfer.h),
	 * filled by dit_place_register */
	dit_xfer xfer;
} dit_offload;

/* Where the compute node's budget comes from. */
#define DIT_BUDGET_NONE                                                                            \
	0                   /* no fit: every chunk resident (mode none, host compute) or           \
	                       none (--resident-chunks 0) */
#define DIT_BUDGET_LIMIT  1 /* --device-mem-limit / --host-mem-limit (or StarPU's env) */
#define DIT_BUDGET_MEMORY 2 /* the node's memory less dit_fit_margin */

/* Keep what fits. The margin left of a node's memory when no limit is given: 5% of
 * it plus 256 MiB. */
size_t dit_fit_margin(size_t total);
/* total less that margin (0 when the margin takes it all). */
size_t dit_fit_budget_of(size_t total);
/* Host RAM available to this run (MemAvailable), 0 when unknown. */
size_t dit_fit_host_available(void);
/* Fills off->nresident: every chunk when budget holds fixed bytes and every chunk
 * (and --resident-chunks allows); else as many as fit beside fixed and the slots
 * of a mixed plan (dit_fit_slot_bytes), the same fraction of each pool's chunks
 * first (rounded down), then one chunk at a time in pool order while any fits. At
 * most --resident-chunks. */
void dit_fit(dit_offload *off, size_t budget, size_t fixed, int64_t slots);
void dit_fit_all(dit_offload *off);
/* The memory of StarPU node `node` for the fit: its total as StarPU counts it, on a
 * CUDA device at most its free memory now (cudaMemGetInfo). */
size_t dit_fit_node_memory(const dit_offload *off, int node);
/* The fit within a node of total bytes less the margin (off->fit_fixed beside, slots
 * chunks in flight), budget_from DIT_BUDGET_MEMORY; clears fit_pending. */
void dit_fit_memory(dit_offload *off, size_t total, int64_t slots);
/* Bytes of the resident chunks, and of the chunks in flight (slots of the largest
 * streamed chunk, on a device one more when resident and streamed chunks mix, at most
 * the streamed chunks; 0 when nothing streams). */
size_t dit_fit_resident_bytes(const dit_offload *off);
size_t dit_fit_slot_bytes(const dit_offload *off, int64_t slots);
/* Whether chunk k of n is resident when r of them are: r chunks spread evenly over the
 * pool, chunk 0 first (k r mod n < r), so that every streamed chunk's transfer overlaps
 * the compute of the resident chunks before it. */
int dit_fit_is_resident(int64_t k, int64_t r, int64_t n);
/* Host RAM's fit in disk mode with a device: off->nram chunks of each pool (the same
 * fraction of every pool, then one at a time in pool order) within budget beside fixed
 * bytes and slots chunks in flight. */
void dit_fit_ram(dit_offload *off, size_t budget, size_t fixed, int64_t slots);
/* Whether chunk k of pool p stays in host RAM: not resident on the device, and among
 * the chunks the device streams spread as dit_fit_is_resident spreads them. */
int dit_fit_in_ram(const dit_offload *off, int p, int64_t k);
size_t dit_fit_ram_bytes(const dit_offload *off);
/* Bytes pool p streams a step: each use of a streamed chunk moves it (with --pass-order
 * pass once per pass of npasses); store_only: only those read from the chunk store
 * (not kept in host RAM). 0 when nothing streams. */
size_t dit_fit_step_bytes(const dit_offload *off, int p, int npasses, int store_only);
/* off->resident from off->nresident, off->ram from off->nram. */
dit_status dit_fit_mark(dit_offload *off, dit_error *err);

/* Checks the options against the model, picks the weight dtype, the chunk size and
 * the memory limits (STARPU_LIMIT_CUDA_MEM, STARPU_LIMIT_OPENCL_MEM /
 * STARPU_LIMIT_CPU_MEM: off->env, which the runtime sets for starpu_init only; a
 * value already in the environment wins and is what the plan reports). device
 * (DIT_DEVICE_*): compute runs on that kind of accelerator; cuda: CUDA workers compute
 * (alone or beside CPU workers), which makes bf16 the default weight dtype.
 * activation_bytes: what the run's activations take on the compute node;
 * device_memory: the device's memory o->device_mem_limit was taken from (the planner's
 * budget when no limit is given; the refusal then names that memory), 0: the limit is
 * the caller's. Every expert of w is a pool. Decides only: no StarPU call. */
dit_status dit_offload_plan(dit_offload *off, dit_weights *w, const dit_offload_opts *o, int device,
                            int cuda, size_t activation_bytes, size_t device_memory,
                            dit_error *err);

/* What a run asks the planner to plan for: the model, the shapes of its graph and what
 * the caller keeps on the compute node besides the family's buffers. A plain input:
 * the session fills it from its graph's description. */
typedef struct dit_plan_req {
	dit_weights *w;
	dit_grid grid; /* the run's (chunk_rows unset: the planner chooses it) */
	int npasses;
	int64_t time_rows;         /* rows of distinct timesteps a step may use */
	int concat, first_frame;   /* image conditioning: concatenated y, first-frame z */
	int pooled;                /* the passes carry pooled text embeddings */
	const int64_t *text_valid; /* [npasses] the prompt's tokens of each context, or NULL */
	size_t extra_bytes;        /* the caller's own buffers on the compute node */
} dit_plan_req;

/* The planner's view of the compute node (DIT_DEVICE_*): an accelerator's memory when
 * only accelerators compute. */
int dit_plan_device(dit_workers w);

/* The run's activations (the family's buffers) with slots of its passes in flight and
 * the blocks in token chunks of chunk_rows rows (0: whole). */
void dit_plan_act(const dit_plan_req *rq, int slots, int64_t chunk_rows, dit_act_plan *act);

/* The offload plan of a run (dit_offload_plan with its options and activations):
 * StarPU's environment checked first, then the ways of holding the activations the
 * fastest first (every pass in flight down to one, then token chunks of 4096, 1024
 * and 256 rows where the family takes them; an option fixes its part) until the
 * memory limit holds one; refused with the last way tried when none does. oo's
 * cache_root NULL: cache_dir. Decides, reads nothing (src/plan/dit_offload_acts.c). */
dit_status dit_plan_run(dit_offload *off, const dit_plan_req *rq, const dit_offload_opts *oo,
                        const char *cache_dir, const dit_runtime_opts *rto, dit_error *err);

/* Reads the weights: into host chunks (none, cpu) or, in disk mode, into the chunk
 * store when it is missing or stale (written chunk by chunk, each through a temporary
 * file, the manifest last). In disk mode it first locks the store (dit_store.h; waiting
 * for other runs up to DITSTAR_STORE_WAIT seconds, unset: as long as it takes), and
 * the run holds a shared lock until dit_place_release. Closes the checkpoint. Before
 * the runtime starts. */
dit_status dit_offload_prepare(dit_offload *off, dit_error *err);

/* Disk mode: where each pool's blocks are read from (--disk-source; auto: the
 * checkpoint's files where every tensor of the pool allows it, dit_extent.h), with the
 * reason when not in place; a pool that --disk-source checkpoint cannot read in place
 * is a usage error naming the tensor and why. Once (later calls do nothing); the
 * checkpoint must be open. dit_offload_sources_free frees the extents (also
 * dit_place_release). */
dit_status dit_offload_sources(dit_offload *off, dit_error *err);
void dit_offload_sources_free(dit_offload *off);

/* Whether chunks move during the run at all: cpu with an accelerator, disk (else
 * nothing is fetched but, with an accelerator, each chunk once). */
int dit_offload_streams(const dit_offload *off);

/* Bytes of every chunk of every pool, and of every expert's non-block weights. */
size_t dit_offload_chunk_bytes(const dit_offload *off);
size_t dit_offload_global_bytes(const dit_offload *off);

#endif
