/* One run of a model, shared by generate and forward: the model's experts, the offload
 * plan, the runtime, the statistics and the graph, set up in the order the rules
 * need (weights planned and read before StarPU starts, so that bad input fails fast
 * and the memory limits apply) and torn down in reverse. */
#ifndef DIT_SESSION_H
#define DIT_SESSION_H

#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_place.h"
#include "dit_opts.h"
#include "dit_stats.h"

typedef struct dit_session {
	dit_weights w;
	dit_offload off;
	dit_runtime *rt;
	dit_graph graph;
	int graph_ready;
	dit_stats stats;
	int stats_ready;
	char *synth_dir; /* a preset's checkpoint */
	dit_finite_guard guard;
	const char *trace_dir;
	/* --trace-steps: the trace records the 0-based steps trace_first .. trace_last
	 * (trace_window 0: every step) */
	int trace_window, trace_first, trace_last;
	/* when set, the graph's performance-model counts, its step profile and the disk
	 * reads are recorded there */
	dit_run_record *record;
	/* --offload auto: the chosen plan (as options), how it was chosen, and its
	 * predicted s/step (0: none) */
	int auto_used;
	dit_offload_opts auto_opts;
	char auto_note[1200];
	double auto_predicted;
	int quiet;          /* no note on stderr */
	int models_checked; /* StarPU ran once already (its model files were checked) */
	/* the stage before the first step being shown (dit_stage.h): its progress mode
	 * (dit_progress_mode), name, start and last report, seconds */
	struct {
		int mode;
		char name[64];
		double t0, last;
		double after; /* shown once it has lasted this long (DITSTAR_PROGRESS_AFTER) */
		int shown;
	} stage;
} dit_session;

/* What the graph of a session needs. */
typedef struct dit_session_graph {
	dit_grid grid;
	int npasses;
	const float *const *context; /* [npasses] host [ctx_rows, text_dim] */
	const int64_t *ctx_rows;
	const int64_t *text_valid;     /* [npasses] the prompt's tokens of each context, or NULL */
	const float *const *pooled;    /* [npasses] pooled text embeddings [text_dim_2], or NULL */
	double guidance;               /* embedded guidance input (scale x 1000) */
	const char *const *pass_names; /* [npasses] in task names (dit_graph_pass_names) */
	int64_t time_rows;
	const float *y, *z; /* image conditioning (see dit_graph_init) or NULL */
	/* image features both passes read ([image_tokens, image_dim], the family's
	 * dit_input_names.image) or NULL */
	const float *image_fea;
	size_t extra_bytes;  /* the caller's own buffers on the compute node */
	const char *command; /* "generate", "forward" */
	int nsteps, progress, check_finite;
	int first_step; /* the run's first step (a resumed run's) */
} dit_session_graph;

/* Opens the model: a directory (read as ck says; NULL: the defaults), or (dir NULL)
 * preset name's synthetic checkpoint written under cache_dir, or with shapes set the
 * preset's shapes alone (dit_weights_shapes: a plan). */
dit_status dit_session_open(dit_session *s, const char *dir, const char *name,
                            const char *cache_dir, const dit_checkpoint_opts *ck, int shapes,
                            dit_error *err);

/* Plans and reads the weights, starts tracing and the runtime, registers the weights
 * and builds the graph. */
/* What the planner is asked to plan for this run (the session's weights, sg's shapes). */
void dit_session_plan_req(dit_session *s, const dit_session_graph *sg, dit_plan_req *rq);

/* The offload plan of the session's run (dit_offload_plan with the run's options and
 * activations): decides, reads nothing. */
dit_status dit_session_plan(dit_session *s, const dit_session_graph *sg,
                            const dit_offload_opts *offload, const char *cache_dir,
                            const dit_runtime_opts *rto, dit_error *err);

dit_status dit_session_start(dit_session *s, const dit_session_graph *sg,
                             const dit_offload_opts *offload, const char *cache_dir,
                             const dit_runtime_opts *rt, const char *trace_dir, dit_error *err);

/* --trace-steps (spec NULL: none) for a run of nsteps steps, before the session starts:
 * needs --trace (trace_dir). */
dit_status dit_session_trace_steps(dit_session *s, const char *spec, const char *trace_dir,
                                   int nsteps, dit_error *err);

/* Step step (0-based) of the run is done and nothing runs (the run then goes step by
 * step: dit_graph.after_step): the trace's window opens or closes. StarPU's trace
 * converter cannot read a task whose start or end the window cut off, so it moves only
 * between steps. */
void dit_session_after_step(dit_session *s, int step);

/* Waits for every task and frees everything; ends the trace when st is DIT_OK. */
dit_status dit_session_close(dit_session *s, dit_status st, dit_error *err);

/* A StarPU vector of the session filled from / copied to host floats. */
void dit_session_vector_in(dit_session *s, starpu_data_handle_t *h, const float *src, int64_t n,
                           const char *name);
void dit_session_vector_out(float *dst, starpu_data_handle_t h, int64_t n);

/* Tensor t of f (called name in messages) into a malloc'd fp32 *out, every value finite
 * (*out NULL on error). */
dit_status dit_read_finite(const dit_st_file *f, const dit_st_tensor *t, const char *name,
                           float **out, dit_error *err);

/* Reads tensor name of f into a malloc'd fp32 array, checking its shape: ndim dims,
 * dims[i] < 0 meaning any size (>= 1), or the same after a leading batch of 1 (the
 * official forwards' [1, ...]). required: missing is an error, else *out = NULL. shape
 * (may be NULL) receives the dims (the batch dropped). */
dit_status dit_read_tensor(const dit_st_file *f, const char *name, int ndim, const int64_t *dims,
                           int required, float **out, int64_t *shape, dit_error *err);

/* What the stats report of the graph, as plain data (src/app/dit_session_stats.c). */
void dit_session_stats_graph(const dit_graph *g, dit_stats_graph *out);

/* The stats report of the session's run written to path (--stats-json). */
dit_status dit_session_stats_json(dit_session *s, const char *path, dit_error *err);

/* Reads a 2-D [rows, text_dim] context tensor (rows >= 1) into a malloc'd array; more
 * than max_rows rows (the model's text_len) is an error naming the tensor. */
dit_status dit_read_context(const dit_st_file *f, const char *name, int64_t text_dim,
                            int64_t max_rows, int required, float **out, int64_t *rows,
                            dit_error *err);

/* Reads a text mask [rows] (I64, F32 or any number type of 0 and 1) that must be a
 * prefix of ones: *valid receives their count (>= 1). */
dit_status dit_read_text_mask(const dit_st_file *f, const char *name, int64_t rows, int64_t *valid,
                              dit_error *err);

#endif
