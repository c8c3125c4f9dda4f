/* The multi-pass guidance kind (DIT_GUIDANCE_MULTI, LTX-2): each step runs the passes
 * its roles need (conditional, unconditional, perturbed, isolated modality) on the
 * video stream, with the audio stream beside it, then one guided Euler update per
 * stream from the passes' velocities (dit_cl_guide_step), on the sampling driver of
 * tasks/step_loop.c. */
#include <stdlib.h>

#include "dit_codelets.h"
#include "dit_graph.h"

/* One step's guided update of a stream's sample x from its passes' velocities. */
static dit_status guide(dit_graph *g, const dit_multi_plan *mp, int aud, starpu_data_handle_t x,
                        int64_t n, int i, const dit_task_opts *o, dit_error *err)
{
	const double *gd = aud ? mp->audio : mp->video;
	dit_guide_args a = {.fp = {{n, 0, 0, 0}},
	                    .n = n,
	                    .sigma = mp->sigmas[i],
	                    .sigma_next = mp->sigmas[i + 1],
	                    .cfg = gd[0],
	                    .stg = gd[1],
	                    .rescale = gd[2],
	                    .modality = gd[3],
	                    .x0 = !aud && mp->x0};
	starpu_data_handle_t h[3 + DIT_MAX_PASSES] = {x};
	enum starpu_data_access_mode md[3 + DIT_MAX_PASSES] = {STARPU_RW};
	int nb = 1;
	for (int r = 0; r < 4; r++) {
		int p = mp->pass_of[r];
		if (p < 0)
			continue;
		a.have[r] = 1;
		h[nb] = aud ? dit_graph_buffer(g, p, "audio_out") : g->pass[p].out;
		md[nb++] = STARPU_R;
	}
	if (a.x0) { /* the guided x0, for --preview */
		h[nb] = mp->x0;
		md[nb++] = STARPU_W;
	}
	if (!aud && mp->clean) { /* frame c_frame of every channel [C, f, h, w] */
		const dit_grid *gr = &g->grid;
		int64_t hw = gr->h * gr->w;
		a.cond = 1;
		a.c_off = mp->c_frame * hw;
		a.c_len = hw;
		a.c_ld = gr->f * hw;
		a.c_count = n / a.c_ld;
		a.c_mask = mp->c_mask;
		h[nb] = mp->clean;
		md[nb++] = STARPU_R;
	}
	static const dit_task_opts cpu = {.where = STARPU_CPU};
	dit_task_opts t = o ? *o : cpu;
	t.where = STARPU_CPU;
	return dit_graph_insert(g, &dit_cl_guide_step, aud ? "guide_audio" : "guide", &a, sizeof a,
	                        0, nb, h, md, &t, err);
}

/* The step's noise level: both streams' sigma, the time embedding of sigma x ts_mult. */
static dit_status multi_time(dit_graph *g, const void *arg, int i, dit_error *err)
{
	const dit_multi_plan *mp = arg;
	double t = mp->sigmas[i] * mp->ts_mult;
	if (g->stages->sigma)
		g->stages->sigma(g, mp->sigmas[i], mp->sigmas[i]);
	if (!mp->clean)
		return dit_graph_submit_time(g, t, err);
	/* a row per latent frame: the conditioned frame's tokens at mask x sigma */
	const dit_grid *gr = &g->grid;
	double *ts = malloc((size_t)gr->tf * sizeof *ts);
	if (!ts)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	for (int64_t f = 0; f < gr->tf; f++)
		ts[f] = f == mp->c_frame ? mp->c_mask * mp->sigmas[i] * mp->ts_mult : t;
	dit_status st = dit_graph_submit_time_rows(g, ts, gr->tf, gr->th * gr->tw, err);
	free(ts);
	return st;
}

/* The video's update, then the audio's (the step's last task, when there is audio). */
static dit_status multi_update(dit_graph *g, const void *arg, int i, const dit_task_opts *mark,
                               dit_error *err)
{
	const dit_multi_plan *mp = arg;
	dit_status st = guide(g, mp, 0, mp->x, mp->n, i, mp->xa ? NULL : mark, err);
	if (!st && mp->xa)
		st = guide(g, mp, 1, mp->xa, mp->na, i, mark, err);
	return st;
}

static const dit_loop_kind multi_kind = {"multi", multi_time, multi_update};

dit_status dit_graph_submit_multi(dit_graph *g, const dit_multi_plan *mp,
                                  void (*on_step)(void *arg, int step), void *arg, dit_error *err)
{
	return dit_graph_submit_loop(g, &multi_kind, mp, mp->nsteps, mp->x, on_step, arg, err);
}
