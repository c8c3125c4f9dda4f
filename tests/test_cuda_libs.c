/* The CUDA codelets' library paths (codelets/cuda/dit_cudnn.h): cuDNN's fused
 * attention and cuBLASLt's GEMMs. Output is TAP.
 *
 * Without a GPU (every machine that builds CUDA): the refusal rules (which calls go to
 * the own kernels, and why), the environment's modes, and, when the build has cuDNN's
 * headers and the library loads, the attention graph of every family's shapes built
 * and finalized descriptor by descriptor (cuDNN checks each attribute's type, each
 * tensor's dimensions and strides, each operation's operands: what can be checked of
 * the graph before a device builds its plan); a library path that does not load gives
 * a one-line reason naming it.
 *
 * With a GPU, also: cuDNN's attention against the CPU kernel on the same bf16 inputs,
 * and cuBLASLt's linear (bias, GELU epilogue, bf16 and fp32 outputs) against the CPU
 * linear, each within the bf16 tolerances of test_cuda_kernels (max abs error <= 2e-2,
 * mean <= 2e-3 of max |reference|) and run twice for the same bytes. Exit 0 when
 * every check passes, 1 otherwise. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "config.h"
#include "dit_bf16.h"
#include "dit_cpu.h"
#include "dit_cuda_libs.h"
#include "dit_cudnn.h"
#include "dit_stats.h"

#include <json-c/json.h>

#define TOL_BF16_MAX 2e-2
#define TOL_BF16_AVG 2e-3

static int tap_n, tap_failed;

static void tap(int ok, const char *name)
{
	tap_n++;
	if (!ok)
		tap_failed++;
	printf("%s %d - %s\n", ok ? "ok" : "not ok", tap_n, name);
}

/* ------------------------------------------------------------------ no device */

#ifdef DIT_HAVE_CUDNN
/* An attention call on bf16 buffers, 16-byte aligned. */
static dit_sdpa_shape sdpa(int64_t lq, int64_t lk, int64_t heads, int64_t hd, int64_t ldq,
                           int64_t ldk, int64_t ldo)
{
	dit_sdpa_shape s = {.lq = lq,
	                    .lk = lk,
	                    .heads = heads,
	                    .hd = hd,
	                    .ldq = ldq,
	                    .ldk = ldk,
	                    .ldv = ldk,
	                    .ldo = ldo,
	                    .q_bf16 = 1,
	                    .kv_bf16 = 1,
	                    .o_bf16 = 1,
	                    .addr = 256};
	return s;
}

static void refuses(const char *name, long version, dit_sdpa_shape s, const char *word)
{
	const char *r = dit_cudnn_sdpa_refusal(version, &s);
	char buf[200];
	snprintf(buf, sizeof buf, "attention refusal: %s (%s)", name, r ? r : "taken");
	tap(word ? r && strstr(r, word) : !r, buf);
}

static void test_sdpa_refusals(void)
{
	/* Wan2.1-14B at 480P: self-attention reads q, k, v from one qkv row */
	dit_sdpa_shape wan = sdpa(32760, 32760, 40, 128, 15360, 15360, 5120);
	refuses("Wan 14B self-attention", 91900, wan, NULL);
	refuses("Wan cross-attention, 512 text keys", 91500,
	        sdpa(32760, 512, 40, 128, 5120, 10240, 5120), NULL);
	refuses("LTX-2 audio, head_dim 64", 91900, sdpa(126, 126, 32, 64, 6144, 6144, 2048), NULL);
	dit_sdpa_shape s = wan;
	s.q_bf16 = 0;
	refuses("fp32 queries", 91900, s, "fp32");
	s = wan;
	s.o_bf16 = 0;
	refuses("fp32 output", 91900, s, "fp32");
	refuses("head_dim 20", 91900, sdpa(64, 64, 2, 20, 40, 40, 40), "multiple of 8");
	refuses("head_dim 264", 91900, sdpa(64, 64, 1, 264, 264, 264, 264), "256");
	refuses("odd row stride", 91900, sdpa(64, 64, 2, 64, 130, 128, 128), "strides");
	s = wan;
	s.addr = 256 + 8;
	refuses("8-byte aligned buffer", 91900, s, "aligned");
	refuses("77 keys on cuDNN 9.15", 91500, sdpa(64, 77, 2, 64, 128, 128, 128), "padding mask");
	refuses("77 keys on cuDNN 9.19", 91900, sdpa(64, 77, 2, 64, 128, 128, 128), NULL);
	refuses("one query, one key", 91900, sdpa(1, 1, 2, 64, 128, 128, 128), "one query");
	refuses("no keys", 91900, sdpa(16, 0, 2, 64, 128, 128, 128), "no queries");
}
#endif

static void test_refusals(void)
{
#ifdef DIT_HAVE_CUDNN
	test_sdpa_refusals();
#endif
	const char *r =
	    dit_lt_linear_refusal(1, 1, DIT_ACT_GELU_TANH, 32760, 13824, 5120, 5120, 13824);
	tap(r == NULL, "cuBLASLt takes the 14B FFN's first linear (bf16, GELU tanh)");
	r = dit_lt_linear_refusal(1, 0, DIT_ACT_NONE, 16, 16, 16, 16, 16);
	tap(r && strstr(r, "fp32 weights"), "cuBLASLt refuses fp32 weights");
	r = dit_lt_linear_refusal(0, 1, DIT_ACT_NONE, 16, 16, 16, 16, 16);
	tap(r && strstr(r, "fp32 activations"), "cuBLASLt refuses fp32 activations");
	r = dit_lt_linear_refusal(1, 1, DIT_ACT_SILU, 16, 16, 16, 16, 16);
	tap(r && strstr(r, "SiLU"), "cuBLASLt refuses SiLU (no epilogue)");
	r = dit_lt_linear_refusal(1, 1, DIT_ACT_GELU, 16, 16, 16, 16, 16);
	tap(r && strstr(r, "exact GELU"), "cuBLASLt refuses the exact GELU (its epilogue is tanh)");

	tap(dit_libmode_parse(NULL, "cudnn") == DIT_LIBMODE_AUTO &&
	        dit_libmode_parse("auto", "cudnn") == DIT_LIBMODE_AUTO &&
	        dit_libmode_parse("cudnn", "cudnn") == DIT_LIBMODE_LIB &&
	        dit_libmode_parse("own", "cudnn") == DIT_LIBMODE_OWN &&
	        dit_libmode_parse("cublaslt", "cudnn") == -1,
	    "DIT_CUDA_ATTENTION/DIT_CUDA_GEMM values");
}

#ifdef DIT_HAVE_CUDNN
/* Every family's attention forms (dit_specs.md's dimensions, bf16 activations). */
static const struct {
	const char *name;
	int64_t lq, lk, heads, hd, ldq, ldk, ldo;
} forms[] = {
    {"Wan2.1-14B 480P self", 32760, 32760, 40, 128, 15360, 15360, 5120},
    {"Wan2.1-14B cross (text)", 32760, 512, 40, 128, 5120, 10240, 5120},
    {"Wan2.1 I2V image cross", 32760, 257, 40, 128, 5120, 10240, 5120},
    {"Wan2.1-1.3B self", 32760, 32760, 12, 128, 4608, 4608, 1536},
    {"HunyuanVideo joint (video+text)", 4096, 4352, 24, 128, 9216, 9216, 3072},
    {"LTX-2 video self", 6144, 6144, 32, 128, 12288, 12288, 4096},
    {"LTX-2 audio self", 126, 126, 32, 64, 6144, 6144, 2048},
    {"LTX-2 audio-to-video cross", 6144, 126, 32, 64, 2048, 4096, 2048},
    {"Cosmos-Predict2.5 self", 4096, 4096, 16, 128, 6144, 6144, 2048},
    {"a token tile of 256 queries", 256, 32760, 40, 128, 15360, 15360, 5120},
};

static void test_cudnn_graph(void)
{
	char why[256];
	const char *path = getenv("DIT_CUDNN_LIBRARY");
	dit_cudnn *c = dit_cudnn_open(path, 0, why, sizeof why);
	if (!c) {
		printf("# cuDNN does not load here (%s): graph checks skipped\n", why);
		tap(strstr(why, path && *path ? path : "libcudnn.so.9") != NULL,
		    "a cuDNN that does not load is named in the reason");
		return;
	}
	char buf[640];
	snprintf(buf, sizeof buf, "cuDNN %ld loads (9.0 or later)", dit_cudnn_version(c));
	tap(dit_cudnn_version(c) >= 90000, buf);
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		dit_sdpa_shape s = sdpa(forms[i].lq, forms[i].lk, forms[i].heads, forms[i].hd,
		                        forms[i].ldq, forms[i].ldk, forms[i].ldo);
		int rc = dit_cudnn_sdpa_describe(c, &s, why, sizeof why);
		snprintf(buf, sizeof buf, "attention graph of %s builds (%s)", forms[i].name,
		         rc ? why : "ok");
		tap(rc == 0, buf);
	}
	dit_sdpa_shape bad = sdpa(16, 0, 2, 64, 128, 128, 128);
	tap(dit_cudnn_sdpa_describe(c, &bad, why, sizeof why) != 0, "an empty graph is refused");
	dit_cudnn_close(c);

	dit_cudnn *none = dit_cudnn_open("/nonexistent/libcudnn.so.9", 0, why, sizeof why);
	tap(!none && strstr(why, "cannot load /nonexistent/libcudnn.so.9"),
	    "a missing cuDNN library: one line naming it");
	dit_cudnn_close(none);
}
#endif

/* The counts two workers keep, summed, named and written as the stats' object; its
 * JSON goes to $DIT_TEST_CUDA_LIBS_JSON for the schema check of test_cuda_libs.sh. */
static void test_report(void)
{
	dit_cuda_libs L;
	memset(&L, 0, sizeof L);
	L.cudnn_version = 91900;
	L.lt_loaded = 1;
	L.nworkers = 2;
	const char *fp32 = "fp32 activations", *silu = "an activation with no epilogue";
	L.att[0].lib = 70, L.att[1].lib = 10;
	dit_cuda_path_own(&L.att[1], fp32);
	L.gemm[0].lib = 5;
	for (int i = 0; i < 3; i++)
		dit_cuda_path_own(&L.gemm[0], silu);
	char many[8][16];
	for (int i = 0; i < 8; i++) { /* more distinct reasons than kept */
		snprintf(many[i], sizeof many[i], "reason %d", i);
		dit_cuda_path_own(&L.gemm[1], many[i]);
	}
	dit_cuda_path att, gemm;
	dit_cuda_libs_sum(&L, &att, &gemm);
	tap(att.lib == 80 && att.own == 1 && att.why[0] && strcmp(att.why[0], fp32) == 0 &&
	        att.why_n[0] == 1,
	    "attention counts of two workers summed, the reason kept");
	int64_t n = 0;
	for (int i = 0; i < DIT_CUDA_LIBS_REASONS && gemm.why[i]; i++)
		n += gemm.why_n[i];
	tap(gemm.lib == 5 && gemm.own == 11 && n == 11 &&
	        strcmp(gemm.why[DIT_CUDA_LIBS_REASONS - 1], "other") == 0,
	    "linear reasons beyond the kept ones counted as other, none lost");
	char name[128];
	dit_cuda_libs_attention_name(&L, name, sizeof name);
	tap(strcmp(name, "cuDNN 9.19.0") == 0, "the attention's library named with its version");
	L.cudnn_version = 0;
	snprintf(L.cudnn_absent, sizeof L.cudnn_absent, "cannot load libcudnn.so.9");
	dit_cuda_libs_attention_name(&L, name, sizeof name);
	tap(strstr(name, "own kernel (cannot load libcudnn.so.9)") != NULL,
	    "an absent cuDNN: the own kernel and why");
	json_object *o = dit_stats_cuda_json(&L);
	json_object *a = NULL, *v = NULL;
	int ok = o && json_object_object_get_ex(o, "attention", &a) &&
	         json_object_object_get_ex(a, "library", &v) && v == NULL &&
	         json_object_object_get_ex(a, "unavailable", &v) &&
	         strcmp(json_object_get_string(v), "cannot load libcudnn.so.9") == 0 &&
	         json_object_object_get_ex(a, "own_kernel_reasons", &v) &&
	         json_object_object_get_ex(v, fp32, &v) && json_object_get_int64(v) == 1;
	tap(ok, "the stats' cuda_libraries: library null, why unavailable, reasons counted");
	const char *path = getenv("DIT_TEST_CUDA_LIBS_JSON");
	if (path && o) {
		FILE *f = fopen(path, "w");
		if (f) {
			fputs(json_object_to_json_string(o), f);
			fclose(f);
		}
	}
	json_object_put(o);
	tap(dit_stats_cuda_json(NULL) == NULL, "no CUDA workers: cuda_libraries null");
}

/* ------------------------------------------------------------------ device */

static uint64_t rng_s = 0x9e3779b97f4a7c15ull;

static float rnd(void)
{
	rng_s ^= rng_s << 13;
	rng_s ^= rng_s >> 7;
	rng_s ^= rng_s << 17;
	return (float)((double)(rng_s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* n random values rounded to bf16: as floats in f, as bf16 in b. */
static void rand_bf16(float *f, uint16_t *b, int64_t n, float mul)
{
	for (int64_t i = 0; i < n; i++) {
		b[i] = dit_bf16_from_f32(rnd() * mul);
		f[i] = dit_bf16_to_f32(b[i]);
	}
}

static void *dev_copy(const void *h, size_t bytes)
{
	void *d = NULL;
	if (cudaMalloc(&d, bytes) != cudaSuccess || cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice))
		abort();
	return d;
}

static void tap_close(const char *name, const float *got, const float *ref, int64_t n)
{
	double emax = 0, esum = 0, rmax = 0;
	int bad = 0;
	for (int64_t i = 0; i < n; i++) {
		bad |= !isfinite(got[i]);
		emax = fmax(emax, fabs((double)got[i] - ref[i]));
		esum += fabs((double)got[i] - ref[i]);
		rmax = fmax(rmax, fabs(ref[i]));
	}
	rmax = rmax > 0 ? rmax : 1;
	char buf[256];
	snprintf(buf, sizeof buf, "%s (max %.2e, mean %.2e of max |ref|)", name, emax / rmax,
	         esum / (double)n / rmax);
	tap(!bad && emax <= TOL_BF16_MAX * rmax && esum / (double)n <= TOL_BF16_AVG * rmax, buf);
}

/* bf16 rows [rows, ld] on the device to floats [rows, cols]. */
static void download_bf16(float *out, const uint16_t *d, int64_t rows, int64_t ld, int64_t cols)
{
	uint16_t *h = malloc((size_t)(rows * ld) * 2);
	if (!h || cudaMemcpy(h, d, (size_t)(rows * ld) * 2, cudaMemcpyDeviceToHost))
		abort();
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++)
			out[r * cols + c] = dit_bf16_to_f32(h[r * ld + c]);
	free(h);
}

#ifdef DIT_HAVE_CUDNN
static void test_sdpa_device(dit_cudnn *c, cudaStream_t st, int64_t lq, int64_t lk, int64_t heads,
                             int64_t hd)
{
	int64_t w = heads * hd, ldq = 3 * w; /* q, k, v side by side in one row, as Wan's qkv */
	float *qkv = malloc((size_t)(lk > lq ? lk : lq) * ldq * sizeof(float));
	uint16_t *qkvb = malloc((size_t)(lk > lq ? lk : lq) * ldq * 2);
	int64_t rows = lk > lq ? lk : lq;
	rand_bf16(qkv, qkvb, rows * ldq, 2.0f);
	float *ref = malloc((size_t)(lq * w) * sizeof(float)), *got = malloc((size_t)(lq * w) * 4);
	float *got2 = malloc((size_t)(lq * w) * 4);
	float *scr = malloc(dit_cpu_attention_scratch(hd) * sizeof(float));
	float scale = (float)(1.0 / sqrt((double)hd));
	dit_cpu_attention(ref, w, qkv, ldq, qkv + w, ldq, qkv + 2 * w, ldq, lq, lk, heads, hd,
	                  scale, scr);
	uint16_t *d = dev_copy(qkvb, (size_t)(rows * ldq) * 2), *o = NULL;
	if (cudaMalloc((void **)&o, (size_t)(lq * w) * 2))
		abort();
	dit_sdpa_shape sh = {.lq = lq,
	                     .lk = lk,
	                     .heads = heads,
	                     .hd = hd,
	                     .ldq = ldq,
	                     .ldk = ldq,
	                     .ldv = ldq,
	                     .ldo = w,
	                     .q_bf16 = 1,
	                     .kv_bf16 = 1,
	                     .o_bf16 = 1,
	                     .addr = (uintptr_t)d | (uintptr_t)o};
	const char *why = NULL;
	char name[200];
	for (int run = 0; run < 2; run++) {
		int rc = dit_cudnn_sdpa(c, st, o, d, d + w, d + 2 * w, &sh, scale, &why);
		cudaStreamSynchronize(st);
		snprintf(name, sizeof name,
		         "cuDNN attention lq=%lld lk=%lld heads=%lld hd=%lld runs (%s)",
		         (long long)lq, (long long)lk, (long long)heads, (long long)hd,
		         rc == 0                 ? "ok"
		         : rc == DIT_LIB_REFUSED ? why
		                                 : "error");
		if (run == 0)
			tap(rc == 0, name);
		if (rc)
			break;
		download_bf16(run ? got2 : got, o, lq, w, w);
	}
	snprintf(name, sizeof name,
	         "cuDNN attention lq=%lld lk=%lld hd=%lld against the CPU kernel", (long long)lq,
	         (long long)lk, (long long)hd);
	tap_close(name, got, ref, lq * w);
	tap(memcmp(got, got2, (size_t)(lq * w) * 4) == 0, "cuDNN attention: the same bytes twice");
	cudaFree(d), cudaFree(o);
	free(qkv), free(qkvb), free(ref), free(got), free(got2), free(scr);
}
#endif

static void test_lt_device(dit_lt *l, cudaStream_t st, int64_t m, int64_t n, int64_t k, dit_act act,
                           int bias, int y_bf16)
{
	float *x = malloc((size_t)(m * k) * 4), *w = malloc((size_t)(n * k) * 4);
	uint16_t *xb = malloc((size_t)(m * k) * 2), *wb = malloc((size_t)(n * k) * 2);
	float *b = malloc((size_t)n * 4), *ref = malloc((size_t)(m * n) * 4);
	float *got = malloc((size_t)(m * n) * 4), *got2 = malloc((size_t)(m * n) * 4);
	rand_bf16(x, xb, m * k, 1.0f);
	rand_bf16(w, wb, n * k, 0.1f);
	for (int64_t i = 0; i < n; i++)
		b[i] = rnd() * 0.5f;
	dit_cpu_linear(ref, n, x, k, w, bias ? b : NULL, m, n, k, act);
	void *dx = dev_copy(xb, (size_t)(m * k) * 2), *dw = dev_copy(wb, (size_t)(n * k) * 2);
	float *db = dev_copy(b, (size_t)n * 4);
	void *dy = NULL;
	if (cudaMalloc(&dy, (size_t)(m * n) * 4))
		abort();
	const char *why = NULL;
	char name[200];
	snprintf(name, sizeof name, "cuBLASLt linear m=%lld n=%lld k=%lld act=%d bias=%d y=%s",
	         (long long)m, (long long)n, (long long)k, (int)act, bias,
	         y_bf16 ? "bf16" : "fp32");
	for (int run = 0; run < 2; run++) {
		int rc = dit_lt_linear(l, st, dy, y_bf16, n, dx, k, dw, bias ? db : NULL, m, n, k,
		                       act, &why);
		cudaStreamSynchronize(st);
		if (run == 0) {
			char b2[260];
			snprintf(b2, sizeof b2, "%s runs (%s)", name,
			         rc == 0                 ? "ok"
			         : rc == DIT_LIB_REFUSED ? why
			                                 : "error");
			tap(rc == 0, b2);
		}
		if (rc)
			break;
		float *out = run ? got2 : got;
		if (y_bf16)
			download_bf16(out, dy, m, n, n);
		else if (cudaMemcpy(out, dy, (size_t)(m * n) * 4, cudaMemcpyDeviceToHost))
			abort();
	}
	tap_close(name, got, ref, m * n);
	tap(memcmp(got, got2, (size_t)(m * n) * 4) == 0, "cuBLASLt linear: the same bytes twice");
	cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dy);
	free(x), free(w), free(xb), free(wb), free(b), free(ref), free(got), free(got2);
}

static void test_device(void)
{
	cudaStream_t st;
	if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking))
		abort();
	char why[256];
#ifdef DIT_HAVE_CUDNN
	dit_cudnn *c = dit_cudnn_open(getenv("DIT_CUDNN_LIBRARY"), 1, why, sizeof why);
	if (!c) {
		printf("# cuDNN with a handle: %s\n", why);
		tap(0, "cuDNN opens with a handle on the device");
	} else {
		test_sdpa_device(c, st, 300, 300, 2, 128); /* keys not a multiple of 128 */
		test_sdpa_device(c, st, 256, 512, 4, 64);  /* cross-shaped: more keys */
		test_sdpa_device(c, st, 1024, 1024, 2, 128);
		dit_cudnn_close(c);
	}
#endif
	dit_lt *l = dit_lt_open(why, sizeof why);
	if (!l) {
		printf("# cuBLASLt: %s\n", why);
		tap(0, "cuBLASLt opens");
	} else {
		test_lt_device(l, st, 100, 96, 160, DIT_ACT_NONE, 1, 1);
		test_lt_device(l, st, 256, 512, 128, DIT_ACT_GELU_TANH, 1, 1);
		test_lt_device(l, st, 64, 128, 256, DIT_ACT_GELU_TANH, 0, 0);
		test_lt_device(l, st, 37, 72, 64, DIT_ACT_NONE, 0, 0);
		dit_lt_close(l);
	}
	cudaStreamDestroy(st);
}

int main(void)
{
	test_refusals();
	test_report();
#ifdef DIT_HAVE_CUDNN
	test_cudnn_graph();
#else
	printf("# built without cuDNN's headers: graph checks skipped\n");
#endif
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0)
		test_device();
	else
		printf("# no CUDA device: the library calls on a device are skipped\n");
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
