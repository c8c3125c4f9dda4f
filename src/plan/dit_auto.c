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

/* One choice: its inputs, the runtime and step price it prices with, and the best
 * candidate so far. */
typedef struct auto_search {
	dit_offload *off; /* each candidate planned here */
	const dit_plan_req *rq;
	const dit_offload_opts *in;
	const char *cache_dir;
	const dit_runtime_opts *rto;
	int device;
	dit_runtime *rt; /* NULL: StarPU not started */
	dit_step_price sp;
	int calibrated; /* sp prices every profiled task */
	dit_disk_rate disk;
	int64_t sizes[DIT_MAX_POOLS][MAX_SIZES]; /* the chunk sizes tried per pool */
	int nsizes[DIT_MAX_POOLS], ncombo;
	int have; /* best is set */
	double best_t;
	size_t best_b;
	dit_offload_opts best;
	dit_auto_report *rep;
} auto_search;

/* StarPU started when the profile was found (its models) or a device computes (its
 * memory), its model files checked the first time only. */
static dit_status runtime_start(auto_search *s, int found, int *models_checked, dit_error *err)
{
	if (!found && !s->device)
		return DIT_OK;
	dit_runtime_opts ro = *s->rto;
	ro.check_models = s->rto->check_models && !*models_checked;
	dit_status st = dit_runtime_init(&s->rt, &ro, err);
	if (st == DIT_OK)
		*models_checked = 1;
	return st;
}

/* The step priced from the profile found: s->calibrated when every profiled task has
 * a calibrated estimate, else why not in the report. */
static void step_price(auto_search *s, const dit_profile *prof, int found)
{
	dit_auto_report *rep = s->rep;
	if (!found) {
		snprintf(rep->why, sizeof rep->why,
		         "no step profile of these shapes, workers and tiles (run `ditstar "
		         "calibrate` with the same options)");
		return;
	}
	dit_error e = {0};
	if (dit_predict_price(&s->sp, prof, s->rt, s->rq, s->rto, &e) == DIT_OK)
		s->calibrated = dit_step_price_calibrated(&s->sp);
	else
		snprintf(rep->why, sizeof rep->why, "%s", e.msg);
	if (!s->calibrated && !rep->why[0])
		snprintf(rep->why, sizeof rep->why,
		         "%ld of the %ld profiled tasks have no calibrated estimate on %s",
		         s->sp.uncalibrated, s->sp.tasks, s->sp.arch);
}

/* The chunk sizes tried per pool of expert 0: every divisor of its blocks when the
 * step is priced, else chunks of one block; ncombo the combinations of them. */
static void sizes_list(auto_search *s)
{
	const dit_model *m = s->rq->w->expert[0];
	s->ncombo = 1;
	for (int p = 0; p < m->npools; p++) {
		s->nsizes[p] = s->calibrated ? divisors(m->pool[p].nblocks, s->sizes[p]) : 1;
		if (!s->calibrated)
			s->sizes[p][0] = 1;
		s->ncombo *= s->nsizes[p];
	}
}

/* The options of one candidate: mode, combination c of the chunk sizes, prefetch pf
 * (of npf depths tried; one: the run's), the disk slots its prefetch needs. */
static dit_offload_opts candidate_opts(const auto_search *s, dit_offload_mode mode, int c, int pf,
                                       int npf)
{
	const dit_model *m = s->rq->w->expert[0];
	dit_offload_opts o = *s->in;
	o.mode = mode;
	o.nchunk_named = 0;
	for (int p = 0, r = c; p < DIT_MAX_POOLS; p++) {
		o.chunk_size[p] = p < m->npools ? s->sizes[p][r % s->nsizes[p]] : 0;
		if (p < m->npools)
			r /= s->nsizes[p];
	}
	o.prefetch = npf > 1 ? pf : s->in->prefetch > 0 ? s->in->prefetch : 1;
	if (o.mode == DIT_OFFLOAD_DISK && o.disk_ram_slots < o.prefetch + 1)
		o.disk_ram_slots = o.prefetch + 1;
	return o;
}

/* Plans candidate o, and keeps it when the memory holds it and (priced) it is the best
 * so far: the least predicted s/step, within 1% of it the fewer bytes a step. Returns
 * 1 when the search is over (unpriced: the first candidate that fits). */
static int candidate_try(auto_search *s, const dit_offload_opts *o)
{
	dit_offload *off = s->off;
	dit_error e = {0};
	if (dit_plan_run(off, s->rq, o, s->cache_dir, s->rto, &e) != DIT_OK)
		return 0;
	if (off->fit_pending && s->rt)
		dit_fit_memory(off, dit_fit_node_memory(off, s->rt->compute_node),
		               off->o.prefetch + 1);
	if (!fits(off, s->in, s->rt))
		return 0;
	s->rep->candidates++;
	if (!s->calibrated) {
		s->best = *o;
		s->have = 1;
		return 1;
	}
	dit_prediction p;
	dit_predict_step(&s->sp, off, s->rt, &s->disk, &p);
	if (!p.available)
		return 0;
	size_t b = step_bytes(off, s->rq->npasses);
	int better = !s->have || p.step_s < s->best_t * 0.99 ||
	             (p.step_s <= s->best_t * 1.01 && b < s->best_b);
	if (better) {
		s->best = *o;
		s->best_t = p.step_s;
		s->best_b = b;
		s->rep->pred = p;
		s->have = 1;
	}
	return 0;
}

/* Every candidate in the order none, cpu (with a device), disk; per mode each
 * combination of chunk sizes, and prefetch 1 to 3 when priced. None fitting is an
 * error. */
static dit_status search(auto_search *s, dit_error *err)
{
	const dit_offload_mode modes[3] = {DIT_OFFLOAD_NONE, DIT_OFFLOAD_CPU, DIT_OFFLOAD_DISK};
	for (int mi = 0; mi < 3; mi++) {
		if (modes[mi] == DIT_OFFLOAD_CPU && !s->device)
			continue; /* the host computes where the chunks are: mode none */
		int npf = modes[mi] == DIT_OFFLOAD_NONE || !s->calibrated ? 1 : 3;
		for (int c = 0; c < s->ncombo; c++)
			for (int pf = 1; pf <= npf; pf++) {
				dit_offload_opts o = candidate_opts(s, modes[mi], c, pf, npf);
				if (candidate_try(s, &o))
					return DIT_OK;
			}
	}
	if (!s->have)
		return dit_error_set(
		    err, DIT_EUSAGE,
		    "--offload auto: no plan fits this run's memory (%d candidates "
		    "tried; see `ditstar plan` with --offload disk)",
		    s->ncombo * 3);
	return DIT_OK;
}

/* The best candidate planned again into s->off for the run, and said in the report. */
static dit_status best_take(auto_search *s, const char *key, dit_offload_opts *out, dit_error *err)
{
	dit_offload *off = s->off;
	dit_auto_report *rep = s->rep;
	*out = s->best;
	rep->calibrated = s->calibrated;
	dit_status st = dit_plan_run(off, s->rq, out, s->cache_dir, s->rto, err);
	if (st != DIT_OK)
		return st;
	if (off->fit_pending && s->rt) { /* for the summary; the run counts it again */
		dit_offload shown = *off;
		dit_fit_memory(&shown, dit_fit_node_memory(&shown, s->rt->compute_node),
		               shown.o.prefetch + 1);
		summarize(rep->summary, sizeof rep->summary, &shown, !s->calibrated);
	} else {
		summarize(rep->summary, sizeof rep->summary, off, !s->calibrated);
	}
	if (s->calibrated)
		dit_profile_path(rep->pred.profile, sizeof rep->pred.profile, key);
	return DIT_OK;
}

dit_status dit_auto_choose(dit_offload *off, const dit_plan_req *rq, const dit_offload_opts *in,
                           const char *cache_dir, const dit_runtime_opts *rto, int *models_checked,
                           dit_offload_opts *out, dit_auto_report *rep, dit_error *err)
{
	memset(rep, 0, sizeof *rep);
	dit_profile prof;
	char key[1024];
	int found = dit_predict_find(&prof, key, sizeof key, rq, off->act.chunk_rows, rto);
	auto_search s = {.off = off,
	                 .rq = rq,
	                 .in = in,
	                 .cache_dir = cache_dir,
	                 .rto = rto,
	                 .device = dit_plan_device(rto->workers),
	                 .rep = rep};
	dit_status st = runtime_start(&s, found, models_checked, err);
	if (st == DIT_OK) {
		step_price(&s, &prof, found);
		s.disk = dit_disk_rate_load();
		sizes_list(&s);
		st = search(&s, err);
	}
	if (st == DIT_OK)
		st = best_take(&s, key, out, err);
	dit_step_price_free(&s.sp);
	if (found)
		dit_profile_free(&prof);
	if (s.rt)
		dit_runtime_shutdown(s.rt);
	return st;
}
