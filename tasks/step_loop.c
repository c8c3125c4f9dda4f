/* The sampling loop as one graph: every step's tasks are submitted up front (or, with
 * a check, at most two steps ahead); each step depends on the previous one only
 * through the latent buffers. One driver (dit_graph_submit_loop) for every guidance
 * kind: two-pass CFG and one-pass embedded guidance here, LTX-2's multi-pass guidance
 * in tasks/guide_multi.c. */
#include <stdio.h>
#include <stdlib.h>

#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_ops.h"
#include "dit_schedule.h"

typedef struct step_mark {
	dit_graph *g;
	void (*on_step)(void *, int);
	void *arg;
	int step;
} step_mark;

static void step_done(void *p)
{
	step_mark *m = p;
	pthread_mutex_lock(&m->g->step_lock);
	m->g->steps_done++;
	pthread_cond_broadcast(&m->g->step_cond);
	pthread_mutex_unlock(&m->g->step_lock);
	if (m->on_step)
		m->on_step(m->arg, m->step);
	free(m);
}

/* Options that make a task report the end of step i (counted in the graph, then
 * on_step, if any). */
static dit_status step_mark_opts(dit_task_opts *o, dit_graph *g, void (*on_step)(void *, int),
                                 void *arg, int i, dit_error *err)
{
	step_mark *mk = malloc(sizeof *mk);
	if (!mk)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	*mk = (step_mark){g, on_step, arg, i};
	*o = (dit_task_opts){.done = step_done, .done_arg = mk};
	return DIT_OK;
}

/* buf[dst] = sum coef_i buf[src_i]; dst goes first (RW when it is also read), then
 * each other distinct source once. */
static dit_status submit_op(dit_graph *g, const dit_sampler_op *op, starpu_data_handle_t *sbuf,
                            int64_t n, const dit_task_opts *o, dit_error *err)
{
	dit_lincomb_args a = {.fp = {{n, op->nterms, 0, 0}}, .n = n, .nterms = op->nterms};
	starpu_data_handle_t h[DIT_LINCOMB_MAX + 1];
	enum starpu_data_access_mode md[DIT_LINCOMB_MAX + 1];
	int nb = 1;
	h[0] = sbuf[op->dst];
	md[0] = STARPU_W;
	for (int i = 0; i < op->nterms; i++) {
		int s = op->src[i], slot = -1;
		if (s == op->dst) {
			md[0] = STARPU_RW;
			slot = 0;
		}
		for (int j = 1; j < nb && slot < 0; j++)
			if (h[j] == sbuf[s])
				slot = j;
		if (slot < 0) {
			slot = nb;
			h[nb] = sbuf[s];
			md[nb++] = STARPU_R;
		}
		a.src[i] = slot;
		a.coef[i] = op->coef[i];
	}
	return dit_graph_insert(g, &dit_cl_lincomb, "solver", &a, sizeof a, 0, nb, h, md, o, err);
}

/* First-frame conditioning: x[c, 0] = z[c, 0] for every channel. */
static dit_status put_first_frame(dit_graph *g, starpu_data_handle_t x, const dit_task_opts *o,
                                  dit_error *err)
{
	const dit_grid *gr = &g->grid;
	int64_t hw = gr->h * gr->w;
	dit_copy2d_args a = {.fp = {{gr->c, hw, 0, 0}},
	                     .count = gr->c,
	                     .len = hw,
	                     .src_ld = hw,
	                     .dst_ld = gr->f * hw};
	return dit_op_copy2d(g, o, "first_frame", &a, x, g->img.z, err);
}

/* The step's time embedding: one timestep, or with first-frame conditioning t = 0 for
 * the tokens of latent frame 0 and the step's timestep for the others (one row of e,
 * e0 per latent frame). */
static dit_status submit_step_time(dit_graph *g, double t, dit_error *err)
{
	const dit_grid *gr = &g->grid;
	/* frames [0, k) see timestep ct: TI2V-5B's first frame 0, Cosmos' conditioning
	 * frames their own */
	int64_t k = g->img.z ? 1 : g->img.cond_t >= 0 ? g->img.cond_frames : 0;
	double ct = g->img.z ? 0.0 : g->img.cond_t;
	if (k == 0)
		return dit_graph_submit_time(g, t, err);
	double ts[1024];
	if (gr->tf > (int64_t)(sizeof ts / sizeof ts[0]))
		return dit_error_set(err, DIT_EINVAL, "%lld latent frames: too many",
		                     (long long)gr->tf);
	for (int64_t i = 0; i < gr->tf; i++)
		ts[i] = i < k ? ct : t;
	return dit_graph_submit_time_rows(g, ts, gr->tf, gr->th * gr->tw, err);
}

/* V = the guided velocity: uncond + scale (cond - uncond) of the two passes, or the
 * one pass's velocity (a guidance-distilled family without true CFG). */
static dit_status submit_guidance(dit_graph *g, const dit_sampler_step *s,
                                  starpu_data_handle_t *sbuf, int64_t n, const dit_task_opts *o,
                                  dit_error *err)
{
	if (g->npasses == 1) {
		dit_lincomb_args a = {
		    .fp = {{n, 1, 0, 0}}, .n = n, .nterms = 1, .src = {1}, .coef = {1.0}};
		starpu_data_handle_t h[] = {sbuf[DIT_SBUF_V], g->pass[0].out};
		enum starpu_data_access_mode md[] = {STARPU_W, STARPU_R};
		return dit_graph_insert(g, &dit_cl_lincomb, "guidance", &a, sizeof a, 0, 2, h, md,
		                        o, err);
	}
	dit_cfg_args ca = {.fp = {{n, 0, 0, 0}}, .n = n, .scale = (float)s->guidance};
	starpu_data_handle_t h[] = {g->pass[0].out, g->pass[1].out, sbuf[DIT_SBUF_V]};
	enum starpu_data_access_mode md[] = {STARPU_R, STARPU_R, STARPU_W};
	dit_status st = dit_graph_insert(g, &dit_cl_cfg, "cfg", &ca, sizeof ca, 0, 3, h, md,
	                                 g->img.cond_v ? NULL : o, err);
	if (st || !g->img.cond_v)
		return st;
	/* the conditioning frames' velocity: the initial noise - gt (the official wrapper's,
	 * in both branches, so also after the combination) */
	const dit_grid *gr = &g->grid;
	int64_t k = g->img.cond_frames * gr->h * gr->w, fhw = gr->f * gr->h * gr->w;
	dit_copy2d_args va = {
	    .fp = {{gr->c, k, 0, 0}}, .count = gr->c, .len = k, .src_ld = k, .dst_ld = fhw};
	return dit_op_copy2d(g, o, "condition_velocity", &va, sbuf[DIT_SBUF_V], g->img.cond_v, err);
}

/* The two-pass (or one-pass) guidance kind: the step's timestep on its expert, then V
 * from the passes and the solver's ops (and the first frame put back). */
typedef struct cfg_loop {
	const dit_sampler_plan *plan;
	starpu_data_handle_t *sbuf;
	int64_t n;
} cfg_loop;

static dit_status cfg_time(dit_graph *g, const void *arg, int i, dit_error *err)
{
	const dit_sampler_step *s = &((const cfg_loop *)arg)->plan->steps[i];
	dit_graph_set_expert(g, s->expert);
	return submit_step_time(g, s->timestep, err);
}

static dit_status cfg_update(dit_graph *g, const void *arg, int i, const dit_task_opts *mark,
                             dit_error *err)
{
	const cfg_loop *l = arg;
	const dit_sampler_step *s = &l->plan->steps[i];
	/* the step's last task reports its end */
	int last = s->nops - 1 + (g->img.z ? 1 : 0);
	dit_status st = submit_guidance(g, s, l->sbuf, l->n, last < 0 ? mark : NULL, err);
	for (int k = 0; !st && k < s->nops; k++)
		st = submit_op(g, &s->ops[k], l->sbuf, l->n, k == last ? mark : NULL, err);
	if (!st && g->img.z)
		st = put_first_frame(g, l->sbuf[DIT_SBUF_X], mark, err);
	return st;
}

static const dit_loop_kind cfg_kind = {"cfg", cfg_time, cfg_update};

dit_status dit_graph_submit_loop(dit_graph *g, const dit_loop_kind *kind, const void *arg,
                                 int nsteps, starpu_data_handle_t x,
                                 void (*on_step)(void *arg, int step), void *on_step_arg,
                                 dit_error *err)
{
	dit_status st;
	g->nsteps = nsteps;
	for (int i = g->first_step; i < nsteps; i++) {
		if (g->check) { /* step i - 2 must be done, then the check must pass */
			pthread_mutex_lock(&g->step_lock);
			while (g->steps_done < i - g->first_step - 1)
				pthread_cond_wait(&g->step_cond, &g->step_lock);
			pthread_mutex_unlock(&g->step_lock);
			if ((st = g->check(g->check_arg, err)) != DIT_OK)
				return st;
		}
		g->step = i;
		/* the step's tasks carry its number in traces (StarVZ's iteration panels) */
		starpu_iteration_push((unsigned long)i);
		if ((st = kind->time(g, arg, i, err)) != DIT_OK)
			return st;
		if ((st = dit_graph_submit_passes(g, x, err)) != DIT_OK)
			return st;
		dit_task_opts mark;
		if ((st = step_mark_opts(&mark, g, on_step, on_step_arg, i, err)) != DIT_OK)
			return st;
		if ((st = kind->update(g, arg, i, &mark, err)) != DIT_OK)
			return st;
		starpu_iteration_pop();
		/* --check-finite, resume states, previews: step by step, so that a run stops at
		 * its first bad step and what follows each step sees it done */
		if (g->finite || g->after_step) {
			starpu_task_wait_for_all();
			if ((st = dit_graph_finite_error(g, err)) != DIT_OK)
				return st;
			if (g->after_step &&
			    (st = g->after_step(g->after_step_arg, i, err)) != DIT_OK)
				return st;
		}
	}
	return DIT_OK;
}

dit_status dit_graph_submit_sampling(dit_graph *g, const dit_sampler_plan *plan,
                                     starpu_data_handle_t *sbuf,
                                     void (*on_step)(void *arg, int step), void *arg,
                                     dit_error *err)
{
	const dit_grid *gr = &g->grid;
	cfg_loop l = {plan, sbuf, g->model->cfg.out_dim * gr->f * gr->h * gr->w};
	return dit_graph_submit_loop(g, &cfg_kind, &l, plan->nsteps, sbuf[DIT_SBUF_X], on_step, arg,
	                             err);
}

dit_status dit_graph_finite_error(const dit_graph *g, dit_error *err)
{
	const dit_finite_guard *f = g->finite;
	if (!f || !f->found)
		return DIT_OK;
	static const char *const pass_name[] = {"conditional", "unconditional"};
	char where[64];
	if (f->block >= 0)
		snprintf(where, sizeof where, "block %lld", (long long)f->block);
	else
		snprintf(where, sizeof where, "the head");
	return dit_error_set(err, DIT_ERUNTIME,
	                     "--check-finite: NaN or Inf after %s of step %d (%s pass, element "
	                     "%lld); stopped",
	                     where, f->step + 1, pass_name[f->pass & 1], (long long)f->index);
}
