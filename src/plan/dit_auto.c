/* `--offload auto`: see dit_auto.h. */
#include <stdio.h>
#include <string.h>

#include "dit_auto.h"

#define MAX_SIZES 64 /* divisors of a pool's block count */

static int divisors(int64_t n, int64_t *d)
{
	int k = 0;
	for (int64_t i = 1; i <= n && k < MAX_SIZES; i++)
		if (n % i == 0)
			d[k++] = i;
	return k;
}

/* Bytes a step moves in off's plan (expert 0's pools). */
static size_t step_bytes(const dit_offload *off, int npasses)
{
	size_t n = 0;
	for (int p = 0; p < off->expert[0]->npools; p++)
		n += dit_fit_step_bytes(off, p, npasses, 0);
	return n;
}

/* Whether the memory holds off's plan beyond what the planner checks: host RAM holds
 * every chunk outside disk mode, and in mode none the device holds them too. */
static int fits(const dit_offload *off, const dit_offload_opts *in, const dit_runtime *rt)
{
	size_t all = dit_offload_global_bytes(off) + dit_offload_chunk_bytes(off);
	if (off->o.mode != DIT_OFFLOAD_DISK) {
		if (in->host_mem_limit)
			return 0;
		size_t avail = dit_fit_host_available();
		size_t host = all + (off->device ? 0 : off->activation_bytes);
		if (avail && host > dit_fit_budget_of(avail))
			return 0;
	}
	if (off->o.mode == DIT_OFFLOAD_NONE && off->device) {
		size_t budget = off->device_limit;
		if (!budget && rt)
			budget = dit_fit_budget_of(dit_fit_node_memory(off, rt->compute_node));
		if (budget && all + off->activation_bytes > budget)
			return 0;
	}
	return 1;
}

static void summarize(char *buf, size_t len, const dit_offload *off, int rule)
{
	int k = snprintf(buf, len, "--offload %s", dit_offload_mode_name(off->o.mode));
	const dit_model *m = off->expert[0];
	if (off->o.mode != DIT_OFFLOAD_NONE) {
		k += snprintf(buf + k, len - (size_t)k, " --offload-chunk-size ");
		for (int p = 0; p < m->npools; p++)
			k += snprintf(buf + k, len - (size_t)k, "%s%lld", p ? "," : "",
			              (long long)off->pool[p]->chunk_size);
		k += snprintf(buf + k, len - (size_t)k, " --prefetch %d", off->o.prefetch);
		if (off->o.mode == DIT_OFFLOAD_DISK)
			k += snprintf(buf + k, len - (size_t)k, " --disk-ram-slots %d",
			              off->o.disk_ram_slots);
		int64_t kept = 0, all = 0;
		for (int p = 0; p < off->npools; p++) {
			kept += off->nresident[p];
			all += off->pool[p]->nchunks;
		}
		k += snprintf(buf + k, len - (size_t)k, " (%lld of %lld chunks resident%s)",
		              (long long)kept, (long long)all,
		              off->fit_pending ? " before the device's memory is counted" : "");
	}
	if (rule && k > 0 && (size_t)k < len)
		snprintf(buf + k, len - (size_t)k, " by the uncalibrated rule");
}

dit_status dit_auto_choose(dit_offload *off, const dit_plan_req *rq, const dit_offload_opts *in,
                           const char *cache_dir, const dit_runtime_opts *rto, int *models_checked,
                           dit_offload_opts *out, dit_auto_report *rep, dit_error *err)
{
	memset(rep, 0, sizeof *rep);
	dit_profile prof;
	char key[1024];
	int found = dit_predict_find(&prof, key, sizeof key, rq, off->act.chunk_rows, rto);
	int device = dit_plan_device(rto->workers);
	dit_runtime *rt = NULL;
	dit_status st = DIT_OK;
	dit_step_price sp;
	memset(&sp, 0, sizeof sp);
	if (found || device) { /* the models, the device's memory */
		dit_runtime_opts ro = *rto;
		ro.check_models = rto->check_models && !*models_checked;
		if ((st = dit_runtime_init(&rt, &ro, err)) != DIT_OK)
			goto done;
		*models_checked = 1;
	}
	int calibrated = 0;
	if (found) {
		dit_error e = {0};
		if (dit_predict_price(&sp, &prof, rt, rq, rto, &e) == DIT_OK)
			calibrated = dit_step_price_calibrated(&sp);
		else
			snprintf(rep->why, sizeof rep->why, "%s", e.msg);
		if (!calibrated && !rep->why[0])
			snprintf(rep->why, sizeof rep->why,
			         "%ld of the %ld profiled tasks have no calibrated estimate on %s",
			         sp.uncalibrated, sp.tasks, sp.arch);
	} else {
		snprintf(rep->why, sizeof rep->why,
		         "no step profile of these shapes, workers and tiles (run `ditstar "
		         "calibrate` with the same options)");
	}
	dit_disk_rate disk = dit_disk_rate_load();

	const dit_model *m = rq->w->expert[0];
	int64_t sizes[DIT_MAX_POOLS][MAX_SIZES];
	int nsizes[DIT_MAX_POOLS] = {0}, ncombo = 1;
	for (int p = 0; p < m->npools; p++) {
		nsizes[p] = calibrated ? divisors(m->pool[p].nblocks, sizes[p]) : 1;
		if (!calibrated)
			sizes[p][0] = 1;
		ncombo *= nsizes[p];
	}
	dit_offload_mode modes[3] = {DIT_OFFLOAD_NONE, DIT_OFFLOAD_CPU, DIT_OFFLOAD_DISK};
	int have = 0;
	double best_t = 0;
	size_t best_b = 0;
	dit_offload_opts best;
	for (int mi = 0; mi < 3 && !(have && !calibrated); mi++) {
		if (modes[mi] == DIT_OFFLOAD_CPU && !device)
			continue; /* the host computes where the chunks are: mode none */
		int npf = modes[mi] == DIT_OFFLOAD_NONE || !calibrated ? 1 : 3;
		for (int c = 0; c < ncombo; c++) {
			for (int pf = 1; pf <= npf; pf++) {
				dit_offload_opts o = *in;
				o.mode = modes[mi];
				o.nchunk_named = 0;
				for (int p = 0, r = c; p < DIT_MAX_POOLS; p++) {
					o.chunk_size[p] =
					    p < m->npools ? sizes[p][r % nsizes[p]] : 0;
					if (p < m->npools)
						r /= nsizes[p];
				}
				o.prefetch = npf > 1 ? pf : in->prefetch > 0 ? in->prefetch : 1;
				if (o.mode == DIT_OFFLOAD_DISK && o.disk_ram_slots < o.prefetch + 1)
					o.disk_ram_slots = o.prefetch + 1;
				dit_error e = {0};
				if (dit_plan_run(off, rq, &o, cache_dir, rto, &e) != DIT_OK)
					continue;
				if (off->fit_pending && rt)
					dit_fit_memory(off,
					               dit_fit_node_memory(off, rt->compute_node),
					               off->o.prefetch + 1);
				if (!fits(off, in, rt))
					continue;
				rep->candidates++;
				if (!calibrated) {
					best = o;
					have = 1;
					break;
				}
				dit_prediction p;
				dit_predict_step(&sp, off, rt, &disk, &p);
				if (!p.available)
					continue;
				size_t b = step_bytes(off, rq->npasses);
				int better = !have || p.step_s < best_t * 0.99 ||
				             (p.step_s <= best_t * 1.01 && b < best_b);
				if (better) {
					best = o;
					best_t = p.step_s;
					best_b = b;
					rep->pred = p;
					have = 1;
				}
			}
			if (have && !calibrated)
				break;
		}
	}
	if (!have) {
		st = dit_error_set(err, DIT_EUSAGE,
		                   "--offload auto: no plan fits this run's memory (%d candidates "
		                   "tried; see `ditstar plan` with --offload disk)",
		                   ncombo * 3);
		goto done;
	}
	*out = best;
	rep->calibrated = calibrated;
	if ((st = dit_plan_run(off, rq, out, cache_dir, rto, err)) != DIT_OK)
		goto done;
	if (off->fit_pending && rt) { /* for the summary; the run counts it again */
		dit_offload shown = *off;
		dit_fit_memory(&shown, dit_fit_node_memory(&shown, rt->compute_node),
		               shown.o.prefetch + 1);
		summarize(rep->summary, sizeof rep->summary, &shown, !calibrated);
	} else {
		summarize(rep->summary, sizeof rep->summary, off, !calibrated);
	}
	if (calibrated)
		dit_profile_path(rep->pred.profile, sizeof rep->pred.profile, key);
done:
	dit_step_price_free(&sp);
	if (found)
		dit_profile_free(&prof);
	if (rt)
		dit_runtime_shutdown(rt);
	return st;
}
