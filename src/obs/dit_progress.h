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

/* A stage before the first step (dit_stage.h): bar mode redraws "[#####.....] writing
 * the chunk store 12/40 chunks ETA 0:35" in place (bytes as GB) and ends the line when
 * done == total; lines mode prints the stage's first line ("writing the chunk store: 40
 * chunks") and its last ("writing the chunk store: done in 12 s"); started: when the
 * stage's first report came (elapsed_s since). Flushes f. */
void dit_progress_stage(FILE *f, dit_progress_mode mode, const char *stage, double done,
                        double total, const char *unit, double elapsed_s);

#endif
