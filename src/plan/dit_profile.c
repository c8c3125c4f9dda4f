/* The time model's files (see dit_predict.h): the step profiles `ditstar calibrate`
 * records, and the chunk store's read rates, under ditstar/ in StarPU's model folder. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_io.h"
#include "dit_predict.h"

#define PROFILE_MAGIC "ditstar-profile 1"
/* The largest profile or rate file read (they are a few KiB): larger is not ours. */
#define DIT_CACHE_FILE_MAX (64u << 20)

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
	FILE *f = dit_io_fopen_cache(path, DIT_CACHE_FILE_MAX);
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
	FILE *f = dit_io_fopen_cache(path, DIT_CACHE_FILE_MAX);
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
