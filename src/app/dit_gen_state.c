/* generate's files beside its run: the resume states (written after every step, read
 * by --resume), the previews and the latents (dit_gen_priv.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "dit_gen_priv.h"
#include "dit_latent_rgb.h"
#include "dit_preview.h"
#include "dit_resume.h"
#include "dit_safetensors.h"

/* The solver state a resumed run needs: everything but V, which each step rewrites. */
static const int state_sbuf[] = {DIT_SBUF_X, DIT_SBUF_LAST, DIT_SBUF_M0, DIT_SBUF_M1, DIT_SBUF_M2};
static const char *const state_names[] = {"x", "last", "m0", "m1", "m2"};
#define NSTATE ((int)(sizeof state_sbuf / sizeof state_sbuf[0]))

/* The layout of a state: the buffers of n floats each. */
static dit_resume_layout state_layout(int64_t n[NSTATE], int64_t len)
{
	for (int i = 0; i < NSTATE; i++)
		n[i] = len;
	return (dit_resume_layout){NSTATE, state_names, n};
}

/* What a resume state must match: the model, the arguments that shape the sampling
 * (each step's expert and guidance included), and the inputs. Files are identified by
 * path, size and modification time. */
void dit_gen_fingerprint(char *out, size_t len, const dit_generate_opts *o, const char *dir,
                         const dit_weights *w, const dit_grid *gr, const dit_sampler_plan *plan)
{
	char buf[16384];
	size_t k = 0, cap = sizeof buf;
	const dit_hparams *c = &w->expert[0]->cfg;
	k += (size_t)snprintf(
	    buf + k, cap - k,
	    "%s|%s|%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%.17g|%lld,%lld,%lld,%d,%s,%.17g,%llu|",
	    dir, w->desc->name, (long long)c->dim, (long long)c->ffn_dim, (long long)c->num_heads,
	    (long long)c->layers[0], (long long)c->in_dim, (long long)c->text_len,
	    (long long)c->text_dim, (long long)c->freq_dim, c->eps, (long long)gr->f,
	    (long long)gr->h, (long long)gr->w, plan->nsteps, dit_solver_name(plan->solver),
	    plan->shift, (unsigned long long)o->seed);
	for (int i = 0; i < plan->nsteps && k < cap; i++)
		k += (size_t)snprintf(buf + k, cap - k, "%d:%.17g,", plan->steps[i].expert,
		                      plan->steps[i].guidance);
	k = dit_resume_fp_inputs(buf, k, cap, w, o);
	dit_resume_fp_hash(out, len, buf, k, cap);
}

/* Reads a resume state: checks its fingerprint, step and checksum and keeps its
 * buffers. */
dit_status dit_gen_load_state(gen_state *s, const char *path, int nsteps, dit_error *err)
{
	int64_t n[NSTATE];
	dit_resume_layout lay = state_layout(n, s->n);
	float *bufs[NSTATE] = {0};
	dit_status st =
	    dit_resume_load(path, s->fingerprint, nsteps, &lay, bufs, &s->next_step, err);
	for (int i = 0; i < NSTATE; i++)
		s->saved[state_sbuf[i]] = bufs[i];
	return st;
}

/* After each step: the solver state, written atomically, so that an interruption
 * (even kill -9) leaves the last finished step's state; then stop if asked to. */
/* Between steps in disk mode: a failed chunk read stops the submission. */
dit_status dit_gen_io_check(void *arg, dit_error *err)
{
	return dit_place_io_error(arg, err);
}

static dit_status save_state(void *arg, int step, dit_error *err)
{
	gen_state *s = arg;
	/* a failed chunk read fed this step wrong weights: keep the last good state */
	dit_status st = dit_place_io_error(&s->ses.off, err);
	if (st)
		return st;
	int64_t n[NSTATE];
	dit_resume_layout lay = state_layout(n, s->n);
	float *host[NSTATE] = {0};
	for (int i = 0; !st && i < NSTATE; i++) {
		if (!(host[i] = malloc((size_t)s->n * sizeof(float))))
			st = dit_error_set(err, DIT_ENOMEM, "out of memory");
		else
			dit_session_vector_out(host[i], s->sbuf[state_sbuf[i]], s->n);
	}
	if (!st)
		st = dit_resume_save(s->state_path, s->fingerprint, step + 1, &lay, host, err);
	for (int i = 0; i < NSTATE; i++)
		free(host[i]);
	if (!st && s->stop && *s->stop && step + 1 < s->plan.nsteps)
		st = dit_resume_interrupted(step + 1, s->plan.nsteps, s->state_path, err);
	return st;
}

/* --preview: the x0 estimate after step, x - sigma_{step+1} v. */
static dit_status write_preview(gen_state *s, int step, dit_error *err)
{
	const dit_grid *gr = &s->ses.graph.grid;
	float *x = malloc((size_t)s->n * sizeof *x), *v = malloc((size_t)s->n * sizeof *v);
	dit_status st = DIT_OK;
	if (!x || !v)
		st = dit_error_set(err, DIT_ENOMEM, "--preview: out of memory");
	if (!st) {
		dit_session_vector_out(x, s->sbuf[DIT_SBUF_X], s->n);
		dit_session_vector_out(v, s->sbuf[DIT_SBUF_V], s->n);
		st = dit_preview_write(s->preview_path, s->ses.w.desc->latent.rgb, x, v,
		                       s->plan.sigmas[step + 1], s->n / (gr->f * gr->h * gr->w),
		                       gr->f, gr->h, gr->w, err);
	}
	free(x);
	free(v);
	return st;
}

/* After each step (run step by step): the trace's window, the preview, then the resume
 * state. */
dit_status dit_gen_after_step(void *arg, int step, dit_error *err)
{
	gen_state *s = arg;
	dit_status st = DIT_OK;
	dit_session_after_step(&s->ses, step);
	if (s->preview_path)
		st = write_preview(s, step, err);
	if (!st && s->state_path)
		st = save_state(s, step, err);
	return st;
}

dit_status dit_gen_write_latents(const dit_generate_opts *o, const gen_state *s, const dit_grid *gr,
                                 dit_error *err)
{
	const dit_hparams *c = &s->ses.w.expert[0]->cfg;
	int64_t shape[4] = {c->out_dim, gr->f, gr->h, gr->w};
	char buf[64];
	dit_st_writer *w = dit_st_writer_new();
	if (!w)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	dit_status st = dit_st_writer_add_f32(w, "latents", 4, shape, s->latents, err);
	if (!st && o->save_inputs) {
		st = dit_st_writer_add_f32(w, "noise", 4, shape, s->noise, err);
		if (!st)
			st = dit_gen_cond_save(&s->cond, s->ses.w.desc, c, w, err);
	}
	struct {
		const char *k;
		const char *v;
	} meta[] = {{"model", o->model_dir ? o->model_dir : o->model_name},
	            {"family", s->ses.w.desc->name},
	            {"solver", dit_solver_name(s->plan.solver)}};
	for (size_t i = 0; i < sizeof meta / sizeof meta[0] && !st; i++)
		st = dit_st_writer_set_metadata(w, meta[i].k, meta[i].v, err);
	snprintf(buf, sizeof buf, "%d", s->plan.nsteps);
	if (!st)
		st = dit_st_writer_set_metadata(w, "steps", buf, err);
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)o->seed);
	if (!st)
		st = dit_st_writer_set_metadata(w, "seed", buf, err);
	snprintf(buf, sizeof buf, "%.17g", s->guide[0]); /* the official scale */
	for (int i = 1; i < s->plan.nsteps; i++)
		if (s->plan.steps[i].guidance != s->plan.steps[0].guidance)
			snprintf(buf, sizeof buf, "%.17g,%.17g", s->guide[0], s->guide[1]);
	if (!st)
		st = dit_st_writer_set_metadata(w, "guidance", buf, err);
	snprintf(buf, sizeof buf, "%.17g", s->plan.shift);
	if (!st)
		st = dit_st_writer_set_metadata(w, "shift", buf, err);
	if (!st)
		st = dit_st_writer_commit(w, o->output, err);
	dit_st_writer_free(w);
	return st;
}
