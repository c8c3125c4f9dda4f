/* Progress of a run on stderr (see dit_progress.h). */
#include "dit_progress.h"

#include <math.h>
#include <string.h>

const char *dit_progress_eta(char *buf, size_t len, double s)
{
	if (!isfinite(s) || s < 0 || s > 1e8) {
		snprintf(buf, len, "?");
		return buf;
	}
	long t = lround(s);
	if (t >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
	return buf;
}

void dit_progress_step(FILE *f, dit_progress_mode mode, int step, int nsteps, int done,
                       double step_s, double elapsed_s)
{
	if (mode == DIT_PROGRESS_NONE || nsteps < 1)
		return;
	int left = nsteps - step - 1;
	char eta[32];
	dit_progress_eta(eta, sizeof eta, done > 0 ? elapsed_s / done * left : -1.0);
	if (mode == DIT_PROGRESS_LINES) {
		fprintf(f, "step %d/%d  %.2f s/step  ETA %s\n", step + 1, nsteps, step_s, eta);
	} else {
		enum { WIDTH = 30 };
		char bar[WIDTH + 1];
		int filled = (int)((long)WIDTH * (step + 1) / nsteps);
		for (int i = 0; i < WIDTH; i++)
			bar[i] = i < filled ? '#' : '.';
		bar[WIDTH] = '\0';
		/* the trailing spaces clear a longer line drawn before */
		fprintf(f, "\r[%s] step %d/%d  %.2f s/step  ETA %s    ", bar, step + 1, nsteps,
		        step_s, eta);
		if (left == 0)
			fputc('\n', f);
	}
	fflush(f);
}
