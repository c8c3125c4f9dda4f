/* Flow-matching schedule and solver plans (see dit_sampler.h).
 *
 * Numerics follow the reference scheduler (FlowUniPCMultistepScheduler with solver_order 2,
 * bh2, predict-x0, lower_order_final, corrector on):
 *
 *  - the schedule is computed in double exactly as NumPy does it (linspace as
 *    start + i * step, then the shift), the model timesteps are the double values times
 *    1000 truncated to integers, and the sigmas the solver uses are those doubles rounded
 *    to fp32 (the reference stores them as an fp32 tensor);
 *  - the solver coefficients are computed in double from those fp32 sigmas (the reference
 *    evaluates the same formulas in fp32 scalar arithmetic, which differs by about 1e-7
 *    relative; that rounding is not reproduced).
 *
 * UniPC step i of N (alpha = 1 - sigma, lambda = log(alpha) - log(sigma)), with
 * m_i = X_i - sigma_i v_i the x0 prediction of step i kept in M[i % 3]:
 *
 *  - corrector (1 <= i <= N - 2), of the order the predictor of step i - 1 used:
 *    LAST <- corrected sample at sigma_i, from LAST (sample before the previous predictor),
 *    m_{i-1}, m_i and, for order 2, m_{i-2}. The reference overwrites its sample with this
 *    value and also keeps it as its last sample; only the latter is ever read, so the
 *    plan writes it straight into LAST;
 *  - predictor: X <- next sample at sigma_{i+1} from the (corrected) sample, m_i and, for
 *    order 2, m_{i-1}. Order is 1 on the first and last steps, 2 otherwise;
 *  - the last step predicts sigma = 0 with order 1, which the reference's arithmetic
 *    (lambda = +inf, expm1(-inf) = -1, sigma_t / sigma_s0 = 0) reduces to the x0
 *    prediction m_{N-1} = X - sigma_{N-1} V; the corrector of that step is multiplied by
 *    zero there, so the plan leaves it out and the last step is one op. */
#include "dit_sampler.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DIT_SAMPLER_TRAIN_STEPS 1000
#define DIT_SAMPLER_MAX_STEPS   100000

/* a * b rounded once to double: kept out of multiply-add contraction so the schedule
 * reproduces a plain IEEE evaluation bit for bit. */
static double dit_sampler_mul(double a, double b)
{
	volatile double p = a * b;
	return p;
}

static double dit_sampler_f32(double v)
{
	return (double)(float)v;
}

/* log(alpha / sigma) for 0 < sigma < 1, as log(1 - sigma) - log(sigma). */
static double dit_sampler_lambda(double sigma)
{
	return log(1.0 - sigma) - log(sigma);
}

/* Predictor order of step i of n: min(solver_order, n - i, warm-up count + 1). */
static int dit_sampler_order(int i, int n)
{
	int order = 2;
	if (n - i < order) {
		order = n - i;
	}
	if (i + 1 < order) {
		order = i + 1;
	}
	return order;
}

static void dit_sampler_op_set(dit_sampler_op *op, int dst, int nterms, const int *src,
                               const double *coef)
{
	memset(op, 0, sizeof *op);
	op->dst = dst;
	op->nterms = nterms;
	for (int k = 0; k < nterms; k++) {
		op->src[k] = src[k];
		op->coef[k] = coef[k];
	}
}

static int dit_sampler_mbuf(int i)
{
	return DIT_SBUF_M0 + i % 3;
}

/* Schedule: plan->sigmas (fp32-rounded, final 0) and each step's sigma and timestep. */
static dit_status dit_sampler_schedule(dit_sampler_plan *plan, int n, double shift, dit_error *err)
{
	const double sigma_max = dit_sampler_f32(1.0 - 1.0 / DIT_SAMPLER_TRAIN_STEPS);
	const double sigma_min = 0.0;
	const double step = (sigma_min - sigma_max) / n;

	for (int i = 0; i < n; i++) {
		double s = dit_sampler_mul((double)i, step) + sigma_max;
		double num = dit_sampler_mul(shift, s);
		double den = 1.0 + dit_sampler_mul(shift - 1.0, s);
		double shifted = num / den;
		double t = dit_sampler_mul(shifted, (double)DIT_SAMPLER_TRAIN_STEPS);
		if (!isfinite(shifted) || !isfinite(t)) {
			return dit_error_set(err, DIT_EINVAL,
			                     "sampler: shift %g gives a non-finite sigma", shift);
		}
		plan->sigmas[i] = dit_sampler_f32(shifted);
		plan->steps[i].sigma = plan->sigmas[i];
		plan->steps[i].timestep = (double)(int64_t)t;
	}
	plan->sigmas[n] = 0.0;
	return DIT_OK;
}

/* The fp32 product, rounded once (no contraction). */
static float dit_sampler_mulf(float a, float b)
{
	volatile float p = a * b;
	return p;
}

/* The flow schedule in fp32 (see dit_sampler.h). torch.linspace computes
 * start + step * i with one rounding below the middle and end - step * (n - 1 - i)
 * above; the shift is evaluated in fp32. */
static dit_status dit_sampler_schedule_flow(dit_sampler_plan *plan, int n, double shift,
                                            dit_error *err)
{
	const int m = n + 1;
	const float step = -1.0f / (float)n, fs = (float)shift, fs1 = (float)(shift - 1.0);
	for (int i = 0; i <= n; i++) {
		float s = i < m / 2 ? (float)((double)step * (double)i + 1.0)
		                    : 0.0f - dit_sampler_mulf(step, (float)(m - 1 - i));
		volatile float den = 1.0f + dit_sampler_mulf(fs1, s);
		float shifted = dit_sampler_mulf(fs, s) / den;
		if (!isfinite(shifted))
			return dit_error_set(err, DIT_EINVAL,
			                     "sampler: shift %g gives a non-finite sigma", shift);
		plan->sigmas[i] = (double)shifted;
		if (i < n) {
			plan->steps[i].sigma = plan->sigmas[i];
			plan->steps[i].timestep = (double)dit_sampler_mulf(shifted, 1000.0f);
		}
	}
	return DIT_OK;
}

/* The Karras schedule over the plan's nsteps evaluations (N = nsteps - 1). */
static dit_status dit_sampler_schedule_karras(dit_sampler_plan *plan, dit_error *err)
{
	const double smax = 200.0, smin = 0.01, rho = 7.0;
	int n = plan->nsteps - 1;
	if (n < 1)
		return dit_error_set(err, DIT_EINVAL,
		                     "sampler: the Karras schedule needs 1 step or more");
	double a = pow(smax, 1.0 / rho), b = pow(smin, 1.0 / rho);
	for (int i = 0; i <= n; i++) {
		double u = (double)i / (double)n;
		double s = pow(a + u * (b - a), rho);
		s = s / (1.0 + s);
		plan->sigmas[i] = dit_sampler_f32(s);
		plan->steps[i].sigma = plan->sigmas[i];
		plan->steps[i].timestep = (double)(int64_t)(s * 1000.0);
	}
	plan->sigmas[n + 1] = 0.0;
	return DIT_OK;
}

static void dit_sampler_plan_euler(dit_sampler_plan *plan)
{
	for (int i = 0; i < plan->nsteps; i++) {
		dit_sampler_step *st = &plan->steps[i];
		const int src[2] = {DIT_SBUF_X, DIT_SBUF_V};
		const double coef[2] = {1.0, plan->sigmas[i + 1] - plan->sigmas[i]};
		st->nops = 1;
		dit_sampler_op_set(&st->ops[0], DIT_SBUF_X, 2, src, coef);
	}
}

/* Corrector of step i (1 <= i), order q: LAST <- sum of LAST, m_{i-2}, m_{i-1}, m_i. */
static void dit_sampler_corrector(dit_sampler_op *op, const double *sig, int i, int q)
{
	const double s_t = sig[i];
	const double s_s0 = sig[i - 1];
	const double alpha_t = 1.0 - s_t;
	const double h = dit_sampler_lambda(s_t) - dit_sampler_lambda(s_s0);
	const double hh = -h;
	const double h_phi_1 = expm1(hh);
	const double b_h = expm1(hh);
	const double ab = alpha_t * b_h;
	const double ratio = s_t / s_s0;

	if (q == 1) {
		/* rhos_c = [0.5] */
		const int src[3] = {DIT_SBUF_LAST, dit_sampler_mbuf(i - 1), dit_sampler_mbuf(i)};
		const double coef[3] = {ratio, -alpha_t * h_phi_1 + 0.5 * ab, -0.5 * ab};
		dit_sampler_op_set(op, DIT_SBUF_LAST, 3, src, coef);
		return;
	}

	/* rk from m_{i-2}; rhos_c solves [[1, 1], [rk, 1]] rho = [b1, b2]. */
	const double rk = (dit_sampler_lambda(sig[i - 2]) - dit_sampler_lambda(s_s0)) / h;
	double h_phi_k = h_phi_1 / hh - 1.0;
	const double b1 = h_phi_k * 1.0 / b_h;
	h_phi_k = h_phi_k / hh - 1.0 / 2.0;
	const double b2 = h_phi_k * 2.0 / b_h;
	const double rho0 = (b1 - b2) / (1.0 - rk);
	const double rho1 = b1 - rho0;
	const double d = ab * rho0 / rk;

	const int src[4] = {DIT_SBUF_LAST, dit_sampler_mbuf(i - 2), dit_sampler_mbuf(i - 1),
	                    dit_sampler_mbuf(i)};
	const double coef[4] = {ratio, -d, -alpha_t * h_phi_1 + d + ab * rho1, -ab * rho1};
	dit_sampler_op_set(op, DIT_SBUF_LAST, 4, src, coef);
}

/* Predictor of step i (i + 1 < n, so sigma_{i+1} > 0), order p, from sample buffer smp:
 * X <- sum of smp, m_i, m_{i-1}. */
static void dit_sampler_predictor(dit_sampler_op *op, const double *sig, int i, int p, int smp)
{
	const double s_t = sig[i + 1];
	const double s_s0 = sig[i];
	const double alpha_t = 1.0 - s_t;
	const double h = dit_sampler_lambda(s_t) - dit_sampler_lambda(s_s0);
	const double hh = -h;
	const double h_phi_1 = expm1(hh);
	const double b_h = expm1(hh);
	const double ratio = s_t / s_s0;

	if (p == 1) {
		const int src[2] = {smp, dit_sampler_mbuf(i)};
		const double coef[2] = {ratio, -alpha_t * h_phi_1};
		dit_sampler_op_set(op, DIT_SBUF_X, 2, src, coef);
		return;
	}

	/* rhos_p = [0.5], D1 = (m_{i-1} - m_i) / rk. */
	const double rk = (dit_sampler_lambda(sig[i - 1]) - dit_sampler_lambda(s_s0)) / h;
	const double e = 0.5 * alpha_t * b_h / rk;
	const int src[3] = {smp, dit_sampler_mbuf(i), dit_sampler_mbuf(i - 1)};
	const double coef[3] = {ratio, -alpha_t * h_phi_1 + e, -e};
	dit_sampler_op_set(op, DIT_SBUF_X, 3, src, coef);
}

static dit_status dit_sampler_plan_unipc(dit_sampler_plan *plan, dit_error *err)
{
	const int n = plan->nsteps;
	const double *sig = plan->sigmas;

	for (int i = 0; i < n; i++) {
		if (!(sig[i] > 0.0 && sig[i] < 1.0) || (i > 0 && !(sig[i] < sig[i - 1]))) {
			return dit_error_set(
			    err, DIT_EINVAL,
			    "sampler: unipc needs fp32 sigmas strictly decreasing "
			    "inside (0, 1); steps %d shift %g give sigma[%d] = %.9g",
			    n, plan->shift, i, sig[i]);
		}
	}

	for (int i = 0; i < n; i++) {
		dit_sampler_step *st = &plan->steps[i];
		st->nops = 0;

		if (i == n - 1) {
			/* Order-1 prediction of sigma = 0: the x0 prediction itself. */
			const int src[2] = {DIT_SBUF_X, DIT_SBUF_V};
			const double coef[2] = {1.0, -sig[i]};
			dit_sampler_op_set(&st->ops[st->nops++], DIT_SBUF_X, 2, src, coef);
			continue;
		}

		const int src[2] = {DIT_SBUF_X, DIT_SBUF_V};
		const double coef[2] = {1.0, -sig[i]};
		dit_sampler_op_set(&st->ops[st->nops++], dit_sampler_mbuf(i), 2, src, coef);

		int smp = DIT_SBUF_X;
		if (i == 0) {
			if (n > 2) {
				/* The corrector of step 1 starts from this sample. */
				const int csrc[1] = {DIT_SBUF_X};
				const double ccoef[1] = {1.0};
				dit_sampler_op_set(&st->ops[st->nops++], DIT_SBUF_LAST, 1, csrc,
				                   ccoef);
			}
		} else {
			dit_sampler_corrector(&st->ops[st->nops++], sig, i,
			                      dit_sampler_order(i - 1, n));
			smp = DIT_SBUF_LAST;
		}
		dit_sampler_predictor(&st->ops[st->nops++], sig, i, dit_sampler_order(i, n), smp);
	}

	for (int i = 0; i < n; i++) {
		const dit_sampler_step *st = &plan->steps[i];
		for (int k = 0; k < st->nops; k++) {
			for (int j = 0; j < st->ops[k].nterms; j++) {
				if (!isfinite(st->ops[k].coef[j])) {
					return dit_error_set(
					    err, DIT_EINVAL,
					    "sampler: unipc coefficient not finite at step %d "
					    "(steps %d shift %g)",
					    i, n, plan->shift);
				}
			}
		}
	}
	return DIT_OK;
}

/* The schedules as the plan fills them: sigmas and each step's sigma and timestep. */
static dit_status fill_unipc(dit_sampler_plan *plan, int n, double shift, const dit_ltx2_shift *p,
                             dit_error *err)
{
	(void)p;
	return dit_sampler_schedule(plan, n, shift, err);
}

static dit_status fill_flow(dit_sampler_plan *plan, int n, double shift, const dit_ltx2_shift *p,
                            dit_error *err)
{
	(void)p;
	return dit_sampler_schedule_flow(plan, n, shift, err);
}

static dit_status fill_karras(dit_sampler_plan *plan, int n, double shift, const dit_ltx2_shift *p,
                              dit_error *err)
{
	(void)n;
	(void)shift;
	(void)p;
	return dit_sampler_schedule_karras(plan, err);
}

/* LTX-2's sigmas; the model sees sigma * 1000 in fp32 (no shift beyond the schedule's) */
static dit_status fill_ltx2(dit_sampler_plan *plan, int n, double shift, const dit_ltx2_shift *p,
                            dit_error *err)
{
	(void)shift;
	dit_status st = dit_sampler_ltx2_sigmas(n, p, plan->sigmas, err);
	for (int i = 0; !st && i < n; i++) {
		plan->steps[i].sigma = plan->sigmas[i];
		plan->steps[i].timestep = (double)dit_sampler_mulf((float)plan->sigmas[i], 1000.0f);
	}
	return st;
}

static const struct {
	const char *name;
	int extra; /* evaluations beyond the steps */
	dit_status (*fill)(dit_sampler_plan *plan, int n, double shift, const dit_ltx2_shift *p,
	                   dit_error *err);
} schedules[DIT_SCHEDULE_COUNT] = {
    [DIT_SCHEDULE_UNIPC] = {"unipc", 0, fill_unipc},
    [DIT_SCHEDULE_FLOW] = {"flow", 0, fill_flow},
    [DIT_SCHEDULE_KARRAS] = {"karras", 1, fill_karras},
    [DIT_SCHEDULE_LTX2] = {"ltx2", 0, fill_ltx2},
};

const char *dit_schedule_name(dit_schedule s)
{
	return (unsigned)s < DIT_SCHEDULE_COUNT ? schedules[s].name : "?";
}

dit_status dit_schedule_parse(dit_schedule *out, const char *name, dit_error *err)
{
	for (int i = 0; name && i < DIT_SCHEDULE_COUNT; i++)
		if (strcmp(schedules[i].name, name) == 0) {
			*out = (dit_schedule)i;
			return DIT_OK;
		}
	return dit_error_set(err, DIT_EINVAL, "sampler: unknown schedule '%s'", name ? name : "");
}

dit_status dit_sampler_plan_build(dit_sampler_plan *plan, dit_solver solver, int steps,
                                  double shift, dit_error *err)
{
	return dit_sampler_plan_build_on(plan, solver, DIT_SCHEDULE_UNIPC, steps, shift, NULL, err);
}

dit_status dit_sampler_plan_build_on(dit_sampler_plan *plan, dit_solver solver,
                                     dit_schedule schedule, int steps, double shift,
                                     const dit_ltx2_shift *ltx2, dit_error *err)
{
	if (!plan) {
		return dit_error_set(err, DIT_EINVAL, "sampler: plan is NULL");
	}
	memset(plan, 0, sizeof *plan);
	if (solver != DIT_SOLVER_EULER && solver != DIT_SOLVER_UNIPC) {
		return dit_error_set(err, DIT_EINVAL, "sampler: unknown solver %d", (int)solver);
	}
	if (steps < 1 || steps > DIT_SAMPLER_MAX_STEPS) {
		return dit_error_set(err, DIT_EINVAL, "sampler: steps must be in 1..%d, got %d",
		                     DIT_SAMPLER_MAX_STEPS, steps);
	}
	if (!(shift > 0.0) || !isfinite(shift)) {
		return dit_error_set(err, DIT_EINVAL,
		                     "sampler: shift must be positive and finite, got %g", shift);
	}

	if ((unsigned)schedule >= DIT_SCHEDULE_COUNT)
		return dit_error_set(err, DIT_EINVAL, "sampler: unknown schedule %d",
		                     (int)schedule);
	if (schedule == DIT_SCHEDULE_LTX2 && !ltx2)
		return dit_error_set(err, DIT_EINVAL,
		                     "sampler: the ltx2 schedule needs its constants");
	steps += schedules[schedule].extra; /* Karras: N steps, N + 1 evaluations */
	plan->sigmas = calloc((size_t)steps + 1, sizeof *plan->sigmas);
	plan->steps = calloc((size_t)steps, sizeof *plan->steps);
	if (!plan->sigmas || !plan->steps) {
		dit_sampler_plan_free(plan);
		return dit_error_set(err, DIT_ENOMEM, "sampler: cannot allocate a %d-step plan",
		                     steps);
	}
	plan->solver = solver;
	plan->schedule = schedule;
	plan->nsteps = steps;
	plan->shift = shift;

	dit_status st = schedules[schedule].fill(plan, steps, shift, ltx2, err);
	if (st == DIT_OK) {
		if (solver == DIT_SOLVER_EULER) {
			dit_sampler_plan_euler(plan);
		} else {
			st = dit_sampler_plan_unipc(plan, err);
		}
	}
	if (st != DIT_OK) {
		dit_sampler_plan_free(plan);
	}
	return st;
}

void dit_sampler_plan_free(dit_sampler_plan *plan)
{
	if (!plan) {
		return;
	}
	free(plan->sigmas);
	free(plan->steps);
	memset(plan, 0, sizeof *plan);
}

dit_status dit_solver_parse(dit_solver *out, const char *name, dit_error *err)
{
	if (!out || !name) {
		return dit_error_set(err, DIT_EINVAL, "sampler: solver name missing");
	}
	if (strcmp(name, "euler") == 0) {
		*out = DIT_SOLVER_EULER;
		return DIT_OK;
	}
	if (strcmp(name, "unipc") == 0) {
		*out = DIT_SOLVER_UNIPC;
		return DIT_OK;
	}
	return dit_error_set(err, DIT_EINVAL, "sampler: unknown solver '%s' (euler, unipc)", name);
}

const char *dit_solver_name(dit_solver s)
{
	switch (s) {
	case DIT_SOLVER_EULER: return "euler";
	case DIT_SOLVER_UNIPC: return "unipc";
	case DIT_SOLVER_DEFAULT: return "default";
	}
	return "unknown";
}

/* torch.linspace(start, end, n) in float32 as its CPU kernel computes it: the step in
 * float32, then start + step i for the first half and end - step (n - 1 - i) for the
 * second, each rounded once. */
static float dit_sampler_linspace_f32(float start, float end, int n, int i)
{
	double step = (double)((end - start) / (float)(n - 1));
	if (i < n / 2)
		return (float)((double)start + step * (double)i);
	return (float)((double)end - step * (double)(n - 1 - i));
}

const double dit_sampler_ltx2_distilled[9] = {1.0,      0.99375, 0.9875,   0.98125, 0.975,
                                              0.909375, 0.725,   0.421875, 0.0};

dit_status dit_sampler_ltx2_sigmas(int steps, const dit_ltx2_shift *p, double *out, dit_error *err)
{
	if (steps < 1 || steps > 10000)
		return dit_error_set(err, DIT_EUSAGE, "--steps %d: 1..10000", steps);
	double mm = (p->max_shift - p->base_shift) / (double)(p->max_tokens - p->base_tokens);
	double b = p->base_shift - mm * (double)p->base_tokens;
	float e = (float)exp((double)p->tokens * mm + b);
	float *sig = malloc((size_t)(steps + 1) * sizeof *sig);
	if (!sig)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	int last = -1;
	for (int i = 0; i <= steps; i++) {
		float s = dit_sampler_linspace_f32(1.0f, 0.0f, steps + 1, i);
		if (s != 0.0f) {
			volatile float r = 1.0f / s - 1.0f; /* each step rounded as torch does */
			volatile float q = 1.0f / (e + r);
			s = q * e;
			last = i;
		}
		sig[i] = s;
	}
	/* stretch: the last non-zero sigma becomes the terminal one (1 - sigma scaled) */
	if (last >= 0) {
		float scale = (1.0f - sig[last]) / (float)(1.0 - p->terminal);
		for (int i = 0; i <= last; i++) {
			volatile float omz = 1.0f - sig[i];
			sig[i] = 1.0f - omz / scale;
		}
	}
	for (int i = 0; i <= steps; i++)
		out[i] = sig[i];
	free(sig);
	return DIT_OK;
}
