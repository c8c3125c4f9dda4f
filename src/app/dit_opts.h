/* The options of the library's two jobs (dit_run.h) and their defaults: what a run gets
 * for every field it leaves alone. */
#ifndef DIT_OPTS_H
#define DIT_OPTS_H

#include <signal.h>
#include <stdint.h>

#include "dit_checkpoint.h"
#include "dit_error.h"
#include "dit_family_opts.h"
#include "dit_offload.h"
#include "dit_runtime.h"
#include "dit_sampler.h"

/* What a run records for `ditstar calibrate` (src/app/dit_calibrate.c). */
typedef struct dit_run_record {
	/* the compute tasks that ran, and those whose model had no estimate for their
	 * shape (StarPU was calibrating it) */
	long model_tasks, model_uncalibrated;
	struct dit_profile *profile; /* when set: the step profile is recorded there */
	char profile_key[1024];      /* its key (dit_profile_key), set by the run */
	/* disk mode: bytes of the chunk reads, their nanoseconds and CPU nanoseconds */
	unsigned long long disk_read_bytes, disk_read_ns, disk_read_cpu_ns;
	char store[4096]; /* the chunk store ("" outside disk mode) */
} dit_run_record;

typedef struct dit_generate_opts {
	const char *model_dir;         /* a checkpoint directory, or NULL to use model_name */
	const char *model_name;        /* a built-in preset (synthetic weights) */
	const char *cache_dir;         /* where preset checkpoints are written; NULL: default */
	int64_t frames, height, width; /* pixels; <= 0: the preset's defaults */
	int steps;                     /* <= 0: the preset's default, else the family's */
	double guidance;               /* classifier-free guidance scale of every expert; < 0: the
	                                  family's (Wan2.1 5.0; Wan2.2 T2V-A14B low 3.0, high 4.0) */
	double shift;                  /* timestep shift; <= 0: the family's (5.0; T2V-A14B 12.0) */
	const char *noise_path;        /* safetensors 'noise' [C, F, H, W] instead of the seed's */
	const char *image_path;        /* image conditioning: 'y' [in_dim - C, F, H, W] (I2V) or
	                                  'z' [C, 1, H, W] (TI2V-5B); NULL: text only */
	uint64_t seed;                 /* noise seed */
	dit_solver solver;             /* DIT_SOLVER_DEFAULT: the family's (UniPC, Euler) */
	const char *context_path; /* safetensors with context [, context_null]; NULL: synthetic */
	const char *output;       /* safetensors with latents [C, F, H, W]; NULL: none */
	int save_inputs;          /* also store noise, context, context_null in output */
	const char *stats_json;   /* NULL: none */
	const char *trace_dir;    /* NULL: no trace */
	const char *trace_steps;  /* "A:B" or "A": the steps (from 1) the trace records; NULL:
	                             every step */
	int dry_run;              /* print the offload plan (dit_plan.h) instead of running */
	struct dit_run_record *record; /* when set: what the run measured (calibrate) */
	int plan_json;                 /* the plan as JSON */
	int check_finite;              /* stop at the first block whose output has NaN or Inf */
	/* the options of the model's family alone, declared by its descriptor (Wan2.2's
	 * --boundary, LTX-2's --stg, Cosmos' --schedule, ...): set them by name with
	 * dit_family_opt_set (dit_family_opts.h); the run refuses one its model's family
	 * does not have */
	dit_family_values fam;
	const char *preview_path; /* after every step, the x0 estimate as a PNG (dit_preview.h) */
	const char *state_path;   /* write the solver state here after every step */
	const char *resume_path;  /* continue from this state (and keep updating it) */
	volatile sig_atomic_t *stop; /* set (by a signal) to stop after the current step */
	int progress;                /* dit_progress_mode (dit_progress.h): a bar redrawn on a
	                                terminal, one line a step, or none (0) */
	int quiet;
	dit_runtime_opts rt;
	dit_offload_opts offload;
	dit_checkpoint_opts ck; /* how --model-dir is read (a .pt's load key) */
} dit_generate_opts;

typedef struct dit_forward_opts {
	const char *model_dir;
	/* safetensors with x [C,F,H,W], t [1] or [L], context [L, text_dim] and, for models
	 * that concatenate an image latent, y [in_dim - C, F, H, W] */
	const char *inputs;
	/* or the same tensors from memory: a safetensors image of inputs_size bytes
	 * (dit_st_writer_image makes one from arrays), borrowed for the call; inputs then
	 * only names it in messages (NULL: "inputs") */
	const void *inputs_image;
	size_t inputs_size;
	const char *output; /* safetensors with y [C,F,H,W]; NULL: none */
	/* when set: the same output as a safetensors image in memory, malloc'd (the caller
	 * frees *output_image; read it with dit_st_open_mem), with or without a file */
	void **output_image;
	size_t *output_size;
	const char *stats_json;
	const char *trace_dir;
	int check_finite;
	/* the family's own options (dit_family_opts.h): Wan2.2's --expert, LTX-2's --fps
	 * and --stg-blocks */
	dit_family_values fam;
	dit_runtime_opts rt;
	dit_offload_opts offload;
	dit_checkpoint_opts ck;
} dit_forward_opts;

/* The defaults of every field (a preset run of "tiny", the family's sampling, the
 * runtime's and offload's defaults); set what differs after. */
void dit_generate_opts_default(dit_generate_opts *o);
/* The defaults: nothing named yet (model_dir, the inputs and an output are the
 * caller's), the runtime's, offload's and checkpoint's defaults. */
void dit_forward_opts_default(dit_forward_opts *o);

/* The synthetic text conditioning used when no --context is given: [rows, text_dim]
 * with rows = ceil(text_len / 2) (so the zero padding is exercised), values
 * normal(seed 0, stream "context" / "context_null", i). Returns malloc'd data. */
float *dit_synthetic_context(int64_t text_len, int64_t text_dim, int null_prompt, int64_t *rows);

#endif
