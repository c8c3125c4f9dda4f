/* One DiT forward (see dit_run.h): the session, the inputs by the names of the
 * official forward's arguments, the time embedding rows of a per-token t. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "dit_fwd_streams.h"
#include "dit_gen_cond.h"
#include "dit_ltx.h"
#include "dit_wan.h"
#include "ltx_state.h"
#include "dit_outputs.h"
#include "dit_run.h"
#include "dit_safetensors.h"
#include "dit_session.h"

/* Rows of distinct timesteps of a per-token t [L]: 1 when all are equal, one per
 * latent frame when they change only from frame to frame, else one per token. */
static int64_t time_rows_of(const float *t, const dit_grid *gr, int64_t *mod_rows)
{
	int64_t L = gr->tokens, per = gr->th * gr->tw, r;
	for (r = 1; r < L && t[r] == t[0]; r++)
		;
	if (r == L) {
		*mod_rows = 0;
		return 1;
	}
	for (r = 0; r < L && t[r] == t[r / per * per]; r++)
		;
	if (r == L) {
		*mod_rows = per;
		return gr->tf;
	}
	*mod_rows = 1;
	return L;
}

/* Whether the family's forward needs input name. */
static int forward_required(const dit_model_desc *d, const char *name)
{
	for (int i = 0; i < d->nconds; i++)
		if (strcmp(d->conds[i].name, name) == 0)
			return d->conds[i].required;
	return 1;
}

/* The timestep input "t": [1], or [L] for a family with per-token timesteps, in 0..1000. */
static dit_status forward_read_t(const dit_st_file *in, const char *path, const dit_model_desc *d,
                                 const dit_grid *gr, float **t, int64_t *n, dit_error *err)
{
	const dit_st_tensor *tt = dit_st_find(in, "t");
	int per_token = d->timestep == DIT_TIMESTEP_TOKEN;
	/* [n], or the official forward's [B, n] with B = 1 */
	int vec = tt && (tt->ndim == 1 || (tt->ndim == 2 && tt->shape[0] == 1));
	if (!tt || (tt->numel != 1 && !(per_token && tt->numel == gr->tokens)) || !vec) {
		if (!tt)
			return dit_error_set(err, DIT_ENOTFOUND, "%s: tensor 't' missing", path);
		if (per_token)
			return dit_error_set(err, DIT_ESHAPE,
			                     "%s: tensor 't' must be [1] or [%lld] (one per token; "
			                     "or [1, 1], [1, %lld])",
			                     path, (long long)gr->tokens, (long long)gr->tokens);
		return dit_error_set(err, DIT_ESHAPE, "%s: tensor 't' must be [1] (or [1, 1]; %s)",
		                     path, d->name);
	}
	int64_t td[1] = {tt->numel};
	dit_status st = dit_read_tensor(in, "t", 1, td, 1, t, NULL, err);
	if (st)
		return st;
	*n = tt->numel;
	/* the timesteps the model was trained on: 0..1000 */
	for (int64_t r = 0; r < tt->numel; r++)
		if (!((*t)[r] >= 0.0f && (*t)[r] <= 1000.0f))
			return dit_error_set(
			    err, DIT_EINVAL,
			    "%s: tensor 't'[%lld] is %g, outside the timesteps 0..1000", path,
			    (long long)r, (double)(*t)[r]);
	return DIT_OK;
}

/* One forward's inputs, handles and outputs, from its options to its output. */
typedef struct fwd_state {
	dit_session ses;
	dit_st_file *in;
	const char *in_label; /* the inputs in messages */
	starpu_data_handle_t latent;
	float *x, *y, *t, *context, *cond, *pooled, *guid, *image;
	double *ts; /* [nt] the distinct timesteps */
	int64_t ctx_rows, valid, tn, nt, mod_rows, ny;
	dit_grid gr;
	dit_fwd_streams fs;
	unsigned char *skip; /* --stg-blocks */
	int expert;
	dit_family_values fam; /* the family options, resolved against the model */
} fwd_state;

#define TRY(call) DIT_TRY(call)

/* Before anything is read: every output can be written where it is asked for. */
static dit_status fwd_probe(const dit_forward_opts *o, dit_error *err)
{
	const dit_path_use out[] = {{.what = "--output", .path = o->output},
	                            {.what = "--stats-json", .path = o->stats_json}};
	if (!o->model_dir)
		return dit_error_set(err, DIT_EUSAGE, "forward: no model_dir");
	if (!o->inputs && !o->inputs_image)
		return dit_error_set(err, DIT_EUSAGE, "forward: no inputs (a file or an image)");
	if (!o->output && !o->output_image)
		return dit_error_set(err, DIT_EUSAGE, "forward: no output (a file or an image)");
	TRY(dit_outputs_probe(out, 2, err));
	TRY(dit_outputs_probe_dir("--trace", o->trace_dir, err));
	if (o->offload.mode == DIT_OFFLOAD_DISK)
		TRY(dit_outputs_probe_dir("--offload-dir", o->offload.dir, err));
	return DIT_OK;
}

/* The model opened; before any work: no output replaces an input, the other output or
 * a non-file; the expert --expert names. */
static dit_status fwd_open(fwd_state *f, const dit_forward_opts *o, dit_error *err)
{
	TRY(dit_session_open(&f->ses, o->model_dir, NULL, NULL, &o->ck, 0, err));
	const dit_path_use in[] = {
	    {.what = "--inputs", .path = o->inputs_image ? NULL : o->inputs}};
	const dit_path_use out[] = {{.what = "--output", .path = o->output},
	                            {.what = "--stats-json", .path = o->stats_json}};
	TRY(dit_outputs_check_run(&f->ses.w, in, 1, out, 2, err));
	TRY(dit_outputs_outside(out, 2, "--trace", o->trace_dir, err));
	TRY(dit_outputs_outside(out, 2, "--offload-dir", o->offload.dir, err));
	const dit_weights *w = &f->ses.w;
	f->fam = o->fam;
	TRY(dit_family_values_resolve(&f->fam, w->desc->doc, DIT_FOPT_FORWARD, w->desc->name, err));
	const char *expert = dit_family_str(&f->fam, &dit_wan22_doc, DIT_WAN22_OPT_EXPERT);
	if (!expert)
		return DIT_OK;
	for (f->expert = 0; f->expert < w->nexperts; f->expert++)
		if (w->nexperts > 1 && strcmp(expert, w->desc->expert_label[f->expert]) == 0)
			return DIT_OK;
	return dit_error_set(err, DIT_EUSAGE, "--expert %s: %s has %s", expert, w->desc->name,
	                     w->nexperts > 1 ? "experts high and low" : "one model, no experts");
}

/* The latent, its grid and the timesteps (t, per-frame t, or the noise levels). */
static dit_status fwd_read_latent(fwd_state *f, const dit_forward_opts *o, dit_error *err)
{
	const dit_model_desc *d = f->ses.w.desc;
	const dit_hparams *c = &f->ses.w.expert[0]->cfg;
	f->in_label = o->inputs ? o->inputs : "inputs";
	if (o->inputs_image)
		TRY(dit_st_open_mem(&f->in, f->in_label, o->inputs_image, o->inputs_size, err));
	else
		TRY(dit_st_open(&f->in, o->inputs, err));
	const char *lat_name = d->inputs.latent ? d->inputs.latent : "x";
	int64_t xd[4] = {-1, -1, -1, -1}, xs[4] = {0, 0, 0, 0};
	TRY(dit_read_tensor(f->in, lat_name, 4, xd, 1, &f->x, xs, err));
	TRY(dit_grid_from_latent(&f->gr, c, xs[0], xs[1], xs[2], xs[3], err));
	f->tn = 1;
	if (d->inputs.sigma) { /* noise levels: the network's timesteps are sigma x ts_mult */
		TRY(dit_fwd_streams_read(&f->fs, f->in, f->in_label, d, c, &f->gr, err));
		f->t = f->fs.t;
		f->fs.t = NULL;
		f->tn = f->fs.nt;
	} else if (d->inputs.frame_t) { /* one per latent frame, as one per token */
		TRY(dit_fwd_frame_t(f->in, f->in_label, d->inputs.frame_t, &f->gr, &f->t, err));
		f->tn = f->gr.tokens;
	} else {
		TRY(forward_read_t(f->in, f->in_label, d, &f->gr, &f->t, &f->tn, err));
	}
	return DIT_OK;
}

/* The text conditioning: the context, its mask, the pooled embedding, the embedded
 * guidance scale. */
static dit_status fwd_read_text(fwd_state *f, dit_error *err)
{
	const dit_model_desc *d = f->ses.w.desc;
	const dit_hparams *c = &f->ses.w.expert[0]->cfg;
	TRY(dit_read_context(f->in, d->inputs.context, c->text_dim, c->text_len, 1, &f->context,
	                     &f->ctx_rows, err));
	f->valid = -1;
	if ((d->inputs.mask && !dit_st_find(f->in, d->inputs.mask) &&
	     !forward_required(d, d->inputs.mask)) ||
	    (!d->inputs.mask && d->inputs.context_rows_only))
		f->valid = f->ctx_rows; /* no mask: every row is the prompt's */
	else if (d->inputs.mask) {
		TRY(dit_read_text_mask(f->in, d->inputs.mask, f->ctx_rows, &f->valid, err));
		if (f->valid > c->text_len)
			return dit_error_set(
			    err, DIT_EINVAL,
			    "%s: tensor '%s' holds %lld tokens, more than the model's "
			    "text length %lld (ditstar-encode --text-len %lld makes a context it "
			    "takes)",
			    f->in_label, d->inputs.mask, (long long)f->valid,
			    (long long)c->text_len, (long long)c->text_len);
	}
	if (d->inputs.pooled) {
		int64_t pd[1] = {c->text_dim_2};
		TRY(dit_read_tensor(f->in, d->inputs.pooled, 1, pd, 1, &f->pooled, NULL, err));
	}
	if (d->inputs.guidance) {
		int64_t gd[1] = {1};
		TRY(dit_read_tensor(f->in, d->inputs.guidance, 1, gd, 1, &f->guid, NULL, err));
		if (!isfinite(f->guid[0]))
			return dit_error_set(err, DIT_EINVAL, "%s: tensor '%s' is not finite",
			                     f->in_label, d->inputs.guidance);
	}
	return DIT_OK;
}

/* The image conditioning (concatenated), the timestep rows, the output buffer. */
static dit_status fwd_read_rest(fwd_state *f, dit_error *err)
{
	const dit_model_desc *d = f->ses.w.desc;
	const dit_hparams *c = &f->ses.w.expert[0]->cfg;
	const dit_grid *gr = &f->gr;
	if (d->image == DIT_IMAGE_CONCAT && d->inputs.cond_mask) {
		TRY(dit_fwd_mask_channels(f->in, f->in_label, d, gr, c->in_dim - c->out_dim,
		                          &f->cond, err));
	} else if (d->image == DIT_IMAGE_CONCAT) {
		int64_t yd[4] = {c->in_dim - c->out_dim, gr->f, gr->h, gr->w};
		TRY(dit_read_tensor(f->in, "y", 4, yd, 1, &f->cond, NULL, err));
	}
	if (d->inputs.image)
		TRY(dit_read_image_fea(f->in, d->inputs.image, c, 1, &f->image, err));
	if (f->valid > c->text_len)
		return dit_error_set(err, DIT_EINVAL,
		                     "%s: %lld text tokens, more than the model's %lld (text_len; "
		                     "ditstar-encode --text-len %lld makes a context it takes)",
		                     f->in_label, (long long)f->valid, (long long)c->text_len,
		                     (long long)c->text_len);
	f->mod_rows = 0;
	f->nt = f->tn == 1 ? 1 : time_rows_of(f->t, gr, &f->mod_rows);
	f->ts = malloc((size_t)f->nt * sizeof *f->ts);
	f->ny = c->out_dim * gr->f * gr->h * gr->w;
	f->y = malloc((size_t)f->ny * sizeof *f->y);
	if (!f->ts || !f->y)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	for (int64_t r = 0; r < f->nt; r++)
		f->ts[r] = f->t[f->nt == 1 ? 0 : f->mod_rows == 1 ? r : r * f->mod_rows];
	return DIT_OK;
}

/* The session started on the inputs, the one pass submitted and waited for. */
static dit_status fwd_run(fwd_state *f, const dit_forward_opts *o, dit_error *err)
{
	const dit_hparams *c = &f->ses.w.expert[0]->cfg;
	const float *ctx[1] = {f->context}, *pool[1] = {f->pooled};
	dit_session_graph sg = {.grid = f->gr,
	                        .npasses = 1,
	                        .context = ctx,
	                        .ctx_rows = &f->ctx_rows,
	                        .text_valid = f->valid >= 0 ? &f->valid : NULL,
	                        .pooled = f->pooled ? pool : NULL,
	                        .guidance = f->guid ? f->guid[0] : 0.0,
	                        .time_rows = f->nt,
	                        .y = f->cond,
	                        .image_fea = f->image,
	                        .extra_bytes = (size_t)(2 * f->ny) * 4,
	                        .command = "forward",
	                        .check_finite = o->check_finite};
	dit_session *ses = &f->ses;
	TRY(dit_session_start(ses, &sg, &o->offload, NULL, &o->rt, o->trace_dir, err));
	dit_graph *g = &ses->graph;
	TRY(dit_fwd_streams_apply(
	    &f->fs, g, dit_family_num(&f->fam, &dit_ltx_doc, DIT_LTX_OPT_FPS, 0.0), err));
	const char *stg_blocks = dit_family_str(&f->fam, &dit_ltx_doc, DIT_LTX_OPT_STG_BLOCKS);
	if (stg_blocks) {
		dit_ltx_state *ls = dit_ltx_state_of(g);
		if (!ls)
			return dit_error_set(err, DIT_EINVAL, "--stg-blocks: %s has no STG passes",
			                     g->w.desc->name);
		if (!(f->skip = malloc((size_t)c->layers[0])))
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		TRY(dit_parse_blocks(stg_blocks, c->layers[0], "--stg-blocks", f->skip, err));
		for (int64_t b = 0; b < c->layers[0]; b++)
			f->skip[b] *= 3; /* both streams */
		ls->skip_self[0] = f->skip;
	}
	dit_session_vector_in(ses, &f->latent, f->x, f->ny, "latent");
	dit_graph_set_expert(g, f->expert);
	ses->stats.expert_steps[f->expert] = 1;
	ses->stats.t_submit = dit_runtime_now();
	TRY(dit_graph_submit_time_rows(g, f->ts, f->nt, f->mod_rows, err));
	TRY(dit_graph_submit_passes(g, f->latent, err));
	ses->stats.t_submitted = dit_runtime_now();
	starpu_task_wait_for_all();
	ses->stats.t_done = dit_runtime_now();
	TRY(dit_place_io_error(&ses->off, err));
	TRY(dit_graph_finite_error(g, err));
	dit_stats_sample(&ses->stats);
	dit_session_vector_out(f->y, g->pass[0].out, f->ny);
	return DIT_OK;
}

/* The output, all finite, as a file and/or an image in memory; then the stats. */
static dit_status fwd_write(fwd_state *f, const dit_forward_opts *o, dit_error *err)
{
	const dit_model_desc *d = f->ses.w.desc;
	const dit_hparams *c = &f->ses.w.expert[0]->cfg;
	dit_graph *g = &f->ses.graph;
	int64_t bad = 0;
	for (int64_t i = 0; i < f->ny; i++)
		bad += !isfinite(f->y[i]);
	if (bad)
		return dit_error_set(err, DIT_ERUNTIME,
		                     "the output holds %lld NaN or Inf values of %lld; nothing "
		                     "written (--check-finite names the first block making them)",
		                     (long long)bad, (long long)f->ny);
	int64_t shape[4] = {c->out_dim, f->gr.f, f->gr.h, f->gr.w};
	dit_st_writer *w = dit_st_writer_new();
	if (!w)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	dit_status st =
	    dit_st_writer_add_f32(w, d->inputs.out ? d->inputs.out : "y", 4, shape, f->y, err);
	if (!st)
		st = dit_fwd_streams_write(&f->fs, g, w, err);
	if (!st && o->output_image)
		st = dit_st_writer_image(w, o->output_image, o->output_size, err);
	if (!st && o->output)
		st = dit_st_writer_commit(w, o->output, err);
	dit_st_writer_free(w);
	if (!st && o->stats_json)
		st = dit_session_stats_json(&f->ses, o->stats_json, err);
	return st;
}
#undef TRY

/* Ends the run: an image output only whole, the handles unregistered, the session
 * closed, everything freed. */
static dit_status fwd_close(fwd_state *f, const dit_forward_opts *o, dit_status st, dit_error *err)
{
	if (st && o->output_image && *o->output_image) { /* all or nothing */
		free(*o->output_image);
		*o->output_image = NULL;
		if (o->output_size)
			*o->output_size = 0;
	}
	if (f->ses.rt)
		starpu_task_wait_for_all();
	if (f->latent)
		starpu_data_unregister(f->latent);
	st = dit_session_close(&f->ses, st, err);
	dit_st_close(f->in);
	free(f->x);
	free(f->y);
	free(f->t);
	free(f->ts);
	free(f->cond);
	free(f->image);
	free(f->context);
	free(f->pooled);
	free(f->guid);
	dit_fwd_streams_free(&f->fs);
	free(f->skip);
	return st;
}

dit_status dit_forward(const dit_forward_opts *o, dit_error *err)
{
	fwd_state f;
	memset(&f, 0, sizeof f); /* closed as it is if the run stops before it opens */
	if (o->output_image) {
		*o->output_image = NULL;
		if (o->output_size)
			*o->output_size = 0;
	}
	dit_status st = fwd_probe(o, err);
	if (!st)
		st = fwd_open(&f, o, err);
	if (!st)
		st = fwd_read_latent(&f, o, err);
	if (!st)
		st = fwd_read_text(&f, err);
	if (!st)
		st = fwd_read_rest(&f, err);
	if (!st)
		st = fwd_run(&f, o, err);
	if (!st)
		st = fwd_write(&f, o, err);
	return fwd_close(&f, o, st, err);
}
