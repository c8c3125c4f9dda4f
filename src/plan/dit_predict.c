/* The planner's time model: see dit_predict.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dit_io.h"
#include "dit_predict.h"
#include "dit_tiles.h"

#define PROFILE_MAGIC "ditstar-profile 1"

int64_t dit_predict_tile_rows(const dit_runtime_opts *rto, int accel, int64_t tokens)
{
	int64_t tile = rto->tile_tokens;
	if (tile < 0)
		tile = accel == DIT_WORKERS_CPU ? dit_tile_default(tokens) : 0;
	return tile;
}

void dit_perf_model_dir(char *buf, size_t len)
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

void dit_profile_key(char *buf, size_t len, const dit_plan_req *rq, int accel, int64_t tile_rows,
                     int64_t chunk_rows)
{
	const dit_weights *w = rq->w;
	const dit_model *m = w->expert[0];
	const dit_hparams *c = &m->cfg;
	const dit_grid *g = &rq->grid;
	int k = snprintf(buf, len,
	                 "%s dim=%lld ffn=%lld heads=%lld text=%lldx%lld in=%lld out=%lld "
	                 "grid=%lldx%lldx%lld passes=%d time_rows=%lld tiles=%lld accel=%d y=%d "
	                 "z=%d pooled=%d",
	                 w->desc->name, (long long)c->dim, (long long)c->ffn_dim,
	                 (long long)c->num_heads, (long long)c->text_len, (long long)c->text_dim,
	                 (long long)c->in_dim, (long long)c->out_dim, (long long)g->f,
	                 (long long)g->h, (long long)g->w, rq->npasses, (long long)rq->time_rows,
	                 (long long)tile_rows, accel, rq->concat, rq->first_frame, rq->pooled);
	for (int i = 0; i < m->npools && k > 0 && (size_t)k < len; i++)
		k += snprintf(buf + k, len - (size_t)k, " pool%d=%lldx%zu", i,
		              (long long)m->pool[i].nblocks, dit_pool_block_bytes(&m->pool[i]));
	for (int p = 0; p < rq->npasses && rq->text_valid && k > 0 && (size_t)k < len; p++)
		k += snprintf(buf + k, len - (size_t)k, " valid%d=%lld", p,
		              (long long)rq->text_valid[p]);
	if (chunk_rows > 0 && k > 0 && (size_t)k < len) /* token chunks: other tasks */
		snprintf(buf + k, len - (size_t)k, " chunks=%lld", (long long)chunk_rows);
}

static void ditstar_dir(char *buf, size_t len)
{
	char dir[4000];
	dit_perf_model_dir(dir, sizeof dir);
	snprintf(buf, len, "%s/ditstar", dir);
}

void dit_profile_path(char *buf, size_t len, const char *key)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (const unsigned char *s = (const unsigned char *)key; *s; s++)
		h = (h ^ *s) * 1099511628211ull;
	char dir[4050];
	ditstar_dir(dir, sizeof dir);
	snprintf(buf, len, "%s/profile-%016llx.txt", dir, (unsigned long long)h);
}

void dit_disk_rate_path(char *buf, size_t len)
{
	char dir[4050];
	ditstar_dir(dir, sizeof dir);
	snprintf(buf, len, "%s/disk-read.txt", dir);
}

/* Writes what fill prints into path through dit_io_atomic (a temporary file renamed),
 * making path's folder when missing. */
static dit_status write_atomic(const char *path, int (*fill)(FILE *, const void *), const void *arg,
                               dit_error *err)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	dit_status st = slash ? dit_io_mkdir_p(dir, err) : DIT_OK;
	char *text = NULL;
	size_t len = 0;
	FILE *f = st ? NULL : open_memstream(&text, &len);
	if (!st && !f)
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	if (f && (fill(f, arg) < 0 || fclose(f) != 0))
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	dit_io_atomic a;
	if (!st && (st = dit_io_atomic_open(&a, path, err)) == DIT_OK) {
		st = dit_io_atomic_write(&a, text, len, err);
		if (!st)
			st = dit_io_atomic_commit(&a, err);
		dit_io_atomic_abort(&a);
	}
	free(text);
	return st;
}

typedef struct profile_out {
	const dit_profile *p;
	const char *key;
} profile_out;

static int fill_profile(FILE *f, const void *arg)
{
	const profile_out *o = arg;
	if (fprintf(f, "%s\nkey %s\n", PROFILE_MAGIC, o->key) < 0)
		return -1;
	for (int i = 0; i < o->p->n; i++) {
		const dit_profile_entry *e = &o->p->e[i];
		if (fprintf(f, "%d %lld %08x %d %s\n", e->pool, (long long)e->block, e->footprint,
		            e->count, e->symbol) < 0)
			return -1;
	}
	return 0;
}

dit_status dit_profile_save(const dit_profile *p, const char *key, dit_error *err)
{
	if (p->failed)
		return dit_error_set(err, DIT_ENOMEM, "out of memory recording the step profile");
	char path[4096];
	dit_profile_path(path, sizeof path, key);
	profile_out o = {p, key};
	return write_atomic(path, fill_profile, &o, err);
}

int dit_profile_load(dit_profile *p, const char *key)
{
	char path[4096];
	dit_profile_path(path, sizeof path, key);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	dit_profile_init(p, -1);
	char line[8192];
	int ok =
	    fgets(line, sizeof line, f) && strncmp(line, PROFILE_MAGIC, strlen(PROFILE_MAGIC)) == 0;
	ok = ok && fgets(line, sizeof line, f) && strncmp(line, "key ", 4) == 0;
	if (ok) {
		line[strcspn(line, "\n")] = '\0';
		ok = strcmp(line + 4, key) == 0;
	}
	while (ok && fgets(line, sizeof line, f)) {
		int pool, count;
		long long block;
		unsigned fp;
		char sym[DIT_PROFILE_SYMBOL];
		if (sscanf(line, "%d %lld %x %d %63s", &pool, &block, &fp, &count, sym) != 5 ||
		    count < 1 || pool < -1 || pool >= DIT_MAX_POOLS || block < -2 ||
		    (pool >= 0) != (block >= 0) || block > (1 << 20)) {
			ok = 0;
			break;
		}
		dit_profile_add(p, pool, block, sym, fp, count);
	}
	fclose(f);
	if (!ok || p->failed || p->n == 0) {
		dit_profile_free(p);
		return 0;
	}
	return 1;
}

typedef struct disk_rates {
	dit_disk_rate r[DIT_DISK_SAMPLES];
	int n;
} disk_rates;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of the samples' bps (cpu 0) or cpu_bps (cpu 1) over those that have it. */
static double rates_median(const disk_rates *d, int cpu)
{
	double s[DIT_DISK_SAMPLES];
	int n = 0;
	for (int i = 0; i < d->n; i++) {
		double v = cpu ? d->r[i].cpu_bps : d->r[i].bps;
		if (v > 0)
			s[n++] = v;
	}
	qsort(s, (size_t)n, sizeof s[0], cmp_double);
	return n == 0 ? 0 : n % 2 == 1 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

static int fill_rate(FILE *f, const void *arg)
{
	const disk_rates *d = arg;
	int bad = fprintf(f, "read_bytes_per_second %.6g\nread_cpu_bytes_per_second %.6g\n",
	                  rates_median(d, 0), rates_median(d, 1)) < 0;
	for (int i = 0; i < d->n; i++)
		bad |= fprintf(f, "sample %.6g %.6g\n", d->r[i].bps, d->r[i].cpu_bps) < 0;
	return bad ? -1 : 0;
}

static int rate_ok(double r)
{
	return r > 0 && isfinite(r);
}

dit_status dit_disk_rate_save(const dit_disk_rate *rates, int n, dit_error *err)
{
	disk_rates d = {.n = 0};
	for (int i = n > DIT_DISK_SAMPLES ? n - DIT_DISK_SAMPLES : 0; i < n; i++)
		if (rate_ok(rates[i].bps)) {
			d.r[d.n] = rates[i];
			if (!rate_ok(d.r[d.n].cpu_bps))
				d.r[d.n].cpu_bps = 0;
			d.n++;
		}
	if (d.n == 0)
		return dit_error_set(err, DIT_EINVAL, "no read rate to save");
	char path[4096];
	dit_disk_rate_path(path, sizeof path);
	return write_atomic(path, fill_rate, &d, err);
}

/* The file's samples (an older file: its one rate as the sample, or samples without
 * a CPU rate); 0 when there is no file or its first line is not a rate. */
static int rates_read(disk_rates *d)
{
	char path[4096], line[128];
	dit_disk_rate_path(path, sizeof path);
	d->n = 0;
	FILE *f = fopen(path, "r");
	double r = 0;
	if (!f)
		return 0;
	if (!fgets(line, sizeof line, f) || sscanf(line, "read_bytes_per_second %lf", &r) != 1 ||
	    !rate_ok(r))
		r = 0;
	while (r > 0 && d->n < DIT_DISK_SAMPLES && fgets(line, sizeof line, f)) {
		double s, c = 0;
		int got = sscanf(line, "sample %lf %lf", &s, &c);
		if (got >= 1 && rate_ok(s))
			d->r[d->n++] = (dit_disk_rate){s, got == 2 && rate_ok(c) ? c : 0};
	}
	if (r > 0 && d->n == 0)
		d->r[d->n++] = (dit_disk_rate){r, 0};
	fclose(f);
	return r > 0;
}

dit_disk_rate dit_disk_rate_load(void)
{
	disk_rates d;
	dit_disk_rate r = {0, 0};
	if (rates_read(&d))
		r = (dit_disk_rate){rates_median(&d, 0), rates_median(&d, 1)};
	return r;
}

int dit_disk_rate_add(dit_disk_rate r)
{
	disk_rates d;
	if (!rate_ok(r.bps) || !rates_read(&d))
		return 0;
	if (d.n == DIT_DISK_SAMPLES) {
		memmove(d.r, d.r + 1, (size_t)(d.n - 1) * sizeof d.r[0]);
		d.n--;
	}
	d.r[d.n++] = r;
	dit_error err;
	return dit_disk_rate_save(d.r, d.n, &err) == DIT_OK;
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
	if (!dit_step_price_calibrated(sp)) {
		snprintf(out->why, sizeof out->why,
		         "%ld of the %ld profiled tasks have no calibrated estimate on %s",
		         sp->uncalibrated, sp->tasks, sp->arch);
		return;
	}
	if (off->o.mode == DIT_OFFLOAD_DISK && !(disk_bps > 0)) {
		snprintf(out->why, sizeof out->why,
		         "no read rate of the chunk store measured (ditstar calibrate --offload "
		         "disk measures it)");
		return;
	}
	const dit_model *m = off->expert[0];
	int npools = m->npools < sp->npools ? m->npools : sp->npools;
	int passes = off->o.pass_major ? sp->npasses : 1;
	/* the uses of a step in submission order */
	long nuse = 0;
	for (int p = 0; p < npools; p++)
		nuse += off->pool[p]->nchunks * passes;
	int streams = dit_offload_streams(off);
	/* a device holds resident chunks once brought; a host computes in place */
	int fetch_once = off->device || off->o.mode == DIT_OFFLOAD_DISK;
	long total = nuse * SIM_STEPS;
	double *cend = calloc((size_t)total, sizeof *cend);
	long *fuse = calloc((size_t)total, sizeof *fuse);
	if (!cend || !fuse) {
		free(cend);
		free(fuse);
		snprintf(out->why, sizeof out->why, "out of memory");
		return;
	}
	double now = 0, link = 0, step_end[SIM_STEPS] = {0}, compute = sp->pre + sp->post, busy = 0;
	long u = 0, nf = 0;
	int P = off->o.prefetch;
	for (int s = 0; s < SIM_STEPS; s++) {
		now += sp->pre;
		for (int pass = 0; pass < passes; pass++) {
			for (int p = 0; p < npools; p++) {
				const dit_pool *pl = off->pool[p];
				double ft_disk = fetch_seconds(off, p, rt, disk_bps, 0);
				double ft_ram =
				    off->device ? fetch_seconds(off, p, rt, disk_bps, 1) : 0;
				for (int64_t k = 0; k < pl->nchunks; k++, u++) {
					/* a chunk host RAM keeps is read from the store once */
					double ft = s > 0 && off->device &&
					                    off->o.mode == DIT_OFFLOAD_DISK &&
					                    dit_fit_in_ram(off, p, k)
					                ? ft_ram
					                : ft_disk;
					double c = 0;
					for (int64_t b = k * pl->chunk_size;
					     b < (k + 1) * pl->chunk_size && b < sp->nblocks[p];
					     b++)
						c += sp->block[p][b];
					c /= passes;
					if (s == 0)
						compute += c;
					int res =
					    dit_fit_is_resident(k, off->nresident[p], pl->nchunks);
					int fetch =
					    streams && !res ? 1 : fetch_once && s == 0 && pass == 0;
					double ready = 0;
					if (fetch && ft > 0) {
						double start = link;
						if (nf - P - 1 >= 0 &&
						    cend[fuse[nf - P - 1]] > start)
							start = cend[fuse[nf - P - 1]];
						fuse[nf++] = u;
						link = start + ft;
						busy += s == SIM_STEPS - 1 ? ft : 0;
						ready = link;
					}
					now = (ready > now ? ready : now) + c;
					cend[u] = now;
				}
			}
		}
		now += sp->post;
		step_end[s] = now;
	}
	free(cend);
	free(fuse);
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
