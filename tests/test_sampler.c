/* Tests of the sampler plans (TAP).
 *
 *   test_sampler               run the checks below
 *   test_sampler --dump FILE   write the plans of a grid of (solver, steps, shift) and the
 *                              trajectories they give on a synthetic model to FILE (JSON),
 *                              for tests/ref/sampler_plan_check.py
 *
 * Synthetic model, on DIT_TEST_N values with timestep t:
 *   v[k] = 0.3 x[k] - 0.2 x[(k + 1) % N] + 0.1 sin(k + t / 100),
 * starting from x[k] = cos(0.7 k + 0.2). */
#include "dit_sampler.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIT_TEST_N 8

typedef struct dit_test_ctx {
	int n;
	int failed;
} dit_test_ctx;

static void dit_test_ok(dit_test_ctx *t, int cond, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void dit_test_ok(dit_test_ctx *t, int cond, const char *fmt, ...)
{
	va_list ap;
	t->n++;
	if (!cond) {
		t->failed++;
	}
	printf("%s %d - ", cond ? "ok" : "not ok", t->n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* ------------------------------------------------------------------------------------ */
/* Plan execution on plain double arrays. */

typedef struct dit_test_bufs {
	int n;
	double *b[DIT_SBUF_COUNT];
	double *tmp;
} dit_test_bufs;

static int dit_test_bufs_init(dit_test_bufs *bufs, int n)
{
	bufs->n = n;
	for (int i = 0; i < DIT_SBUF_COUNT; i++) {
		bufs->b[i] = calloc((size_t)n, sizeof(double));
	}
	bufs->tmp = calloc((size_t)n, sizeof(double));
	for (int i = 0; i < DIT_SBUF_COUNT; i++) {
		if (!bufs->b[i]) {
			return -1;
		}
	}
	return bufs->tmp ? 0 : -1;
}

static void dit_test_bufs_free(dit_test_bufs *bufs)
{
	for (int i = 0; i < DIT_SBUF_COUNT; i++) {
		free(bufs->b[i]);
	}
	free(bufs->tmp);
}

static void dit_test_apply_op(dit_test_bufs *bufs, const dit_sampler_op *op)
{
	for (int k = 0; k < bufs->n; k++) {
		double acc = 0.0;
		for (int j = 0; j < op->nterms; j++) {
			acc += op->coef[j] * bufs->b[op->src[j]][k];
		}
		bufs->tmp[k] = acc;
	}
	memcpy(bufs->b[op->dst], bufs->tmp, (size_t)bufs->n * sizeof(double));
}

static void dit_test_apply_step(dit_test_bufs *bufs, const dit_sampler_step *st)
{
	for (int k = 0; k < st->nops; k++) {
		dit_test_apply_op(bufs, &st->ops[k]);
	}
}

typedef void (*dit_test_model)(const double *x, double t, double *v, int n, const void *arg);

static void dit_test_fake_model(const double *x, double t, double *v, int n, const void *arg)
{
	(void)arg;
	for (int k = 0; k < n; k++) {
		v[k] = 0.3 * x[k] - 0.2 * x[(k + 1) % n] + 0.1 * sin((double)k + t / 100.0);
	}
}

static void dit_test_fake_init(double *x, int n)
{
	for (int k = 0; k < n; k++) {
		x[k] = cos(0.7 * k + 0.2);
	}
}

/* Runs the plan; traj (optional) receives X before each step and the final X,
 * (nsteps + 1) * n values. The model sees the plan's timesteps unless use_sigma is set,
 * in which case it sees sigma_i. */
static int dit_test_run(const dit_sampler_plan *plan, dit_test_model model, const void *arg,
                        int use_sigma, const double *x0, int n, double *traj, double *out)
{
	dit_test_bufs bufs;
	if (dit_test_bufs_init(&bufs, n) != 0) {
		dit_test_bufs_free(&bufs);
		return -1;
	}
	memcpy(bufs.b[DIT_SBUF_X], x0, (size_t)n * sizeof(double));
	for (int i = 0; i < plan->nsteps; i++) {
		const dit_sampler_step *st = &plan->steps[i];
		if (traj) {
			memcpy(traj + (size_t)i * n, bufs.b[DIT_SBUF_X],
			       (size_t)n * sizeof(double));
		}
		model(bufs.b[DIT_SBUF_X], use_sigma ? st->sigma : st->timestep, bufs.b[DIT_SBUF_V],
		      n, arg);
		dit_test_apply_step(&bufs, st);
	}
	if (traj) {
		memcpy(traj + (size_t)plan->nsteps * n, bufs.b[DIT_SBUF_X],
		       (size_t)n * sizeof(double));
	}
	if (out) {
		memcpy(out, bufs.b[DIT_SBUF_X], (size_t)n * sizeof(double));
	}
	dit_test_bufs_free(&bufs);
	return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Structural and data-flow checks.
 *
 * The plan is run symbolically: every buffer holds a vector of coefficients over
 * (x_init, v_0, ..., v_{N-1}), V being v_i at step i. Checked: ops are well formed and
 * read only buffers written before; V is never written and X at most once per step; X at
 * step i depends only on x_init and v_0..v_{i-1}; after every step but the last,
 * M[i % 3] holds m_i = X_i - sigma_i v_i; every read of an M buffer in step i sees
 * m_i, m_{i-1} or m_{i-2} (never a stale m_{i-3}, nor a ring slot read after being
 * overwritten). */

static int dit_test_vec_eq(const double *a, const double *b, int d, double tol)
{
	for (int k = 0; k < d; k++) {
		if (fabs(a[k] - b[k]) > tol * (1.0 + fabs(b[k]))) {
			return 0;
		}
	}
	return 1;
}

static int dit_test_check_flow(const dit_sampler_plan *plan, char *why, size_t why_len)
{
	const int nsteps = plan->nsteps;
	const int d = nsteps + 1;
	int rc = 0;
	double *sym = calloc((size_t)DIT_SBUF_COUNT * d, sizeof(double));
	double *m = calloc((size_t)nsteps * d, sizeof(double));
	double *xi = calloc((size_t)d, sizeof(double));
	double *tmp = calloc((size_t)d, sizeof(double));
	int defined[DIT_SBUF_COUNT] = {0};

	if (!sym || !m || !xi || !tmp) {
		snprintf(why, why_len, "out of memory");
		rc = -1;
		goto done;
	}
	sym[DIT_SBUF_X * d + 0] = 1.0;
	defined[DIT_SBUF_X] = 1;

	for (int i = 0; i < nsteps && rc == 0; i++) {
		const dit_sampler_step *st = &plan->steps[i];
		int xwrites = 0;

		if (st->nops < 1 || st->nops > DIT_SAMPLER_MAX_OPS) {
			snprintf(why, why_len, "step %d: nops %d", i, st->nops);
			rc = -1;
			break;
		}
		for (int j = i + 1; j < d; j++) {
			if (sym[DIT_SBUF_X * d + j] != 0.0) {
				snprintf(why, why_len, "step %d: X depends on v_%d", i, j - 1);
				rc = -1;
			}
		}
		memcpy(xi, &sym[DIT_SBUF_X * d], (size_t)d * sizeof(double));
		memset(&sym[DIT_SBUF_V * d], 0, (size_t)d * sizeof(double));
		sym[DIT_SBUF_V * d + 1 + i] = 1.0;
		defined[DIT_SBUF_V] = 1;

		for (int k = 0; k < st->nops && rc == 0; k++) {
			const dit_sampler_op *op = &st->ops[k];
			if (op->dst < 0 || op->dst >= DIT_SBUF_COUNT || op->dst == DIT_SBUF_V ||
			    op->nterms < 1 || op->nterms > DIT_SAMPLER_MAX_TERMS) {
				snprintf(why, why_len, "step %d op %d: dst %d nterms %d", i, k,
				         op->dst, op->nterms);
				rc = -1;
				break;
			}
			memset(tmp, 0, (size_t)d * sizeof(double));
			for (int j = 0; j < op->nterms && rc == 0; j++) {
				const int s = op->src[j];
				if (s < 0 || s >= DIT_SBUF_COUNT || !defined[s] ||
				    !isfinite(op->coef[j])) {
					snprintf(why, why_len,
					         "step %d op %d: bad term %d (src %d)", i, k, j, s);
					rc = -1;
					break;
				}
				for (int jj = 0; jj < j; jj++) {
					if (op->src[jj] == s) {
						snprintf(why, why_len,
						         "step %d op %d: src %d twice", i, k, s);
						rc = -1;
					}
				}
				if (s >= DIT_SBUF_M0) {
					int seen = 0;
					for (int back = 0; back <= 1 && back <= i - 1; back++) {
						const int jm = i - 1 - back;
						if (DIT_SBUF_M0 + jm % 3 == s &&
						    dit_test_vec_eq(&sym[s * d], &m[(size_t)jm * d],
						                    d, 0.0)) {
							seen = 1;
						}
					}
					/* m_i itself, written earlier in this step. */
					if (DIT_SBUF_M0 + i % 3 == s) {
						int same = 1;
						for (int c = 0; c < d; c++) {
							const double e =
							    xi[c] -
							    (c == 1 + i ? plan->sigmas[i] : 0.0);
							same &= sym[s * d + c] == e;
						}
						seen |= same;
					}
					if (!seen) {
						snprintf(why, why_len,
						         "step %d op %d: M%d holds no live x0 "
						         "prediction",
						         i, k, s - DIT_SBUF_M0);
						rc = -1;
						break;
					}
				}
				for (int c = 0; c < d; c++) {
					tmp[c] += op->coef[j] * sym[s * d + c];
				}
			}
			if (rc != 0) {
				break;
			}
			memcpy(&sym[op->dst * d], tmp, (size_t)d * sizeof(double));
			defined[op->dst] = 1;
			xwrites += op->dst == DIT_SBUF_X;
		}
		if (rc == 0 && xwrites > 1) {
			snprintf(why, why_len, "step %d: X written %d times", i, xwrites);
			rc = -1;
		}
		if (rc == 0 && i + 1 < nsteps && plan->solver == DIT_SOLVER_UNIPC) {
			const int s = DIT_SBUF_M0 + i % 3;
			for (int c = 0; c < d; c++) {
				m[(size_t)i * d + c] = xi[c] - (c == 1 + i ? plan->sigmas[i] : 0.0);
			}
			if (!defined[s] ||
			    !dit_test_vec_eq(&sym[s * d], &m[(size_t)i * d], d, 0.0)) {
				snprintf(why, why_len, "step %d: M%d is not X - sigma V", i, i % 3);
				rc = -1;
			}
		}
	}
done:
	free(sym);
	free(m);
	free(xi);
	free(tmp);
	return rc;
}

/* ------------------------------------------------------------------------------------ */

static void dit_test_args(dit_test_ctx *t)
{
	dit_sampler_plan plan;
	dit_error err;
	dit_status st;

	const struct {
		int steps;
		double shift;
		const char *what;
	} bad[] = {
	    {0, 5.0, "steps 0"},          {-3, 5.0, "negative steps"}, {10, 0.0, "shift 0"},
	    {10, -1.0, "negative shift"}, {10, NAN, "shift NaN"},      {10, INFINITY, "shift inf"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		for (int s = 0; s < 2; s++) {
			dit_error_clear(&err);
			st = dit_sampler_plan_build(&plan, (dit_solver)s, bad[k].steps,
			                            bad[k].shift, &err);
			dit_test_ok(t,
			            st == DIT_EINVAL && err.code == DIT_EINVAL && err.msg[0] &&
			                !strchr(err.msg, '\n') && plan.sigmas == NULL &&
			                plan.steps == NULL,
			            "%s rejects %s (%s)", dit_solver_name((dit_solver)s),
			            bad[k].what, err.msg);
		}
	}

	/* A shift so large that fp32 sigma_0 rounds to 1 (alpha = 0) cannot drive UniPC. */
	dit_error_clear(&err);
	st = dit_sampler_plan_build(&plan, DIT_SOLVER_UNIPC, 10, 1e9, &err);
	dit_test_ok(t, st == DIT_EINVAL && err.msg[0], "unipc rejects degenerate shift 1e9 (%s)",
	            err.msg);

	st = dit_sampler_plan_build(&plan, (dit_solver)7, 10, 5.0, &err);
	dit_test_ok(t, st == DIT_EINVAL, "unknown solver enum rejected");
	st = dit_sampler_plan_build(NULL, DIT_SOLVER_EULER, 10, 5.0, NULL);
	dit_test_ok(t, st == DIT_EINVAL, "NULL plan rejected without an error record");

	dit_solver sv = DIT_SOLVER_EULER;
	dit_test_ok(t,
	            dit_solver_parse(&sv, "unipc", &err) == DIT_OK && sv == DIT_SOLVER_UNIPC &&
	                dit_solver_parse(&sv, "euler", &err) == DIT_OK && sv == DIT_SOLVER_EULER,
	            "solver names parse");
	dit_test_ok(t,
	            dit_solver_parse(&sv, "dpm++", &err) == DIT_EINVAL && err.msg[0] &&
	                dit_solver_parse(&sv, "UniPC", NULL) == DIT_EINVAL,
	            "unknown solver names rejected (%s)", err.msg);
	dit_test_ok(t,
	            strcmp(dit_solver_name(DIT_SOLVER_EULER), "euler") == 0 &&
	                strcmp(dit_solver_name(DIT_SOLVER_UNIPC), "unipc") == 0,
	            "solver names round-trip");
	dit_sampler_plan_free(NULL);
}

/* Values from the schedule definition: sigma_max = fp32(1 - 1/1000) = 0.9990000128746033,
 * s_i = sigma_max - i * sigma_max / 4, shifted 5 s / (1 + 4 s) in double:
 *   0.999799842450943, 0.9372654521088315, 0.833055373827883, 0.6246873476991758
 * -> timesteps trunc(1000 s') = 999, 937, 833, 624; the solver sigmas are those
 * values rounded to fp32. With shift 1 the shifted values are the s_i themselves. */
static void dit_test_known(dit_test_ctx *t)
{
	static const double sig5[5] = {0.9997998476028442, 0.9372654557228088, 0.8330553770065308,
	                               0.6246873736381531, 0.0};
	static const double ts5[4] = {999, 937, 833, 624};
	static const double sig1[5] = {0.9990000128746033, 0.7492499947547913, 0.49950000643730164,
	                               0.24975000321865082, 0.0};
	static const double ts1[4] = {999, 749, 499, 249};
	static const double ts50[10] = {999, 995, 991, 987, 982, 978, 973, 968, 963, 957};
	dit_sampler_plan plan;
	dit_error err;

	for (int s = 0; s < 2; s++) {
		for (int which = 0; which < 2; which++) {
			const double shift = which ? 1.0 : 5.0;
			const double *sig = which ? sig1 : sig5;
			const double *ts = which ? ts1 : ts5;
			int ok =
			    dit_sampler_plan_build(&plan, (dit_solver)s, 4, shift, &err) == DIT_OK;
			for (int i = 0; ok && i < 5; i++) {
				ok = plan.sigmas[i] == sig[i] &&
				     (float)plan.sigmas[i] == plan.sigmas[i];
			}
			for (int i = 0; ok && i < 4; i++) {
				ok = plan.steps[i].timestep == ts[i] &&
				     plan.steps[i].sigma == sig[i];
			}
			ok = ok && plan.nsteps == 4 && plan.shift == shift &&
			     plan.solver == (dit_solver)s;
			dit_test_ok(t, ok, "%s steps 4 shift %g: sigmas and timesteps",
			            dit_solver_name((dit_solver)s), shift);
			dit_sampler_plan_free(&plan);
		}
	}

	int ok = dit_sampler_plan_build(&plan, DIT_SOLVER_UNIPC, 50, 5.0, &err) == DIT_OK;
	for (int i = 0; ok && i < 10; i++) {
		ok = plan.steps[i].timestep == ts50[i];
	}
	ok = ok && plan.steps[49].timestep == 92 && plan.sigmas[50] == 0.0;
	dit_test_ok(t, ok, "unipc steps 50 shift 5: first timesteps 999 995 991 ... last 92");
	dit_sampler_plan_free(&plan);

	/* Timesteps come from the double schedule, not the fp32 solver sigmas: steps 37
	 * shift 1, s_2 = 0.9450000121786788 -> 945 while fp32(s_2) = 0.9449999928474426. */
	ok = dit_sampler_plan_build(&plan, DIT_SOLVER_EULER, 37, 1.0, &err) == DIT_OK;
	ok = ok && plan.steps[2].timestep == 945 && plan.steps[3].timestep == 918 &&
	     plan.sigmas[2] == 0.9449999928474426;
	dit_test_ok(t, ok, "steps 37 shift 1: timestep 945 from the unrounded sigma");
	dit_sampler_plan_free(&plan);

	/* Hand-derived ops for steps 3 (shift 1): sigmas s0, s1, s2, 0. */
	ok = dit_sampler_plan_build(&plan, DIT_SOLVER_UNIPC, 3, 1.0, &err) == DIT_OK;
	if (ok) {
		const double *s = plan.sigmas;
		const dit_sampler_step *st0 = &plan.steps[0];
		const dit_sampler_step *st2 = &plan.steps[2];
		/* Step 0: M0 = X - s0 V; LAST = X; X = (s1/s0) X + (1 - s1/s0) M0. */
		ok = st0->nops == 3 && st0->ops[0].dst == DIT_SBUF_M0 &&
		     st0->ops[0].coef[1] == -s[0] && st0->ops[1].dst == DIT_SBUF_LAST &&
		     st0->ops[1].nterms == 1 && st0->ops[2].dst == DIT_SBUF_X &&
		     st0->ops[2].nterms == 2 && fabs(st0->ops[2].coef[0] - s[1] / s[0]) < 1e-15 &&
		     fabs(st0->ops[2].coef[1] - (1.0 - s[1] / s[0])) < 1e-14;
		/* Last step: X = X - s2 V. */
		ok = ok && st2->nops == 1 && st2->ops[0].dst == DIT_SBUF_X &&
		     st2->ops[0].nterms == 2 && st2->ops[0].src[0] == DIT_SBUF_X &&
		     st2->ops[0].src[1] == DIT_SBUF_V && st2->ops[0].coef[0] == 1.0 &&
		     st2->ops[0].coef[1] == -s[2];
		/* Step 1: order-1 corrector = trapezoid in x0: LAST = r LAST + (1 - r)(M0 + M1)/2,
		 * r = s1 / s0. */
		const dit_sampler_op *c = &plan.steps[1].ops[1];
		const double r = s[1] / s[0];
		ok = ok && c->dst == DIT_SBUF_LAST && c->nterms == 3 &&
		     c->src[0] == DIT_SBUF_LAST && fabs(c->coef[0] - r) < 1e-15 &&
		     fabs(c->coef[1] - 0.5 * (1.0 - r)) < 1e-14 &&
		     fabs(c->coef[2] - 0.5 * (1.0 - r)) < 1e-14;
	}
	dit_test_ok(t, ok, "unipc steps 3: step 0, corrector of step 1 and last step by hand");
	dit_sampler_plan_free(&plan);
}

/* ltx_core LTX2Scheduler's constants, as every official pipeline calls it */
static const dit_ltx2_shift ltx2_official = {.base_shift = 0.95,
                                             .max_shift = 2.05,
                                             .base_tokens = 1024,
                                             .max_tokens = 4096,
                                             .tokens = 4096,
                                             .terminal = 0.1};

/* The schedules' table: the LTX-2 entry builds the plan on the sigmas of
 * dit_sampler_ltx2_sigmas (timesteps fp32(s * 1000)), it needs its constants, and every
 * schedule's name parses back to it. */
static void dit_test_schedules(dit_test_ctx *t)
{
	const dit_ltx2_shift p = ltx2_official;
	dit_sampler_plan plan;
	dit_error err;
	dit_error_clear(&err);
	double sig[9];
	int ok = dit_sampler_ltx2_sigmas(8, &p, sig, &err) == DIT_OK &&
	         dit_sampler_plan_build_on(&plan, DIT_SOLVER_EULER, DIT_SCHEDULE_LTX2, 8, 1.0, &p,
	                                   &err) == DIT_OK;
	for (int i = 0; ok && i <= 8; i++)
		ok = plan.sigmas[i] == sig[i] &&
		     (i == 8 || plan.steps[i].timestep == (double)(float)((float)sig[i] * 1000.0f));
	if (ok)
		dit_sampler_plan_free(&plan);
	ok = ok && dit_sampler_plan_build_on(&plan, DIT_SOLVER_EULER, DIT_SCHEDULE_LTX2, 8, 1.0,
	                                     NULL, &err) == DIT_EINVAL;
	dit_test_ok(t, ok,
	            "ltx2 schedule: the plan on dit_sampler_ltx2_sigmas, refused without "
	            "its constants");
	ok = 1;
	for (int i = 0; i < DIT_SCHEDULE_COUNT; i++) {
		dit_schedule back = DIT_SCHEDULE_COUNT;
		ok =
		    ok &&
		    dit_schedule_parse(&back, dit_schedule_name((dit_schedule)i), NULL) == DIT_OK &&
		    back == (dit_schedule)i;
	}
	dit_schedule back;
	ok = ok && dit_schedule_parse(&back, "linear", NULL) == DIT_EINVAL;
	dit_test_ok(t, ok, "schedule names: each parses back to its enum, others refused");
}

static void dit_test_flow(dit_test_ctx *t)
{
	static const int steps[] = {1, 2, 3, 4, 5, 10, 40, 50, 200};
	static const double shifts[] = {1.0, 3.0, 5.0, 16.0};
	char why[256];

	for (int s = 0; s < 2; s++) {
		int ok = 1;
		why[0] = '\0';
		for (size_t a = 0; ok && a < sizeof steps / sizeof steps[0]; a++) {
			for (size_t b = 0; ok && b < sizeof shifts / sizeof shifts[0]; b++) {
				dit_sampler_plan plan;
				dit_error err;
				if (dit_sampler_plan_build(&plan, (dit_solver)s, steps[a],
				                           shifts[b], &err) != DIT_OK) {
					snprintf(why, sizeof why, "build: %.200s", err.msg);
					ok = 0;
					break;
				}
				if (dit_test_check_flow(&plan, why, sizeof why) != 0) {
					ok = 0;
				}
				for (int i = 0; ok && i < plan.nsteps; i++) {
					ok =
					    plan.sigmas[i] > plan.sigmas[i + 1] &&
					    plan.steps[i].timestep == floor(plan.steps[i].timestep);
				}
				dit_sampler_plan_free(&plan);
				if (!ok && !why[0]) {
					snprintf(why, sizeof why, "steps %d shift %g: schedule",
					         steps[a], shifts[b]);
				}
			}
		}
		dit_test_ok(t, ok, "%s plans: valid buffers, live reads, causal, m_i in M[i%%3] %s",
		            dit_solver_name((dit_solver)s), why);
	}
}

/* Straight flow (constant velocity c): every consistent solver is exact,
 * X_i = x0 + (sigma_i - sigma_0) c. */
static void dit_test_const_model(const double *x, double t, double *v, int n, const void *arg)
{
	(void)x;
	(void)t;
	for (int k = 0; k < n; k++) {
		v[k] = ((const double *)arg)[k];
	}
}

/* dx/dsigma = a x, exact x(0) = x(sigma_0) exp(-a sigma_0). */
static void dit_test_lin_model(const double *x, double t, double *v, int n, const void *arg)
{
	(void)t;
	for (int k = 0; k < n; k++) {
		v[k] = *(const double *)arg * x[k];
	}
}

static void dit_test_accuracy(dit_test_ctx *t)
{
	static const double c[3] = {0.5, -1.25, 2.0};
	static const double x0[3] = {0.3, -0.7, 1.1};
	static const int steps[] = {1, 2, 3, 7, 50};
	dit_error err;

	for (int s = 0; s < 2; s++) {
		int ok = 1;
		for (size_t a = 0; ok && a < sizeof steps / sizeof steps[0]; a++) {
			dit_sampler_plan plan;
			double traj[(50 + 1) * 3];
			ok =
			    dit_sampler_plan_build(&plan, (dit_solver)s, steps[a], 5.0, &err) ==
			        DIT_OK &&
			    dit_test_run(&plan, dit_test_const_model, c, 1, x0, 3, traj, NULL) == 0;
			for (int i = 0; ok && i <= plan.nsteps; i++) {
				for (int k = 0; k < 3; k++) {
					double want =
					    x0[k] + (plan.sigmas[i] - plan.sigmas[0]) * c[k];
					ok = ok && fabs(traj[i * 3 + k] - want) < 1e-13;
				}
			}
			dit_sampler_plan_free(&plan);
		}
		dit_test_ok(t, ok, "%s exact on a constant velocity field",
		            dit_solver_name((dit_solver)s));
	}

	/* First UniPC step (order-1 UniP, no corrector) is an Euler step. */
	{
		dit_sampler_plan pe, pu;
		double xe[DIT_TEST_N], xu[DIT_TEST_N], x[DIT_TEST_N], v[DIT_TEST_N];
		int ok = dit_sampler_plan_build(&pe, DIT_SOLVER_EULER, 20, 5.0, &err) == DIT_OK &&
		         dit_sampler_plan_build(&pu, DIT_SOLVER_UNIPC, 20, 5.0, &err) == DIT_OK;
		if (ok) {
			dit_test_bufs be, bu;
			dit_test_fake_init(x, DIT_TEST_N);
			dit_test_fake_model(x, pe.steps[0].timestep, v, DIT_TEST_N, NULL);
			ok = dit_test_bufs_init(&be, DIT_TEST_N) == 0 &&
			     dit_test_bufs_init(&bu, DIT_TEST_N) == 0;
			if (ok) {
				memcpy(be.b[DIT_SBUF_X], x, sizeof x);
				memcpy(be.b[DIT_SBUF_V], v, sizeof v);
				memcpy(bu.b[DIT_SBUF_X], x, sizeof x);
				memcpy(bu.b[DIT_SBUF_V], v, sizeof v);
				dit_test_apply_step(&be, &pe.steps[0]);
				dit_test_apply_step(&bu, &pu.steps[0]);
				memcpy(xe, be.b[DIT_SBUF_X], sizeof xe);
				memcpy(xu, bu.b[DIT_SBUF_X], sizeof xu);
				for (int k = 0; k < DIT_TEST_N; k++) {
					ok = ok && fabs(xe[k] - xu[k]) < 1e-14;
				}
			}
			dit_test_bufs_free(&be);
			dit_test_bufs_free(&bu);
		}
		dit_test_ok(t, ok, "unipc step 0 equals an Euler step");
		dit_sampler_plan_free(&pe);
		dit_sampler_plan_free(&pu);
	}

	/* Convergence on dx/dsigma = a x (shift 5): Euler first order, UniPC much better. */
	{
		const double av = 0.8, xs = 1.0;
		double e[2][3];
		int ok = 1;
		for (int s = 0; s < 2; s++) {
			for (int r = 0; r < 3; r++) {
				dit_sampler_plan plan;
				double out;
				ok = ok && dit_sampler_plan_build(&plan, (dit_solver)s, 20 << r,
				                                  5.0, &err) == DIT_OK;
				ok = ok && dit_test_run(&plan, dit_test_lin_model, &av, 1, &xs, 1,
				                        NULL, &out) == 0;
				e[s][r] = ok ? fabs(out - xs * exp(-av * plan.sigmas[0])) : 1.0;
				dit_sampler_plan_free(&plan);
			}
		}
		const double re = e[0][1] / e[0][2], ru = e[1][1] / e[1][2];
		ok = ok && re > 1.8 && re < 2.2 && ru > 4.0 && e[1][2] < e[0][2] / 10.0;
		dit_test_ok(t, ok,
		            "convergence: euler err %.3g ratio %.2f, unipc err %.3g ratio %.2f "
		            "(20/40/80 steps)",
		            e[0][2], re, e[1][2], ru);
	}
}

/* ------------------------------------------------------------------------------------ */

static void dit_test_json_array(FILE *f, const double *v, int n)
{
	fputc('[', f);
	for (int k = 0; k < n; k++) {
		fprintf(f, "%s%.17g", k ? ", " : "", v[k]);
	}
	fputc(']', f);
}

static int dit_test_dump(const char *path)
{
	static const int steps[] = {1, 2, 3, 4, 10, 40, 50};
	static const double shifts[] = {1.0, 3.0, 5.0, 16.0};
	const int n = DIT_TEST_N;
	FILE *f = fopen(path, "w");
	int first = 1, rc = 0;

	if (!f) {
		fprintf(stderr, "test_sampler: cannot write %s\n", path);
		return 1;
	}
	fprintf(f, "{\"n\": %d, \"cases\": [\n", n);
	for (int s = 0; s < 2 && rc == 0; s++) {
		for (size_t a = 0; a < sizeof steps / sizeof steps[0] && rc == 0; a++) {
			for (size_t b = 0; b < sizeof shifts / sizeof shifts[0] && rc == 0; b++) {
				dit_sampler_plan plan;
				dit_error err;
				double x0[DIT_TEST_N];
				double *traj, *ts;
				if (dit_sampler_plan_build(&plan, (dit_solver)s, steps[a],
				                           shifts[b], &err) != DIT_OK) {
					fprintf(stderr, "test_sampler: %s\n", err.msg);
					rc = 1;
					break;
				}
				traj = calloc((size_t)(plan.nsteps + 1) * n, sizeof(double));
				ts = calloc((size_t)plan.nsteps, sizeof(double));
				dit_test_fake_init(x0, n);
				if (!traj || !ts ||
				    dit_test_run(&plan, dit_test_fake_model, NULL, 0, x0, n, traj,
				                 NULL) != 0) {
					rc = 1;
				} else {
					for (int i = 0; i < plan.nsteps; i++) {
						ts[i] = plan.steps[i].timestep;
					}
					fprintf(f,
					        "%s{\"solver\": \"%s\", \"steps\": %d, \"shift\": "
					        "%.17g",
					        first ? "" : ",\n", dit_solver_name((dit_solver)s),
					        plan.nsteps, plan.shift);
					fprintf(f, ",\n \"sigmas\": ");
					dit_test_json_array(f, plan.sigmas, plan.nsteps + 1);
					fprintf(f, ",\n \"timesteps\": ");
					dit_test_json_array(f, ts, plan.nsteps);
					fprintf(f, ",\n \"x_init\": ");
					dit_test_json_array(f, x0, n);
					fprintf(f, ",\n \"traj\": [");
					for (int i = 0; i <= plan.nsteps; i++) {
						fprintf(f, "%s", i ? ",\n  " : "");
						dit_test_json_array(f, traj + (size_t)i * n, n);
					}
					fprintf(f, "]}");
					first = 0;
				}
				free(traj);
				free(ts);
				dit_sampler_plan_free(&plan);
			}
		}
	}
	fprintf(f, "\n]}\n");
	if (fclose(f) != 0) {
		rc = 1;
	}
	return rc;
}

/* --ltx2-sigmas N: LTX-2's sigmas as a JSON list of the float32 values. */
static int dit_test_ltx2(const char *arg)
{
	int n = atoi(arg);
	double *sig = malloc((size_t)(n > 0 ? n + 1 : 1) * sizeof *sig);
	dit_error err;
	dit_error_clear(&err);
	const dit_ltx2_shift p = ltx2_official;
	if (!sig || dit_sampler_ltx2_sigmas(n, sig ? &p : NULL, sig, &err) != DIT_OK) {
		fprintf(stderr, "%s\n", err.msg);
		free(sig);
		return 1;
	}
	for (int i = 0; i <= n; i++)
		printf("%s%.17g", i ? ", " : "[", sig[i]);
	printf("]\n");
	free(sig);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--dump") == 0) {
		return dit_test_dump(argv[2]);
	}
	if (argc == 3 && strcmp(argv[1], "--ltx2-sigmas") == 0)
		return dit_test_ltx2(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--dump FILE | --ltx2-sigmas N]\n", argv[0]);
		return 2;
	}

	/* 12 + 7 argument checks, 6 known values, 2 schedule-table checks, 2 data-flow checks,
	 * 4 accuracy checks. */
	const int planned = 12 + 7 + 6 + 2 + 2 + 4;
	dit_test_ctx t = {0, 0};
	printf("1..%d\n", planned);
	dit_test_args(&t);
	dit_test_known(&t);
	dit_test_schedules(&t);
	dit_test_flow(&t);
	dit_test_accuracy(&t);
	if (t.n != planned) {
		printf("# planned %d tests, ran %d\n", planned, t.n);
		return 1;
	}
	return t.failed ? 1 : 0;
}
