#define _POSIX_C_SOURCE 200809L
#include "dit_trace_summary.h"
#include "dit_run.h"
#include "dit_roofline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "dit_gen_cond.h"
#include "dit_gen_frames.h"
#include "dit_gen_report.h"
#include "dit_io.h"
#include "dit_latent_rgb.h"
#include "dit_preview.h"
#include "dit_resume.h"
#include "dit_gen_multi.h"
#include "dit_outputs.h"
#include "dit_plan.h"
#include "dit_rng.h"
#include "dit_safetensors.h"
#include "dit_session.h"
#include "dit_synth.h"
#include "dit_gen_priv.h"
#include "dit_cosmos.h"
#include "dit_hunyuan.h"
#include "dit_wan.h"

static dit_status gen_cleanup(gen_state *s, dit_status st, dit_error *err)
{
	if (s->ses.rt)
		starpu_task_wait_for_all();
	for (int i = 0; i < DIT_SBUF_COUNT; i++)
		if (s->sbuf[i])
			starpu_data_unregister(s->sbuf[i]);
	st = dit_session_close(&s->ses, st, err);
	dit_sampler_plan_free(&s->plan);
	dit_gen_cond_free(&s->cond);
	dit_gen_frames_free(&s->frames);
	free(s->noise);
	free(s->latents);
	free(s->image);
	for (int i = 0; i < DIT_SBUF_COUNT; i++)
		free(s->saved[i]);
	return st;
}

/* The schedule: the family's, or --schedule's among those the family offers ("linear":
 * the shifted linear sigmas, DIT_SCHEDULE_UNIPC). */
static dit_status gen_schedule(const dit_model_desc *d, const char *name, dit_schedule *out,
                               dit_error *err)
{
	*out = d->sched.schedule;
	if (!name)
		return DIT_OK;
	if (!d->sched.schedules)
		return dit_error_set(err, DIT_EUSAGE, "--schedule: %s has one schedule", d->name);
	dit_schedule s = DIT_SCHEDULE_UNIPC;
	if ((strcmp(name, "linear") && dit_schedule_parse(&s, name, NULL)) ||
	    !(d->sched.schedules >> s & 1u))
		return dit_error_set(err, DIT_EUSAGE, "--schedule %s: karras or linear", name);
	*out = s;
	return DIT_OK;
}

/* The run's sampling arguments: the preset's or family's defaults, then the options;
 * each step's expert and guidance scale. */
static dit_status plan_sampling(gen_state *s, const dit_generate_opts *o, const dit_preset *preset,
                                dit_error *err)
{
	const dit_model_desc *d = s->ses.w.desc;
	int two = s->ses.w.nexperts > 1;
	int steps = o->steps > 0 ? o->steps : preset ? preset->steps : d->sched.steps;
	double shift = o->shift > 0 ? o->shift : d->sched.shift;
	/* the official CLI's shift at 480P where it has one (Wan2.1 I2V: 3) */
	int64_t hpx = s->gr.h * d->latent.vae_stride[1], wpx = s->gr.w * d->latent.vae_stride[2];
	if (o->shift <= 0 && d->sched.shift_480 > 0 &&
	    ((hpx == 480 && wpx == 832) || (hpx == 832 && wpx == 480)))
		shift = d->sched.shift_480;
	const dit_family_values *fam = &o->fam;
	double o_boundary = dit_family_num(fam, &dit_wan22_doc, DIT_WAN22_OPT_BOUNDARY, -1.0);
	double o_high = dit_family_num(fam, &dit_wan22_doc, DIT_WAN22_OPT_GUIDANCE_HIGH, -1.0);
	double boundary = o_boundary >= 0 ? o_boundary : d->sched.boundary;
	if (!two && (o_high >= 0 || o_boundary >= 0))
		return dit_error_set(err, DIT_EUSAGE, "%s: %s applies to two-expert models only",
		                     d->name, o_boundary >= 0 ? "--boundary" : "--guidance-high");
	if (!(o->guidance < 0 || isfinite(o->guidance)))
		return dit_error_set(err, DIT_EUSAGE, "--guidance out of range");
	for (int e = 0; e < DIT_MAX_EXPERTS; e++)
		s->guide[e] = o->guidance >= 0 ? o->guidance : d->sched.guidance[e];
	if (o_high >= 0)
		s->guide[0] = o_high;
	dit_solver solver = o->solver == DIT_SOLVER_DEFAULT ? d->sched.solver : o->solver;
	dit_schedule sched;
	dit_status st = gen_schedule(
	    d, dit_family_str(fam, &dit_cosmos_doc, DIT_COSMOS_OPT_SCHEDULE), &sched, err);
	if (st)
		return st;
	s->karras = sched == DIT_SCHEDULE_KARRAS;
	st = dit_sampler_plan_build_on(&s->plan, solver, sched, steps, shift, &d->sched.ltx2, err);
	if (st)
		return st;
	/* the official rule: the high-noise expert while int64(t) >= boundary * 1000 */
	double b = boundary * 1000.0;
	for (int i = 0; i < s->plan.nsteps; i++) {
		dit_sampler_step *p = &s->plan.steps[i];
		p->expert = two && !(p->timestep >= b) ? 1 : 0;
		/* the scale of the cfg task's v_u + scale (v_c - v_u) */
		p->guidance = s->guide[p->expert] + d->sched.cfg_offset;
	}
	return DIT_OK;
}

/* The latent grid: from --noise (and the pixel options, which must agree), else from
 * the pixel size. */
static dit_status gen_grid(gen_state *s, const dit_generate_opts *o, const dit_preset *pre,
                           dit_grid *gr, dit_error *err)
{
	const dit_model_desc *d = s->ses.w.desc;
	const dit_hparams *c = &s->ses.w.expert[0]->cfg;
	int64_t frames = pre ? pre->frames : d->sched.frames;
	int64_t height = pre ? pre->height : d->sched.height;
	int64_t width = pre ? pre->width : d->sched.width;
	if (o->frames > 0)
		frames = o->frames;
	if (o->height > 0)
		height = o->height;
	if (o->width > 0)
		width = o->width;
	if (!o->noise_path)
		return dit_grid_from_pixels(gr, d, c, frames, height, width, err);
	dit_st_file *f;
	dit_status st = dit_st_open(&f, o->noise_path, err);
	if (st)
		return st;
	int64_t dims[4] = {c->out_dim, -1, -1, -1}, sh[4] = {0, 0, 0, 0};
	st = dit_read_tensor(f, "noise", 4, dims, 1, &s->noise, sh, err);
	dit_st_close(f);
	if (!st)
		st = dit_grid_from_latent(gr, c, sh[0], sh[1], sh[2], sh[3], err);
	if (st)
		return st;
	const int64_t *vs = d->latent.vae_stride;
	const struct {
		const char *opt;
		int64_t given, implied;
	} chk[] = {{"--frames", o->frames, (gr->f - 1) * vs[0] + 1},
	           {"--height", o->height, gr->h * vs[1]},
	           {"--width", o->width, gr->w * vs[2]}};
	for (int i = 0; i < 3; i++)
		if (chk[i].given > 0 && chk[i].given != chk[i].implied)
			return dit_error_set(
			    err, DIT_EUSAGE,
			    "%s %lld disagrees with %s: its noise [%lld, %lld, %lld, "
			    "%lld] means %s %lld",
			    chk[i].opt, (long long)chk[i].given, o->noise_path, (long long)sh[0],
			    (long long)sh[1], (long long)sh[2], (long long)sh[3], chk[i].opt,
			    (long long)chk[i].implied);
	return DIT_OK;
}

/* Image conditioning from --image-latent: y [in_dim - C, F, H, W] or z [C, 1, H, W]. */
static dit_status gen_image(gen_state *s, const dit_generate_opts *o, const dit_grid *gr,
                            dit_error *err)
{
	const dit_model_desc *d = s->ses.w.desc;
	const dit_hparams *c = &s->ses.w.expert[0]->cfg;
	if (!o->image_path) {
		/* a plan (--dry-run, ditstar plan) needs the shapes alone */
		if (d->image == DIT_IMAGE_CONCAT && !o->dry_run)
			return dit_error_set(err, DIT_EUSAGE,
			                     "%s needs --image-latent FILE holding y [%lld, %lld, "
			                     "%lld, %lld]",
			                     d->name, (long long)(c->in_dim - c->out_dim),
			                     (long long)gr->f, (long long)gr->h, (long long)gr->w);
		return DIT_OK;
	}
	if (d->image == DIT_IMAGE_NONE)
		return dit_error_set(err, DIT_EUSAGE, "--image-latent: %s takes no image", d->name);
	dit_st_file *f;
	dit_status st = dit_st_open(&f, o->image_path, err);
	if (st)
		return st;
	if (d->image == DIT_IMAGE_CONCAT) {
		int64_t dims[4] = {c->in_dim - c->out_dim, gr->f, gr->h, gr->w};
		st = dit_read_tensor(f, "y", 4, dims, 1, &s->image, NULL, err);
	} else {
		int64_t dims[4] = {c->out_dim, 1, gr->h, gr->w};
		st = dit_read_tensor(f, "z", 4, dims, 1, &s->image, NULL, err);
	}
	dit_st_close(f);
	return st;
}

/* Before any work: no output may replace an input, another output, or anything but a
 * regular file. The state file is an output (--state, else --resume's), which may be
 * the --resume file it updates. */
static dit_status gen_check_files(const dit_generate_opts *o, const dit_weights *w, dit_error *err)
{
	const dit_path_use in[] = {{.what = "--context", .path = o->context_path},
	                           {.what = "--noise", .path = o->noise_path},
	                           {.what = "--image-latent", .path = o->image_path},
	                           {.what = "--resume", .path = o->resume_path}};
	const dit_path_use out[] = {{.what = "--output", .path = o->output},
	                            {.what = "--stats-json", .path = o->stats_json},
	                            {.what = o->state_path ? "--state" : "--resume",
	                             .path = o->state_path ? o->state_path : o->resume_path,
	                             .may_be = o->resume_path},
	                            {.what = "--preview", .path = o->preview_path}};
	size_t nout = sizeof out / sizeof out[0];
	dit_status st = dit_outputs_check_run(w, in, sizeof in / sizeof in[0], out, nout, err);
	if (!st)
		st = dit_outputs_outside(out, nout, "--trace", o->trace_dir, err);
	if (!st)
		st = dit_outputs_outside(out, nout, "--offload-dir", o->offload.dir, err);
	return st;
}

/* Where the run's report goes: standard error when an output is written to "-". */
static FILE *gen_report_file(const dit_generate_opts *o)
{
	const char *outs[] = {o->output, o->stats_json};
	return dit_gen_report_file(outs, 2);
}

/* Before anything is read: every output can be written where it is asked for ("-",
 * standard output, where one file is written once: not the state a run rewrites). */
static dit_status gen_probe_outputs(const dit_generate_opts *o, dit_error *err)
{
	if (dit_io_is_stdout(o->state_path))
		return dit_error_set(err, DIT_EUSAGE,
		                     "--state -: the state is rewritten every step; give a file");
	if (dit_io_is_stdout(o->preview_path))
		return dit_error_set(
		    err, DIT_EUSAGE,
		    "--preview -: the picture is rewritten every step; give a file");
	const dit_path_use out[] = {{.what = "--output", .path = o->output},
	                            {.what = "--stats-json", .path = o->stats_json},
	                            {.what = o->state_path ? "--state" : "--resume",
	                             .path = o->state_path ? o->state_path : o->resume_path},
	                            {.what = "--preview", .path = o->preview_path}};
	dit_status st = dit_outputs_probe(out, sizeof out / sizeof out[0], err);
	/* the folders a plan reads and a run writes: folders, or not there yet */
	if (!st)
		st = dit_outputs_check_dir("--cache-dir", o->cache_dir, err);
	if (!st && o->offload.mode == DIT_OFFLOAD_DISK)
		st = dit_outputs_check_dir("--offload-dir", o->offload.dir, err);
	if (!st)
		st = dit_outputs_probe_dir("--trace", o->trace_dir, err);
	if (!st && o->offload.mode == DIT_OFFLOAD_DISK)
		st = dit_outputs_probe_dir("--offload-dir", o->offload.dir, err);
	return st;
}

#define TRY(call) DIT_TRY(call)

/* The outputs probed, the model opened (a plan reads no weight), the files checked. */
static dit_status gen_open(gen_state *s, const dit_generate_opts *o, dit_error *err)
{
	if (!o->model_dir)
		TRY(dit_synth_preset(&s->preset, o->model_name, err));
	TRY(gen_probe_outputs(o, err));
	if (o->rt.sim_roofline) { /* a bad file refused before the weights are read */
		dit_roofline roof;
		TRY(dit_roofline_load(&roof, o->rt.sim_roofline, err));
	}
	dit_checkpoint_opts ck = o->ck;
	ck.headers_only = o->dry_run;
	TRY(dit_session_open(&s->ses, o->model_dir, o->model_name, o->cache_dir, &ck, o->dry_run,
	                     err));
	s->ses.record = o->record;
	s->ses.quiet = o->quiet;
	return gen_check_files(o, &s->ses.w, err);
}

/* The grid, the conditioning frames or image, the sampling plan. */
static dit_status gen_prepare(gen_state *s, const dit_generate_opts *o, dit_error *err)
{
	const dit_model_desc *d = s->ses.w.desc;
	const dit_hparams *c = &s->ses.w.expert[0]->cfg;
	dit_grid *gr = &s->gr;
	TRY(gen_grid(s, o, s->preset, gr, err));
	TRY(dit_graph_check_size(d, c, gr, err));
	if (o->preview_path)
		TRY(dit_preview_check(d->latent.rgb, c->out_dim,
		                      o->model_dir ? o->model_dir : o->model_name, d->name, err));
	if (d->inputs.cond_mask)
		TRY(dit_gen_frames_load(
		    &s->frames, d, c, gr,
		    dit_family_str(&o->fam, &dit_cosmos_doc, DIT_COSMOS_OPT_COND_PATH),
		    (int64_t)dit_family_num(&o->fam, &dit_cosmos_doc, DIT_COSMOS_OPT_COND_FRAMES,
		                            0),
		    err));
	else
		TRY(gen_image(s, o, gr, err));
	TRY(plan_sampling(s, o, s->preset, err));
	TRY(dit_session_trace_steps(&s->ses, o->trace_steps, o->trace_dir, s->plan.nsteps, err));
	if (d->sched.sizes && !o->quiet) {
		char size[48];
		snprintf(size, sizeof size, "%lld*%lld",
		         (long long)(gr->w * d->latent.vae_stride[2]),
		         (long long)(gr->h * d->latent.vae_stride[1]));
		if (!strstr(d->sched.sizes, size))
			fprintf(stderr, "note: %s is not an official size of %s (%s)\n", size,
			        d->name, d->sched.sizes);
	}
	return DIT_OK;
}

/* The passes a step runs, the text conditioning, the noise and, with --resume, the
 * state. */
static dit_status gen_inputs(gen_state *s, const dit_generate_opts *o, dit_error *err)
{
	const dit_model_desc *d = s->ses.w.desc;
	const dit_hparams *c = &s->ses.w.expert[0]->cfg;
	/* a guidance-distilled family runs one pass per step unless true CFG is asked for */
	int embedded = d->guidance == DIT_GUIDANCE_EMBEDDED;
	s->npasses = embedded && !(s->guide[0] > 1.0) ? 1 : 2;
	double o_eg = dit_family_num(&o->fam, &dit_hunyuan_doc, DIT_HUNYUAN_OPT_EMBEDDED, -1.0);
	s->eg = o_eg >= 0 ? o_eg : d->sched.embedded;
	if (!embedded && o_eg >= 0)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--embedded-guidance: %s takes its guidance as two passes "
		                     "(--guidance)",
		                     d->name);
	if (!isfinite(s->eg))
		return dit_error_set(err, DIT_EUSAGE, "--embedded-guidance must be finite");
	TRY(dit_gen_cond_load(&s->cond, d, c, o->context_path, s->npasses, err));
	TRY(dit_gen_cond_image(&s->cond, d, c, o->context_path, o->image_path, err));
	const dit_grid *gr = &s->gr;
	int64_t n = c->out_dim * gr->f * gr->h * gr->w;
	if (!s->noise && (s->noise = malloc((size_t)n * sizeof(float))))
		dit_rng_fill_normal(s->noise, n, o->seed, dit_rng_stream("noise"), 1.0, 0.0);
	s->latents = malloc((size_t)n * sizeof(float));
	if (!s->noise || !s->latents)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	s->n = n;
	const char *dir = o->model_dir ? o->model_dir : s->ses.synth_dir;
	dit_gen_fingerprint(s->fingerprint, sizeof s->fingerprint, o, dir, &s->ses.w, gr, &s->plan);
	s->state_path = o->state_path ? o->state_path : o->resume_path;
	s->stop = o->stop;
	if (o->resume_path)
		TRY(dit_gen_load_state(s, o->resume_path, s->plan.nsteps, err));
	s->first = d->image == DIT_IMAGE_FIRST_FRAME && s->image;
	return DIT_OK;
}

/* What the session's graph is made of (sg's arrays point into ctx and pooled). */
static void gen_session_graph(gen_state *s, const dit_generate_opts *o, const float **ctx,
                              const float **pooled, dit_session_graph *sg)
{
	const dit_model_desc *d = s->ses.w.desc;
	static const char *const pass_names[2] = {"cond", "uncond"};
	for (int p = 0; p < 2; p++) {
		ctx[p] = s->cond.context[p];
		pooled[p] = s->cond.pooled[p];
	}
	*sg = (dit_session_graph){
	    .pass_names = pass_names,
	    .grid = s->gr,
	    .npasses = s->npasses,
	    .context = ctx,
	    .ctx_rows = s->cond.rows,
	    .text_valid = d->inputs.mask || d->inputs.context_rows_only ? s->cond.valid : NULL,
	    .pooled = d->inputs.pooled ? pooled : NULL,
	    /* as the official pipeline: fp32(scale) * 1000 in fp32 */
	    .guidance =
	        d->guidance == DIT_GUIDANCE_EMBEDDED ? (double)((float)s->eg * 1000.0f) : 0.0,
	    .time_rows = s->first || s->frames.k ? s->gr.tf : 1,
	    .y = s->frames.y                    ? s->frames.y
	         : d->image == DIT_IMAGE_CONCAT ? s->image
	                                        : NULL,
	    .z = s->first ? s->image : NULL,
	    .image_fea = s->cond.image,
	    .extra_bytes = DIT_SBUF_COUNT * (size_t)s->n * 4,
	    .command = "generate",
	    .nsteps = s->plan.nsteps,
	    .first_step = s->next_step,
	    .progress = o->progress,
	    .check_finite = o->check_finite};
}

/* The session started; the solver state starts from the noise (frame 0 replaced by z
 * with first-frame conditioning) and zeros, or from a resume state; the step hooks. */
static dit_status gen_start(gen_state *s, const dit_generate_opts *o, const dit_session_graph *sg,
                            dit_error *err)
{
	const dit_model_desc *d = s->ses.w.desc;
	const dit_hparams *c = &s->ses.w.expert[0]->cfg;
	TRY(dit_session_start(&s->ses, sg, &o->offload, o->cache_dir, &o->rt, o->trace_dir, err));
	dit_graph *g = &s->ses.graph;
	dit_stats *stats = &s->ses.stats;
	stats->model_label = o->model_dir ? o->model_dir : o->model_name;
	stats->seed = o->seed;
	stats->have_seed = 1;
	for (int i = s->next_step; i < s->plan.nsteps; i++)
		stats->expert_steps[s->plan.steps[i].expert]++;
	static const char *const sbuf_name[DIT_SBUF_COUNT] = {"X", "V", "last", "m0", "m1", "m2"};
	int64_t n = s->n, hw = s->gr.h * s->gr.w;
	if (s->first)
		for (int64_t ch = 0; ch < c->out_dim; ch++)
			memcpy(s->noise + ch * s->gr.f * hw, s->image + ch * hw,
			       (size_t)hw * sizeof(float));
	memset(s->latents, 0, (size_t)n * sizeof(float));
	for (int i = 0; i < DIT_SBUF_COUNT; i++) {
		const float *init = s->saved[i]       ? s->saved[i]
		                    : i == DIT_SBUF_X ? s->noise
		                                      : s->latents;
		dit_session_vector_in(&s->ses, &s->sbuf[i], i == DIT_SBUF_V ? NULL : init, n,
		                      sbuf_name[i]);
	}
	if (s->frames.k)
		TRY(dit_gen_frames_start(&s->frames, &s->ses, s->noise,
		                         s->karras ? d->sched.cond_t : -1.0, err));
	g->first_step = s->next_step;
	s->preview_path = o->preview_path;
	if (s->state_path || s->preview_path || s->ses.trace_window) {
		g->after_step = dit_gen_after_step;
		g->after_step_arg = s;
	}
	if (s->ses.off.o.mode == DIT_OFFLOAD_DISK) {
		g->check = dit_gen_io_check;
		g->check_arg = &s->ses.off;
	}
	return DIT_OK;
}

/* The whole loop submitted and waited for; the latents read back, all finite. */
static dit_status gen_sample(gen_state *s, dit_error *err)
{
	dit_graph *g = &s->ses.graph;
	dit_stats *stats = &s->ses.stats;
	stats->t_submit = dit_runtime_now();
	for (int i = 0; i < s->next_step; i++) /* done before the run was resumed */
		stats->step_end[i] = stats->t_submit;
	TRY(dit_graph_submit_sampling(g, &s->plan, s->sbuf, dit_stats_on_step, stats, err));
	stats->t_submitted = dit_runtime_now();
	starpu_task_wait_for_all();
	stats->t_done = dit_runtime_now();
	TRY(dit_place_io_error(&s->ses.off, err)); /* before anything is written */
	dit_stats_sample(stats);
	dit_session_vector_out(s->latents, s->sbuf[DIT_SBUF_X], s->n);
	for (int64_t i = 0; i < s->n; i++)
		if (!isfinite(s->latents[i]))
			return dit_error_set(
			    err, DIT_ERUNTIME,
			    "latents are not finite (element %lld); nothing written", (long long)i);
	return DIT_OK;
}

/* The latents and the stats written, the run reported. */
static dit_status gen_finish(gen_state *s, const dit_generate_opts *o, dit_error *err)
{
	const dit_model_desc *d = s->ses.w.desc;
	dit_stats *stats = &s->ses.stats;
	if (o->output)
		TRY(dit_gen_write_latents(o, s, &s->gr, err));
	if (o->stats_json)
		TRY(dit_session_stats_json(&s->ses, o->stats_json, err));
	if (o->quiet)
		return DIT_OK;
	dit_gen_report r = {.d = d,
	                    .nexperts = s->ses.w.nexperts,
	                    .guide = s->guide,
	                    .expert_steps = stats->expert_steps,
	                    .embedded = s->eg,
	                    .plan = &s->plan,
	                    .karras = s->karras,
	                    .seed = o->seed,
	                    .seconds = stats->t_done - stats->t_submit,
	                    .ncpus = s->ses.rt->ncpus,
	                    .rt = s->ses.rt,
	                    .sched = s->ses.rt->sched,
	                    .latents = s->latents,
	                    .n = s->n,
	                    .output = o->output};
	dit_gen_report_run(gen_report_file(o), &r);
	return DIT_OK;
}

/* A two-pass (or one-pass) run on its opened session: prepared, planned (--dry-run
 * stops there) or run. */
static dit_status gen_run(gen_state *s, const dit_generate_opts *o, dit_error *err)
{
	TRY(gen_prepare(s, o, err));
	TRY(gen_inputs(s, o, err));
	const float *ctx[2], *pooled[2];
	dit_session_graph sg;
	gen_session_graph(s, o, ctx, pooled, &sg);
	if (o->dry_run)
		return dit_plan_report(&s->ses, &sg, &o->offload, o->cache_dir, &o->rt,
		                       o->plan_json, stdout, err);
	if (!o->quiet)
		dit_gen_report_model(gen_report_file(o),
		                     o->model_dir ? o->model_dir : o->model_name, s->ses.w.desc,
		                     &s->ses.w.expert[0]->cfg, s->ses.w.nexperts, &s->gr);
	TRY(gen_start(s, o, &sg, err));
	TRY(gen_sample(s, err));
	return gen_finish(s, o, err);
}
#undef TRY

dit_status dit_generate(const dit_generate_opts *o, dit_error *err)
{
	gen_state s;
	memset(&s, 0, sizeof s);
	dit_status st = gen_open(&s, o, err);
	dit_generate_opts run = *o; /* with the family's options resolved */
	if (!st)
		st = dit_family_values_resolve(&run.fam, s.ses.w.desc->doc, DIT_FOPT_SAMPLING,
		                               s.ses.w.desc->name, err);
	if (!st) /* a family guided over several passes and two streams runs its own */
		st = s.ses.w.desc->guidance == DIT_GUIDANCE_MULTI
		         ? dit_generate_multi(&run, &s.ses, s.preset, err)
		         : gen_run(&s, &run, err);
	st = gen_cleanup(&s, st, err);
	/* the trace is converted once the runtime is gone: its summary joins the stats */
	if (!st && o->stats_json && o->trace_dir && !o->dry_run)
		st = dit_stats_add_trace(o->stats_json, o->trace_dir, err);
	return st;
}
