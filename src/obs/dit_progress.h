/* Progress of a run on stderr: a bar redrawn in place on a terminal, one line per
 * step elsewhere (logs, CI), each with the step's seconds and the time left. */
#ifndef DIT_PROGRESS_H
#define DIT_PROGRESS_H

#include <stdio.h>

typedef enum dit_progress_mode {
	DIT_PROGRESS_NONE = 0,
	DIT_PROGRESS_BAR,   /* "\r[#####.....] step 3/10  1.20 s/step  ETA 0:08" */
	DIT_PROGRESS_LINES, /* "step 3/10  1.20 s/step  ETA 0:08" and a newline */
} dit_progress_mode;

/* Formats seconds as "M:SS", or "H:MM:SS" from an hour on, into buf; "?" when s is
 * negative or not finite. Returns buf. */
const char *dit_progress_eta(char *buf, size_t len, double s);

/* Reports that step (0-based) of nsteps has finished: it took step_s seconds, and the
 * done steps this run (resumed runs skip the first ones) took elapsed_s, which gives
 * the time left. Writes to f in the mode's form and flushes it. */
void dit_progress_step(FILE *f, dit_progress_mode mode, int step, int nsteps, int done,
                       double step_s, double elapsed_s);

#endif
