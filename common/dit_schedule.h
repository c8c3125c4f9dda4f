/* How a family samples, as data: the solver, the schedule (how the sigmas and the
 * model's timesteps are made) and the constants of the schedules that have some. The
 * model descriptors (models/) name them; the sampler (src/sampling/) implements them. */
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

#endif
