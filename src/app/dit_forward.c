/* One DiT forward (see dit_run.h): the session, the inputs by the names of the
 * official forward's arguments, the time embedding rows of a per-token t. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "dit_fwd_streams.h"
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
	if (!tt || (tt->numel != 1 && !(per_token && tt->numel == gr->tokens)) || tt->ndim != 1) {
		if (!tt)
			return dit_error_set(err, DIT_ENOTFOUND, "%s: tensor 't' missing", path);
		if (per_token)
			return dit_error_set(err, DIT_ESHAPE,
			                     "%s: tensor 't' must be [1] or [%lld] (one per token)",
			                     path, (long long)gr->tokens);
		return dit_error_set(err, DIT_ESHAPE, "%s: tensor 't' must be [1] (%s)", path,
		                     d->name);
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

dit_status dit_forward(const dit_forward_opts *o, dit_error *err)
{
	dit_session ses;
	memset(&ses, 0, sizeof ses); /* closed as it is if the run stops before it opens */
	dit_st_file *in = NULL;
	starpu_data_handle_t latent = NULL;
	float *x = NULL, *y = NULL, *t = NULL, *context = NULL, *cond = NULL, *pooled = NULL;
	float *guid = NULL;
	double *ts = NULL;
	int64_t ctx_rows = 0;
	dit_fwd_streams fs;
	memset(&fs, 0, sizeof fs);
	unsigned char *skip = NULL;
	dit_status st;

#define TRY(call)                                                                                  \
	do {                                                                                       \
		if ((st = (call)) != DIT_OK)                                                       \
			goto out;                                                                  \
	} while (0)

	if (o->output_image) {
		*o->output_image = NULL;
		if (o->output_size)
			*o->output_size = 0;
	}
	{ /* before anything is read: every output can be written where it is asked for */
		const dit_path_use out[] = {{.what = "--output", .path = o->output},
		                            {.what = "--stats-json", .path = o->stats_json}};
		if (!o->model_dir)
			TRY(dit_error_set(err, DIT_EUSAGE, "forward: no model_dir"));
		if (!o->inputs && !o->inputs_image)
			TRY(dit_error_set(err, DIT_EUSAGE,
			                  "forward: no inputs (a file or an image)"));
		if (!o->output && !o->output_image)
			TRY(dit_error_set(err, DIT_EUSAGE,
			                  "forward: no output (a file or an image)"));
		TRY(dit_outputs_probe(out, 2, err));
		TRY(dit_outputs_probe_dir("--trace", o->trace_dir, err));
		if (o->offload.mode == DIT_OFFLOAD_DISK)
			TRY(dit_outputs_probe_dir("--offload-dir", o->offload.dir, err));
	}
	TRY(dit_session_open(&ses, o->model_dir, NULL, NULL, &o->ck, 0, err));
	{ /* before any work: no output replaces an input, the other output or a non-file */
		const dit_path_use in[] = {
		    {.what = "--inputs", .path = o->inputs_image ? NULL : o->inputs}};
		const dit_path_use out[] = {{.what = "--output", .path = o->output},
		                            {.what = "--stats-json", .path = o->stats_json}};
		TRY(dit_outputs_check_run(&ses.w, in, 1, out, 2, err));
		TRY(dit_outputs_outside(out, 2, "--trace", o->trace_dir, err));
		TRY(dit_outputs_outside(out, 2, "--offload-dir", o->offload.dir, err));
	}
	const dit_model_desc *d = ses.w.desc;
	const dit_hparams *c = &ses.w.expert[0]->cfg;
	int expert = 0;
	if (o->expert) {
		for (expert = 0; expert < ses.w.nexperts; expert++)
			if (ses.w.nexperts > 1 && strcmp(o->expert, d->expert_label[expert]) == 0)
				break;
		if (expert == ses.w.nexperts) {
			st = dit_error_set(
			    err, DIT_EUSAGE, "--expert %s: %s has %s", o->expert, d->name,
			    ses.w.nexperts > 1 ? "experts high and low" : "one model, no experts");
			goto out;
		}
	}
	const char *in_label = o->inputs ? o->inputs : "inputs";
	if (o->inputs_image)
		TRY(dit_st_open_mem(&in, in_label, o->inputs_image, o->inputs_size, err));
	else
		TRY(dit_st_open(&in, o->inputs, err));
	const char *lat_name = d->inputs.latent ? d->inputs.latent : "x";
	const char *out_name = d->inputs.out ? d->inputs.out : "y";
	int64_t xd[4] = {-1, -1, -1, -1}, xs[4] = {0, 0, 0, 0};
	TRY(dit_read_tensor(in, lat_name, 4, xd, 1, &x, xs, err));
	dit_grid gr;
	TRY(dit_grid_from_latent(&gr, c, xs[0], xs[1], xs[2], xs[3], err));
	int64_t tn = 1;
	if (d->inputs.sigma) { /* noise levels: the network's timesteps are sigma x ts_mult */
		TRY(dit_fwd_streams_read(&fs, in, in_label, d, c, &gr, err));
		t = fs.t;
		fs.t = NULL;
		tn = fs.nt;
	} else if (d->inputs.frame_t) { /* one per latent frame, as one per token */
		TRY(dit_fwd_frame_t(in, in_label, d->inputs.frame_t, &gr, &t, err));
		tn = gr.tokens;
	} else {
		TRY(forward_read_t(in, in_label, d, &gr, &t, &tn, err));
	}
	TRY(dit_read_context(in, d->inputs.context, c->text_dim, 1, &context, &ctx_rows, err));
	int64_t valid = -1;
	if ((d->inputs.mask && !dit_st_find(in, d->inputs.mask) &&
	     !forward_required(d, d->inputs.mask)) ||
	    (!d->inputs.mask && d->inputs.context_rows_only))
		valid = ctx_rows; /* no mask: every row is the prompt's */
	else if (d->inputs.mask) {
		TRY(dit_read_text_mask(in, d->inputs.mask, ctx_rows, &valid, err));
		if (valid > c->text_len) {
			st = dit_error_set(
			    err, DIT_EINVAL,
			    "%s: tensor '%s' holds %lld tokens, more than the model's "
			    "text length %lld",
			    in_label, d->inputs.mask, (long long)valid, (long long)c->text_len);
			goto out;
		}
	}
	if (d->inputs.pooled) {
		int64_t pd[1] = {c->text_dim_2};
		TRY(dit_read_tensor(in, d->inputs.pooled, 1, pd, 1, &pooled, NULL, err));
	}
	if (d->inputs.guidance) {
		int64_t gd[1] = {1};
		TRY(dit_read_tensor(in, d->inputs.guidance, 1, gd, 1, &guid, NULL, err));
		if (!isfinite(guid[0])) {
			st = dit_error_set(err, DIT_EINVAL, "%s: tensor '%s' is not finite",
			                   in_label, d->inputs.guidance);
			goto out;
		}
	}
	if (d->image == DIT_IMAGE_CONCAT && d->inputs.cond_mask) {
		TRY(dit_fwd_mask_channels(in, in_label, d, &gr, c->in_dim - c->out_dim, &cond,
		                          err));
	} else if (d->image == DIT_IMAGE_CONCAT) {
		int64_t yd[4] = {c->in_dim - c->out_dim, gr.f, gr.h, gr.w};
		TRY(dit_read_tensor(in, "y", 4, yd, 1, &cond, NULL, err));
	}
	if (valid > c->text_len) {
		st = dit_error_set(err, DIT_EINVAL,
		                   "%s: %lld text tokens, more than the model's %lld (text_len)",
		                   in_label, (long long)valid, (long long)c->text_len);
		goto out;
	}
	int64_t mod_rows = 0, nt = tn == 1 ? 1 : time_rows_of(t, &gr, &mod_rows);
	ts = malloc((size_t)nt * sizeof *ts);
	int64_t ny = c->out_dim * gr.f * gr.h * gr.w;
	y = malloc((size_t)ny * sizeof *y);
	if (!ts || !y) {
		st = dit_error_set(err, DIT_ENOMEM, "out of memory");
		goto out;
	}
	for (int64_t r = 0; r < nt; r++)
		ts[r] = t[nt == 1 ? 0 : mod_rows == 1 ? r : r * mod_rows];

	const float *ctx[1] = {context}, *pool[1] = {pooled};
	dit_session_graph sg = {.grid = gr,
	                        .npasses = 1,
	                        .context = ctx,
	                        .ctx_rows = &ctx_rows,
	                        .text_valid = valid >= 0 ? &valid : NULL,
	                        .pooled = pooled ? pool : NULL,
	                        .guidance = guid ? guid[0] : 0.0,
	                        .time_rows = nt,
	                        .y = cond,
	                        .extra_bytes = (size_t)(2 * ny) * 4,
	                        .command = "forward",
	                        .check_finite = o->check_finite};
	TRY(dit_session_start(&ses, &sg, &o->offload, NULL, &o->rt, o->trace_dir, err));
	dit_graph *g = &ses.graph;
	TRY(dit_fwd_streams_apply(&fs, g, o->fps, err));
	if (o->stg_blocks) {
		if (!(skip = malloc((size_t)c->layers[0]))) {
			st = dit_error_set(err, DIT_ENOMEM, "out of memory");
			goto out;
		}
		TRY(dit_parse_blocks(o->stg_blocks, c->layers[0], "--stg-blocks", skip, err));
		for (int64_t b = 0; b < c->layers[0]; b++)
			skip[b] *= 3; /* both streams */
		g->skip_self[0] = skip;
	}
	dit_session_vector_in(&ses, &latent, x, ny, "latent");
	dit_graph_set_expert(g, expert);
	ses.stats.expert_steps[expert] = 1;
	ses.stats.t_submit = dit_runtime_now();
	TRY(dit_graph_submit_time_rows(g, ts, nt, mod_rows, err));
	TRY(dit_graph_submit_passes(g, latent, err));
	ses.stats.t_submitted = dit_runtime_now();
	starpu_task_wait_for_all();
	ses.stats.t_done = dit_runtime_now();
	TRY(dit_place_io_error(&ses.off, err));
	TRY(dit_graph_finite_error(g, err));
	dit_stats_sample(&ses.stats);
	dit_session_vector_out(y, g->pass[0].out, ny);
	{
		int64_t bad = 0;
		for (int64_t i = 0; i < ny; i++)
			bad += !isfinite(y[i]);
		if (bad) {
			st = dit_error_set(
			    err, DIT_ERUNTIME,
			    "the output holds %lld NaN or Inf values of %lld; nothing "
			    "written (--check-finite names the first block making them)",
			    (long long)bad, (long long)ny);
			goto out;
		}
	}
	{
		int64_t shape[4] = {c->out_dim, gr.f, gr.h, gr.w};
		dit_st_writer *w = dit_st_writer_new();
		if (!w) {
			st = dit_error_set(err, DIT_ENOMEM, "out of memory");
			goto out;
		}
		st = dit_st_writer_add_f32(w, out_name, 4, shape, y, err);
		if (!st)
			st = dit_fwd_streams_write(&fs, g, w, err);
		if (!st && o->output_image)
			st = dit_st_writer_image(w, o->output_image, o->output_size, err);
		if (!st && o->output)
			st = dit_st_writer_commit(w, o->output, err);
		dit_st_writer_free(w);
		if (st)
			goto out;
	}
	if (o->stats_json)
		TRY(dit_stats_write_json(&ses.stats, g, o->stats_json, err));
out:
	if (st && o->output_image && *o->output_image) { /* all or nothing */
		free(*o->output_image);
		*o->output_image = NULL;
		if (o->output_size)
			*o->output_size = 0;
	}
	if (ses.rt)
		starpu_task_wait_for_all();
	if (latent)
		starpu_data_unregister(latent);
	st = dit_session_close(&ses, st, err);
	dit_st_close(in);
	free(x);
	free(y);
	free(t);
	free(ts);
	free(cond);
	free(context);
	free(pooled);
	free(guid);
	dit_fwd_streams_free(&fs);
	free(skip);
	return st;
#undef TRY
}
