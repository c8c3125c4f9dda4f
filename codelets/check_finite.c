/* check_finite: scans a buffer for NaN or Inf (--check-finite) and records the
 * earliest (step, block, pass) where one appears in the guard it is given. It runs on
 * a CPU worker whatever computes (it only reads). */
#include <math.h>

#include "dit_codelets.h"

void dit_finite_guard_record(dit_finite_guard *g, int step, int64_t block, int pass, int64_t index)
{
	pthread_mutex_lock(&g->lock);
	/* the head (block -1) comes after every block of its step */
	int64_t key_b = block < 0 ? INT64_MAX : block;
	int64_t have_b = g->block < 0 ? INT64_MAX : g->block;
	if (!g->found || step < g->step || (step == g->step && key_b < have_b) ||
	    (step == g->step && key_b == have_b && pass < g->pass)) {
		g->found = 1;
		g->step = step;
		g->block = block;
		g->pass = pass;
		g->index = index;
	}
	pthread_mutex_unlock(&g->lock);
}

static void check_finite_cpu(void *buffers[], void *cl_arg)
{
	const dit_check_finite_args *a = cl_arg;
	const float *x = DIT_BUF_F32(buffers, 0);
	int64_t bad = -1;
	for (int64_t i = 0; i < a->n && bad < 0; i++)
		if (!isfinite(x[i]))
			bad = i;
	if (bad >= 0)
		dit_finite_guard_record(a->guard, a->step, a->block, a->pass, bad);
}

DIT_PERFMODEL(check_finite_model, "dit_check_finite");

struct starpu_codelet dit_cl_check_finite = {
    .name = "check_finite",
    .cpu_funcs = {check_finite_cpu},
    .cpu_funcs_name = {"check_finite_cpu"},
    .nbuffers = 1,
    .modes = {STARPU_R},
    .model = &check_finite_model,
};
