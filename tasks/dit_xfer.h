/* The weight transfers of a graph, as the graph sees them: for each pool of chunks,
 * the handles and what the planner decided (which chunks stay on the compute node,
 * which host RAM keeps on their way to a device, whether chunks move at all), and the
 * graph's own state as it submits (the chunk uses so far, the fetches in flight).
 * The planner (src/plan) fills the decisions once the weights are registered; the
 * graph (tasks/xfer.c) reads them and advances the residency states its pins reach.
 * Nothing of the planner's own state is read here. */
#ifndef DIT_XFER_H
#define DIT_XFER_H

#include <stdint.h>

#include <starpu.h>

#include "dit_model_desc.h"

#define DIT_XFER_MAX_POOLS  (DIT_MAX_EXPERTS * DIT_MAX_POOLS)
#define DIT_XFER_MAX_PASSES 4  /* DIT_MAX_PASSES */
#define DIT_XFER_RING       66 /* prefetch 64 + 2 */

/* A chunk's residency: streamed, or resident and then (after its first transfer)
 * pinned on its node by an acquisition. */
#define DIT_CHUNK_STREAMED  0
#define DIT_CHUNK_RESIDENT  1
#define DIT_CHUNK_PIN_ASKED 2
#define DIT_CHUNK_PINNED    3

/* Tags of chunk use u (dit_xfer_tag): DIT_TAG_END + p the last task of pass p,
 * DIT_TAG_PREFETCH the task that starts the prefetch, DIT_TAG_XFER the transfer task,
 * DIT_TAG_FIRST + p the first task of pass p. */
enum {
	DIT_TAG_END = 0,
	DIT_TAG_PREFETCH = DIT_XFER_MAX_PASSES,
	DIT_TAG_XFER = DIT_XFER_MAX_PASSES + 1,
	DIT_TAG_FIRST = DIT_XFER_MAX_PASSES + 2,
	DIT_TAGS_PER_USE = 2 * DIT_XFER_MAX_PASSES + 2
};

typedef struct dit_xfer_pool {
	const void *id; /* the weights' pool these chunks are of (dit_pool) */
	int64_t nchunks;
	size_t chunk_bytes;
	starpu_data_handle_t *h; /* [nchunks] */
	char **names;            /* [nchunks] the transfer tasks' names: "xfer_blk_8-15" */
	/* the planner's decisions, per chunk a DIT_CHUNK_* (NULL: every chunk streams):
	 * kept on the compute node after its first fetch, and (disk mode with a device)
	 * kept in host RAM on its way there */
	unsigned char *resident;
	unsigned char *ram;
	int64_t nresident; /* chunks kept on the compute node */
	/* the graph's state */
	unsigned char *fetched; /* [nchunks] brought once already (a chunk that stays) */
	int64_t fetch_bytes;    /* bytes the transfers of this pool move */
} dit_xfer_pool;

typedef struct dit_xfer {
	/* the planner's decisions */
	int npools;
	dit_xfer_pool pool[DIT_XFER_MAX_POOLS];
	int streams;      /* chunks move during the run (host RAM to a device, the disk store
	                     to RAM): every use is fetched, a streamed chunk evicted after it */
	int fetch_once;   /* chunks that stay are brought once (to a device, or from the
	                     store); 0: never (the host computes where they are) */
	int evict_ram;    /* disk mode with a device: a streamed chunk host RAM does not keep
	                     leaves RAM as well */
	int prefetch;     /* chunk uses a fetch may run ahead */
	int compute_node; /* the memory node chunks are brought to */
	uint32_t where;   /* workers the transfer tasks run on (the compute workers) */
	uint64_t tag_base;
	void (*on_xfer)(void *); /* completion callback of every transfer task */
	void *on_xfer_arg;
	/* the graph's submission state */
	long uses;    /* chunk uses submitted so far */
	long fetches; /* transfer tasks submitted */
	long fetch_use[DIT_XFER_RING];
	int fetch_pool[DIT_XFER_RING]; /* -1: the chunk stays */
	int64_t fetch_chunk[DIT_XFER_RING];
} dit_xfer;

/* The tag of kind of chunk use u, and those the last and the first task of pass p of
 * the current use carry. */
uint64_t dit_xfer_tag(const dit_xfer *x, long use, int kind);
uint64_t dit_xfer_end_tag(const dit_xfer *x, int pass);
uint64_t dit_xfer_first_tag(const dit_xfer *x, int pass);

/* The index of the pool whose id is id (0 when none is). */
int dit_xfer_pool_of(const dit_xfer *x, const void *id);

/* Whether chunk k of pool is evicted after each use (it streams). */
int dit_xfer_evicts(const dit_xfer *x, int pool, int64_t k);

/* The tags the submitted uses made, removed (after the run). */
void dit_xfer_forget(dit_xfer *x);

#endif
