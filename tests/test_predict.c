/* The planner's time model (src/plan/dit_predict.c) on hand-made plans whose steady step is
 * worked out by hand: a chunk use computes for C seconds once its chunk is there, one
 * transfer at a time takes T seconds, fetch j starts once the use of fetch j - prefetch
 * - 1 was computed. And the step profile's file: saved, read back as saved, refused
 * when a line is damaged or the key differs. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIT_TEST_MAX 64
#define DIT_LINE_MAX 160
#include "dit_predict.h"
#include "dit_tap.h"

/* nftw's callback removing each entry, the folders after their contents */
static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

#define NB           4
#define CHUNK_FLOATS 250 /* 1000 bytes */

typedef struct plan {
	dit_offload off;
	dit_pool pool;
	dit_model model;
	dit_step_price sp;
	double block[NB];
} plan;

/* 4 chunks of one block, each block computing c seconds, moved at bps bytes/s from
 * the disk node of the host (mode disk), r of them resident. */
static void make(plan *p, double c, int prefetch, int64_t r)
{
	memset(p, 0, sizeof *p);
	p->pool.nblocks = NB;
	p->pool.chunk_size = 1;
	p->pool.nchunks = NB;
	p->pool.block_stride = CHUNK_FLOATS;
	p->model.npools = 1;
	p->off.pool[0] = &p->pool;
	p->off.npools = 1;
	p->off.expert[0] = &p->model;
	p->off.nexperts = 1;
	p->off.o.mode = DIT_OFFLOAD_DISK;
	p->off.o.prefetch = prefetch;
	p->off.nresident[0] = r;
	for (int i = 0; i < NB; i++)
		p->block[i] = c;
	p->sp.block[0] = p->block;
	p->sp.nblocks[0] = NB;
	p->sp.npools = 1;
	p->sp.npasses = 1;
	p->sp.tasks = 100;
	p->sp.width = 1;
}

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (1 + fabs(b));
}

/* t: seconds to read a chunk; cpu: CPU seconds the read takes (0: not measured) */
static void step_cpu(dit_tap *tap, const char *what, plan *p, double t, double cpu,
                     double want_step, double want_exposed)
{
	dit_prediction pr;
	dit_disk_rate r = {CHUNK_FLOATS * 4 / t, cpu > 0 ? CHUNK_FLOATS * 4 / cpu : 0};
	dit_predict_step(&p->sp, &p->off, NULL, &r, &pr);
	dit_tap_add(tap,
	            pr.available && near(pr.step_s, want_step) && near(pr.exposed_s, want_exposed),
	            what, 0, 0);
	if (!pr.available || !near(pr.step_s, want_step))
		printf("# %s: step %.6f (want %.6f), exposed %.6f (want %.6f) %s\n", what,
		       pr.step_s, want_step, pr.exposed_s, want_exposed, pr.why);
}

static void step(dit_tap *tap, const char *what, plan *p, double t, double want_step,
                 double want_exposed)
{
	step_cpu(tap, what, p, t, 0, want_step, want_exposed);
}

static void model(dit_tap *tap)
{
	plan p;
	make(&p, 1.0, 1, 0);
	step(tap, "transfer bound (T 3, C 1, prefetch 1): the link never idles, 4 T", &p, 3.0, 12.0,
	     8.0);
	make(&p, 1.0, 1, 0);
	p.sp.pre = 0.5, p.sp.post = 0.5;
	step(tap, "transfer bound with 1 s outside the blocks: still 4 T", &p, 3.0, 12.0, 7.0);
	make(&p, 1.0, 1, 0);
	step(tap, "compute bound (T 0.5, C 1, prefetch 1): 4 C, nothing exposed", &p, 0.5, 4.0,
	     0.0);
	make(&p, 1.0, 0, 0);
	step(tap, "prefetch 0 (T 0.5, C 1): each fetch after the compute before it, 4 (T + C)", &p,
	     0.5, 6.0, 2.0);
	make(&p, 1.0, 1, 2);
	step(tap, "2 of 4 resident (T 3, C 1): two transfers a step, 2 T", &p, 3.0, 6.0, 2.0);
	make(&p, 1.0, 1, 4);
	step(tap, "all resident: brought once, then 4 C", &p, 3.0, 4.0, 0.0);
	make(&p, 1.0, 1, 0);
	p.sp.width = 2, p.sp.reads_share_cores = 1;
	step(tap, "compute bound, reads on the workers' 2 cores: 4 C + link busy 4 T / 2", &p, 0.5,
	     5.0, 1.0);
	make(&p, 1.0, 1, 0);
	p.sp.width = 2, p.sp.reads_share_cores = 1;
	step_cpu(
	    tap,
	    "compute bound, reads on the workers' 2 cores, CPU 0.25 a read: 4 C + 4 x 0.25 / 2", &p,
	    0.5, 0.25, 4.5, 0.5);
	make(&p, 1.0, 1, 0);
	step_cpu(tap, "compute bound, reads on cores of their own: their CPU time costs nothing",
	         &p, 0.5, 0.25, 4.0, 0.0);
	make(&p, 1.0, 1, 0);
	p.sp.width = 2, p.sp.reads_share_cores = 1;
	step(tap, "transfer bound, reads on the workers' cores: the link still bounds, 4 T", &p,
	     3.0, 12.0, 8.0);
	make(&p, 1.0, 1, 0);
	p.off.o.mode = DIT_OFFLOAD_NONE; /* the host computes where the chunks are */
	step(tap, "mode none on the host: nothing moves", &p, 3.0, 4.0, 0.0);

	dit_prediction pr;
	make(&p, 1.0, 1, 0);
	p.sp.uncalibrated = 6;
	dit_disk_rate r1000 = {1000, 0}, none = {0, 0};
	dit_predict_step(&p.sp, &p.off, NULL, &r1000, &pr);
	dit_tap_add(tap, !pr.available && strstr(pr.why, "no calibrated estimate"),
	            "6 of 100 tasks without an estimate: no prediction, said why", 0, 0);
	make(&p, 1.0, 1, 0);
	dit_predict_step(&p.sp, &p.off, NULL, &none, &pr);
	dit_tap_add(tap, !pr.available && strstr(pr.why, "calibrate --offload disk"),
	            "disk mode without a measured read rate: no prediction, said why", 0, 0);
}

static void profile_file(dit_tap *tap)
{
	char home[] = "/tmp/ditstar-predict-XXXXXX";
	if (!mkdtemp(home)) {
		dit_tap_add(tap, 0, "a temporary STARPU_HOME", 0, 0);
		return;
	}
	setenv("STARPU_HOME", home, 1);
	unsetenv("STARPU_PERF_MODEL_DIR");
	dit_profile p, q;
	dit_profile_init(&p, 1);
	for (int b = 0; b < 3; b++)
		for (int i = 0; i < 5; i++)
			dit_profile_add(&p, 0, b, "dit_linear", 0x1234u + (unsigned)(i % 2), 1);
	dit_profile_add(&p, -1, -1, "dit_patch_embed", 7, 3);
	dit_profile_add(&p, -1, -2, "dit_head", 8, 1);
	dit_error err = {0};
	const char *key = "wan2.1-t2v dim=64 grid=1x2x2";
	int ok = dit_profile_save(&p, key, &err) == DIT_OK && dit_profile_load(&q, key);
	int same = ok && q.n == p.n;
	for (int i = 0; same && i < p.n; i++)
		same = memcmp(&p.e[i], &q.e[i], sizeof p.e[i]) == 0;
	dit_tap_add(tap, same, "profile saved and read back entry for entry", 0, 0);
	if (ok)
		dit_profile_free(&q);
	dit_tap_add(tap, !dit_profile_load(&q, "wan2.1-t2v dim=64 grid=1x2x4"),
	            "another key: no profile", 0, 0);
	char path[4096];
	dit_profile_path(path, sizeof path, key);
	FILE *f = fopen(path, "a");
	if (f) {
		fputs("0 x 12 1 dit_linear\n", f);
		fclose(f);
	}
	dit_tap_add(tap, f && !dit_profile_load(&q, key), "a damaged line: no profile", 0, 0);
	dit_profile_free(&p);
	dit_disk_rate one = {1.5e9, 4e9};
	dit_tap_add(
	    tap,
	    dit_disk_rate_load().bps == 0.0 && !dit_disk_rate_add((dit_disk_rate){2e9, 5e9}) &&
	        dit_disk_rate_save(&one, 1, &err) == DIT_OK &&
	        near(dit_disk_rate_load().bps, 1.5e9) && near(dit_disk_rate_load().cpu_bps, 4e9),
	    "disk read rate: none (a run adds none), then saved and read back", 0, 0);
	int added = dit_disk_rate_add((dit_disk_rate){1.0e9, 0}) &&
	            dit_disk_rate_add((dit_disk_rate){2.2e9, 6e9});
	dit_tap_add(tap,
	            added && near(dit_disk_rate_load().bps, 1.5e9) &&
	                near(dit_disk_rate_load().cpu_bps, 5e9),
	            "disk read rate: runs add samples, the rates are their medians (the CPU one "
	            "over the samples that have one)",
	            0, 0);
	for (int i = 0; i < DIT_DISK_SAMPLES - 1; i++)
		added &= dit_disk_rate_add((dit_disk_rate){3e9, 7e9});
	dit_tap_add(tap,
	            added && near(dit_disk_rate_load().bps, 3e9) &&
	                near(dit_disk_rate_load().cpu_bps, 7e9),
	            "disk read rate: the last 8 samples count, the oldest go", 0, 0);
	char rpath[4096];
	dit_disk_rate_path(rpath, sizeof rpath);
	FILE *rf = fopen(rpath, "w");
	if (rf) {
		fputs("read_bytes_per_second 7e+08\n", rf);
		fclose(rf);
	}
	dit_tap_add(
	    tap,
	    rf && near(dit_disk_rate_load().bps, 7e8) && dit_disk_rate_load().cpu_bps == 0 &&
	        dit_disk_rate_add((dit_disk_rate){9e8, 2e9}) &&
	        near(dit_disk_rate_load().bps, 8e8) && near(dit_disk_rate_load().cpu_bps, 2e9),
	    "disk read rate: a file of one rate (no samples) is its one sample, without a "
	    "CPU rate",
	    0, 0);
	rf = fopen(rpath, "w");
	if (rf) {
		fputs("read_bytes_per_second 1e+09\nsample 1e+09\nsample 3e+09\n", rf);
		fclose(rf);
	}
	dit_tap_add(
	    tap, rf && near(dit_disk_rate_load().bps, 2e9) && dit_disk_rate_load().cpu_bps == 0,
	    "disk read rate: samples without a CPU rate (an older file) read, none given", 0, 0);
	if (nftw(home, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		printf("# could not remove %s\n", home);
}

int main(void)
{
	static dit_tap tap;
	model(&tap);
	profile_file(&tap);
	dit_tap_print(&tap);
	return tap.failed ? 1 : 0;
}
