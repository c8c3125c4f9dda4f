/* Progress of a long stage before a run's first step (the chunk store written, the
 * checkpoint hashed): the layer doing it calls fn with how far it is; the caller decides
 * how to show it (src/obs/dit_progress.h). Dependency-free, for every layer. */
#ifndef DIT_STAGE_H
#define DIT_STAGE_H

typedef struct dit_stage_progress {
	/* stage: what is done ("writing the chunk store"); done of total units ("chunks",
	 * "bytes"), done == total once when it ends */
	void (*fn)(void *arg, const char *stage, double done, double total, const char *unit);
	void *arg;
} dit_stage_progress;

static inline void dit_stage_report(const dit_stage_progress *p, const char *stage, double done,
                                    double total, const char *unit)
{
	if (p && p->fn)
		p->fn(p->arg, stage, done, total, unit);
}

#endif
