/* The planner's time model: see dit_predict.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dit_predict.h"
#include "dit_tiles.h"

int64_t dit_predict_tile_rows(const dit_runtime_opts *rto, int accel, int64_t tokens)
{
	int64_t tile = rto->tile_tokens;
	if (tile < 0)
		tile = accel == DIT_WORKERS_CPU ? dit_tile_default(tokens) : 0;
	return tile;
}

/* ------------------------------------------------------------------ pricing */

typedef struct loaded_model {
	char symbol[DIT_PROFILE_SYMBOL];
	struct starpu_perfmodel m;
	int ok;
} loaded_model;

static loaded_model *model_for(loaded_model *lm, int *n, const char *symbol)
{
	for (int i = 0; i < *n; i++)
		if (strcmp(lm[i].symbol, symbol) == 0)
			return &lm[i];
	loaded_model *l = &lm[(*n)++];
	memset(l, 0, sizeof *l);
	snprintf(l->symbol, sizeof l->symbol, "%s", symbol);
	char path[4096];
	starpu_perfmodel_get_model_path(symbol, path, sizeof path);
	if (path[0] && access(path, R_OK) == 0) {
		l->m.type = STARPU_HISTORY_BASED;
		l->ok = starpu_perfmodel_load_symbol(symbol, &l->m) == 0;
		/* a missing estimate is a NaN here, not a call to calibrate */
		l->m.benchmarking = 1;
	}
	return l;
}

void dit_step_price_free(dit_step_price *sp)
{
	for (int i = 0; i < DIT_MAX_POOLS; i++)
		free(sp->block[i]);
	memset(sp, 0, sizeof *sp);
}

dit_status dit_step_price_make(dit_step_price *sp, const dit_profile *p, const dit_runtime *rt,
                               int npasses, int tiles, dit_error *err)
{
	memset(sp, 0, sizeof *sp);
	if (rt->workers == DIT_WORKERS_ALL)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "CPU and accelerator workers share the tasks: no one "
		                     "architecture to price them on");
	enum starpu_worker_archtype type = rt->accel == DIT_WORKERS_CUDA     ? STARPU_CUDA_WORKER
	                                   : rt->accel == DIT_WORKERS_OPENCL ? STARPU_OPENCL_WORKER
	                                                                     : STARPU_CPU_WORKER;
	int worker = starpu_worker_get_by_type(type, 0);
	if (worker < 0)
		return dit_error_set(err, DIT_ERUNTIME, "no compute worker to price the tasks on");
	struct starpu_perfmodel_arch *arch =
	    starpu_worker_get_perf_archtype(worker, STARPU_NMAX_SCHED_CTXS);
	starpu_perfmodel_get_arch_name(arch, sp->arch, sizeof sp->arch, 0);
	int width = type == STARPU_CPU_WORKER ? rt->ncpus : 1;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	sp->reads_share_cores = type == STARPU_CPU_WORKER && cores > 0 && rt->ncpus >= cores;
	int par = npasses * (tiles > 0 ? tiles : 1);
	sp->width = width < par ? width : par;
	if (sp->width < 1)
		sp->width = 1;
	sp->npasses = npasses;

	int64_t nb[DIT_MAX_POOLS] = {0};
	for (int i = 0; i < p->n; i++)
		if (p->e[i].pool >= 0 && p->e[i].block + 1 > nb[p->e[i].pool])
			nb[p->e[i].pool] = p->e[i].block + 1;
	for (int i = 0; i < DIT_MAX_POOLS; i++) {
		if (!nb[i])
			continue;
		sp->npools = i + 1;
		sp->nblocks[i] = nb[i];
		if (!(sp->block[i] = calloc((size_t)nb[i], sizeof(double)))) {
			dit_step_price_free(sp);
			return dit_error_set(err, DIT_ENOMEM, "out of memory pricing the profile");
		}
	}
	loaded_model *lm = calloc((size_t)p->n, sizeof *lm);
	if (!lm) {
		dit_step_price_free(sp);
		return dit_error_set(err, DIT_ENOMEM, "out of memory pricing the profile");
	}
	int nlm = 0;
	for (int i = 0; i < p->n; i++) {
		const dit_profile_entry *e = &p->e[i];
		if (strcmp(e->symbol, "dit_xfer") == 0) /* transfers: the links' part */
			continue;
		loaded_model *l = model_for(lm, &nlm, e->symbol);
		double us =
		    l->ok ? starpu_perfmodel_history_based_expected_perf(&l->m, arch, e->footprint)
		          : NAN;
		sp->tasks += e->count;
		if (!(us >= 0) || !isfinite(us)) {
			sp->uncalibrated += e->count;
			continue;
		}
		double s = us * 1e-6 * e->count / sp->width;
		if (e->pool >= 0)
			sp->block[e->pool][e->block] += s;
		else if (e->block == -1)
			sp->pre += s;
		else
			sp->post += s;
	}
	for (int i = 0; i < nlm; i++)
		if (lm[i].ok)
			starpu_perfmodel_unload_model(&lm[i].m);
	free(lm);
	return DIT_OK;
}

/* ------------------------------------------------------------------ the step */

#define SIM_STEPS 3

/* Seconds to bring one chunk of pool p to the compute node. */
static double fetch_seconds(const dit_offload *off, int p, const dit_runtime *rt, double disk_bps,
                            int from_ram)
{
	size_t bytes = dit_pool_chunk_bytes(off->pool[p]);
	double t = 0;
	if (from_ram) /* kept in host RAM: only the RAM -> device hop */
		;
	else if (off->o.mode == DIT_OFFLOAD_DISK && disk_bps > 0)
		t += (double)bytes / disk_bps;
	else if (off->o.mode == DIT_OFFLOAD_DISK && off->disk_node >= 0)
		t += starpu_transfer_predict((unsigned)off->disk_node, STARPU_MAIN_RAM, bytes) *
		     1e-6;
	if (off->device)
		t += starpu_transfer_predict(STARPU_MAIN_RAM, (unsigned)rt->compute_node, bytes) *
		     1e-6;
	return t;
}

/* The simulated steps: the clock, the link's, and per use of a chunk (in submission
 * order) when its compute ended and, per fetch, the use it fetched for. */
typedef struct step_sim {
	const dit_step_price *sp;
	const dit_offload *off;
	const dit_runtime *rt;
	double disk_bps;
	int passes;     /* passes over the chunks a step (1: chunk by chunk for every pass) */
	int streams;    /* dit_offload_streams */
	int fetch_once; /* a device holds resident chunks once brought; a host computes in
	                   place */
	double now, link;
	double compute; /* seconds of compute in a step */
	double busy;    /* seconds the link is busy in the last step */
	long u, nf;
	double *cend; /* [use] */
	long *fuse;   /* [fetch] */
} step_sim;

/* Compute seconds of chunk k of pool p, per pass. */
static double chunk_compute(const step_sim *m, int p, int64_t k)
{
	const dit_pool *pl = m->off->pool[p];
	double c = 0;
	for (int64_t b = k * pl->chunk_size; b < (k + 1) * pl->chunk_size && b < m->sp->nblocks[p];
	     b++)
		c += m->sp->block[p][b];
	c /= m->passes;
	return c;
}

/* One use of a chunk: when fetched (ft seconds on the link), the transfer starts once
 * the link is free and the use prefetch + 1 fetches back has been computed; the compute
 * (c seconds) once the chunk is there. */
static void chunk_use(step_sim *m, int fetch, double ft, double c, int last_step)
{
	int P = m->off->o.prefetch;
	double ready = 0;
	if (fetch && ft > 0) {
		double start = m->link;
		if (m->nf - P - 1 >= 0 && m->cend[m->fuse[m->nf - P - 1]] > start)
			start = m->cend[m->fuse[m->nf - P - 1]];
		m->fuse[m->nf++] = m->u;
		m->link = start + ft;
		m->busy += last_step ? ft : 0;
		ready = m->link;
	}
	m->now = (ready > m->now ? ready : m->now) + c;
	m->cend[m->u] = m->now;
	m->u++;
}

/* Pass pass of step s over the chunks of pool p. */
static void pool_pass(step_sim *m, int p, int s, int pass)
{
	const dit_offload *off = m->off;
	const dit_pool *pl = off->pool[p];
	double ft_disk = fetch_seconds(off, p, m->rt, m->disk_bps, 0);
	double ft_ram = off->device ? fetch_seconds(off, p, m->rt, m->disk_bps, 1) : 0;
	for (int64_t k = 0; k < pl->nchunks; k++) {
		/* a chunk host RAM keeps is read from the store once */
		double ft = s > 0 && off->device && off->o.mode == DIT_OFFLOAD_DISK &&
		                    dit_fit_in_ram(off, p, k)
		                ? ft_ram
		                : ft_disk;
		double c = chunk_compute(m, p, k);
		if (s == 0)
			m->compute += c;
		int res = dit_fit_is_resident(k, off->nresident[p], pl->nchunks);
		int fetch = m->streams && !res ? 1 : m->fetch_once && s == 0 && pass == 0;
		chunk_use(m, fetch, ft, c, s == SIM_STEPS - 1);
	}
}

/* Whether the step can be predicted: its tasks priced, and in disk mode the store's
 * read rate measured; else why not in out. */
static int predictable(const dit_step_price *sp, const dit_offload *off, double disk_bps,
                       dit_prediction *out)
{
	if (!dit_step_price_calibrated(sp)) {
		snprintf(out->why, sizeof out->why,
		         "%ld of the %ld profiled tasks have no calibrated estimate on %s",
		         sp->uncalibrated, sp->tasks, sp->arch);
		return 0;
	}
	if (off->o.mode == DIT_OFFLOAD_DISK && !(disk_bps > 0)) {
		snprintf(out->why, sizeof out->why,
		         "no read rate of the chunk store measured (ditstar calibrate --offload "
		         "disk measures it)");
		return 0;
	}
	return 1;
}

void dit_predict_step(const dit_step_price *sp, const dit_offload *off, const dit_runtime *rt,
                      const dit_disk_rate *disk, dit_prediction *out)
{
	double disk_bps = disk ? disk->bps : 0;
	memset(out, 0, sizeof *out);
	out->tasks = sp->tasks;
	out->uncalibrated = sp->uncalibrated;
	out->disk_bps = off->o.mode == DIT_OFFLOAD_DISK ? disk_bps : 0;
	out->disk_cpu_bps = off->o.mode == DIT_OFFLOAD_DISK && disk ? disk->cpu_bps : 0;
	out->disk_from = off->o.mode != DIT_OFFLOAD_DISK ? ""
	                 : disk_bps > 0                  ? "calibrated reads"
	                                                 : "no read rate measured";
	if (!predictable(sp, off, disk_bps, out))
		return;
	const dit_model *m = off->expert[0];
	int npools = m->npools < sp->npools ? m->npools : sp->npools;
	step_sim sim = {.sp = sp,
	                .off = off,
	                .rt = rt,
	                .disk_bps = disk_bps,
	                .passes = off->o.pass_major ? sp->npasses : 1,
	                .streams = dit_offload_streams(off),
	                .fetch_once = off->device || off->o.mode == DIT_OFFLOAD_DISK,
	                .compute = sp->pre + sp->post};
	/* the uses of a step in submission order */
	long nuse = 0;
	for (int p = 0; p < npools; p++)
		nuse += off->pool[p]->nchunks * sim.passes;
	long total = nuse * SIM_STEPS;
	sim.cend = calloc((size_t)total, sizeof *sim.cend);
	sim.fuse = calloc((size_t)total, sizeof *sim.fuse);
	if (!sim.cend || !sim.fuse) {
		free(sim.cend);
		free(sim.fuse);
		snprintf(out->why, sizeof out->why, "out of memory");
		return;
	}
	double step_end[SIM_STEPS] = {0};
	for (int s = 0; s < SIM_STEPS; s++) {
		sim.now += sp->pre;
		for (int pass = 0; pass < sim.passes; pass++)
			for (int p = 0; p < npools; p++)
				pool_pass(&sim, p, s, pass);
		sim.now += sp->post;
		step_end[s] = sim.now;
	}
	free(sim.cend);
	free(sim.fuse);
	double compute = sim.compute, busy = sim.busy;
	out->available = 1;
	out->step_s = step_end[SIM_STEPS - 1] - step_end[SIM_STEPS - 2];
	/* the reads' CPU time, taken from the workers on their cores: the bytes at the
	 * reading threads' CPU rate (the link's busy time when that was not measured) */
	double cpu = out->disk_cpu_bps > 0 ? busy * disk_bps / out->disk_cpu_bps : busy;
	if (sp->reads_share_cores && !off->device && off->o.mode == DIT_OFFLOAD_DISK &&
	    compute + cpu / sp->width > out->step_s)
		out->step_s = compute + cpu / sp->width;
	out->compute_s = compute;
	out->exposed_s = out->step_s > compute ? out->step_s - compute : 0;
	out->link_s = busy;
}

int dit_predict_find(dit_profile *p, char *key, size_t len, const dit_plan_req *rq,
                     int64_t chunk_rows, const dit_runtime_opts *rto)
{
	int accel = dit_workers_accel(rto->workers);
	dit_profile_key(key, len, rq, accel, dit_predict_tile_rows(rto, accel, rq->grid.tokens),
	                chunk_rows);
	return dit_profile_load(p, key);
}

int dit_step_price_calibrated(const dit_step_price *sp)
{
	return sp->tasks > 0 && sp->uncalibrated * 20 <= sp->tasks;
}

dit_status dit_predict_price(dit_step_price *sp, const dit_profile *p, const dit_runtime *rt,
                             const dit_plan_req *rq, const dit_runtime_opts *rto, dit_error *err)
{
	int64_t rows = dit_predict_tile_rows(rto, rt->accel, rq->grid.tokens);
	int tiles = rows > 0 ? dit_tile_count(rq->grid.tokens, rows) : 1;
	return dit_step_price_make(sp, p, rt, rq->npasses, tiles, err);
}

void dit_predict_plan(const dit_offload *off, const dit_plan_req *rq, const dit_runtime_opts *rto,
                      const dit_profile *p, const dit_runtime *rt, dit_prediction *out)
{
	dit_step_price sp;
	dit_error e = {0};
	memset(out, 0, sizeof *out);
	if (dit_predict_price(&sp, p, rt, rq, rto, &e) != DIT_OK) {
		snprintf(out->why, sizeof out->why, "%s", e.msg);
		return;
	}
	dit_disk_rate disk = dit_disk_rate_load();
	dit_predict_step(&sp, off, rt, &disk, out);
	dit_step_price_free(&sp);
}
