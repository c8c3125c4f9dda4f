/* Task-graph builders. A forward pass is submitted as tasks over data handles:
 * embeddings, then for each block a short chain of op tasks that all read the block's
 * weight slab, then the head. Submission does not wait for tasks (except where a run
 * asks for it: --check-finite, resume states and disk mode go step by step or two
 * steps ahead): StarPU orders the tasks by their data (sequential consistency), so the
 * sampling loop is one data-flow graph, and the conditional and unconditional passes,
 * which share only read-only data, run side by side. */
#ifndef DIT_GRAPH_H
#define DIT_GRAPH_H

#include <pthread.h>

#include <starpu.h>

#include "dit_error.h"
#include "dit_model_desc.h"

/* The weights as the graph sees them, filled by the caller from its weight store once
 * the weights are registered (src/plan/dit_place.h: dit_place_graph_weights): for each
 * expert its configuration, the slab of its non-block weights and each pool's blocks,
 * N to a chunk, each chunk one handle. */
typedef struct dit_graph_pool {
	const dit_pool_desc *d; /* prefix, block kind, tensor table */
	const void *id;         /* the weight store's pool (what the transfers name) */
	dit_layout lay;         /* one block slab */
	int64_t nblocks, chunk_size, nchunks;
	int64_t block_stride;           /* elements from a block to the next in a chunk */
	starpu_data_handle_t *h_chunks; /* [nchunks] */
} dit_graph_pool;

typedef struct dit_graph_expert {
	dit_hparams cfg;
	dit_layout glob; /* the non-block tensors */
	starpu_data_handle_t h_globals;
	int npools;
	dit_graph_pool pool[DIT_MAX_POOLS];
} dit_graph_expert;

typedef struct dit_graph_weights {
	const dit_model_desc *desc;
	int nexperts;
	dit_graph_expert expert[DIT_MAX_EXPERTS];
} dit_graph_weights;

/* Sizes of one run: the latent [c, f, h, w] and its token grid after patching. */
typedef struct dit_grid {
	int64_t c, f, h, w;
	int64_t tf, th, tw, tokens;
	/* a second token stream (the family's dit_stream_desc, LTX-2's audio): its tokens
	 * (0: none), and the distinct timesteps a step may give them (1 or aux_t) */
	int64_t aux_t, aux_time_rows;
	/* token chunks of a block where its block kind takes them (dit_stage_kind.
	 * token_chunks): every per-token buffer that lives inside a block (normed input,
	 * attention output, projections, FFN hidden, the head's) holds about chunk_rows
	 * rows instead of all L, made and consumed a chunk at a time; self-attention's
	 * q/k/v stay whole (0, or >= tokens: all rows at once) */
	int64_t chunk_rows;
	/* the activations a block makes and consumes within itself (normed input, q/k/v,
	 * attention output, projections, FFN hidden), where the family's ops take them,
	 * stored in bf16 (1: --act-dtype bf16) instead of fp32; the token streams, the
	 * embeddings and the outputs stay fp32 */
	int act_bf16;
} dit_grid;

/* DIT_OK, or the error of a bf16 buffer among the nbuf handles h of a task of codelet
 * cl named name when cl has no bf16 form on every backend (tasks/act_dtype.c). */
dit_status dit_graph_bf16_check(const struct starpu_codelet *cl, const char *name, int nbuf,
                                const starpu_data_handle_t *h, dit_error *err);

/* The element size of a block's activations on grid g (dit_grid.act_bf16). */
static inline size_t dit_grid_act_size(const dit_grid *g)
{
	return g->act_bf16 ? 2 : 4;
}

/* From video pixels through the family's VAE strides (Wan: 4, 8, 8): f = (frames-1)/4
 * + 1, h = height/8, w = width/8. Errors when frames breaks the frame rule or the sizes
 * do not fall on whole patches. c is the latent's channels (out_dim). */
dit_status dit_grid_from_pixels(dit_grid *g, const dit_model_desc *d, const dit_hparams *cfg,
                                int64_t frames, int64_t height, int64_t width, dit_error *err);
/* From a latent shape [c, f, h, w]; c must equal out_dim (the channels the model
 * denoises; image conditioning is added to them by the graph). */
dit_status dit_grid_from_latent(dit_grid *g, const dit_hparams *cfg, int64_t c, int64_t f,
                                int64_t h, int64_t w, dit_error *err);

/* How long a pass's work buffer holds what it was given (dit_ws_buf.life). */
enum {
	/* read across the blocks or stages of a pass's forward, or after it (the token
	 * streams, the embedded context, the outputs): one buffer per pass */
	DIT_LIVE_FORWARD = 0,
	/* written, then read, within one block or one stage call of a pass and dead
	 * after it (q/k/v, attention output, FFN hidden, scratch): shared by the passes
	 * that are not in flight together (dit_graph.slots) */
	DIT_LIVE_BLOCK = 1,
};

/* A work buffer of a family's forward: elements of elemsize bytes, a name for traces;
 * rows > 0: an activation [rows, n / rows] the ops may cut into row tiles
 * (dit_tiles.h); init, life: see below. */
typedef struct dit_ws_buf {
	int64_t n;
	size_t elemsize;
	const char *name;
	int64_t rows;
	int init;  /* zero-filled at registration: an op writes only part of it (its
	              other parts, read by later tasks, must be valid data for StarPU) */
	int life;  /* DIT_LIVE_FORWARD or DIT_LIVE_BLOCK (pass buffers only) */
	int chunk; /* rows are a token chunk's (dit_grid_chunk): at least two row tiles */
} dit_ws_buf;

/* The work buffers a family's stages and block kinds use, beyond what every forward
 * has (the conditioning input, the token stream x, the velocity, the RoPE table):
 * pass[i] for each pass (handle dit_pass.ws[i]), shared[i] once for the passes
 * (dit_graph.ws[i]). An entry with n 0 is not registered. */
#define DIT_MAX_WS 40
typedef struct dit_ws_spec {
	dit_ws_buf pass[DIT_MAX_WS];
	dit_ws_buf shared[DIT_MAX_WS];
} dit_ws_spec;

/* The family's stage kind (NULL when this build has none) and its work buffers for a
 * grid and time_rows distinct timesteps (tasks/grid.c). */
const struct dit_stage_kind *dit_graph_workspace(const dit_model_desc *d, const dit_hparams *c,
                                                 const dit_grid *grid, int64_t time_rows,
                                                 dit_ws_spec *ws);

/* Refuses grids whose activations would not fit one StarPU vector (2^32 elements). */
dit_status dit_graph_check_size(const dit_model_desc *d, const dit_hparams *c, const dit_grid *grid,
                                dit_error *err);

/* The activations of a run by how long they live: what dit_graph_init registers for
 * npasses passes of which slots are in flight at once, time_rows rows of time
 * embeddings, and the model input of image concatenation (concat) or the first-frame
 * latent (first_frame). StarPU keeps a handle's buffer on the compute node from its
 * first use to the end of the run, so the live set is the sum of the distinct
 * handles: every pass's forward-lived buffers, the block-lived ones once per slot,
 * the shared ones once. */
/* One buffer of the plan: its bytes and how long it lives ("pass": the inputs and
 * stream of every pass; "forward": every pass's; "block": one a pass in flight;
 * "shared": one), which make its copies. */
typedef struct dit_act_buf {
	const char *name, *life;
	size_t bytes;
	int copies;
} dit_act_buf;
#define DIT_ACT_MAX_BUFS (2 * DIT_MAX_WS + 8)
typedef struct dit_act_plan {
	int npasses, slots;
	int64_t chunk_rows;  /* the grid's token chunk (0: none) */
	int act_bf16;        /* the grid's block activations in bf16 */
	size_t io;           /* per pass: the context input, the token stream x, the velocity */
	size_t forward;      /* per pass: the family's forward-lived buffers */
	size_t block;        /* per slot: the family's block-lived buffers */
	size_t shared;       /* once: time tables, RoPE tables, conditioning inputs */
	size_t total;        /* npasses * (io + forward) + slots * block + shared */
	const char *largest; /* the largest buffer, and its bytes */
	size_t largest_bytes;
	int nbuf; /* every buffer of the sums above */
	dit_act_buf buf[DIT_ACT_MAX_BUFS];
} dit_act_plan;

/* slots <= 0 or > npasses: npasses. */
void dit_graph_act_plan(const dit_model_desc *d, const dit_hparams *c, const dit_grid *grid,
                        int npasses, int slots, int64_t time_rows, int concat, int first_frame,
                        dit_act_plan *out);

/* Activation handles of one forward pass (cond or uncond). */
typedef struct dit_pass {
	starpu_data_handle_t context;        /* [text_len, text_dim], zero-padded input */
	starpu_data_handle_t x;              /* [L, D] the token stream */
	starpu_data_handle_t out;            /* [out_dim, f, h, w] velocity */
	starpu_data_handle_t ws[DIT_MAX_WS]; /* the family's work buffers (dit_ws_spec) */
	starpu_data_handle_t pooled;         /* [text_dim_2] pooled text embedding, or NULL */
	int64_t text_valid;     /* rows of context that are the prompt's tokens (the rest padding,
	                           masked out where the family masks): text_len unless set */
	int64_t aux_text_valid; /* the same for the second stream's context */
} dit_pass;

/* What one submitted task carries besides its codelet and data: given per call (NULL:
 * nothing), never left on the graph for a later task. */
typedef struct dit_task_opts {
	uint64_t tag;   /* StarPU tag of the task (0: none) */
	uint64_t after; /* with tag: the tag it waits for (0: none) */
	int priority;
	uint32_t where;       /* worker mask (0: the graph's) */
	void (*done)(void *); /* completion callback */
	void *done_arg;
} dit_task_opts;

/* Counts of submitted tasks per codelet, for the stats. */
#define DIT_GRAPH_MAX_CODELETS 32
typedef struct dit_task_counts {
	int n;
	const char *name[DIT_GRAPH_MAX_CODELETS];
	long count[DIT_GRAPH_MAX_CODELETS];
} dit_task_counts;

/* Priority schemes of the compute tasks (--priorities). */
#define DIT_PRIO_NONE          0
#define DIT_PRIO_CRITICAL_PATH 1
#define DIT_PRIO_OP_CLASS      2

/* Forward passes a step may run (conditional, unconditional, perturbed, ...). */
#define DIT_MAX_PASSES 4

/* Row tiles: at most this many per activation, and this many tiled activations. */
#define DIT_MAX_TILES       4096
#define DIT_GRAPH_MAX_TILED (2 * DIT_MAX_WS + 4)
struct dit_tiles;

/* Image conditioning, one form per descriptor image kind (DIT_IMAGE_*), applied by the
 * forward (the model input) and the sampling driver (frames put back after each step). */
typedef struct dit_image_cond {
	/* image concatenation: the model's input [in_dim, f, h, w] = latent, then y */
	starpu_data_handle_t xin;
	/* first-frame conditioning: z [c, 1, h, w], put back into frame 0 after each step */
	starpu_data_handle_t z;
	/* conditioning frames (video2world): the model input's first cond_frames latent
	 * frames are cond_gt [c, cond_frames, h, w], the guided velocity's are cond_v (the
	 * initial noise - gt), and those frames see timestep cond_t (< 0: the step's) */
	starpu_data_handle_t cond_gt, cond_v;
	int64_t cond_frames;
	double cond_t;
} dit_image_cond;

typedef struct dit_graph {
	dit_graph_weights w;
	const dit_graph_expert *model; /* the expert whose weights the next tasks read */
	int expert;                    /* its index in w */
	int text_expert; /* whose text embedding the passes' ctx hold (-1: none yet) */
	const struct dit_block_kind *kind[DIT_MAX_POOLS]; /* how each pool's blocks compute */
	const struct dit_stage_kind *stages; /* the family's forward outside the blocks */
	dit_grid grid;
	int npasses;
	/* passes in flight at once: the block-lived buffers (DIT_LIVE_BLOCK) exist this
	 * many times and pass p uses copy p % slots, so passes sharing a copy run one
	 * after the other (StarPU orders them by that data); 1..npasses */
	int slots;
	int ram_only; /* activations may not be swapped to a disk node (see dit_graph_vector) */
	starpu_data_handle_t rope;           /* [L, head_dim] (cos, sin) doubles */
	starpu_data_handle_t ws[DIT_MAX_WS]; /* the family's shared work buffers: the time
	                                        embedding of the current step, ... */
	dit_ws_spec spec;                    /* what ws and pass[].ws hold */
	int64_t time_rows;  /* distinct timesteps a step may use (rows of the time tables) */
	int64_t mod_rows;   /* tokens per row of the time tables this step (0: one row) */
	dit_image_cond img; /* the descriptor's image conditioning, which the driver applies */
	dit_pass pass[DIT_MAX_PASSES];
	/* the stage kind's own state (dit_stage_kind.state_bytes, zeroed at init: the
	 * inputs only that family takes, e.g. tasks/ltx_state.h); NULL: none */
	void *fam;
	/* the passes one after the other, each walking every chunk (each chunk brought
	 * once per pass, as the official pipelines run them); 0: chunk by chunk for every
	 * pass (once per step) */
	int pass_major;
	/* --priorities: DIT_PRIO_NONE (every compute task 0), DIT_PRIO_OP_CLASS (every
	 * task, the transfers too, its heteroprio bucket: src/runtime/dit_heteroprio.h) or
	 * DIT_PRIO_CRITICAL_PATH
	 * (its b-level: the blocks left from it to the end of the run, scaled into the
	 * scheduler's priority range below its maximum, which the transfers keep) */
	int priorities;
	int nsteps;           /* steps of the run (the b-level's length) */
	int prio_lo, prio_hi; /* the priorities given so far (lo > hi: none yet) */
	int64_t tile_rows;    /* rows per tile of the activations (0: no tiles) */
	int ntiled;
	struct dit_tiles *tiled[DIT_GRAPH_MAX_TILED];
	dit_task_counts counts;
	/* performance models: compute tasks finished, and of those the ones whose model
	 * had no estimate for their shape on their worker's architecture even after
	 * them (StarPU was still calibrating it) */
	long model_tasks, model_uncalibrated;
	/* when set, the compute tasks of step profile->step are counted there, by the
	 * block (cur_pool, cur_block; -1 outside the blocks) being submitted */
	struct dit_profile *profile;
	int cur_pool;
	int64_t cur_block;
	/* the pass being submitted (-1: tasks the passes share), which task names carry
	 * when there are several: "<name>.<pass_name[p]>" ("p<k>" where none is set) */
	int cur_pass;
	const char *pass_name[DIT_MAX_PASSES];
	struct dit_task_names *names;    /* the names made so far (tasks/task_names.c) */
	double flops;                    /* submitted GEMM flops */
	uint32_t where;                  /* worker mask of the compute tasks (0: any) */
	struct dit_xfer *xfer;           /* weight transfers (dit_xfer.h); NULL: weights stay
	                                    where they are */
	struct dit_finite_guard *finite; /* --check-finite: checks after every block */
	/* ditstar-sim: called on each task's codelet before it is submitted (the roofline
	 * cost of --sim-roofline); NULL: none */
	void (*use_codelet)(struct starpu_codelet *cl);
	int step;       /* step being submitted (for the checks) */
	int first_step; /* sampling starts here (a resumed run) */
	/* When set, sampling runs step by step and calls this once step i is done. */
	dit_status (*after_step)(void *arg, int step, dit_error *err);
	void *after_step_arg;
	/* When set, a bounded look-ahead instead of the whole loop up front: step i + 2 is
	 * submitted only once step i has finished, after check(check_arg, err), whose error
	 * stops the submission (an I/O error in disk mode then ends the run within two
	 * steps, not after every step was computed on zero-filled weights). */
	dit_status (*check)(void *arg, dit_error *err);
	void *check_arg;
	pthread_mutex_t step_lock;
	pthread_cond_t step_cond;
	int steps_done; /* steps of this run whose last update has finished */
	size_t activation_bytes;
} dit_graph;

/* Registers the activation handles for npasses passes, slots of them in flight at once
 * (<= 0: all), and the rope table.
 * context[p] (host, [ctx_rows, text_dim]) is copied zero-padded (or truncated) to
 * text_len rows. time_rows: rows of distinct timesteps a step may use (1, or the
 * latent frames, or the tokens). y (host, [in_dim - out_dim, f, h, w]) with image
 * concatenation, z (host, [out_dim, 1, h, w]) with first-frame conditioning, else
 * NULL. The experts must be registered; expert 0 computes first. */
dit_status dit_graph_init(dit_graph *g, const dit_graph_weights *w, const dit_grid *grid,
                          int npasses, int slots, const float *const *context,
                          const int64_t *ctx_rows, int64_t time_rows, const float *y,
                          const float *z, dit_error *err);

/* The conditioning beyond the context of pass p: text_valid (>= 0) the prompt's
 * tokens among the context rows (a prefix mask), pooled [pooled_n] a pooled text
 * embedding (NULL: none). After dit_graph_init. */
dit_status dit_graph_set_cond(dit_graph *g, int p, int64_t text_valid, const float *pooled,
                              int64_t pooled_n, dit_error *err);

/* Cuts the activations (x and the family's buffers with rows) into row tiles of at
 * most tile_rows rows (dit_tiles.h; <= 0: none). Once, after dit_graph_init. */
dit_status dit_graph_set_tiles(dit_graph *g, int64_t tile_rows, dit_error *err);

/* The family's work buffer of that name (dit_ws_spec) of pass p, or shared by the
 * passes with p < 0; NULL when there is none. For tests and dumps. */
starpu_data_handle_t dit_graph_buffer(const dit_graph *g, int p, const char *name);

/* Copies n bytes from host src into the family's work buffer of that name (pass p, or
 * shared with p < 0), before the tasks that read it. */
dit_status dit_graph_buffer_fill(dit_graph *g, int p, const char *name, const void *src, size_t n,
                                 dit_error *err);

/* Makes expert e compute the next tasks. */
void dit_graph_set_expert(dit_graph *g, int e);
void dit_graph_free(dit_graph *g);

/* A task's priority under --priorities (tasks/priorities.c): the b-level of the task
 * being submitted (critical-path), or the heteroprio bucket of task t (op-class). */
int dit_graph_blevel_priority(const dit_graph *g);
int dit_graph_op_class_priority(const struct starpu_task *t, const struct starpu_codelet *cl);

/* Names the passes in task names (names[npasses], e.g. {"cond", "uncond"}; NULL: "p<k>").
 * After dit_graph_init. */
void dit_graph_pass_names(dit_graph *g, const char *const *names);

/* The name a task submitted now gets: name itself outside a pass or with one pass, else
 * name "." the pass's name, kept until dit_graph_free; NULL when out of memory. */
const char *dit_graph_task_name(dit_graph *g, const char *name);
void dit_graph_task_names_free(dit_graph *g);

/* The family's stages (dit_stage_kind) for the graph's current expert: */
/* the text embedding of every pass (once per run and expert); */
dit_status dit_graph_submit_text(dit_graph *g, dit_error *err);

/* the time embedding for timestep t (shared by the passes); */
dit_status dit_graph_submit_time(dit_graph *g, double t, dit_error *err);

/* the same for nt distinct timesteps t[0..nt) (nt <= time_rows), token r seeing
 * t[r / mod_rows] (mod_rows = tokens / nt); */
dit_status dit_graph_submit_time_rows(dit_graph *g, const double *t, int64_t nt, int64_t mod_rows,
                                      dit_error *err);

/* the patch embedding of pass p: latent [in_dim,f,h,w] -> pass[p].x [L, D]. */
dit_status dit_graph_submit_patch_embed(dit_graph *g, int p, starpu_data_handle_t latent,
                                        dit_error *err);

/* Submits the forward of every pass: latent [c,f,h,w] -> pass[p].out. The blocks go
 * chunk by chunk, each chunk for every pass, between the chunk's transfer and its
 * eviction, so a chunk is brought once per step whatever the passes. */
dit_status dit_graph_submit_passes(dit_graph *g, starpu_data_handle_t latent, dit_error *err);

/* A block kind: how block b of pool i of the current expert is computed in pass p, as
 * a chain of op tasks (tasks/<kind>_block.c). A pool descriptor names its kind
 * (models/). The block's first task carries first, its last task last (each may be
 * NULL). */
typedef struct dit_block_kind {
	const char *name; /* "wan" */
	dit_status (*submit)(dit_graph *g, int i, int p, int64_t b, const dit_task_opts *first,
	                     const dit_task_opts *last, dit_error *err);
	/* the stream a block writes, which --check-finite scans: the pass's work buffer
	 * of that index; -1: dit_pass.x */
	int stream;
} dit_block_kind;

/* every block kind (tasks/dit_kinds.def): dit_block_<name> */
#define DIT_BLOCK_KIND(n) extern const dit_block_kind dit_block_##n;
#define DIT_STAGE_KIND(n)
#include "dit_kinds.def"
#undef DIT_BLOCK_KIND
#undef DIT_STAGE_KIND

/* The block kind of that name; NULL when no file implements it. */
const dit_block_kind *dit_block_kind_find(const char *name);

/* What a block or stage kind sees of its weights: the handle of the slab that holds
 * them (a chunk of blocks, or the non-block weights) and, for each tensor of the
 * family's table, its slot offset in that slab, its dtype (dit_wdt: fp32, bf16 or a
 * compact one) and an f8 tensor's scale slot (0: none). */
typedef struct dit_wview {
	starpu_data_handle_t slab;
	int64_t off[DIT_MAX_TENSORS];
	int64_t numel[DIT_MAX_TENSORS];
	unsigned char wdt[DIT_MAX_TENSORS];
	int64_t soff[DIT_MAX_TENSORS];
} dit_wview;

/* The current expert's non-block weights (always fp32), and block b of its pool i. */
void dit_graph_globals_view(const dit_graph *g, dit_wview *v);
void dit_graph_block_view(const dit_graph *g, int i, int64_t b, dit_wview *v);

/* A family's forward outside its blocks, as task chains (in the family's block-kind
 * file; the descriptor names it). The generic driver (tasks/forward.c) calls text once
 * per run and expert, time each step, then for each pass embed, the pools' blocks,
 * and head. */
typedef struct dit_stage_kind {
	const char *name; /* "wan" */
	/* the work buffers, for a grid and time_rows distinct timesteps */
	void (*workspace)(const dit_hparams *c, const dit_grid *grid, int64_t time_rows,
	                  dit_ws_spec *ws);
	dit_status (*text)(dit_graph *g, dit_error *err);
	dit_status (*time)(dit_graph *g, const double *t, int64_t nt, int64_t mod_rows,
	                   dit_error *err);
	dit_status (*embed)(dit_graph *g, int p, starpu_data_handle_t latent, dit_error *err);
	dit_status (*head)(dit_graph *g, int p, dit_error *err);
	/* the family's blocks and head run in token chunks of grid.chunk_rows */
	int token_chunks;
	/* bytes of the family's own state (dit_graph.fam; 0: none) */
	size_t state_bytes;
	/* families that take noise levels: both streams' sigma for the next time tables
	 * (NULL: the timesteps are all they take) */
	void (*sigma)(dit_graph *g, double video, double audio);
} dit_stage_kind;

/* Rows of the grid's token chunks, 0 when the tokens are one chunk: n = ceil(tokens /
 * chunk_rows) chunks of T = ceil(tokens / n) rows, the last one shorter (so that every
 * other chunk fills the chunk-sized buffers exactly and is cut into their row tiles). */
int64_t dit_grid_chunk(const dit_grid *g);

/* A block's token chunks: n chunks, chunk c rows row0[c] .. row0[c + 1] of the sequence
 * (n 1: all rows at once), cut as dit_grid_chunk says. */
typedef struct dit_chunks {
	int n;
	int64_t row0[DIT_MAX_TILES + 1];
} dit_chunks;
void dit_grid_chunks(const dit_grid *g, dit_chunks *ch);
/* The same cut of rows rows (a stream longer than the grid's tokens: a joint
 * sequence); returns the longest chunk's rows. */
int64_t dit_chunks_make(int64_t rows, int64_t chunk_rows, dit_chunks *ch);

/* Whether the family's blocks take grid.chunk_rows (dit_stage_kind.token_chunks). */
int dit_graph_token_chunks(const dit_model_desc *d);

/* every stage kind (tasks/dit_kinds.def): dit_stages_<name> */
#define DIT_BLOCK_KIND(n)
#define DIT_STAGE_KIND(n) extern const dit_stage_kind dit_stages_##n;
#include "dit_kinds.def"
#undef DIT_BLOCK_KIND
#undef DIT_STAGE_KIND

/* The stage kind of that name; NULL when no file implements it. */
const dit_stage_kind *dit_stage_kind_find(const char *name);

/* Block b of pool i in pass p with the pool's block kind. */
dit_status dit_graph_submit_block(dit_graph *g, int i, int p, int64_t b, const dit_task_opts *first,
                                  const dit_task_opts *last, dit_error *err);
/* Submits one task of codelet cl over h[0..nbuf) with a copy of args; o (may be NULL)
 * gives its tag, priority, worker mask and callback. */
dit_status dit_graph_insert(dit_graph *g, struct starpu_codelet *cl, const char *name, void *args,
                            size_t args_size, double flops, int nbuf, const starpu_data_handle_t *h,
                            const enum starpu_data_access_mode *mode, const dit_task_opts *o,
                            dit_error *err);

/* Submits a whole sampling loop: for each step of the plan, the time embedding, the
 * conditional and unconditional passes on sbuf[X] with the step's expert, guidance
 * (the step's scale) into sbuf[V], then the solver's updates (and, with first-frame
 * conditioning, z back into frame 0). on_step(arg, i) runs when step i's last update
 * has finished. Needs npasses == 2. */
struct dit_sampler_plan;
dit_status dit_graph_submit_sampling(dit_graph *g, const struct dit_sampler_plan *plan,
                                     starpu_data_handle_t *sbuf,
                                     void (*on_step)(void *arg, int step), void *arg,
                                     dit_error *err);

/* A guidance kind of the sampling driver: what a step submits besides its passes.
 * time: the step's time embedding (and whatever the passes read of the step); update:
 * the step's guided update of the samples from the passes' outputs, its last task
 * carrying mark (which reports the step's end). */
typedef struct dit_loop_kind {
	const char *name;
	dit_status (*time)(dit_graph *g, const void *arg, int i, dit_error *err);
	dit_status (*update)(dit_graph *g, const void *arg, int i, const dit_task_opts *mark,
	                     dit_error *err);
} dit_loop_kind;

/* The sampling driver (tasks/step_loop.c): steps first_step .. nsteps - 1, each the
 * kind's time, every pass on x (dit_graph_submit_passes), the kind's update; with
 * g->check at most two steps ahead, with --check-finite or g->after_step step by step
 * (after_step once step i is done). on_step(on_step_arg, i) runs when step i's last
 * task has finished. */
dit_status dit_graph_submit_loop(dit_graph *g, const dit_loop_kind *kind, const void *arg,
                                 int nsteps, starpu_data_handle_t x,
                                 void (*on_step)(void *arg, int step), void *on_step_arg,
                                 dit_error *err);

/* The multi-pass guidance kind (DIT_GUIDANCE_MULTI, LTX-2; tasks/guide_multi.c): the
 * passes of the roles a step needs (pass_of[role]: its pass, -1 when not run; roles
 * conditional, unconditional, perturbed, isolated modality), then each stream's guided
 * Euler update from sigmas[i] to sigmas[i + 1] with its scales (CFG, STG, rescale,
 * modality). */
typedef struct dit_multi_plan {
	int nsteps;
	const double *sigmas;       /* [nsteps + 1] */
	double ts_mult;             /* the time embedding sees sigma x ts_mult */
	double video[4], audio[4];  /* each stream's scales */
	int pass_of[4];             /* by role */
	starpu_data_handle_t x, xa; /* the video and audio samples (xa NULL: video only) */
	int64_t n, na;              /* their floats */
	starpu_data_handle_t x0;    /* the video's guided x0 of each step, or NULL */
	/* the video's latent conditioning (LTX-2's VideoConditionByLatentIndex): clean
	 * [C, 1, h, w] at latent frame c_frame, denoise mask c_mask (1 - strength): those
	 * tokens see timestep c_mask x sigma and their x0 is blended with clean (the time
	 * tables then have a row per latent frame); NULL: none */
	starpu_data_handle_t clean;
	int64_t c_frame;
	double c_mask;
} dit_multi_plan;
dit_status dit_graph_submit_multi(dit_graph *g, const dit_multi_plan *mp,
                                  void (*on_step)(void *arg, int step), void *arg, dit_error *err);

/* The transfer of chunk k of pool for its next use (tasks/xfer.c): *gate receives the
 * tag the chunk's first task of each pass must wait for (0: nothing moves); the
 * prefetch evicts the streamed chunk whose use it waited for. Then, after the chunk's
 * block tasks are submitted, dit_xfer_done moves to the next use. */
dit_status dit_xfer_fetch(dit_graph *g, int pool, int64_t k, uint64_t *gate, dit_error *err);
dit_status dit_xfer_done(dit_graph *g, int pool, int64_t k, dit_error *err);

/* With --check-finite: the error naming the first block and step whose output held
 * NaN or Inf (DIT_OK when none did). */
dit_status dit_graph_finite_error(const dit_graph *g, dit_error *err);

/* A vector handle managed by StarPU (allocated on first use), for an activation of g.
 * When the weight chunks live on a disk node, activations stay in RAM: StarPU then
 * evicts only clean chunks, and never writes an activation back to the disk from
 * inside a prefetch (which can deadlock StarPU 1.4's workers). */
void dit_graph_vector(const dit_graph *g, starpu_data_handle_t *h, int64_t n, size_t elemsize,
                      const char *name);
/* The same, of n floats, filled from host src (NULL: left unwritten). */
void dit_graph_vector_fill(const dit_graph *g, starpu_data_handle_t *h, const float *src, int64_t n,
                           const char *name);

#endif
