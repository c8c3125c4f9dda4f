/* --preview, --state and --resume of the multi-stream generate loop (LTX-2): the
 * preview shows the video stream's guided x0 of the step (the guider computes it; after
 * the last step it is the latents), the state holds the samples of both streams (the
 * Euler steps keep nothing else) and the next step. */
#define _POSIX_C_SOURCE 200809L
#include "dit_gen_multi_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_latent_rgb.h"
#include "dit_ltx.h"
#include "dit_preview.h"
#include "dit_resume.h"

static const char *const stream_names[2] = {"video_x", "audio_x"};

/* The state's tensors: the video sample and, with audio, the audio sample. */
static dit_resume_layout gm_layout(const gm_state *s, int64_t n[2])
{
	const dit_stream_desc *a = s->d->aux;
	n[0] = s->c->out_dim * s->gr.f * s->gr.h * s->gr.w;
	n[1] = a->channels * s->gr.aux_t * a->mel;
	return (dit_resume_layout){s->gr.aux_t > 0 ? 2 : 1, stream_names, n};
}

/* What a resume state must match: the model, the sizes of both streams, every sigma,
 * the guidance of both streams, the passes, the STG blocks, the seed, the frame rate,
 * the image conditioning, and the weights and input files. */
static void gm_fingerprint(gm_state *s, const dit_generate_opts *o)
{
	char buf[16384];
	size_t k = 0, cap = sizeof buf;
	const dit_hparams *c = s->c;
	const dit_session *ses = s->ses;
	const char *dir = o->model_dir ? o->model_dir : ses->synth_dir;
	k += (size_t)snprintf(
	    buf + k, cap - k,
	    "%s|%s|%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%.17g|%lld,%lld,%lld,%lld|"
	    "%d,%llu,%.17g|",
	    dir ? dir : "", s->d->name, (long long)c->dim, (long long)c->ffn_dim,
	    (long long)c->num_heads, (long long)c->layers[0], (long long)c->in_dim,
	    (long long)c->out_dim, (long long)c->text_len, (long long)c->text_dim,
	    (long long)c->aux_text_dim, (long long)c->aux_heads, c->eps, (long long)s->gr.f,
	    (long long)s->gr.h, (long long)s->gr.w, (long long)s->gr.aux_t, s->nsteps,
	    (unsigned long long)o->seed,
	    dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_FPS, 24.0));
	if (s->img) /* the image's frame and strength (its file is among the inputs) */
		k += (size_t)snprintf(buf + k, cap - k, "img:%lld,%.17g|", (long long)s->img_frame,
		                      s->img_mask);
	for (int i = 0; i <= s->nsteps && k < cap; i++)
		k += (size_t)snprintf(buf + k, cap - k, "%.17g,", s->sigmas[i]);
	const gm_guider *gd[2] = {&s->gv, &s->ga};
	for (int a = 0; a < 2 && k < cap; a++)
		k += (size_t)snprintf(buf + k, cap - k, "|%.17g,%.17g,%.17g,%.17g", gd[a]->cfg,
		                      gd[a]->stg, gd[a]->rescale, gd[a]->modality);
	for (int p = 0; p < s->npasses && k < cap; p++)
		k += (size_t)snprintf(buf + k, cap - k, "%sp%d", p ? "," : "|", s->role[p]);
	for (int64_t b = 0; s->stg && b < c->layers[0] && k < cap; b++)
		k += (size_t)snprintf(buf + k, cap - k, "%s%d", b ? "," : "|stg:", s->stg[b]);
	if (k < cap)
		k += (size_t)snprintf(buf + k, cap - k, "|");
	k = dit_resume_fp_inputs(buf, k, cap, &ses->w, o);
	dit_resume_fp_hash(s->fingerprint, sizeof s->fingerprint, buf, k, cap);
}

dit_status dit_gm_outputs_start(gm_state *s, const dit_generate_opts *o, dit_error *err)
{
	dit_status st = DIT_OK;
	if (o->preview_path &&
	    (st = dit_preview_check(s->d->latent.rgb, s->c->out_dim,
	                            o->model_dir ? o->model_dir : o->model_name, s->d->name, err)))
		return st;
	s->preview_path = o->preview_path;
	s->state_path = o->state_path ? o->state_path : o->resume_path;
	s->stop = o->stop;
	gm_fingerprint(s, o);
	if (!o->resume_path)
		return DIT_OK;
	int64_t n[2];
	dit_resume_layout lay = gm_layout(s, n);
	return dit_resume_load(o->resume_path, s->fingerprint, s->nsteps, &lay, s->saved,
	                       &s->next_step, err);
}

/* The video's guided x0 of the step as the picture. */
static dit_status gm_preview(gm_state *s, dit_error *err)
{
	int64_t n = s->c->out_dim * s->gr.f * s->gr.h * s->gr.w;
	float *x0 = malloc((size_t)n * sizeof *x0);
	if (!x0)
		return dit_error_set(err, DIT_ENOMEM, "--preview: out of memory");
	dit_session_vector_out(x0, s->x0, n);
	dit_status st = dit_preview_write_x0(s->preview_path, s->d->latent.rgb, x0, s->c->out_dim,
	                                     s->gr.f, s->gr.h, s->gr.w, err);
	free(x0);
	return st;
}

static dit_status gm_save(gm_state *s, int step, dit_error *err)
{
	/* a failed chunk read fed this step wrong weights: keep the last good state */
	dit_status st = dit_place_io_error(&s->ses->off, err);
	if (st)
		return st;
	int64_t n[2];
	dit_resume_layout lay = gm_layout(s, n);
	starpu_data_handle_t h[2] = {
	    s->xv, lay.count > 1 ? dit_graph_buffer(&s->ses->graph, -1, "audio_latent") : NULL};
	float *host[2] = {NULL, NULL};
	for (int a = 0; a < lay.count && !st; a++) {
		if (!(host[a] = malloc((size_t)n[a] * sizeof(float))))
			st = dit_error_set(err, DIT_ENOMEM, "out of memory");
		else
			dit_session_vector_out(host[a], h[a], n[a]);
	}
	if (!st)
		st = dit_resume_save(s->state_path, s->fingerprint, step + 1, &lay, host, err);
	free(host[0]);
	free(host[1]);
	if (!st && s->stop && *s->stop && step + 1 < s->nsteps)
		st = dit_resume_interrupted(step + 1, s->nsteps, s->state_path, err);
	return st;
}

dit_status dit_gm_after_step(gm_state *s, int step, dit_error *err)
{
	dit_status st = DIT_OK;
	dit_session_after_step(s->ses, step);
	if (s->preview_path)
		st = gm_preview(s, err);
	if (!st && s->state_path)
		st = gm_save(s, step, err);
	return st;
}
