/* `ditstar calibrate` (src/app/dit_calibrate.c): runs a generate command's graph, with
 * StarPU updating its performance models from every measure, round after round until a
 * round runs no task whose model lacks an estimate for its shape on its worker's
 * architecture (or the rounds run out); StarPU calibrates the buses on its first start
 * under a STARPU_HOME. Prints each round and where the models are. */
#ifndef DIT_CALIBRATE_H
#define DIT_CALIBRATE_H

#include <stdio.h>

#include "dit_opts.h"

/* o: the generate options (its output, stats and trace are not used); rounds >= 1.
 * Fails with DIT_ERUNTIME when the last round still ran more than 5% of its tasks
 * without an estimate (fewer: said so, success). */
dit_status dit_calibrate(const dit_generate_opts *o, int rounds, FILE *out, dit_error *err);

#endif
