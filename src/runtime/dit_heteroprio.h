/* heteroprio's set-up for --priorities op-class: the buckets of
 * codelets/dit_task_class.h, each kind of worker's order over them and the CPU
 * workers' slow factors. */
#ifndef DIT_HETEROPRIO_H
#define DIT_HETEROPRIO_H

#include "dit_task_class.h"

/* The CPU workers' slow factors for GEMM, ATTENTION and LIGHT. */
#define DIT_HETEROPRIO_SLOW_GEMM      4.0f
#define DIT_HETEROPRIO_SLOW_ATTENTION 4.0f
#define DIT_HETEROPRIO_SLOW_LIGHT     1.0f

/* heteroprio's init callback (starpu_conf.sched_policy_callback): the mapping above
 * for the kinds of worker StarPU started. */
void dit_heteroprio_init_sched(unsigned sched_ctx_id);

#endif
