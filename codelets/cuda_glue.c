/* The CUDA workers' vendor libraries (dit_cuda_libs.h): opened on each worker, reached
 * by the codelets through a thread-local pointer (as the OpenCL kernels are: set on the
 * worker by dit_cuda_libs_init, cleared by dit_cuda_libs_shutdown, nothing shared
 * between threads or runtimes), counted into the runtime's dit_cuda_libs. */
#include "dit_codelets.h"
#include "dit_cuda_libs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dit_libmode_parse(const char *v, const char *lib_word)
{
	if (!v || !*v || strcmp(v, "auto") == 0)
		return DIT_LIBMODE_AUTO;
	if (strcmp(v, lib_word) == 0)
		return DIT_LIBMODE_LIB;
	if (strcmp(v, "own") == 0)
		return DIT_LIBMODE_OWN;
	return -1;
}

/* n tasks of p run by the own kernel for reason why. */
static void path_add_own(dit_cuda_path *p, const char *why, int64_t n)
{
	p->own += n;
	int i = 0;
	for (; i < DIT_CUDA_LIBS_REASONS - 1 && p->why[i]; i++)
		if (p->why[i] == why || strcmp(p->why[i], why) == 0)
			break;
	if (!p->why[i])
		p->why[i] = i < DIT_CUDA_LIBS_REASONS - 1 ? why : "other";
	p->why_n[i] += n;
}

void dit_cuda_path_own(dit_cuda_path *p, const char *why)
{
	path_add_own(p, why, 1);
}

static void path_add(dit_cuda_path *to, const dit_cuda_path *from)
{
	to->lib += from->lib;
	for (int i = 0; i < DIT_CUDA_LIBS_REASONS && from->why[i]; i++)
		path_add_own(to, from->why[i], from->why_n[i]);
}

void dit_cuda_libs_sum(const dit_cuda_libs *L, dit_cuda_path *att, dit_cuda_path *gemm)
{
	memset(att, 0, sizeof *att);
	memset(gemm, 0, sizeof *gemm);
	for (int w = 0; L && w < L->nworkers && w < DIT_CUDA_LIBS_WORKERS; w++) {
		path_add(att, &L->att[w]);
		path_add(gemm, &L->gemm[w]);
	}
}

void dit_cuda_libs_attention_name(const dit_cuda_libs *L, char *buf, unsigned long cap)
{
	if (L && L->cudnn_version)
		snprintf(buf, cap, "cuDNN %ld.%ld.%ld", L->cudnn_version / 10000,
		         L->cudnn_version % 10000 / 100, L->cudnn_version % 100);
	else if (L && L->att_mode == DIT_LIBMODE_OWN)
		snprintf(buf, cap, "own kernel (DIT_CUDA_ATTENTION=own)");
	else
		snprintf(buf, cap, "own kernel (%s)", L ? L->cudnn_absent : "no CUDA workers");
}

void dit_cuda_libs_gemm_name(const dit_cuda_libs *L, char *buf, unsigned long cap)
{
	if (L && L->lt_loaded)
		snprintf(buf, cap, "cuBLASLt");
	else if (L && L->gemm_mode == DIT_LIBMODE_OWN)
		snprintf(buf, cap, "cuBLAS (DIT_CUDA_GEMM=own)");
	else
		snprintf(buf, cap, "cuBLAS (%s)", L ? L->lt_absent : "no CUDA workers");
}

#ifdef DIT_HAVE_CUDA
#include "dit_cudnn.h"

/* What one CUDA worker holds. */
typedef struct dit_cuda_worker {
	dit_cudnn *dnn; /* NULL: no cuDNN here */
	dit_lt *lt;     /* NULL: no cuBLASLt here */
	dit_libmode att_mode, gemm_mode;
	dit_cuda_path *att, *gemm; /* this worker's counts in the runtime's dit_cuda_libs */
} dit_cuda_worker;

static _Thread_local dit_cuda_worker *dit_cuda_self;

typedef struct libs_init {
	dit_cuda_libs *L;
	const char *cudnn_path;
	pthread_mutex_t lock;
	dit_status st;
	dit_error err;
} libs_init;

static void init_fail(libs_init *in, const char *fmt, const char *why)
{
	pthread_mutex_lock(&in->lock);
	if (!in->st)
		in->st = dit_error_set(&in->err, DIT_EINVAL, fmt, why);
	pthread_mutex_unlock(&in->lock);
}

static void libs_init_worker(void *arg)
{
	libs_init *in = arg;
	dit_cuda_libs *L = in->L;
	if (dit_cuda_self)
		return;
	dit_cuda_worker *w = calloc(1, sizeof *w);
	if (!w) {
		init_fail(in, "%s", "out of memory for the CUDA libraries");
		return;
	}
	char why_dnn[200] = "", why_lt[200] = "";
	w->att_mode = L->att_mode;
	w->gemm_mode = L->gemm_mode;
	if (L->att_mode != DIT_LIBMODE_OWN) {
#ifdef DIT_HAVE_CUDNN
		w->dnn = dit_cudnn_open(in->cudnn_path, 1, why_dnn, sizeof why_dnn);
#else
		snprintf(why_dnn, sizeof why_dnn, "built without cuDNN (configure --with-cudnn)");
#endif
		if (!w->dnn && L->att_mode == DIT_LIBMODE_LIB)
			init_fail(in, "DIT_CUDA_ATTENTION=cudnn: %s", why_dnn);
	}
	if (L->gemm_mode != DIT_LIBMODE_OWN) {
		w->lt = dit_lt_open(why_lt, sizeof why_lt);
		if (!w->lt && L->gemm_mode == DIT_LIBMODE_LIB)
			init_fail(in, "DIT_CUDA_GEMM=cublaslt: %s", why_lt);
	}
	pthread_mutex_lock(&in->lock);
	int slot = L->nworkers < DIT_CUDA_LIBS_WORKERS ? L->nworkers : DIT_CUDA_LIBS_WORKERS - 1;
	L->nworkers++;
	w->att = &L->att[slot];
	w->gemm = &L->gemm[slot];
#ifdef DIT_HAVE_CUDNN
	if (w->dnn)
		L->cudnn_version = dit_cudnn_version(w->dnn);
#endif
	if (why_dnn[0] && !L->cudnn_absent[0])
		snprintf(L->cudnn_absent, sizeof L->cudnn_absent, "%s", why_dnn);
	if (w->lt)
		L->lt_loaded = 1;
	else if (why_lt[0] && !L->lt_absent[0])
		snprintf(L->lt_absent, sizeof L->lt_absent, "%s", why_lt);
	pthread_mutex_unlock(&in->lock);
	dit_cuda_self = w;
}

static void libs_shutdown_worker(void *arg)
{
	(void)arg;
	if (!dit_cuda_self)
		return;
#ifdef DIT_HAVE_CUDNN
	dit_cudnn_close(dit_cuda_self->dnn);
#endif
	dit_lt_close(dit_cuda_self->lt);
	dit_cuda_wtile_free();
	free(dit_cuda_self);
	dit_cuda_self = NULL;
}

dit_status dit_cuda_libs_init(dit_cuda_libs **out, dit_error *err)
{
	*out = NULL;
	if (starpu_cuda_worker_get_count() == 0)
		return DIT_OK;
	int am = dit_libmode_parse(getenv("DIT_CUDA_ATTENTION"), "cudnn");
	int gm = dit_libmode_parse(getenv("DIT_CUDA_GEMM"), "cublaslt");
	if (am < 0)
		return dit_error_set(err, DIT_EINVAL,
		                     "DIT_CUDA_ATTENTION=%.40s: expected auto, cudnn or own",
		                     getenv("DIT_CUDA_ATTENTION"));
	if (gm < 0)
		return dit_error_set(err, DIT_EINVAL,
		                     "DIT_CUDA_GEMM=%.40s: expected auto, cublaslt or own",
		                     getenv("DIT_CUDA_GEMM"));
	dit_cuda_libs *L = calloc(1, sizeof *L);
	if (!L)
		return dit_error_set(err, DIT_ENOMEM, "out of memory for the CUDA libraries");
	L->att_mode = (dit_libmode)am;
	L->gemm_mode = (dit_libmode)gm;
	libs_init in = {.L = L, .cudnn_path = getenv("DIT_CUDNN_LIBRARY")};
	pthread_mutex_init(&in.lock, NULL);
	starpu_execute_on_each_worker(libs_init_worker, &in, STARPU_CUDA);
	pthread_mutex_destroy(&in.lock);
	if (in.st) {
		dit_cuda_libs_shutdown(L);
		if (err)
			*err = in.err;
		return in.st;
	}
	*out = L;
	return DIT_OK;
}

void dit_cuda_libs_shutdown(dit_cuda_libs *L)
{
	if (!L)
		return;
	starpu_execute_on_each_worker(libs_shutdown_worker, NULL, STARPU_CUDA);
	free(L);
}

/* A library refused a call its rules take while the mode says it must: the run stops,
 * saying why. */
static _Noreturn void lib_forced_fail(const char *var, const char *op, const char *why)
{
	fprintf(stderr, "ditstar: %s: the %s codelet's call was refused: %s\n", var, op, why);
	abort();
}

/* cuDNN's attention for the call: 0 when enqueued, else DIT_LIB_REFUSED with *why and
 * *by_lib set when cuDNN itself (not its rules) refused, or a library error. */
static int sdpa_try(dit_cuda_worker *w, cudaStream_t s, void *o, const void *q, const void *k,
                    const void *v, const dit_sdpa_shape *sh, float scale, const char **why,
                    int *by_lib)
{
	*by_lib = 0;
#ifdef DIT_HAVE_CUDNN
	if (!w->dnn) {
		*why = "cuDNN not loaded";
		*by_lib = 1;
		return DIT_LIB_REFUSED;
	}
	*why = dit_cudnn_sdpa_refusal(dit_cudnn_version(w->dnn), sh);
	if (*why)
		return DIT_LIB_REFUSED;
	*by_lib = 1;
	return dit_cudnn_sdpa(w->dnn, s, o, q, k, v, sh, scale, why);
#else
	(void)w, (void)s, (void)o, (void)q, (void)k, (void)v, (void)sh, (void)scale;
	*why = "built without cuDNN (configure --with-cudnn)";
	*by_lib = 1;
	return DIT_LIB_REFUSED;
#endif
}

int dit_cuda_lib_attention(cudaStream_t s, void *o, const void *q, const void *k, const void *v,
                           const dit_sdpa_shape *sh, float scale)
{
	dit_cuda_worker *w = dit_cuda_self;
	if (!w)
		return 0; /* a runtime without dit_cuda_libs_init (a test program) */
	const char *why = "DIT_CUDA_ATTENTION=own";
	if (w->att_mode != DIT_LIBMODE_OWN) {
		/* the rules' refusals go to the own kernel in every mode; cuDNN missing or
		 * refusing a call its rules take fails a forced run */
		int by_lib;
		int rc = sdpa_try(w, s, o, q, k, v, sh, scale, &why, &by_lib);
		if (rc == 0) {
			w->att->lib++;
			return 1;
		}
		if (rc != DIT_LIB_REFUSED)
			dit_cuda_fail("attention", rc);
		if (w->att_mode == DIT_LIBMODE_LIB && by_lib)
			lib_forced_fail("DIT_CUDA_ATTENTION=cudnn", "attention", why);
	}
	dit_cuda_path_own(w->att, why);
	return 0;
}

int dit_cuda_lib_linear(cudaStream_t s, void *y, int y_bf16, int64_t ldy, const void *x, int x_bf16,
                        int64_t ldx, const void *w_, int w_bf16, const float *b, int64_t m,
                        int64_t n, int64_t k, dit_act act)
{
	dit_cuda_worker *w = dit_cuda_self;
	if (!w)
		return 0;
	const char *why = "DIT_CUDA_GEMM=own";
	if (w->gemm_mode != DIT_LIBMODE_OWN) {
		why = dit_lt_linear_refusal(x_bf16, w_bf16, act, m, n, k, ldx, ldy);
		int rc = why     ? DIT_LIB_REFUSED
		         : w->lt ? dit_lt_linear(w->lt, s, y, y_bf16, ldy, x, ldx, w_, b, m, n, k,
		                                 act, &why)
		                 : (why = "cuBLASLt not loaded", DIT_LIB_REFUSED);
		if (rc == 0) {
			w->gemm->lib++;
			return 1;
		}
		if (rc != DIT_LIB_REFUSED)
			dit_cuda_fail("linear", rc);
		if (w->gemm_mode == DIT_LIBMODE_LIB &&
		    !dit_lt_linear_refusal(x_bf16, w_bf16, act, m, n, k, ldx, ldy))
			lib_forced_fail("DIT_CUDA_GEMM=cublaslt", "linear", why);
	}
	dit_cuda_path_own(w->gemm, why);
	return 0;
}
#else
dit_status dit_cuda_libs_init(dit_cuda_libs **out, dit_error *err)
{
	(void)err;
	*out = NULL;
	return DIT_OK;
}

void dit_cuda_libs_shutdown(dit_cuda_libs *L)
{
	(void)L;
}
#endif
