/* `ditstar plan` and `generate --dry-run` (src/app/dit_plan.c): the offload plan of a run as
 * the run would decide it (memory of each node, resident and streamed chunks, bytes a
 * step on each link), printed as text or JSON; no tensor data is read and no task runs
 * (StarPU starts only to count a device's memory when no limit is given). */
#ifndef DIT_PLAN_H
#define DIT_PLAN_H

#include <stdio.h>

#include "dit_session.h"

dit_status dit_plan_report(dit_session *s, const dit_session_graph *sg,
                           const dit_offload_opts *offload, const char *cache_dir,
                           const dit_runtime_opts *rto, int json, FILE *out, dit_error *err);

#endif
