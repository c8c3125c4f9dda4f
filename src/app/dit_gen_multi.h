/* generate for families guided on x0 over several passes with a second token stream
 * (DIT_GUIDANCE_MULTI: LTX-2), see dit_gen_multi.c. */
#ifndef DIT_GEN_MULTI_H
#define DIT_GEN_MULTI_H

#include "dit_opts.h"
#include "dit_session.h"

/* The whole run on the opened session ses (the caller closes it); preset: the built-in
 * model's sizes (NULL for --model-dir). */
dit_status dit_generate_multi(const dit_generate_opts *o, dit_session *ses,
                              const dit_preset *preset, dit_error *err);

#endif
