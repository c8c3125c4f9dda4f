/* generate's state for a two-pass (or one-pass) run, shared by its driver
 * (dit_run.c) and its state files, previews and output (dit_gen_state.c). */
#ifndef DIT_GEN_PRIV_H
#define DIT_GEN_PRIV_H

#include <signal.h>

#include "dit_gen_cond.h"
#include "dit_gen_frames.h"
#include "dit_opts.h"
#include "dit_sampler.h"
#include "dit_session.h"

typedef struct gen_state {
	dit_session ses;
	starpu_data_handle_t sbuf[DIT_SBUF_COUNT];
	dit_sampler_plan plan;
	dit_gen_cond cond;
	float *noise, *latents, *image;
	/* resume states */
	char fingerprint[32];
	const char *state_path;
	const char *preview_path;
	volatile sig_atomic_t *stop;
	float *saved[DIT_SBUF_COUNT]; /* buffers of a resume state (NULL for V) */
	int next_step;
	int64_t n;
	double guide[DIT_MAX_EXPERTS];
	int karras;               /* the plan is on Karras sigmas */
	dit_gen_frames frames;    /* Cosmos' conditioning frames */
	const dit_preset *preset; /* the built-in model's sizes (NULL: --model-dir) */
	dit_grid gr;
	int npasses; /* 2 (CFG), or 1 (embedded guidance without true CFG) */
	double eg;   /* the embedded guidance scale */
	int first;   /* first-frame conditioning */
} gen_state;

/* The run's fingerprint: what a resume state must match (options, model, grid, plan). */
void dit_gen_fingerprint(char *out, size_t len, const dit_generate_opts *o, const char *dir,
                         const dit_weights *w, const dit_grid *gr, const dit_sampler_plan *plan);
/* Reads the resume state at path into s->saved and s->next_step. */
dit_status dit_gen_load_state(gen_state *s, const char *path, int nsteps, dit_error *err);
/* Disk mode's look-ahead check (dit_graph.check): the chunk store's read errors. */
dit_status dit_gen_io_check(void *arg, dit_error *err);
/* After each step (dit_graph.after_step): the preview, the state, a stop asked for. */
dit_status dit_gen_after_step(void *arg, int step, dit_error *err);
/* The latents (and with --save-inputs the inputs) written to o->output atomically. */
dit_status dit_gen_write_latents(const dit_generate_opts *o, const gen_state *s, const dit_grid *gr,
                                 dit_error *err);

#endif
