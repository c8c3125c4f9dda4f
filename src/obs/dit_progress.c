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

/* done or total in the unit's words: "12/40 chunks", "3.2/28.0 GB" */
static void stage_amount(char *buf, size_t len, double done, double total, const char *unit)
{
	if (unit && strcmp(unit, "bytes") == 0)
		snprintf(buf, len, "%.1f/%.1f GB", done / 1e9, total / 1e9);
	else
		snprintf(buf, len, "%.0f/%.0f %s", done, total, unit ? unit : "");
}

void dit_progress_stage(FILE *f, dit_progress_mode mode, const char *stage, double done,
                        double total, const char *unit, double elapsed_s)
{
	char amount[64], eta[32];
	int end = done >= total;
	if (mode == DIT_PROGRESS_LINES) {
		if (done <= 0 && !end) {
			stage_amount(amount, sizeof amount, total, total, unit);
			fprintf(f, "%s: %s\n", stage, strchr(amount, '/') + 1);
		} else if (end) {
			fprintf(f, "%s: done in %s\n", stage,
			        dit_progress_eta(eta, sizeof eta, elapsed_s));
		}
	} else if (mode == DIT_PROGRESS_BAR) {
		int w = 20, k = total > 0 ? (int)(w * done / total) : w;
		char bar[32];
		for (int i = 0; i < w; i++)
			bar[i] = i < k ? '#' : '.';
		bar[w] = '\0';
		stage_amount(amount, sizeof amount, done, total, unit);
		double left = done > 0 ? elapsed_s * (total - done) / done : -1;
		fprintf(f, "\r[%s] %s %s  %s %s\033[K%s", bar, stage, amount, end ? "in" : "ETA",
		        dit_progress_eta(eta, sizeof eta, end ? elapsed_s : left), end ? "\n" : "");
	}
	fflush(f);
}
