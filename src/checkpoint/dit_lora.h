/* LoRA: weight deltas merged into a model's weights as they are read (the chunk store
 * is written from the merged weights, host RAM holds them), never a second set of
 * weights at run time. A file (safetensors) holds, per module of the model:
 *   low rank  DOWN [r, in...] and UP [out, r] (ComfyUI/kohya `lora_down`/`lora_up`,
 *             diffusers/PEFT `lora_A`/`lora_B`), with an optional scalar `alpha`:
 *             W += strength * (alpha / r) * UP @ DOWN  (no alpha: alpha = r)
 *   full      `diff` (W += strength * diff) and `diff_b` (bias += strength * diff_b).
 * Module names may come in any format of the model's family (official, diffusers,
 * ComfyUI), with or without the usual prefixes (`diffusion_model.`, `transformer.`,
 * `base_model.model.`, kohya's `lora_unet_` with underscores for dots); a diffusers
 * part of a fused tensor (to_q of a fused qkv) lands in its rows. The merge is in fp32
 * (CBLAS), before a block matrix is rounded to bf16. Keys that match no weight are
 * listed in one line and refused unless ignore_unmatched; LyCORIS (LoHa, LoKr) and
 * DoRA keys are refused, naming them. */
#ifndef DIT_LORA_H
#define DIT_LORA_H

#include <stdint.h>

#include "dit_checkpoint.h"
#include "dit_error.h"
#include "dit_model_desc.h"

typedef struct dit_lora_set dit_lora_set;

/* What a LoRA's keys are resolved against: a model's family tables (every format's
 * names) and its configuration (the tensors' shapes, the pools' block counts). */
typedef struct dit_lora_model {
	const dit_model_desc *desc;
	const dit_hparams *cfg;
} dit_lora_model;

/* Opens the n files of specs for model m (an expert), resolves and checks every key,
 * and makes their merges, in the specs' order; with hash, the set's identity (each
 * file's content hash: not for a plan). *out NULL when n is 0. Errors name the file
 * and the key. */
dit_status dit_lora_open(dit_lora_set **out, const dit_lora_model *m,
                         const dit_lora_spec *const *specs, int n, int ignore_unmatched, int hash,
                         dit_error *err);

/* Whether the set has deltas for tensor i of block b of pool p (p < 0: the globals,
 * b unused). */
int dit_lora_touches(const dit_lora_set *s, int p, int64_t b, int i);

/* Adds the deltas for that tensor to w (fp32, the tensor's elements in its table
 * shape); the result is checked finite. name names the tensor in messages. */
dit_status dit_lora_merge(const dit_lora_set *s, int p, int64_t b, int i, float *w,
                          const char *name, dit_error *err);

/* "file:size:xxh3:strength|...", what the chunk store and resume states tie to. */
const char *dit_lora_identity(const dit_lora_set *s);

/* The modules whose deltas the set merges. */
int dit_lora_modules(const dit_lora_set *s);

void dit_lora_free(dit_lora_set *s);

#endif
