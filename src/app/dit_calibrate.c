/* `ditstar calibrate`: see dit_calibrate.h. */
#include "dit_calibrate.h"
#include "dit_predict.h"
#include "dit_run.h"

#include <stdlib.h>
#include <string.h>

/* the rounds whose chunk reads give the disk link's rate (their median) */
#define DIT_READ_ROUNDS 3

/* o for one round: nothing written, nothing printed, what it measures into rec. */
static dit_generate_opts round_opts(const dit_generate_opts *o, dit_run_record *rec)
{
	dit_generate_opts g = *o;
	g.output = NULL;
	g.stats_json = NULL;
	g.trace_dir = NULL;
	g.quiet = 1;
	g.progress = 0;
	memset(rec, 0, sizeof *rec);
	g.record = rec;
	return g;
}

dit_status dit_calibrate(const dit_generate_opts *o, int rounds, FILE *out, dit_error *err)
{
	long tasks = 0, uncal = 0;
	unsigned long long read_bytes = 0, read_ns = 0; /* every round's chunk reads */
	dit_run_record rec;
	dit_profile prof;
	for (int r = 1; r <= rounds; r++) {
		dit_generate_opts g = round_opts(o, &rec);
		g.rt.calibrate = 1;
		g.rt.check_models = o->rt.check_models && r == 1;
		if (r > 1)
			dit_profile_free(&prof);
		dit_profile_init(&prof, 1);
		rec.profile = &prof;
		dit_status st = dit_generate(&g, err);
		tasks = rec.model_tasks;
		uncal = rec.model_uncalibrated;
		read_bytes += rec.disk_read_bytes;
		read_ns += rec.disk_read_ns;
		if (st) {
			dit_profile_free(&prof);
			return st;
		}
		fprintf(out,
		        "calibrate: round %d: %ld of %ld compute tasks ran without an estimate\n",
		        r, uncal, tasks);
		fflush(out);
		if (tasks > 0 && uncal == 0)
			break;
	}
	char dir[4096], path[4096];
	dit_perf_model_dir(dir, sizeof dir);
	fprintf(out, "models: %s/codelets (one file per codelet), buses: %s/bus\n", dir, dir);
	/* the tasks of a step, for the planner's time model */
	dit_status st = dit_profile_save(&prof, rec.profile_key, err);
	dit_profile_free(&prof);
	if (st)
		return st;
	dit_profile_path(path, sizeof path, rec.profile_key);
	fprintf(out, "step profile: %s\n", path);
	if (rec.store[0]) {
		/* disk mode: DIT_READ_ROUNDS more rounds as a run goes (StarPU not
		 * calibrating), whose chunk reads after the first step (beside the workers,
		 * checksums included) give the disk link's rate: their median, as one round's
		 * figure moves by 20-40% on a shared VM; the rounds replace the samples of
		 * earlier runs (dit_predict.h) */
		dit_disk_rate rates[DIT_READ_ROUNDS];
		int n = 0;
		for (int r = 0; r < DIT_READ_ROUNDS; r++) {
			dit_generate_opts g = round_opts(o, &rec);
			g.rt.check_models = 0;
			if ((st = dit_generate(&g, err)) != DIT_OK)
				return st;
			if (rec.disk_read_bytes && rec.disk_read_ns)
				rates[n++] = dit_disk_rate_of(rec.disk_read_bytes, rec.disk_read_ns,
				                              rec.disk_read_cpu_ns);
		}
		if (n > 0) {
			if ((st = dit_disk_rate_save(rates, n, err)) != DIT_OK)
				return st;
			dit_disk_rate med = dit_disk_rate_load();
			double lo = rates[0].bps, hi = rates[0].bps;
			for (int i = 1; i < n; i++) {
				lo = rates[i].bps < lo ? rates[i].bps : lo;
				hi = rates[i].bps > hi ? rates[i].bps : hi;
			}
			dit_disk_rate_path(path, sizeof path);
			fprintf(out,
			        "chunk store reads: %.0f MB/s in a run, checksums included (median "
			        "of %d rounds, %.0f-%.0f; %.0f MB/s during the calibration "
			        "rounds), %.0f MB per CPU second of the reading threads, in %s\n",
			        med.bps / 1e6, n, lo / 1e6, hi / 1e6,
			        read_ns ? (double)read_bytes / ((double)read_ns * 1e-9) / 1e6 : 0.0,
			        med.cpu_bps / 1e6, path);
		}
	}
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
