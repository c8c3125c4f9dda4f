/* How a family samples, as data: the solver, the schedule (how the sigmas and the
 * model's timesteps are made) and the constants of the schedules that have some, which
 * the model descriptors (models/) name; and the sampling plan, which the sampler
 * (src/sampling/) makes from them and the graph (tasks/step_loop.c) submits. */
#ifndef DIT_SCHEDULE_H
#define DIT_SCHEDULE_H

#include <stdint.h>

typedef enum dit_solver {
	DIT_SOLVER_DEFAULT = -1, /* the family's */
	DIT_SOLVER_EULER = 0,    /* x_{i+1} = x_i + (sigma_{i+1} - sigma_i) v_i */
	DIT_SOLVER_UNIPC,        /* UniPC bh2, order 2, predict-x0, lower_order_final,
	                            corrector on every step after the first (official default) */
} dit_solver;

/* How the sigmas and the model's timesteps are made (src/sampling/dit_sampler.h has
 * each one's formula). */
typedef enum dit_schedule {
	DIT_SCHEDULE_UNIPC = 0, /* Wan's FlowUniPCMultistepScheduler: shifted linear sigmas,
	                           integer timesteps ("linear" for Cosmos) */
	DIT_SCHEDULE_FLOW,      /* HunyuanVideo's FlowMatchDiscreteScheduler, fp32 timesteps */
	DIT_SCHEDULE_KARRAS,    /* Cosmos-Predict2.5's post-trained model: Karras sigmas */
	DIT_SCHEDULE_LTX2,      /* LTX-2's LTX2Scheduler: a token-dependent shift, stretched */
	DIT_SCHEDULE_COUNT
} dit_schedule;

/* LTX2Scheduler's constants: the shift's exponent moves linearly with the tokens from
 * base_shift at base_tokens to max_shift at max_tokens and is taken at tokens (every
 * official pipeline passes max_tokens); the last non-zero sigma is stretched to
 * terminal. */
typedef struct dit_ltx2_shift {
	double base_shift, max_shift;
	int64_t base_tokens, max_tokens, tokens;
	double terminal;
} dit_ltx2_shift;

/* Latent-sized buffers a plan refers to. X is the sample the model reads at each step;
 * V is the guided velocity the model produced at that step; LAST and M0..M2 are solver
 * state (M* hold x0 predictions, used round-robin as the plan says). */
typedef enum dit_sbuf {
	DIT_SBUF_X = 0,
	DIT_SBUF_V,
	DIT_SBUF_LAST,
	DIT_SBUF_M0,
	DIT_SBUF_M1,
	DIT_SBUF_M2,
	DIT_SBUF_COUNT
} dit_sbuf;

#define DIT_SAMPLER_MAX_TERMS 4
#define DIT_SAMPLER_MAX_OPS   6

/* buf[dst] = sum_{i < nterms} coef[i] * buf[src[i]] (dst may be among src). */
typedef struct dit_sampler_op {
	int dst;
	int nterms;
	int src[DIT_SAMPLER_MAX_TERMS];
	double coef[DIT_SAMPLER_MAX_TERMS];
} dit_sampler_op;

/* Step i: run the model at (X, timestep), write the guided velocity to V, then apply
 * ops[0..nops) in order. After the last step X holds the final latents. */
typedef struct dit_sampler_step {
	double sigma;    /* sigma_i, rounded to fp32 */
	double timestep; /* (int64)(s'_i * 1000) from float64, what the model sees */
	int expert;      /* which expert computes the step (set by the caller; 0) */
	double guidance; /* its guidance scale (set by the caller; 0) */
	int nops;
	dit_sampler_op ops[DIT_SAMPLER_MAX_OPS];
} dit_sampler_step;

typedef struct dit_sampler_plan {
	dit_solver solver;
	dit_schedule schedule;
	int nsteps;
	double shift;
	double *sigmas;          /* nsteps + 1 values (fp32-rounded), last one 0 */
	dit_sampler_step *steps; /* nsteps */
} dit_sampler_plan;

#endif
