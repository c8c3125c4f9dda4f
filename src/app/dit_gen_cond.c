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
	dit_st_close(f);
	return st;
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
	return st;
}

void dit_gen_cond_free(dit_gen_cond *gc)
{
	for (int p = 0; p < 2; p++) {
		free(gc->context[p]);
		free(gc->pooled[p]);
	}
	memset(gc, 0, sizeof *gc);
}
