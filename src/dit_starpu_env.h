/* What StarPU reads from the outside world, checked before it reads it: StarPU
 * asserts (and aborts the process with a backtrace) on a negative worker count, a
 * non-numeric calibration flag, a STARPU_HOME that is not a directory, or a truncated
 * performance-model file. These checks turn each into a one-line error naming the
 * variable or the file. */
#ifndef DIT_STARPU_ENV_H
#define DIT_STARPU_ENV_H

#include "dit_error.h"

/* The numeric StarPU variables that are set (integers in their ranges) and
 * STARPU_HOME (a directory, or absent). No StarPU call. */
dit_status dit_starpu_env_check(dit_error *err);

/* The performance models of ditstar's codelets under the current STARPU_HOME (or
 * STARPU_PERF_MODEL_DIR), each parsed by StarPU in a child process so that a corrupt
 * one is reported (with the command that resets it) instead of aborting this
 * process. Only before the process's first starpu_init: StarPU's model registry does
 * not survive a starpu_shutdown into a child (the command calls it once per run). */
dit_status dit_starpu_models_check(dit_error *err);

#endif
