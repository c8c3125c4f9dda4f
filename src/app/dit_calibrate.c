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

/* What the calibration rounds saw: the last round's compute tasks and those without an
 * estimate, and every round's chunk reads. */
typedef struct cal_rounds {
	long tasks, uncal;
	unsigned long long read_bytes, read_ns;
} cal_rounds;

/* Up to rounds runs with StarPU calibrating, each printed, until one runs no compute
 * task without an estimate; the last one's step profile in *prof and record in *rec. */
static dit_status rounds_run(const dit_generate_opts *o, int rounds, FILE *out, dit_run_record *rec,
                             dit_profile *prof, cal_rounds *cr, dit_error *err)
{
	for (int r = 1; r <= rounds; r++) {
		dit_generate_opts g = round_opts(o, rec);
		g.rt.calibrate = 1;
		g.rt.check_models = o->rt.check_models && r == 1;
		if (r > 1)
			dit_profile_free(prof);
		dit_profile_init(prof, 1);
		rec->profile = prof;
		dit_status st = dit_generate(&g, err);
		cr->tasks = rec->model_tasks;
		cr->uncal = rec->model_uncalibrated;
		cr->read_bytes += rec->disk_read_bytes;
		cr->read_ns += rec->disk_read_ns;
		if (st) {
			dit_profile_free(prof);
			return st;
		}
		fprintf(out,
		        "calibrate: round %d: %ld of %ld compute tasks ran without an estimate\n",
		        r, cr->uncal, cr->tasks);
		fflush(out);
		if (cr->tasks > 0 && cr->uncal == 0)
			break;
	}
	return DIT_OK;
}

/* Disk mode: DIT_READ_ROUNDS more rounds as a run goes (StarPU not calibrating),
 * whose chunk reads after the first step (beside the workers, checksums included) give
 * the disk link's rate: their median, as one round's figure moves by 20-40% on a
 * shared VM; the rounds replace the samples of earlier runs (dit_predict.h). */
static dit_status read_rounds_run(const dit_generate_opts *o, dit_run_record *rec,
                                  const cal_rounds *cr, FILE *out, dit_error *err)
{
	dit_disk_rate rates[DIT_READ_ROUNDS];
	int n = 0;
	dit_status st;
	for (int r = 0; r < DIT_READ_ROUNDS; r++) {
		dit_generate_opts g = round_opts(o, rec);
		g.rt.check_models = 0;
		if ((st = dit_generate(&g, err)) != DIT_OK)
			return st;
		if (rec->disk_read_bytes && rec->disk_read_ns)
			rates[n++] = dit_disk_rate_of(rec->disk_read_bytes, rec->disk_read_ns,
			                              rec->disk_read_cpu_ns);
	}
	if (n == 0)
		return DIT_OK;
	if ((st = dit_disk_rate_save(rates, n, err)) != DIT_OK)
		return st;
	dit_disk_rate med = dit_disk_rate_load();
	double lo = rates[0].bps, hi = rates[0].bps;
	for (int i = 1; i < n; i++) {
		lo = rates[i].bps < lo ? rates[i].bps : lo;
		hi = rates[i].bps > hi ? rates[i].bps : hi;
	}
	char path[4096];
	dit_disk_rate_path(path, sizeof path);
	fprintf(out,
	        "chunk store reads: %.0f MB/s in a run, checksums included (median "
	        "of %d rounds, %.0f-%.0f; %.0f MB/s during the calibration "
	        "rounds), %.0f MB per CPU second of the reading threads, in %s\n",
	        med.bps / 1e6, n, lo / 1e6, hi / 1e6,
	        cr->read_ns ? (double)cr->read_bytes / ((double)cr->read_ns * 1e-9) / 1e6 : 0.0,
	        med.cpu_bps / 1e6, path);
	return DIT_OK;
}

dit_status dit_calibrate(const dit_generate_opts *o, int rounds, FILE *out, dit_error *err)
{
	cal_rounds cr = {0};
	dit_run_record rec;
	dit_profile prof;
	dit_status st = rounds_run(o, rounds, out, &rec, &prof, &cr, err);
	if (st)
		return st;
	char dir[4096], path[4096];
	dit_perf_model_dir(dir, sizeof dir);
	fprintf(out, "models: %s/codelets (one file per codelet), buses: %s/bus\n", dir, dir);
	/* the tasks of a step, for the planner's time model */
	st = dit_profile_save(&prof, rec.profile_key, err);
	dit_profile_free(&prof);
	if (st)
		return st;
	dit_profile_path(path, sizeof path, rec.profile_key);
	fprintf(out, "step profile: %s\n", path);
	if (rec.store[0] && (st = read_rounds_run(o, &rec, &cr, out, err)) != DIT_OK)
		return st;
	if (cr.tasks == 0 || cr.uncal * 20 > cr.tasks)
		return dit_error_set(err, DIT_ERUNTIME,
		                     "calibrate: after %d rounds %ld of %ld tasks still had no "
		                     "estimate; give more --rounds or --steps",
		                     rounds, cr.uncal, cr.tasks);
	if (cr.uncal > 0)
		fprintf(out,
		        "calibrated but %ld of %ld tasks (those a run has once, such as the text "
		        "embedding: StarPU keeps about one of their measures a run) have no "
		        "estimate yet; each run adds one\n",
		        cr.uncal, cr.tasks);
	else
		fprintf(out, "calibrated: every compute task of this run has an estimate\n");
	return DIT_OK;
}
