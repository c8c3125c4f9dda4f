/* `ditstar calibrate`: see dit_calibrate.h. */
#include "dit_calibrate.h"

#include <stdlib.h>
#include <string.h>

void dit_calibrate_model_dir(char *buf, size_t len)
{
	const char *dir = getenv("STARPU_PERF_MODEL_DIR");
	if (dir && *dir) {
		snprintf(buf, len, "%s", dir);
		return;
	}
	const char *home = getenv("STARPU_HOME");
	if (!home || !*home)
		home = getenv("HOME");
	snprintf(buf, len, "%s/.starpu/sampling", home ? home : ".");
}

dit_status dit_calibrate(const dit_generate_opts *o, int rounds, FILE *out, dit_error *err)
{
	long tasks = 0, uncal = 0;
	for (int r = 1; r <= rounds; r++) {
		dit_generate_opts g = *o;
		g.rt.calibrate = 1;
		g.rt.check_models = o->rt.check_models && r == 1;
		g.output = NULL;
		g.stats_json = NULL;
		g.trace_dir = NULL;
		g.quiet = 1;
		g.progress = 0;
		g.model_tasks = &tasks;
		g.model_uncalibrated = &uncal;
		tasks = uncal = 0;
		dit_status st = dit_generate(&g, err);
		if (st)
			return st;
		fprintf(out,
		        "calibrate: round %d: %ld of %ld compute tasks ran without an estimate\n",
		        r, uncal, tasks);
		fflush(out);
		if (tasks > 0 && uncal == 0)
			break;
	}
	char dir[4096];
	dit_calibrate_model_dir(dir, sizeof dir);
	fprintf(out, "models: %s/codelets (one file per codelet), buses: %s/bus\n", dir, dir);
	if (tasks == 0 || uncal * 20 > tasks)
		return dit_error_set(err, DIT_ERUNTIME,
		                     "calibrate: after %d rounds %ld of %ld tasks still had no "
		                     "estimate; give more --rounds or --steps",
		                     rounds, uncal, tasks);
	if (uncal > 0)
		fprintf(out,
		        "calibrated but %ld of %ld tasks (those a run has once, such as the text "
		        "embedding: StarPU keeps about one of their measures a run) have no "
		        "estimate yet; each run adds one\n",
		        uncal, tasks);
	else
		fprintf(out, "calibrated: every compute task of this run has an estimate\n");
	return DIT_OK;
}
