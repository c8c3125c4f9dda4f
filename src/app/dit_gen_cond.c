/* The text conditioning of a generate run (see dit_gen_cond.h). */
#define _POSIX_C_SOURCE 200809L
#include "dit_gen_cond.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_rng.h"
#include "dit_opts.h"
#include "dit_session.h"

/* name, or name + the negative suffix for pass 1 */
static const char *pass_name(char *buf, size_t len, const char *name, const dit_model_desc *d,
                             int p)
{
	if (!p)
		return name;
	if (d->inputs.neg_prefix)
		snprintf(buf, len, "%s%s", d->inputs.neg, name);
	else
		snprintf(buf, len, "%s%s", name, d->inputs.neg);
	return buf;
}

static dit_status load_file(dit_gen_cond *gc, const dit_model_desc *d, const dit_hparams *c,
                            const char *path, dit_error *err)
{
	dit_st_file *f;
	dit_status st = dit_st_open(&f, path, err);
	if (st)
		return st;
	/* Wan: a missing negative context is the empty prompt */
	int strict = d->inputs.mask || d->inputs.pooled;
	for (int p = 0; p < gc->npasses && !st; p++) {
		char b[96];
		st = dit_read_context(f, pass_name(b, sizeof b, d->inputs.context, d, p),
		                      c->text_dim, c->text_len, p == 0 || strict, &gc->context[p],
		                      &gc->rows[p], err);
		if (st)
			break;
		if (!gc->context[p]) {
			gc->context[p] = calloc((size_t)c->text_dim, sizeof(float));
			gc->rows[p] = 1;
			if (!gc->context[p])
				st = dit_error_set(err, DIT_ENOMEM, "out of memory");
		}
		gc->valid[p] = gc->rows[p];
		if (!st && d->inputs.mask)
			st = dit_read_text_mask(f, pass_name(b, sizeof b, d->inputs.mask, d, p),
			                        gc->rows[p], &gc->valid[p], err);
		if (!st && gc->valid[p] > c->text_len)
			st = dit_error_set(
			    err, DIT_EINVAL,
			    "%s: the prompt of pass %d has %lld tokens, more than the "
			    "model's text length %lld",
			    path, p, (long long)gc->valid[p], (long long)c->text_len);
		if (!st && d->inputs.pooled) {
			int64_t pd[1] = {c->text_dim_2};
			st = dit_read_tensor(f, pass_name(b, sizeof b, d->inputs.pooled, d, p), 1,
			                     pd, 1, &gc->pooled[p], NULL, err);
		}
	}
	if (!st && d->inputs.image)
		st = dit_read_image_fea(f, d->inputs.image, c, 0, &gc->image, err);
	dit_st_close(f);
	return st;
}

dit_status dit_read_image_fea(const dit_st_file *f, const char *name, const dit_hparams *c,
                              int required, float **out, dit_error *err)
{
	const dit_st_tensor *t = dit_st_find(f, name);
	int64_t n = c->image_tokens, dim = c->image_dim;
	*out = NULL;
	if (!t)
		return required ? dit_error_set(err, DIT_ENOTFOUND,
		                                "%s: tensor '%s' missing (the CLIP features of "
		                                "the image: ditstar-encode --image)",
		                                f->label, name)
		                : DIT_OK;
	int ok = (t->ndim == 2 || t->ndim == 3) && t->shape[t->ndim - 1] == dim &&
	         (t->ndim == 2 ? t->shape[0] : t->shape[0] * t->shape[1]) == n;
	if (!ok)
		return dit_error_set(err, DIT_ESHAPE,
		                     "%s: tensor '%s' must be [%lld, %lld] (or [1, %lld, %lld]%s): "
		                     "the CLIP features of %s",
		                     f->label, name, (long long)n, (long long)dim, (long long)n,
		                     (long long)dim, c->image_pos ? ", [2, 257, 1280]" : "",
		                     c->image_pos ? "the first and the last frame" : "the image");
	return dit_read_finite(f, t, name, out, err);
}

dit_status dit_gen_cond_image(dit_gen_cond *gc, const dit_model_desc *d, const dit_hparams *c,
                              const char *context_path, const char *image_path, dit_error *err)
{
	if (!d->inputs.image)
		return DIT_OK;
	float *v = NULL;
	if (image_path) {
		dit_st_file *f;
		dit_status st = dit_st_open(&f, image_path, err);
		if (st)
			return st;
		st = dit_read_image_fea(f, d->inputs.image, c, 0, &v, err);
		dit_st_close(f);
		if (st)
			return st;
	}
	if (v && gc->image) {
		free(v);
		return dit_error_set(err, DIT_EUSAGE,
		                     "tensor '%s' is in both %s (--context) and %s "
		                     "(--image-latent): give it once",
		                     d->inputs.image, context_path, image_path);
	}
	if (v)
		gc->image = v;
	if (gc->image)
		return DIT_OK;
	if (context_path)
		return dit_error_set(
		    err, DIT_EUSAGE,
		    "%s needs the image's CLIP features, tensor '%s' [%lld, %lld], "
		    "in the --context file (ditstar-encode --image) or the "
		    "--image-latent file; %s has none",
		    d->name, d->inputs.image, (long long)c->image_tokens, (long long)c->image_dim,
		    context_path);
	int64_t n = c->image_tokens * c->image_dim; /* made up as the context is */
	gc->image = malloc((size_t)n * sizeof(float));
	if (!gc->image)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	dit_rng_fill_normal(gc->image, n, 0, dit_rng_stream("clip_fea"), 1.0, 0.0);
	return DIT_OK;
}

dit_status dit_gen_cond_load(dit_gen_cond *gc, const dit_model_desc *d, const dit_hparams *c,
                             const char *path, int npasses, dit_error *err)
{
	memset(gc, 0, sizeof *gc);
	gc->npasses = npasses;
	if (path)
		return load_file(gc, d, c, path, err);
	for (int p = 0; p < npasses; p++) {
		gc->context[p] = dit_synthetic_context(c->text_len, c->text_dim, p, &gc->rows[p]);
		gc->valid[p] = gc->rows[p];
		if (!gc->context[p])
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		if (d->inputs.pooled) {
			gc->pooled[p] = malloc((size_t)c->text_dim_2 * sizeof(float));
			if (!gc->pooled[p])
				return dit_error_set(err, DIT_ENOMEM, "out of memory");
			dit_rng_fill_normal(gc->pooled[p], c->text_dim_2, 0,
			                    dit_rng_stream(p ? "pooled_null" : "pooled"), 1.0, 0.0);
		}
	}
	return DIT_OK;
}

dit_status dit_gen_cond_save(const dit_gen_cond *gc, const dit_model_desc *d, const dit_hparams *c,
                             dit_st_writer *w, dit_error *err)
{
	dit_status st = DIT_OK;
	for (int p = 0; p < gc->npasses && !st; p++) {
		char b[96];
		int64_t cs[2] = {gc->rows[p], c->text_dim};
		st = dit_st_writer_add_f32(w, pass_name(b, sizeof b, d->inputs.context, d, p), 2,
		                           cs, gc->context[p], err);
		if (!st && d->inputs.mask) {
			float *m = calloc((size_t)gc->rows[p], sizeof *m);
			if (!m)
				return dit_error_set(err, DIT_ENOMEM, "out of memory");
			for (int64_t i = 0; i < gc->valid[p]; i++)
				m[i] = 1.0f;
			int64_t ms[1] = {gc->rows[p]};
			st = dit_st_writer_add_f32(w, pass_name(b, sizeof b, d->inputs.mask, d, p),
			                           1, ms, m, err);
			free(m);
		}
		if (!st && d->inputs.pooled) {
			int64_t ps[1] = {c->text_dim_2};
			st =
			    dit_st_writer_add_f32(w, pass_name(b, sizeof b, d->inputs.pooled, d, p),
			                          1, ps, gc->pooled[p], err);
		}
	}
	if (!st && gc->image) {
		int64_t is[2] = {c->image_tokens, c->image_dim};
		st = dit_st_writer_add_f32(w, d->inputs.image, 2, is, gc->image, err);
	}
	return st;
}

void dit_gen_cond_free(dit_gen_cond *gc)
{
	for (int p = 0; p < 2; p++) {
		free(gc->context[p]);
		free(gc->pooled[p]);
	}
	free(gc->image);
	memset(gc, 0, sizeof *gc);
}
