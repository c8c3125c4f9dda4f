/* generate for a family guided on x0 over several passes with two token streams (LTX-2's
 * one-stage text/image-to-video+audio pipeline, ltx_pipelines ti2vid_one_stage.py, its
 * image conditioning by replacing a latent frame): Euler over the LTX2Scheduler sigmas
 * (or a given list), per step
 * the passes cond, uncond (the negative prompt; when a CFG scale is not 1), perturbed
 * (STG on the STG blocks' self-attention; when an STG scale is not 0) and isolated
 * modality (no audio-video cross-attention; when a modality scale is not 1), all run
 * chunk by chunk so that each chunk moves once per step, then per stream the guided
 * x0 and the Euler update (codelets/guide.c). With --preview or --state the loop runs
 * step by step and dit_gen_mstate.c writes the picture and the state after each. */
#define _POSIX_C_SOURCE 200809L
#include "dit_gen_multi_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "dit_codelets.h"
#include "dit_fwd_streams.h"
#include "dit_gen_report.h"
#include "dit_io.h"
#include "dit_plan.h"
#include "dit_rng.h"
#include "dit_sampler.h"
#include "dit_ltx.h"
#include "ltx_state.h"

enum { ROLE_COND = 0, ROLE_UNCOND, ROLE_PTB, ROLE_MOD };

static void gm_free(gm_state *s)
{
	free(s->sigmas);
	for (int a = 0; a < 2; a++) {
		free(s->noise[a]);
		for (int k = 0; k < 2; k++)
			free(s->ctx[a][k]);
	}
	free(s->stg);
	free(s->img);
	free(s->saved[0]);
	free(s->saved[1]);
}

/* A scale option (< 0 or NaN: unset) or the default. */
static double pick(double opt, double def)
{
	return opt >= 0 ? opt : def;
}

/* The sigmas: --sigmas LIST or "distilled", else LTX2Scheduler over the steps. */
static dit_status gm_sigmas(gm_state *s, const dit_generate_opts *o, int later, dit_error *err)
{
	const char *sigmas = dit_family_str(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_SIGMAS);
	if (sigmas && strcmp(sigmas, "distilled") == 0) {
		s->nsteps = 8;
		if (!(s->sigmas = malloc(9 * sizeof *s->sigmas)))
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		memcpy(s->sigmas, dit_sampler_ltx2_distilled, 9 * sizeof *s->sigmas);
		return DIT_OK;
	}
	if (sigmas) { /* "0.909375,0.725,0.421875,0.0": decreasing, ending at 0 */
		int n = 1;
		for (const char *p = sigmas; *p; p++)
			n += *p == ',';
		if (!(s->sigmas = malloc((size_t)n * sizeof *s->sigmas)))
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		const char *p = sigmas;
		for (int i = 0; i < n; i++) {
			char *end;
			double v = strtod(p, &end);
			if (end == p || (*end && *end != ',') || !(v >= 0.0 && v <= 1.0) ||
			    (i > 0 && !(v < s->sigmas[i - 1])))
				return dit_error_set(
				    err, DIT_EUSAGE,
				    "--sigmas '%s': decreasing sigmas in [0, 1], comma-"
				    "separated, the last 0 (or 'distilled')",
				    sigmas);
			s->sigmas[i] = (double)(float)v;
			p = *end ? end + 1 : end;
		}
		if (n < 2 || s->sigmas[n - 1] != 0.0)
			return dit_error_set(err, DIT_EUSAGE,
			                     "--sigmas '%s': at least two values, the last 0",
			                     sigmas);
		s->nsteps = n - 1;
		return DIT_OK;
	}
	const dit_sched_desc *sd = &s->d->sched;
	s->nsteps = o->steps > 0 ? o->steps : later ? sd->multi.steps_later : sd->steps;
	if (!(s->sigmas = malloc((size_t)(s->nsteps + 1) * sizeof *s->sigmas)))
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	return dit_sampler_ltx2_sigmas(s->nsteps, &sd->ltx2, s->sigmas, err);
}

/* The grid: from --noise (video_noise, and audio_noise unless the run is video only),
 * else from the pixel size with the audio of the clip's duration (25 latent frames a
 * second, rounded half to even). */
static dit_status gm_grid(gm_state *s, const dit_generate_opts *o, const dit_preset *pre,
                          dit_error *err)
{
	const dit_model_desc *d = s->d;
	const dit_stream_desc *a = d->aux;
	const dit_hparams *c = s->c;
	double fps = dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_FPS, 24.0);
	if (o->noise_path) {
		dit_st_file *f;
		dit_status st = dit_st_open(&f, o->noise_path, err);
		if (st)
			return st;
		int64_t dims[4] = {c->out_dim, -1, -1, -1}, sh[4] = {0},
		        ad[3] = {a->channels, -1, a->mel}, ash[3] = {0};
		st = dit_read_tensor(f, "video_noise", 4, dims, 1, &s->noise[0], sh, err);
		if (!st)
			st = dit_read_tensor(f, "audio_noise", 3, ad, 0, &s->noise[1], ash, err);
		dit_st_close(f);
		if (!st)
			st = dit_grid_from_latent(&s->gr, c, sh[0], sh[1], sh[2], sh[3], err);
		s->gr.aux_t = ash[1];
		s->gr.aux_time_rows = 1;
		return st;
	}
	int64_t frames = o->frames > 0 ? o->frames : pre ? pre->frames : d->sched.frames;
	int64_t height = o->height > 0 ? o->height : pre ? pre->height : d->sched.height;
	int64_t width = o->width > 0 ? o->width : pre ? pre->width : d->sched.width;
	dit_status st = dit_grid_from_pixels(&s->gr, d, c, frames, height, width, err);
	if (st)
		return st;
	s->gr.aux_t = (int64_t)nearbyint((double)frames / fps * 25.0);
	if (s->gr.aux_t < 1)
		s->gr.aux_t = 1;
	s->gr.aux_time_rows = 1;
	int64_t n[2] = {c->out_dim * s->gr.f * s->gr.h * s->gr.w,
	                a->channels * s->gr.aux_t * a->mel};
	const char *stream[2] = {"noise", "audio_noise"};
	for (int k = 0; k < 2; k++) {
		if (!(s->noise[k] = malloc((size_t)n[k] * sizeof(float))))
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		dit_rng_fill_normal(s->noise[k], n[k], o->seed, dit_rng_stream(stream[k]), 1.0,
		                    0.0);
	}
	return DIT_OK;
}

/* The contexts of the streams (video only: the first), positive and (with an uncond
 * pass) negative: from --context (video_context, audio_context, then the names with
 * _negative), else synthetic. */
static dit_status gm_context(gm_state *s, const dit_generate_opts *o, int neg, dit_error *err)
{
	int nstreams = s->gr.aux_t > 0 ? 2 : 1;
	const dit_model_desc *d = s->d;
	const char *name[2] = {d->inputs.context, d->aux->context};
	int64_t dim[2] = {s->c->text_dim, s->c->aux_text_dim};
	dit_st_file *f = NULL;
	dit_status st = o->context_path ? dit_st_open(&f, o->context_path, err) : DIT_OK;
	for (int a = 0; a < nstreams && !st; a++)
		for (int k = 0; k <= neg && !st; k++) {
			if (!f) {
				s->ctx[a][k] =
				    dit_synthetic_context(s->c->text_len < 64 ? s->c->text_len : 64,
				                          dim[a], k, &s->rows[a][k]);
				if (!s->ctx[a][k])
					st = dit_error_set(err, DIT_ENOMEM, "out of memory");
				continue;
			}
			char nm[96];
			snprintf(nm, sizeof nm, "%s%s", name[a], k ? d->inputs.neg : "");
			st = dit_read_context(f, nm, dim[a], s->c->text_len, 1, &s->ctx[a][k],
			                      &s->rows[a][k], err);
		}
	dit_st_close(f);
	return st;
}

static void step_done(void *stats, int step)
{
	dit_stats_on_step(stats, step);
}

/* --preview, --state, --trace-steps: after each step, which the driver then waits for */
static dit_status after_step(void *arg, int step, dit_error *err)
{
	return dit_gm_after_step(arg, step, err);
}

/* The steps on the sampling driver's multi-pass guidance kind. */
static dit_status gm_loop(gm_state *s, dit_session *ses, dit_error *err)
{
	dit_graph *g = &ses->graph;
	const dit_stream_desc *a = s->d->aux;
	dit_multi_plan mp = {.nsteps = s->nsteps,
	                     .sigmas = s->sigmas,
	                     .ts_mult = s->c->ts_mult > 0 ? s->c->ts_mult : 1000.0,
	                     .video = {s->gv.cfg, s->gv.stg, s->gv.rescale, s->gv.modality},
	                     .audio = {s->ga.cfg, s->ga.stg, s->ga.rescale, s->ga.modality},
	                     .x = s->xv,
	                     /* NULL: video only (--noise without audio_noise) */
	                     .xa = s->gr.aux_t > 0 ? dit_graph_buffer(g, -1, "audio_latent") : NULL,
	                     .n = s->c->out_dim * s->gr.f * s->gr.h * s->gr.w,
	                     .na = a->channels * s->gr.aux_t * a->mel,
	                     .x0 = s->x0,
	                     .clean = s->clean,
	                     .c_frame = s->img_frame,
	                     .c_mask = s->img_mask};
	for (int r = 0; r < 4; r++)
		mp.pass_of[r] = s->pass_of[r];
	g->first_step = s->next_step;
	if (s->preview_path || s->state_path || ses->trace_window) {
		g->after_step = after_step;
		g->after_step_arg = s;
	}
	return dit_graph_submit_multi(g, &mp, step_done, &ses->stats, err);
}

static dit_status gm_write(gm_state *s, dit_session *ses, const dit_generate_opts *o,
                           dit_error *err)
{
	const dit_stream_desc *a = s->d->aux;
	int64_t nv = s->c->out_dim * s->gr.f * s->gr.h * s->gr.w;
	int64_t na = a->channels * s->gr.aux_t * a->mel;
	float *v = malloc((size_t)nv * sizeof *v), *au = malloc((size_t)(na ? na : 1) * sizeof *au);
	dit_status st = v && au ? DIT_OK : dit_error_set(err, DIT_ENOMEM, "out of memory");
	if (!st) {
		dit_session_vector_out(v, s->xv, nv);
		if (na)
			dit_session_vector_out(
			    au, dit_graph_buffer(&ses->graph, -1, "audio_latent"), na);
		for (int64_t i = 0; i < nv + na && !st; i++)
			if (!isfinite(i < nv ? v[i] : au[i - nv]))
				st = dit_error_set(err, DIT_ERUNTIME,
				                   "latents are not finite; nothing written");
	}
	dit_st_writer *w = st || !o->output ? NULL : dit_st_writer_new();
	if (!st && o->output && !w)
		st = dit_error_set(err, DIT_ENOMEM, "out of memory");
	if (w) {
		int64_t vs[4] = {s->c->out_dim, s->gr.f, s->gr.h, s->gr.w};
		int64_t as[3] = {a->channels, s->gr.aux_t, a->mel};
		char buf[32];
		snprintf(buf, sizeof buf, "%d", s->nsteps);
		st = dit_st_writer_add_f32(w, "video_latents", 4, vs, v, err);
		if (!st && na)
			st = dit_st_writer_add_f32(w, "audio_latents", 3, as, au, err);
		if (!st)
			st = dit_st_writer_set_metadata(w, "family", s->d->name, err);
		if (!st)
			st = dit_st_writer_set_metadata(w, "steps", buf, err);
		if (!st)
			st = dit_st_writer_commit(w, o->output, err);
		dit_st_writer_free(w);
	}
	if (!st && !o->quiet) {
		double total = ses->stats.t_done - ses->stats.t_submit;
		const char *outs[] = {o->output, o->stats_json};
		fprintf(
		    dit_gen_report_file(outs, 2),
		    "%s: %lld video tokens + %lld audio tokens, %d Euler steps, %d passes a step "
		    "(video CFG %g, audio CFG %g, STG %g/%g, modality %g/%g, rescale %g/%g): "
		    "%.2f s (%.3f s/step)%s%s\n",
		    s->d->name, (long long)s->gr.tokens, (long long)s->gr.aux_t, s->nsteps,
		    s->npasses, s->gv.cfg, s->ga.cfg, s->gv.stg, s->ga.stg, s->gv.modality,
		    s->ga.modality, s->gv.rescale, s->ga.rescale, total, total / s->nsteps,
		    o->output ? ", written to " : "",
		    dit_io_is_stdout(o->output) ? "standard output"
		    : o->output                 ? o->output
		                                : "");
	}
	free(v);
	free(au);
	return st;
}

/* The scales of both streams (the options, else the descriptor's defaults for the
 * model's generation), the sigmas, the grid, the passes a step needs in the official
 * order, and the blocks of the STG pass. */
static dit_status gm_prepare(gm_state *s, const dit_generate_opts *o, const dit_preset *preset,
                             int need[4], dit_error *err)
{
	const dit_hparams *c = s->c;
	int later = c->ca_adaln || c->gated_attn;
	const dit_multi_desc *md = &s->d->sched.multi;
	s->gv = (gm_guider){
	    pick(dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_VIDEO_CFG, -1.0), md->video[0]),
	    pick(dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_STG, -1.0), md->video[1]),
	    pick(dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_RESCALE, -1.0), md->video[2]),
	    pick(dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_MODALITY, -1.0), md->video[3])};
	s->ga = (gm_guider){
	    pick(dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_AUDIO_CFG, -1.0), md->audio[0]),
	    pick(dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_STG, -1.0), md->audio[1]),
	    pick(dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_RESCALE, -1.0), md->audio[2]),
	    pick(dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_MODALITY, -1.0), md->audio[3])};
	dit_status st = gm_sigmas(s, o, later, err);
	if (!st)
		st = gm_grid(s, o, preset, err);
	need[ROLE_COND] = 1;
	need[ROLE_UNCOND] = s->gv.cfg != 1.0 || s->ga.cfg != 1.0;
	need[ROLE_PTB] = s->gv.stg != 0.0 || s->ga.stg != 0.0;
	need[ROLE_MOD] = s->gv.modality != 1.0 || s->ga.modality != 1.0;
	for (int r = 0; r < 4; r++) {
		s->pass_of[r] = need[r] ? s->npasses : -1;
		if (need[r])
			s->role[s->npasses++] = r;
	}
	if (st || !need[ROLE_PTB])
		return st;
	int64_t L = c->layers[0], blk = later ? md->stg_block_later : md->stg_block;
	if (blk >= L && md->stg_of_blocks > 0) /* a smaller model: the same depth */
		blk = blk * L / md->stg_of_blocks;
	if (!(s->stg = calloc((size_t)L, 1)))
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	if (dit_family_str(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_STG_BLOCKS))
		st = dit_parse_blocks(dit_family_str(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_STG_BLOCKS),
		                      L, "--stg-blocks", s->stg, err);
	else if (blk < L)
		s->stg[blk] = 1;
	else
		st = dit_error_set(err, DIT_EUSAGE,
		                   "%s has %lld blocks: the official STG block %lld is not "
		                   "there; give --stg-blocks (or --stg 0)",
		                   s->d->name, (long long)L, (long long)blk);
	for (int64_t b = 0; !st && b < L; b++) /* which streams STG perturbs */
		s->stg[b] =
		    (unsigned char)(s->stg[b] ? (s->gv.stg != 0.0) | (s->ga.stg != 0.0) << 1 : 0);
	return st;
}

/* The session started; each pass's skips and audio context, the samples' handles. */
static dit_status gm_start(gm_state *s, const dit_generate_opts *o, const dit_session_graph *sg,
                           dit_error *err)
{
	dit_session *ses = s->ses;
	const dit_hparams *c = s->c;
	dit_status st =
	    dit_session_start(ses, sg, &o->offload, o->cache_dir, &o->rt, o->trace_dir, err);
	dit_graph *g = &ses->graph;
	dit_ltx_state *ls = dit_ltx_state_of(g); /* the multi-pass runs are LTX-2's */
	if (!st && !ls)
		st = dit_error_set(err, DIT_EINVAL,
		                   "%s: the multi-pass guidance needs LTX-2's stages", s->d->name);
	const dit_stream_desc *a = s->d->aux;
	size_t ab = (size_t)(a->channels * s->gr.aux_t * a->mel) * sizeof(float);
	if (!st && s->noise[1]) /* from the noise or a resume state */
		st = dit_graph_buffer_fill(g, -1, "audio_latent",
		                           s->saved[1] ? s->saved[1] : s->noise[1], ab, err);
	for (int p = 0; p < s->npasses && !st; p++) {
		int k = s->role[p] == ROLE_UNCOND;
		ls->skip_self[p] = s->role[p] == ROLE_PTB ? s->stg : NULL;
		ls->skip_cross[p] = s->role[p] == ROLE_MOD;
		if (!s->noise[1]) /* video only */
			continue;
		int64_t Lc = c->text_len, n = Lc * c->aux_text_dim;
		float *buf = calloc((size_t)n, sizeof *buf);
		if (!buf)
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		memcpy(buf, s->ctx[1][k], (size_t)(s->rows[1][k] * c->aux_text_dim) * sizeof *buf);
		st =
		    dit_graph_buffer_fill(g, p, "audio_context", buf, (size_t)n * sizeof *buf, err);
		free(buf);
		g->pass[p].aux_text_valid = s->rows[1][k];
	}
	if (st)
		return st;
	int64_t nv = c->out_dim * s->gr.f * s->gr.h * s->gr.w;
	ls->fps = dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_FPS, 24.0);
	dit_session_vector_in(ses, &s->xv, s->saved[0] ? s->saved[0] : s->noise[0], nv, "X");
	if (s->img)
		dit_session_vector_in(ses, &s->clean, s->img, nv / s->gr.f, "image_latent");
	if (o->preview_path)
		dit_session_vector_in(ses, &s->x0, NULL, nv, "x0");
	return DIT_OK;
}

/* --image-latent: the image's latent "image_latent" [C, 1, h, w] (the video VAE's
 * encoding of the picture) set at latent frame --image-frame with --image-strength
 * (LTX-2's VideoConditionByLatentIndex); the noise's frame starts as clean + mask
 * (noise - clean) (GaussianNoiser's lerp). */
static dit_status gm_image(gm_state *s, const dit_generate_opts *o, dit_error *err)
{
	double strength = dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_IMG_STRENGTH, -1.0);
	double frame = dit_family_num(&o->fam, &dit_ltx_doc, DIT_LTX_OPT_IMG_FRAME, -1.0);
	if (!o->image_path) {
		if (strength >= 0 || frame >= 0)
			return dit_error_set(err, DIT_EUSAGE, "%s needs --image-latent",
			                     strength >= 0 ? "--image-strength" : "--image-frame");
		return DIT_OK;
	}
	s->img_frame = frame >= 0 ? (int64_t)frame : 0;
	s->img_mask = 1.0 - (strength >= 0 ? strength : 1.0);
	if (s->img_frame >= s->gr.f)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--image-frame %lld: the video has %lld latent frames",
		                     (long long)s->img_frame, (long long)s->gr.f);
	dit_st_file *f;
	dit_status st = dit_st_open(&f, o->image_path, err);
	if (st)
		return st;
	int64_t dims[4] = {s->c->out_dim, 1, s->gr.h, s->gr.w};
	st = dit_read_tensor(f, "image_latent", 4, dims, 1, &s->img, NULL, err);
	dit_st_close(f);
	if (st)
		return st;
	int64_t hw = s->gr.h * s->gr.w, F = s->gr.f;
	for (int64_t ch = 0; ch < s->c->out_dim; ch++) {
		float *x = s->noise[0] + (ch * F + s->img_frame) * hw;
		const float *z = s->img + ch * hw;
		for (int64_t i = 0; i < hw; i++)
			x[i] = (float)((double)z[i] + s->img_mask * ((double)x[i] - (double)z[i]));
	}
	return DIT_OK;
}

/* The steps submitted and waited for, the outputs and the stats written. */
static dit_status gm_run(gm_state *s, const dit_generate_opts *o, dit_error *err)
{
	dit_session *ses = s->ses;
	ses->stats.t_submit = dit_runtime_now();
	for (int i = 0; i < s->next_step; i++) /* done before the run was resumed */
		ses->stats.step_end[i] = ses->stats.t_submit;
	dit_status st = gm_loop(s, ses, err);
	ses->stats.t_submitted = dit_runtime_now();
	starpu_task_wait_for_all();
	ses->stats.t_done = dit_runtime_now();
	if (!st)
		st = dit_place_io_error(&ses->off, err);
	if (!st) {
		dit_stats_sample(&ses->stats);
		st = gm_write(s, ses, o, err);
	}
	if (!st && o->stats_json)
		st = dit_session_stats_json(ses, o->stats_json, err);
	return st;
}

/* The common options the multi-pass guidance has no use for: refused, never ignored
 * (its scales, sigmas and solver are its own). */
static dit_status gm_refuse_common(const gm_state *s, const dit_generate_opts *o, dit_error *err)
{
	const char *name = s->d->name;
	if (o->guidance >= 0)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--guidance: %s takes --video-guidance and --audio-guidance",
		                     name);
	if (o->shift > 0)
		return dit_error_set(
		    err, DIT_EUSAGE,
		    "--shift: %s samples on the LTX2Scheduler's sigmas (or --sigmas)", name);
	if (o->solver != DIT_SOLVER_DEFAULT && o->solver != DIT_SOLVER_EULER)
		return dit_error_set(err, DIT_EUSAGE, "--solver: %s samples with Euler only", name);
	return DIT_OK;
}

dit_status dit_generate_multi(const dit_generate_opts *o, dit_session *ses,
                              const dit_preset *preset, dit_error *err)
{
	gm_state s;
	memset(&s, 0, sizeof s);
	s.d = ses->w.desc;
	s.c = &ses->w.expert[0]->cfg;
	s.ses = ses;
	dit_status st = gm_refuse_common(&s, o, err);
	if (st)
		return st;
	int need[4];
	st = gm_prepare(&s, o, preset, need, err);
	if (!st)
		st = gm_image(&s, o, err);
	if (!st)
		st = dit_session_trace_steps(ses, o->trace_steps, o->trace_dir, s.nsteps, err);
	if (!st)
		st = gm_context(&s, o, need[ROLE_UNCOND], err);
	if (!st && !o->dry_run)
		st = dit_gm_outputs_start(&s, o, err);
	if (st) {
		gm_free(&s);
		return st;
	}
	const float *ctx[DIT_MAX_PASSES];
	int64_t rows[DIT_MAX_PASSES], valid[DIT_MAX_PASSES];
	/* the passes in task names, by their role */
	static const char *const role_name[4] = {"cond", "uncond", "perturbed", "isolated"};
	const char *names[DIT_MAX_PASSES];
	for (int p = 0; p < s.npasses; p++) {
		int k = s.role[p] == ROLE_UNCOND;
		names[p] = role_name[s.role[p]];
		ctx[p] = s.ctx[0][k];
		rows[p] = s.rows[0][k];
		valid[p] = rows[p];
	}
	int64_t nv = s.c->out_dim * s.gr.f * s.gr.h * s.gr.w;
	dit_session_graph sg = {.grid = s.gr,
	                        .npasses = s.npasses,
	                        .pass_names = names,
	                        .context = ctx,
	                        .ctx_rows = rows,
	                        .text_valid = valid,
	                        /* the image's frame: a time row per latent frame */
	                        .time_rows = s.img ? s.gr.tf : 1,
	                        .extra_bytes = (size_t)nv * (o->preview_path ? 8 : 4) +
	                                       (s.img ? (size_t)(nv / s.gr.f) * 4 : 0),
	                        .command = "generate",
	                        .nsteps = s.nsteps,
	                        .first_step = s.next_step,
	                        .progress = o->progress,
	                        .check_finite = o->check_finite};
	if (o->dry_run)
		st = dit_plan_report(ses, &sg, &o->offload, o->cache_dir, &o->rt, o->plan_json,
		                     stdout, err);
	else if (!(st = gm_start(&s, o, &sg, err)))
		st = gm_run(&s, o, err);
	if (ses->rt)
		starpu_task_wait_for_all();
	if (s.xv)
		starpu_data_unregister(s.xv);
	if (s.x0)
		starpu_data_unregister(s.x0);
	if (s.clean)
		starpu_data_unregister(s.clean);
	gm_free(&s);
	return st;
}
