/* What `ditstar generate` prints on stdout (not with --quiet): the model line before
 * the run starts, so that it comes before the progress, then the run's line and the
 * latents' line once it is done. */
#ifndef DIT_GEN_REPORT_H
#define DIT_GEN_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "dit_graph.h"
#include "dit_sampler.h"

/* Where the report goes: standard output, or standard error when an output file is
 * written there ("-"). */
FILE *dit_gen_report_file(const char *const *outputs, int n);

/* "model tiny (wan2.1-t2v): 4 blocks, dim 128, 480 tokens (latent 16x5x16x24)";
 * flushed, as progress goes to stderr. */
void dit_gen_report_model(FILE *f, const char *label, const dit_model_desc *d, const dit_hparams *c,
                          int nexperts, const dit_grid *gr);

typedef struct dit_gen_report {
	const dit_model_desc *d;
	int nexperts;
	const double *guide;     /* [2]: the CFG scale of each expert */
	const int *expert_steps; /* [2]: the steps each expert took */
	double embedded;         /* the embedded guidance scale (DIT_GUIDANCE_EMBEDDED) */
	const dit_sampler_plan *plan;
	int karras; /* Karras sigmas, not a shift */
	uint64_t seed;
	double seconds; /* submission to the end of the last task */
	int ncpus;
	const struct dit_runtime *rt; /* the workers it ran on (NULL: ncpus CPU workers) */
	const char *sched;
	const float *latents; /* [n] */
	int64_t n;
	const char *output; /* NULL: not written */
} dit_gen_report;

/* "3 unipc steps, guidance 5, shift 5, seed 42: 0.57 s (0.190 s/step) on 2 CPU workers,
 * scheduler dmda" and "latents mean -0.290372 std 2.121953, written to x". */
void dit_gen_report_run(FILE *f, const dit_gen_report *r);

#endif
