/* Flow-matching sampling schedule and solvers, reduced to data.
 *
 * The model predicts a velocity v at (x, t). Every solver step here is a fixed
 * linear combination of a few latent-sized buffers whose coefficients depend only on
 * the schedule, so the whole sampling loop is planned on the host before anything
 * runs and each update becomes one task: out = sum_i coef_i * buf_i.
 *
 * Schedule (official FlowUniPCMultistepScheduler.set_timesteps): training sigmas
 * 1 - linspace(1, 1/1000, 1000)[::-1] (stored as fp32), sigma_max = 0.999 (as fp32),
 * sigma_min = 0; sigmas = linspace(sigma_max, sigma_min, steps + 1)[:-1], shifted
 * s' = shift*s / (1 + (shift-1)*s) in float64, then a final 0 appended. The model's
 * timestep at step i is (int64)(s'_i * 1000) from the float64 value; the solver uses the
 * sigmas rounded to fp32, as the official code stores them. */
#ifndef DIT_SAMPLER_H
#define DIT_SAMPLER_H

#include "dit_error.h"
#include "dit_schedule.h"

/* How the sigmas and the model's timesteps are made (dit_schedule, common/dit_schedule.h).
 *  - DIT_SCHEDULE_UNIPC (Wan): as above;
 *  - DIT_SCHEDULE_FLOW (HunyuanVideo's FlowMatchDiscreteScheduler with --flow-reverse):
 *    sigmas = linspace(1, 0, steps + 1) then s' = shift*s / (1 + (shift-1)*s), all in
 *    fp32 as torch computes them; the model sees t = fp32(s'_i * 1000) (not an
 *    integer);
 *  - DIT_SCHEDULE_KARRAS (Cosmos-Predict2.5's post-trained model): Karras sigmas
 *    s_i = (200^(1/7) + i/N (0.01^(1/7) - 200^(1/7)))^7, i = 0..N, mapped s / (1 + s),
 *    in float64: N + 1 evaluations for N steps, timesteps int64(s * 1000), no shift;
 *  - DIT_SCHEDULE_LTX2 (LTX-2): dit_sampler_ltx2_sigmas with the family's constants,
 *    timesteps s * 1000 (fp32). */

/* Builds the plan. Errors: steps < 1, shift <= 0. */
dit_status dit_sampler_plan_build(dit_sampler_plan *plan, dit_solver solver, int steps,
                                  double shift, dit_error *err);
/* The same on a given schedule; ltx2: DIT_SCHEDULE_LTX2's constants (else unused,
 * may be NULL). */
dit_status dit_sampler_plan_build_on(dit_sampler_plan *plan, dit_solver solver,
                                     dit_schedule schedule, int steps, double shift,
                                     const dit_ltx2_shift *ltx2, dit_error *err);

/* The schedule's name ("unipc", "flow", "karras", "ltx2"), and the enum of a name
 * (DIT_EINVAL for others). */
const char *dit_schedule_name(dit_schedule s);
dit_status dit_schedule_parse(dit_schedule *out, const char *name, dit_error *err);
void dit_sampler_plan_free(dit_sampler_plan *plan);

/* LTX-2's sigmas (ltx_core LTX2Scheduler with the constants p: as every official
 * pipeline calls it, 4096 tokens, shift exp(2.05), the last non-zero sigma stretched
 * to 0.1), float32 as torch computes them (its CPU linspace included), into
 * out[steps + 1], the last 0. */
dit_status dit_sampler_ltx2_sigmas(int steps, const dit_ltx2_shift *p, double *out, dit_error *err);

/* The distilled pipeline's sigma list (9 values, the last 0). */
extern const double dit_sampler_ltx2_distilled[9];

/* "euler" / "unipc" <-> enum; parse returns DIT_EINVAL for other names. */
dit_status dit_solver_parse(dit_solver *out, const char *name, dit_error *err);
const char *dit_solver_name(dit_solver s);

#endif
