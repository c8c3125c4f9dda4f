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
	/* image features both passes read (dit_input_names.image, [image_tokens,
	 * image_dim]); NULL when the family has none, or not given yet */
	float *image;
} dit_gen_cond;

/* From path (NULL: synthetic): pass 0 reads the input names, pass 1 (npasses 2) the
 * names with the family's negative suffix. Wan's negative context may be absent (one
 * zero row); a family with a mask or a pooled embedding needs every tensor. */
dit_status dit_gen_cond_load(dit_gen_cond *gc, const dit_model_desc *d, const dit_hparams *c,
                             const char *path, int npasses, dit_error *err);

/* The image features name of f (dit_input_names.image) into *out [image_tokens,
 * image_dim]: 2-D, or 3-D with the tokens split over a leading dimension (the official
 * [1, 257, 1280]; FLF2V's two images [2, 257, 1280]). Absent: *out NULL, an error
 * when required. */
dit_status dit_read_image_fea(const dit_st_file *f, const char *name, const dit_hparams *c,
                              int required, float **out, dit_error *err);

/* The image features of gc from the --image-latent file when the --context file had
 * none (context_path: that file, NULL when the context is made up; then so are the
 * features, when the image file has none either). Both files holding them is an
 * error. Nothing for a family without image features. */
dit_status dit_gen_cond_image(dit_gen_cond *gc, const dit_model_desc *d, const dit_hparams *c,
                              const char *context_path, const char *image_path, dit_error *err);

/* Adds the conditioning to w under the names it is read by (--save-inputs). */
dit_status dit_gen_cond_save(const dit_gen_cond *gc, const dit_model_desc *d, const dit_hparams *c,
                             dit_st_writer *w, dit_error *err);

void dit_gen_cond_free(dit_gen_cond *gc);

#endif
