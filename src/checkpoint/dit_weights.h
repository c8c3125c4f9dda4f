/* The weight store: a model's weights converted to the compute dtype (fp32; the block
 * GEMM matrices in bf16, or kept in the checkpoint's compact dtype) and packed
 * into chunks. A chunk holds N consecutive blocks, each block a slab with every tensor
 * of <prefix>i at the offsets of its dit_layout, blocks block_stride elements apart (the
 * slab size rounded up to 4 KiB, so chunk files suit O_DIRECT). Each chunk is one
 * StarPU data handle (a vector whose element is one block), so a chunk moves between
 * memory nodes as one piece and every task of a block names its chunk's handle. The
 * non-block weights form one more slab and handle. Where chunks live (RAM or a chunk
 * store on disk) is decided by the offload planner (dit_offload.h). */
#ifndef DIT_WEIGHTS_H
#define DIT_WEIGHTS_H

#include <starpu.h>

#include "dit_checkpoint.h"
#include "dit_error.h"
#include "dit_model_desc.h"

struct dit_model;

/* One pool of an expert: its blocks packed N to a chunk. */
typedef struct dit_pool {
	const dit_pool_desc *d;  /* prefix, block kind, tensor table */
	struct dit_model *model; /* the expert it belongs to (checkpoint, config) */
	int index;               /* in model->pool */
	dit_layout lay;          /* one block slab */
	int64_t nblocks;
	int64_t chunk_size; /* blocks per chunk (N) */
	int64_t nchunks;
	int64_t block_stride;           /* elements from a block to the next inside a chunk */
	float **chunks;                 /* host slabs [N * block_stride], NULL when not in RAM */
	float **blocks;                 /* block b inside its chunk, NULL when not in RAM */
	starpu_data_handle_t *h_chunks; /* NULL until registered */
} dit_pool;

typedef struct dit_model {
	char *dir;
	const dit_model_desc *desc; /* the family whose tables the weights follow */
	const dit_format_desc *fmt; /* the checkpoint format: config keys, tensor names */
	dit_hparams cfg;
	/* config.json missing: the released configuration assumed from the tensor names
	 * (dit_release.h), every tensor checked against it; NULL: config.json read */
	const dit_preset *assumed;
	dit_layout glob;    /* the non-block tensors (desc->globals) */
	dit_checkpoint *ck; /* open until the block weights have been read */
	float *globals;     /* [glob.size] */
	starpu_data_handle_t h_globals;
	dit_pool pool[DIT_MAX_POOLS]; /* desc->pools, in order */
	int npools;
	int64_t stored[DIT_DTYPE_COUNT]; /* the tensors read, by their stored dtype */
	/* ditstar-sim on a preset's shapes (dit_weights_shapes): no weight is read, their
	 * memory is mapped on demand and never touched (a simulation runs no kernel) */
	int lazy;
	/* where dit_model_read_all reports the blocks it has read (dit_stage.h; NULL:
	 * nowhere) */
	const struct dit_stage_progress *progress;
	/* the LoRA deltas merged as the weights are read (dit_lora.h); NULL: none */
	struct dit_lora_set *lora;
} dit_model;

/* Opens the checkpoint directory, reads config.json, checks that every tensor the
 * config implies is present with the right shape and reads the non-block weights.
 * desc: the family's tables (NULL: the one-checkpoint family of config.json's
 * model_type). Without config.json, a family that names a released configuration and
 * whose probe tensor is there (desc, or any when NULL) has that configuration assumed
 * (m->assumed; shape errors then say so); else config.json is reported missing. Every
 * pool starts with chunks of one block, fp32. Errors name the file and the tensor.
 * StarPU need not be running. */
dit_status dit_model_open(dit_model **out, const char *dir, const dit_model_desc *desc,
                          const dit_checkpoint_opts *ck, dit_error *err);

/* The stored dtypes of the tensors m reads, for messages: "F8_E4M3 54, F32 33"
 * (src/checkpoint/dit_wtensor.c). */
void dit_model_stored_dtypes(const dit_model *m, char *buf, size_t len);

/* A tensor by its table name (the format's renames apply); NULL when absent. */
const dit_st_tensor *dit_model_find(const dit_model *m, const char *name);

/* Stores the block GEMM matrices (DIT_T_MATRIX) of every pool in dtype wdt (DIT_WDT_F32
 * or DIT_WDT_BF16), or, compact != 0, each in the checkpoint's compact dtype where it
 * can keep it (bf16, fp16, float8 with its scale, Q8_0: dit_wdt.h) and wdt where not.
 * Before the weights are read. */
dit_status dit_model_set_weight_dtype(dit_model *m, int wdt, int compact, dit_error *err);
/* The same with bf16 != 0: DIT_WDT_BF16, else DIT_WDT_F32, never compact. */
dit_status dit_model_set_weight_bf16(dit_model *m, int bf16, dit_error *err);

/* Sets a pool's chunk size; it must divide the pool's block count. */
dit_status dit_pool_set_chunks(dit_pool *pl, int64_t chunk_size, dit_error *err);

/* The prefix of block b's tensor names ("blocks.3.", as the checkpoint's format names
 * the pool) into buf. */
void dit_pool_block_prefix(const dit_pool *pl, int64_t b, char *buf, size_t len);

/* Converts block b of the pool into dst [block_stride] from the checkpoint. */
dit_status dit_pool_read_block(const dit_pool *pl, int64_t b, float *dst, dit_error *err);

/* Reads every block of every pool into host chunk slabs (aligned memory). */
dit_status dit_model_read_all(dit_model *m, dit_error *err);

/* Closes the checkpoint files once nothing more is read from them. */
void dit_model_close_checkpoint(dit_model *m);

/* dit_model_open, chunks of one block, dit_model_read_all. */
dit_status dit_model_load(dit_model **out, const char *dir, dit_error *err);

/* Registers the globals and the host chunk slabs with StarPU, home in RAM (the
 * runtime must be started). Disk-homed chunks are registered by the offload planner. */
dit_status dit_model_register(dit_model *m, dit_error *err);

/* The parts of dit_model_register the offload planner reuses: the 32-bit size check of
 * the globals and their registration. */
dit_status dit_model_check_sizes(const dit_model *m, dit_error *err);
void dit_model_register_globals(dit_model *m);

/* The handle holding block b of the pool and the element offset of the block in it. */
starpu_data_handle_t dit_pool_block_handle(const dit_pool *pl, int64_t b, int64_t *base);

/* Unregisters the globals and chunk handles, if registered. */
void dit_model_unregister(dit_model *m);

/* Unregisters (if registered) and frees. */
void dit_model_free(dit_model *m);

/* A model as the run sees it: its family, and one dit_model per expert (each with its
 * own non-block weights and pool of blocks; the experts of one model share a config). */
typedef struct dit_weights {
	const dit_model_desc *desc;
	int nexperts;
	dit_model *expert[DIT_MAX_EXPERTS];
} dit_weights;

/* Opens a model directory: a checkpoint (config.json and shards), or the folders of a
 * two-expert model (desc->expert[i]/, each a checkpoint). The family comes from the
 * layout, config.json's model_type and the tensor names (no tensor data is read).
 * Errors name the file: two experts whose configs disagree are refused naming both. */
dit_status dit_weights_open(dit_weights *w, const char *dir, dit_error *err);
/* The same with the checkpoints read as ck says (NULL: the defaults). */
dit_status dit_weights_open_opts(dit_weights *w, const char *dir, const dit_checkpoint_opts *ck,
                                 dit_error *err);
/* Merges ck's LoRA files (dit_lora.h) into the experts of w: each expert's set kept in
 * its dit_model (a spec with an expert label goes to that expert alone, a label no
 * expert has is refused), the non-block weights merged now unless ck->headers_only,
 * the blocks' as they are read. dit_weights_open_opts calls it; a model of shapes alone
 * (a plan of a preset) too, with headers_only. */
dit_status dit_weights_lora(dit_weights *w, const dit_checkpoint_opts *ck, dit_error *err);

/* A preset's model as shapes only (no checkpoint, no weight slabs: ck and globals
 * NULL), for a plan of a model too large to synthesize. */
dit_status dit_weights_shapes(dit_weights *w, const dit_preset *p, dit_error *err);
void dit_weights_free(dit_weights *w);

/* Bytes of one block slab (unpadded), of one chunk (padded blocks), of all chunks of a
 * pool, of a model's globals. */
size_t dit_pool_block_bytes(const dit_pool *pl);
size_t dit_pool_chunk_bytes(const dit_pool *pl);
size_t dit_pool_bytes(const dit_pool *pl);
size_t dit_model_global_bytes(const dit_model *m);

#endif
