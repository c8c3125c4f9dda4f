/* What StarPU reads from the outside world, checked before it reads it: StarPU
 * asserts (and aborts the process with a backtrace) on a negative worker count, a
 * non-numeric calibration flag, a STARPU_HOME that is not a directory, or a truncated
 * performance-model file. These checks turn each into a one-line error naming the
 * variable or the file. */
#ifndef DIT_STARPU_ENV_H
#define DIT_STARPU_ENV_H

#include "dit_error.h"

/* The StarPU variables that are set: the numeric ones ditstar knows the range of, every
 * one StarPU reads as a number (dit_starpu_vars.h: an integer >= 0, or a float), the
 * lists of worker ids; and STARPU_HOME (a directory, or absent). One line naming the
 * variable; no StarPU call. */
dit_status dit_starpu_env_check(dit_error *err);

/* The program that parses the models for dit_starpu_models_check (installed in
 * $(pkglibexecdir); src/cli/ditstar_models_check.c). */
#define DIT_MODELS_CHECK "ditstar-models-check"

/* The performance models of ditstar's codelets under the current STARPU_HOME (or
 * STARPU_PERF_MODEL_DIR), each parsed by StarPU in a separate process, so that a
 * corrupt one is reported (with the command that resets it) instead of aborting this
 * process. That process is DIT_MODELS_CHECK started with posix_spawn (never a fork
 * of this process, which may hold other threads' locks), with a time limit, its
 * signals unblocked and at their defaults; found in $DITSTAR_LIBEXECDIR, beside the
 * running program, or in the installed libexec folder; when none is found the check
 * is skipped (StarPU reads the models itself). A check that cannot start or runs past
 * its limit is an error. ditstar-sim checks the simulated host's platform file
 * instead. */
dit_status dit_starpu_models_check(dit_error *err);

/* The same with the helper's path (NULL: looked up as above) and the time limit in
 * seconds given. */
dit_status dit_starpu_models_check_with(const char *helper, double limit_s, dit_error *err);

#endif
