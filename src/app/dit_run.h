/* The two jobs of the CLI as library calls: a full sampling run (generate) and one DiT
 * forward (forward). Both open one session (the model's experts, the offload plan, the
 * runtime, the graph), submit the whole graph, wait once at the end and write their
 * outputs atomically. */
#ifndef DIT_RUN_H
#define DIT_RUN_H

#include "dit_error.h"
#include "dit_opts.h"

dit_status dit_generate(const dit_generate_opts *o, dit_error *err);
dit_status dit_forward(const dit_forward_opts *o, dit_error *err);

#endif
