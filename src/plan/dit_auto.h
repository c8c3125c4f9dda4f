/* `--offload auto`: the plan a run uses, chosen before it starts. Candidates: the modes
 * the memory allows (none when the compute node and host RAM hold the whole model; cpu
 * with an accelerator when host RAM holds it; disk), every chunk size dividing each
 * pool (each pair for two pools), prefetch depths 1 to 3, keep what fits (or the
 * run's --resident-chunks). Each is planned as the run would plan it and priced by
 * the time model (dit_predict.h); the least predicted s/step wins, a plan within 1%
 * of it that moves fewer bytes a step winning over it. Without a calibrated profile
 * for the run's shapes the rule is: the first mode the memory allows in the order
 * none, cpu, disk, chunks of one block, prefetch 1, keep what fits (said so). */
#ifndef DIT_AUTO_H
#define DIT_AUTO_H

#include "dit_predict.h"

typedef struct dit_auto_report {
	int calibrated;      /* chosen from predictions (else the rule) */
	int candidates;      /* plans the memory allowed */
	dit_prediction pred; /* the chosen plan's (calibrated) */
	char why[600];       /* uncalibrated: why */
	char summary[512];   /* the chosen plan as options */
} dit_auto_report;

/* Chooses *out from in (mode DIT_OFFLOAD_AUTO; its other fields are kept where the
 * choice does not set them). Leaves off planned for *out. StarPU runs for a while when
 * a profile is found or a device computes (its memory): once its model files were
 * checked, *models_checked is set and later starts skip the check. */
dit_status dit_auto_choose(dit_offload *off, const dit_plan_req *rq, const dit_offload_opts *in,
                           const char *cache_dir, const dit_runtime_opts *rto, int *models_checked,
                           dit_offload_opts *out, dit_auto_report *rep, dit_error *err);

#endif
