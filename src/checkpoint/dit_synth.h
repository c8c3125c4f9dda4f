/* Synthetic checkpoints for the built-in presets: deterministic weights written once
 * to a cache directory as a real checkpoint (config.json and
 * diffusion_pytorch_model.safetensors), so a preset run goes through the same loader
 * as a downloaded model.
 *
 * Weights: tensor T gets normal(seed, stream(name of T), i) scaled by
 *   linear weights: 1/sqrt(fan_in); biases: 0.02; norm weights: 1 + 0.1 x;
 *   norm biases: 0.02; modulation tables: 1/sqrt(dim) (as the official init). */
#ifndef DIT_SYNTH_H
#define DIT_SYNTH_H

#include "dit_error.h"
#include "dit_model_desc.h"

/* The built-in preset of that name; an unknown name is an error naming it. */
dit_status dit_synth_preset(const dit_preset **out, const char *name, dit_error *err);

/* The cache root: $DITSTAR_CACHE, else $XDG_CACHE_HOME/ditstar, else ~/.cache/ditstar.
 * Returns a malloc'd string. */
char *dit_synth_cache_root(void);

/* The fp32 bytes of the preset's weights, every expert (SIZE_MAX: overflow). */
size_t dit_synth_bytes(const dit_preset *p);

/* Makes sure <root>/<preset>-synth-v1/ holds the preset's checkpoint in its family's
 * released layout (written when absent; config.json is written last and marks a
 * complete checkpoint; a two-expert model gets one checkpoint per expert folder, the
 * experts' weights drawn with seeds SEED and SEED + 1); *dir receives the malloc'd
 * path. Refuses presets whose fp32 weights exceed max_bytes. */
dit_status dit_synth_checkpoint(const dit_preset *p, const char *root, size_t max_bytes, char **dir,
                                dit_error *err);

#endif
