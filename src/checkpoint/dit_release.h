/* A checkpoint without config.json: the official HunyuanVideo release ships
 * transformers/mp_rank_00_model_states.pt alone. A family whose descriptor names a
 * release preset and a probe tensor (dit_model_desc.h) is recognised by that tensor,
 * and its released configuration is assumed; the model layer then checks every
 * tensor's shape against it (dit_weights.h), naming the assumption in its messages. */
#ifndef DIT_RELEASE_H
#define DIT_RELEASE_H

#include "dit_checkpoint.h"
#include "dit_model_desc.h"

/* The family whose probe tensor ck holds: want, or with want NULL the first
 * one-checkpoint family in detection order; NULL when none (or want has no release). */
const dit_model_desc *dit_release_probe(const dit_checkpoint *ck, const dit_model_desc *want);

/* The config of ck into *cfg: config.json's (*assumed NULL) or, when ck->config_missing
 * and dit_release_probe finds a family, that family's released configuration (*assumed
 * its preset; *family the family). Otherwise the error of dit_checkpoint_load_config
 * (config.json missing, or what is wrong with it). family and assumed may be NULL. */
dit_status dit_release_assume(const dit_checkpoint *ck, const dit_model_desc *want,
                              dit_hparams *cfg, const dit_model_desc **family,
                              const dit_preset **assumed, dit_error *err);

#endif
