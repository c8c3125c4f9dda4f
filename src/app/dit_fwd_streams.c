/* See dit_fwd_streams.h. */
#define _POSIX_C_SOURCE 200809L
#include "dit_fwd_streams.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dit_session.h"
#include "ltx_state.h"

/* A [1] sigma in [0, 1]. */
static dit_status read_sigma(const dit_st_file *in, const char *path, const char *name,
                             double *sigma, dit_error *err)
{
	int64_t dims[1] = {1};
	float *v = NULL;
	dit_status st = dit_read_tensor(in, name, 1, dims, 1, &v, NULL, err);
	if (st)
		return st;
	if (!(v[0] >= 0.0f && v[0] <= 1.0f))
		st =
		    dit_error_set(err, DIT_EINVAL, "%s: tensor '%s' is %g, outside the sigmas 0..1",
		                  path, name, (double)v[0]);
	*sigma = v[0];
	free(v);
	return st;
}

/* Optional per-token sigmas of n tokens (in [0, 1]) into t[n] x mult, else sigma. */
static dit_status read_timesteps(const dit_st_file *in, const char *path, const char *name,
                                 int ndim, const int64_t *dims, int64_t n, double sigma,
                                 double mult, float **t, int64_t *nt, dit_error *err)
{
	float *v = NULL;
	dit_status st = name ? dit_read_tensor(in, name, ndim, dims, 0, &v, NULL, err) : DIT_OK;
	if (st)
		return st;
	if (!v) {
		if (!(*t = malloc(sizeof **t)))
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		(*t)[0] = (float)(sigma * mult);
		*nt = 1;
		return DIT_OK;
	}
	for (int64_t i = 0; i < n; i++) {
		if (!(v[i] >= 0.0f && v[i] <= 1.0f)) {
			st = dit_error_set(err, DIT_EINVAL,
			                   "%s: tensor '%s'[%lld] is %g, outside the sigmas 0..1",
			                   path, name, (long long)i, (double)v[i]);
			free(v);
			return st;
		}
		v[i] = (float)((double)v[i] * mult);
	}
	*t = v;
	*nt = n;
	return DIT_OK;
}

/* Optional positions [naxes, n, 2] into doubles. */
static dit_status read_positions(const dit_st_file *in, const char *name, int64_t naxes, int64_t n,
                                 double **out, dit_error *err)
{
	*out = NULL;
	if (!name)
		return DIT_OK;
	int64_t dims[3] = {naxes, n, 2};
	float *v = NULL;
	dit_status st = dit_read_tensor(in, name, 3, dims, 0, &v, NULL, err);
	if (st || !v)
		return st;
	size_t k = (size_t)(naxes * n * 2);
	*out = malloc(k * sizeof **out);
	for (size_t i = 0; *out && i < k; i++) {
		if (!isfinite(v[i])) {
			free(v);
			free(*out);
			*out = NULL;
			return dit_error_set(err, DIT_EINVAL, "%s: tensor '%s' is not finite",
			                     in->label, name);
		}
		(*out)[i] = v[i];
	}
	free(v);
	return *out ? DIT_OK : dit_error_set(err, DIT_ENOMEM, "out of memory");
}

/* The prompt's tokens of an optional prefix mask name (absent: all rows). */
static dit_status read_valid(const dit_st_file *in, const char *path, const char *name,
                             int64_t rows, int64_t text_len, int64_t *valid, dit_error *err)
{
	*valid = rows;
	if (name && dit_st_find(in, name)) {
		dit_status st = dit_read_text_mask(in, name, rows, valid, err);
		if (st)
			return st;
	}
	if (*valid > text_len)
		return dit_error_set(err, DIT_EINVAL,
		                     "%s: %lld text tokens, more than the model's %lld (text_len; "
		                     "ditstar-encode --text-len %lld makes a context it takes)",
		                     path, (long long)*valid, (long long)text_len,
		                     (long long)text_len);
	return DIT_OK;
}

dit_status dit_fwd_streams_read(dit_fwd_streams *s, const dit_st_file *in, const char *path,
                                const dit_model_desc *d, const dit_hparams *c, dit_grid *gr,
                                dit_error *err)
{
	memset(s, 0, sizeof *s);
	const dit_input_names *nm = &d->inputs;
	double mult = c->ts_mult > 0 ? c->ts_mult : 1000.0;
	dit_status st = read_sigma(in, path, nm->sigma, &s->sigma[0], err);
	int64_t td[3] = {gr->f, gr->h, gr->w};
	if (!st)
		st = read_timesteps(in, path, nm->timesteps, 3, td, gr->tokens, s->sigma[0], mult,
		                    &s->t, &s->nt, err);
	if (!st)
		st = read_positions(in, nm->positions, 3, gr->tokens, &s->pos[0], err);
	const dit_stream_desc *a = d->aux;
	if (st || !a || !dit_st_find(in, a->latent))
		return st;
	int64_t ld[3] = {a->channels, -1, a->mel}, shape[3] = {0, 0, 0};
	st = dit_read_tensor(in, a->latent, 3, ld, 1, &s->aux_latent, shape, err);
	if (st)
		return st;
	int64_t T = shape[1];
	st = read_sigma(in, path, a->sigma, &s->sigma[1], err);
	float *at = NULL;
	int64_t adims[1] = {T};
	if (!st)
		st = read_timesteps(in, path, a->timesteps, 1, adims, T, s->sigma[1], mult, &at,
		                    &s->aux_nt, err);
	if (!st)
		st = dit_read_context(in, a->context, c->aux_text_dim, c->text_len, 1,
		                      &s->aux_context, &s->aux_ctx_rows, err);
	if (!st)
		st =
		    read_valid(in, path, a->mask, s->aux_ctx_rows, c->text_len, &s->aux_valid, err);
	if (!st)
		st = read_positions(in, a->positions, 1, T, &s->pos[1], err);
	if (!st) { /* one timestep, or one per token */
		int same = 1;
		for (int64_t i = 1; i < s->aux_nt; i++)
			same &= at[i] == at[0];
		s->aux_nt = same ? 1 : s->aux_nt;
		s->aux_mod_rows = same ? 0 : 1;
		if (!(s->aux_ts = malloc((size_t)s->aux_nt * sizeof *s->aux_ts)))
			st = dit_error_set(err, DIT_ENOMEM, "out of memory");
		for (int64_t i = 0; !st && i < s->aux_nt; i++)
			s->aux_ts[i] = at[i];
	}
	free(at);
	gr->aux_t = T;
	gr->aux_time_rows = s->aux_nt;
	return st;
}

dit_status dit_fwd_streams_apply(const dit_fwd_streams *s, dit_graph *g, double fps, dit_error *err)
{
	const dit_model_desc *d = g->w.desc;
	const dit_hparams *c = &g->model->cfg;
	dit_status st = DIT_OK;
	dit_ltx_state *ls = dit_ltx_state_of(g);
	if (!ls) /* the inputs read here are LTX-2's alone (its descriptor names them) */
		return DIT_OK;
	ls->sigma[0] = s->sigma[0];
	ls->sigma[1] = s->sigma[1];
	ls->fps = fps;
	if (s->pos[0]) {
		st = dit_graph_buffer_fill(g, -1, "video_positions", s->pos[0],
		                           (size_t)(3 * g->grid.tokens * 2) * sizeof(double), err);
		ls->pos_given[0] = 1;
	}
	if (st || !s->aux_latent)
		return st;
	const dit_stream_desc *a = d->aux;
	int64_t T = g->grid.aux_t, Lc = c->text_len, k = c->aux_text_dim;
	ls->aux_ts = s->aux_ts;
	ls->aux_nt = s->aux_nt;
	ls->aux_mod_rows = s->aux_mod_rows;
	st = dit_graph_buffer_fill(g, -1, "audio_latent", s->aux_latent,
	                           (size_t)(a->channels * T * a->mel) * sizeof(float), err);
	if (!st && s->pos[1]) {
		st = dit_graph_buffer_fill(g, -1, "audio_positions", s->pos[1],
		                           (size_t)(T * 2) * sizeof(double), err);
		ls->pos_given[1] = 1;
	}
	float *ctx = st ? NULL : calloc((size_t)(Lc * k), sizeof *ctx);
	if (!st && !ctx)
		st = dit_error_set(err, DIT_ENOMEM, "out of memory");
	if (!st) {
		int64_t rows = s->aux_ctx_rows < Lc ? s->aux_ctx_rows : Lc;
		memcpy(ctx, s->aux_context, (size_t)(rows * k) * sizeof *ctx);
		st = dit_graph_buffer_fill(g, 0, "audio_context", ctx,
		                           (size_t)(Lc * k) * sizeof *ctx, err);
		g->pass[0].aux_text_valid = s->aux_valid;
	}
	free(ctx);
	return st;
}

dit_status dit_fwd_streams_write(const dit_fwd_streams *s, dit_graph *g, dit_st_writer *w,
                                 dit_error *err)
{
	if (!s->aux_latent)
		return DIT_OK;
	const dit_stream_desc *a = g->w.desc->aux;
	int64_t T = g->grid.aux_t, n = a->channels * T * a->mel;
	float *y = malloc((size_t)n * sizeof *y);
	if (!y)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	dit_session_vector_out(y, dit_graph_buffer(g, 0, "audio_out"), n);
	dit_status st = DIT_OK;
	for (int64_t i = 0; i < n && !st; i++)
		if (!isfinite(y[i]))
			st = dit_error_set(err, DIT_ERUNTIME,
			                   "the %s output holds NaN or Inf values; nothing written",
			                   a->name);
	int64_t shape[3] = {a->channels, T, a->mel};
	if (!st)
		st = dit_st_writer_add_f32(w, a->out, 3, shape, y, err);
	free(y);
	return st;
}

void dit_fwd_streams_free(dit_fwd_streams *s)
{
	free(s->t);
	free(s->pos[0]);
	free(s->pos[1]);
	free(s->aux_latent);
	free(s->aux_context);
	free(s->aux_ts);
	memset(s, 0, sizeof *s);
}

dit_status dit_parse_blocks(const char *list, int64_t nblocks, const char *what, unsigned char *out,
                            dit_error *err)
{
	memset(out, 0, (size_t)nblocks);
	const char *p = list;
	while (*p) {
		char *end;
		long long b = strtoll(p, &end, 10);
		if (end == p || (*end && *end != ',') || b < 0 || b >= nblocks)
			return dit_error_set(err, DIT_EUSAGE,
			                     "%s '%s': block indices 0..%lld separated by commas",
			                     what, list, (long long)nblocks - 1);
		out[b] = 1;
		p = *end ? end + 1 : end;
	}
	return DIT_OK;
}

dit_status dit_fwd_frame_t(const dit_st_file *in, const char *path, const char *name,
                           const dit_grid *gr, float **t, dit_error *err)
{
	int64_t dims[1] = {gr->f};
	float *v = NULL;
	dit_status st = dit_read_tensor(in, name, 1, dims, 1, &v, NULL, err);
	if (st)
		return st;
	for (int64_t i = 0; i < gr->f; i++)
		if (!(v[i] >= 0.0f && v[i] <= 1000.0f)) {
			st = dit_error_set(
			    err, DIT_EINVAL,
			    "%s: tensor '%s'[%lld] is %g, outside the timesteps 0..1000", path,
			    name, (long long)i, (double)v[i]);
			free(v);
			return st;
		}
	int64_t per = gr->th * gr->tw, fr = gr->f / gr->tf; /* tokens, latent frames a token row */
	*t = malloc((size_t)gr->tokens * sizeof **t);
	for (int64_t l = 0; *t && l < gr->tokens; l++)
		(*t)[l] = v[l / per * fr];
	free(v);
	return *t ? DIT_OK : dit_error_set(err, DIT_ENOMEM, "out of memory");
}

dit_status dit_fwd_mask_channels(const dit_st_file *in, const char *path, const dit_model_desc *d,
                                 const dit_grid *gr, int64_t extra, float **y, dit_error *err)
{
	(void)path;
	int64_t fhw = gr->f * gr->h * gr->w, hw = gr->h * gr->w;
	*y = calloc((size_t)(extra * fhw), sizeof **y);
	if (!*y)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	float *cm = NULL, *pm = NULL;
	int64_t cd[4] = {1, gr->f, gr->h, gr->w}, pd[2] = {-1, -1}, ps[2] = {0, 0};
	dit_status st = dit_read_tensor(in, d->inputs.cond_mask, 4, cd, 0, &cm, NULL, err);
	if (!st && extra > 1 && d->inputs.pad_mask)
		st = dit_read_tensor(in, d->inputs.pad_mask, 2, pd, 0, &pm, ps, err);
	if (!st && cm)
		memcpy(*y, cm, (size_t)fhw * sizeof **y);
	if (!st && pm) /* nearest: row i reads floor(i Hpx / H) */
		for (int64_t f = 0; f < gr->f; f++)
			for (int64_t i = 0; i < gr->h; i++)
				for (int64_t j = 0; j < gr->w; j++)
					(*y)[fhw + f * hw + i * gr->w + j] =
					    pm[(i * ps[0] / gr->h) * ps[1] + j * ps[1] / gr->w];
	free(cm);
	free(pm);
	if (st) {
		free(*y);
		*y = NULL;
	}
	return st;
}
