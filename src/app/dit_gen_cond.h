/* The text conditioning of a generate run, read by the family's input names
 * (dit_input_names) or made up deterministically: per pass (conditional, then the
 * negative prompt's) the context [rows, text_dim], the prompt's token count under a
 * prefix text mask, and a pooled text embedding. */
#ifndef DIT_GEN_COND_H
#define DIT_GEN_COND_H

#include "dit_error.h"
#include "dit_model_desc.h"
#include "dit_safetensors.h"

typedef struct dit_gen_cond {
	int npasses;
	float *context[2]; /* [rows, text_dim] */
	int64_t rows[2];
	int64_t valid[2]; /* the prompt's tokens (a mask's ones; else rows) */
	float *pooled[2]; /* [text_dim_2], NULL when the family has none */
} dit_gen_cond;

/* From path (NULL: synthetic): pass 0 reads the input names, pass 1 (npasses 2) the
 * names with the family's negative suffix. Wan's negative context may be absent (one
 * zero row); a family with a mask or a pooled embedding needs every tensor. */
dit_status dit_gen_cond_load(dit_gen_cond *gc, const dit_model_desc *d, const dit_hparams *c,
                             const char *path, int npasses, dit_error *err);

/* Adds the conditioning to w under the names it is read by (--save-inputs). */
dit_status dit_gen_cond_save(const dit_gen_cond *gc, const dit_model_desc *d, const dit_hparams *c,
                             dit_st_writer *w, dit_error *err);

void dit_gen_cond_free(dit_gen_cond *gc);

#endif
