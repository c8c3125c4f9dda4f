/* Execution traces of a run (--trace DIR): StarPU's FxT trace, converted after the
 * run to Paje (DIR/paje.trace, for ViTE and StarVZ) and to a Chrome/Perfetto JSON file
 * (DIR/trace.json: one row per worker and per link, tasks and transfers as slices). */
#ifndef DIT_TRACE_H
#define DIT_TRACE_H

#include "dit_error.h"
#include "dit_runtime.h"

/* Before the runtime starts: creates dir and fills env (DIT_TRACE_ENV entries, for
 * dit_runtime_opts.env) with what asks StarPU to record the run there. dir must
 * outlive the run. */
#define DIT_TRACE_ENV 4
dit_status dit_trace_begin(const char *dir, dit_env_var env[DIT_TRACE_ENV], dit_error *err);

/* A window of the run (--trace-steps): StarPU records nothing but its bookkeeping from
 * dit_trace_pause to dit_trace_resume (any thread, StarPU running). */
void dit_trace_pause(void);
void dit_trace_resume(void);

/* "A:B" or "A" (steps from 1, A <= B <= nsteps) into the 0-based first and last step;
 * DIT_EUSAGE naming --trace-steps otherwise. */
dit_status dit_trace_steps_parse(const char *spec, int nsteps, int window[2], dit_error *err);

/* After the runtime has shut down: converts what was recorded into dir. */
dit_status dit_trace_end(const char *dir, dit_error *err);

/* Writes dir/trace.json from dir/tasks.rec and dir/paje.trace (the last step of
 * dit_trace_end). Records that do not parse are skipped. */
dit_status dit_trace_write_json(const char *dir, dit_error *err);

#endif
