/* The CPU kernels' ISA paths side by side, one thread: attention at Wan2.1-1.3B
 * shapes (GFLOP/s, flops 4 lq lk hd heads) and the elementwise ops (ms per call),
 * each ISA the CPU runs (codelets/cpu/dit_cpu_isa.h) timed in interleaved
 * repetitions (rep 1 of every ISA, then rep 2, ...) after one warm-up call each;
 * medians of the thread's CPU time, and each path's speedup over scalar. Links the
 * kernel library alone.
 *
 *   bench_cpu_ops [--lq N] [--lk N] [--heads N] [--hd N] [--dim N] [--ffn N] [--reps N]
 *                 [--only LIST]
 *
 * Default attention shapes: self-attention L = 1170 and L = 4000, and cross-attention
 * lq = L, lk = 512 for both; --lq gives one shape (lk defaults to lq). The elementwise
 * ops run on L rows (the --lq, else 4000): layernorm with modulation and rmsnorm
 * [L, dim], rope [L, heads * hd], residual [L, dim], GELU-tanh [L, ffn], bf16
 * widening [ffn, dim]. --only: a comma list of ops (attention, layernorm, rmsnorm,
 * rope, gelu, residual, widen) and/or ISAs (scalar, avx2, avx512). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "bench_stats.h"
#include "dit_blas_env.h"
#include "dit_bf16.h"
#include "dit_cpu_isa.h"

enum { OP_ATT, OP_LN, OP_RMS, OP_ROPE, OP_GELU, OP_RES, OP_WIDEN, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"attention", "layernorm", "rmsnorm", "rope",
                                               "gelu",      "residual",  "widen"};

typedef struct bench_opts {
	int64_t lq, lk, heads, hd, dim, ffn, reps;
	int op_on[OP_COUNT];
	int isa_on[DIT_CPU_ISA_COUNT];
} bench_opts;

/* The calling thread's CPU time: the kernels run on this one thread (OpenBLAS is set
 * to one), and on a shared machine the time other processes hold the core is left out. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_cpu_ops [--lq N] [--lk N] [--heads N] [--hd N] [--dim N] "
	           "[--ffn N] [--reps N] [--only op,...,isa,...]\n");
}

static int parse_only(bench_opts *o, const char *list)
{
	int ops = 0, isas = 0;
	int op_on[OP_COUNT] = {0}, isa_on[DIT_CPU_ISA_COUNT] = {0};
	char buf[256];
	snprintf(buf, sizeof buf, "%s", list);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int found = 0;
		for (int i = 0; i < OP_COUNT; i++)
			if (!strcmp(t, op_names[i]))
				op_on[i] = found = ++ops;
		for (int i = 0; i < DIT_CPU_ISA_COUNT; i++)
			if (!strcmp(t, dit_cpu_isa_name((dit_cpu_isa)i)))
				isa_on[i] = found = ++isas;
		if (!found) {
			fprintf(stderr, "bench_cpu_ops: --only: unknown op or ISA '%s'\n", t);
			return -1;
		}
	}
	for (int i = 0; i < OP_COUNT && ops; i++)
		o->op_on[i] = op_on[i] != 0;
	for (int i = 0; i < DIT_CPU_ISA_COUNT && isas; i++)
		o->isa_on[i] = isa_on[i] != 0;
	return 0;
}

static int parse_args(bench_opts *o, int argc, char **argv)
{
	*o = (bench_opts){
	    .lq = 0, .lk = 0, .heads = 12, .hd = 128, .dim = 1536, .ffn = 8960, .reps = 5};
	for (int i = 0; i < OP_COUNT; i++)
		o->op_on[i] = 1;
	for (int i = 0; i < DIT_CPU_ISA_COUNT; i++)
		o->isa_on[i] = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		}
		struct {
			const char *name;
			int64_t *v, min;
		} num[] = {{"--lq", &o->lq, 1},    {"--lk", &o->lk, 1},   {"--heads", &o->heads, 1},
		           {"--hd", &o->hd, 2},    {"--dim", &o->dim, 1}, {"--ffn", &o->ffn, 1},
		           {"--reps", &o->reps, 1}};
		int done = 0;
		for (size_t j = 0; j < sizeof num / sizeof num[0] && !done; j++)
			if (!strcmp(a, num[j].name)) {
				if (!val || dit_bench_parse_i64(val, num[j].v, num[j].min)) {
					fprintf(stderr,
					        "bench_cpu_ops: %s needs an integer >= %lld\n", a,
					        (long long)num[j].min);
					return -1;
				}
				done = 1;
			}
		if (!done && !strcmp(a, "--only") && val) {
			if (parse_only(o, val))
				return -1;
			done = 1;
		}
		if (!done) {
			usage(stderr);
			return -1;
		}
		i++;
	}
	if (o->reps > DIT_BENCH_MAX_REPS)
		o->reps = DIT_BENCH_MAX_REPS;
	return 0;
}

static float *floats_alloc(int64_t n)
{
	float *p = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) / 64 * 64);
	if (!p) {
		fprintf(stderr, "bench_cpu_ops: out of memory\n");
		exit(1);
	}
	return p;
}

/* uniform in [-a, a], fixed seed */
static void floats_fill(float *x, int64_t n, float a, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
	for (int64_t i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		x[i] = a * (float)((double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0);
	}
}

/* The paths to time: the tables of the ISAs asked for that the CPU runs. */
typedef struct bench_paths {
	int n;
	const dit_cpu_isa_ops *ops[DIT_CPU_ISA_COUNT];
} bench_paths;

/* One measurement: each path's calls interleaved, medians into med[path]. call(ops,
 * ctx) runs the kernel once; prep(ctx), when given, restores its inputs (untimed). */
typedef void (*bench_call)(const dit_cpu_isa_ops *ops, void *ctx);
static void bench_paths_time(const bench_paths *p, int64_t reps, bench_call call, bench_call prep,
                             void *ctx, double *med)
{
	double runs[DIT_CPU_ISA_COUNT][DIT_BENCH_MAX_REPS];
	for (int64_t r = -1; r < reps; r++) /* r = -1: warm-up */
		for (int i = 0; i < p->n; i++) {
			if (prep)
				prep(p->ops[i], ctx);
			double t0 = now_s();
			call(p->ops[i], ctx);
			double dt = now_s() - t0;
			if (r >= 0)
				runs[i][r] = dt;
		}
	for (int i = 0; i < p->n; i++)
		med[i] = dit_bench_median(runs[i], (int)reps);
}

/* ---- attention ---- */

typedef struct att_ctx {
	int64_t lq, lk, heads, hd;
	float *q, *k, *v, *o, *scratch;
} att_ctx;

static void att_call(const dit_cpu_isa_ops *ops, void *c)
{
	att_ctx *a = c;
	int64_t w = a->heads * a->hd;
	ops->attention(a->o, w, a->q, w, a->k, w, a->v, w, a->lq, a->lk, a->heads, a->hd,
	               (float)(1.0 / sqrt((double)a->hd)), a->scratch);
}

static void bench_attention(const bench_opts *o, const bench_paths *p, int64_t lq, int64_t lk)
{
	att_ctx a = {.lq = lq, .lk = lk, .heads = o->heads, .hd = o->hd};
	int64_t w = o->heads * o->hd;
	a.q = floats_alloc(lq * w);
	a.k = floats_alloc(lk * w);
	a.v = floats_alloc(lk * w);
	a.o = floats_alloc(lq * w);
	a.scratch = floats_alloc((int64_t)dit_cpu_attention_scratch(o->hd));
	floats_fill(a.q, lq * w, 2.0f, 1);
	floats_fill(a.k, lk * w, 2.0f, 2);
	floats_fill(a.v, lk * w, 1.0f, 3);
	double med[DIT_CPU_ISA_COUNT], flop = 4.0 * (double)lq * (double)lk * (double)w;
	bench_paths_time(p, o->reps, att_call, NULL, &a, med);
	printf("attention lq %5lld lk %5lld heads %2lld hd %3lld |", (long long)lq, (long long)lk,
	       (long long)o->heads, (long long)o->hd);
	double base = p->ops[0]->isa == DIT_CPU_ISA_SCALAR ? med[0] : 0.0;
	for (int i = 0; i < p->n; i++) {
		printf(" %s %8.2f ms %6.1f GFLOP/s", dit_cpu_isa_name(p->ops[i]->isa), 1e3 * med[i],
		       flop / med[i] * 1e-9);
		if (base > 0.0 && i > 0)
			printf(" x%.2f", base / med[i]);
		printf(i + 1 < p->n ? " |" : "\n");
	}
	free(a.q);
	free(a.k);
	free(a.v);
	free(a.o);
	free(a.scratch);
}

/* ---- the elementwise ops ---- */

typedef struct elt_ctx {
	int op;
	int64_t rows, dim, heads, hd, ffn;
	float *x, *x0, *y, *w, *b, *mod; /* mod: shift_a, shift_b, scale_a, scale_b */
	uint16_t *wb;
	double *cs;
	size_t n; /* floats of x that prep restores */
} elt_ctx;

static void elt_prep(const dit_cpu_isa_ops *ops, void *c)
{
	(void)ops;
	elt_ctx *e = c;
	memcpy(e->x, e->x0, e->n * sizeof(float));
}

static void elt_call(const dit_cpu_isa_ops *ops, void *c)
{
	elt_ctx *e = c;
	int64_t d = e->dim, rows = e->rows;
	switch (e->op) {
	case OP_LN:
		ops->layernorm(e->y, d, e->x, d, rows, d, 1e-6f, NULL, NULL, e->mod, e->mod + d,
		               e->mod + 2 * d, e->mod + 3 * d, 0, 0);
		break;
	case OP_RMS: ops->rmsnorm(e->x, d, rows, d, 1e-6f, e->w); break;
	case OP_ROPE: ops->rope_apply(e->x, e->heads * e->hd, rows, e->heads, e->hd, e->cs); break;
	case OP_GELU: ops->act(e->x, rows * e->ffn, DIT_ACT_GELU_TANH); break;
	case OP_RES: ops->residual(e->x, d, e->y, d, rows, d, e->w, e->b, 0, 0); break;
	case OP_WIDEN: ops->bf16_widen(e->x, e->wb, e->ffn * d); break;
	default: break;
	}
}

static void bench_elt(const bench_opts *o, const bench_paths *p, int op, int64_t rows)
{
	elt_ctx e = {
	    .op = op, .rows = rows, .dim = o->dim, .heads = o->heads, .hd = o->hd, .ffn = o->ffn};
	int64_t d = o->dim, width = o->heads * o->hd;
	int64_t nx = op == OP_GELU    ? rows * o->ffn
	             : op == OP_ROPE  ? rows * width
	             : op == OP_WIDEN ? o->ffn * d
	                              : rows * d;
	e.n = (size_t)nx;
	e.x = floats_alloc(nx);
	e.x0 = floats_alloc(nx);
	e.y = floats_alloc(rows * d);
	e.w = floats_alloc(d);
	e.b = floats_alloc(d);
	e.mod = floats_alloc(4 * d);
	floats_fill(e.x0, nx, 3.0f, 4);
	floats_fill(e.y, rows * d, 1.0f, 5);
	floats_fill(e.w, d, 1.0f, 6);
	floats_fill(e.b, d, 1.0f, 7);
	floats_fill(e.mod, 4 * d, 0.5f, 8);
	if (op == OP_ROPE) {
		e.cs = malloc((size_t)(rows * o->hd) * sizeof(double));
		for (int64_t i = 0; i < rows * o->hd / 2; i++) {
			e.cs[2 * i] = cos(0.001 * (double)i);
			e.cs[2 * i + 1] = sin(0.001 * (double)i);
		}
	}
	if (op == OP_WIDEN) {
		e.wb = malloc((size_t)nx * sizeof(uint16_t));
		for (int64_t i = 0; i < nx; i++)
			e.wb[i] = dit_bf16_from_f32(e.x0[i]);
	}
	double med[DIT_CPU_ISA_COUNT];
	bench_paths_time(p, o->reps, elt_call, elt_prep, &e, med);
	char shape[64];
	if (op == OP_GELU)
		snprintf(shape, sizeof shape, "[%lld, %lld]", (long long)rows, (long long)o->ffn);
	else if (op == OP_ROPE)
		snprintf(shape, sizeof shape, "[%lld, %lldx%lld]", (long long)rows,
		         (long long)o->heads, (long long)o->hd);
	else if (op == OP_WIDEN)
		snprintf(shape, sizeof shape, "[%lld, %lld]", (long long)o->ffn, (long long)d);
	else
		snprintf(shape, sizeof shape, "[%lld, %lld]", (long long)rows, (long long)d);
	printf("%-9s %-26s |", op_names[op], shape);
	double base = p->ops[0]->isa == DIT_CPU_ISA_SCALAR ? med[0] : 0.0;
	for (int i = 0; i < p->n; i++) {
		printf(" %s %8.3f ms %5.2f ns/elem", dit_cpu_isa_name(p->ops[i]->isa), 1e3 * med[i],
		       1e9 * med[i] / (double)nx);
		if (base > 0.0 && i > 0)
			printf(" x%.2f", base / med[i]);
		printf(i + 1 < p->n ? " |" : "\n");
	}
	free(e.x);
	free(e.x0);
	free(e.y);
	free(e.w);
	free(e.b);
	free(e.mod);
	free(e.cs);
	free(e.wb);
}

int main(int argc, char **argv)
{
	dit_blas_env_prepare(argv);
#ifdef HAVE_OPENBLAS_SET_NUM_THREADS
	openblas_set_num_threads(1);
#endif
	bench_opts o;
	if (parse_args(&o, argc, argv))
		return 2;
	bench_paths p = {0};
	printf("bench_cpu_ops: 1 thread, OpenBLAS core %s, ISA paths:", dit_blas_core_name());
	for (int i = 0; i < DIT_CPU_ISA_COUNT; i++) {
		const dit_cpu_isa_ops *t = dit_cpu_isa_table((dit_cpu_isa)i);
		printf(" %s%s", dit_cpu_isa_name((dit_cpu_isa)i),
		       !t             ? " (not runnable)"
		       : !o.isa_on[i] ? " (skipped)"
		                      : "");
		if (t && o.isa_on[i])
			p.ops[p.n++] = t;
	}
	printf("; default %s; median of %lld interleaved reps\n",
	       dit_cpu_isa_name(dit_cpu_isa_active()), (long long)o.reps);
	if (p.n == 0) {
		fprintf(stderr, "bench_cpu_ops: no ISA path to time\n");
		return 1;
	}
	if (o.op_on[OP_ATT]) {
		if (o.lq > 0) {
			bench_attention(&o, &p, o.lq, o.lk > 0 ? o.lk : o.lq);
		} else {
			static const int64_t ls[] = {1170, 4000};
			for (int i = 0; i < 2; i++) {
				bench_attention(&o, &p, ls[i], o.lk > 0 ? o.lk : ls[i]);
				bench_attention(&o, &p, ls[i], 512);
			}
		}
	}
	int64_t rows = o.lq > 0 ? o.lq : 4000;
	for (int op = OP_LN; op < OP_COUNT; op++)
		if (o.op_on[op])
			bench_elt(&o, &p, op, rows);
	return 0;
}
