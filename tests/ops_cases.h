/* The op cases of the codelet-level device tests (test_opencl_ops, test_cuda_ops):
 * every op runs as a StarPU task restricted to one kind of device worker on random
 * inputs of odd shapes (strides and offsets into bigger buffers, sub-vectors at a
 * nonzero byte offset, weight slabs registered as 2 elements of a whole block's bytes
 * with the op reading the second, sequence lengths that are not multiples of the
 * tiles, 1 to 3 heads of 16 to 160 columns). Each result is compared with the dit_cpu_*
 * kernels run on host copies (max |device - cpu| / max |cpu| within the backend's
 * tolerance for the op), and each op runs twice and must give the same bytes.
 *
 * A main describes its device (dit_backend), starts StarPU with workers of that kind
 * only, calls ops_init, the test_* functions, then ops_report, which prints the TAP
 * lines (plan first), the largest error of each op and a hash of every result. */
#ifndef DIT_OPS_CASES_H
#define DIT_OPS_CASES_H

#include <stdint.h>

#include <starpu.h>

/* The device under test. */
typedef struct dit_backend {
	const char *name;                   /* in messages: "OpenCL", "CUDA" */
	uint32_t where;                     /* the task's where: STARPU_OPENCL, STARPU_CUDA */
	enum starpu_worker_archtype worker; /* STARPU_OPENCL_WORKER, STARPU_CUDA_WORKER */
	/* Largest max |device - cpu| / max |cpu| of op ("linear", "attention", ...)
	 * given whether the case has bf16 weights and its head dim (0 when the op has
	 * none). */
	double (*tol)(const char *op, int wbf16, int64_t head_dim);
} dit_backend;

#define DIT_TEST_MAX  800
#define DIT_LINE_MAX  200
#define DIT_WORST_MAX 64

/* TAP: lines are kept so that the plan comes first. */
typedef struct dit_tap {
	int n, failed;
	char line[DIT_TEST_MAX][DIT_LINE_MAX];
} dit_tap;

/* Largest error of each op (its name and a tag), and a hash of every result, for the
 * summary (the hash must not change from run to run). */
typedef struct dit_worst {
	const char *tag; /* appended to the op names (test_opencl_ops: the kernel set) */
	char op[DIT_WORST_MAX][32];
	double err[DIT_WORST_MAX];
	int n;
	uint64_t hash; /* FNV-1a */
} dit_worst;

typedef struct dit_rng {
	uint64_t s; /* splitmix64 */
} dit_rng;

/* The state of a run of the cases. */
typedef struct dit_ops {
	const dit_backend *be;
	dit_tap *tap;
	dit_worst w;
	dit_rng rng;
} dit_ops;

/* How a weight slab is laid out: its tensors sit in a block of `block` floats; the
 * host array holds 2 such blocks and the op reads the second. */
enum {
	SLAB_FLAT,   /* a vector of 2 blocks of floats (elemsize 4); offsets skip block 1 */
	SLAB_BLOCKS, /* a vector of 2 elements of a block's bytes; offsets skip block 1 */
	SLAB_PART,   /* the same, the op given its second element as a sub-vector */
};

/* A buffer of a test task: host data registered as a vector of nx elements of
 * elemsize bytes; with part 1 or 2 the task gets that half of the vector
 * (starpu_vector_filter_block in 2), else the whole vector. Scratch buffers have no
 * host data. */
typedef struct ops_buf {
	void *data;
	uint32_t nx;
	size_t elemsize;
	int part;
	enum starpu_data_access_mode mode;
} ops_buf;

ops_buf ops_buf_of(void *data, int64_t nx, size_t elemsize, int part,
                   enum starpu_data_access_mode mode);
/* n floats uniform in [-mul, mul] (free them) */
float *ops_rnd(dit_ops *o, int64_t n, float mul);
/* Runs cl on the buffers as one synchronous task on the workers of where (the
 * backend's, or STARPU_CPU for a reference); the data come back to the host arrays. */
void ops_run(uint32_t where, struct starpu_codelet *cl, const void *args, size_t args_size, int n,
             const ops_buf *b);
/* Two checks on a [rows, cols] region of floats (stride ld, offset off): run1 against
 * ref within tol (max |run1 - ref| / max |ref|), run1 against run2 byte for byte. */
void ops_check(dit_ops *o, const char *op, double tol, const char *what, const float *run1,
               const float *run2, const float *ref, int64_t rows, int64_t cols, int64_t ld,
               int64_t off);
/* The ops of a block's activations stored in bf16 (--act-dtype bf16) on the device
 * against the same codelets on the CPU (which widen the rows, run the fp32 kernels,
 * narrow the results): linear (wbf16: bf16 weights, else fp32), layernorm,
 * qk_norm with RoPE, attention (self and cross), residual, head_gate, copy2d
 * (tests/ops_bf16.c). */
void test_act_bf16(dit_ops *o, int wbf16);
/* linear with compact weights (fp16, f8 e4m3fn / e5m2 with a scale, Q8_0) from a row
 * inside the tensor, on the device against the CPU codelet (tests/ops_wdt.c). */
void test_linear_wdt(dit_ops *o);

/* Starts StarPU with conf (which should give workers of the backend's kind only):
 * -1 when it started with at least one; else it printed "1..0 # SKIP no <name>
 * device" (returns 0) or a "Bail out!" line (returns 1), the status for main. */
int ops_start(const dit_backend *be, struct starpu_conf *conf);
void ops_init(dit_ops *o, const dit_backend *be);
/* Prints the TAP lines and the summary (secs: the time the cases took), frees what
 * ops_init took; 0 when every check passed, else 1. */
int ops_report(dit_ops *o, double secs);

void tap_add(dit_tap *tap, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

void test_linear(dit_ops *o, int64_t m, int64_t n, int64_t k, int act, int bias, int layout,
                 int bf16);
void test_layernorm(dit_ops *o, int64_t rows, int64_t dim, int affine, int mod, int layout);
/* the same with a modulation table of one row per mod_rows rows of x (0: one vector) */
void test_layernorm_tab(dit_ops *o, int64_t rows, int64_t dim, int affine, int mod, int layout,
                        int64_t mod_rows);
/* the same with the RMS normalisation (rms) and x a row tile from row row0 of the table's */
void test_layernorm_rms(dit_ops *o, int64_t rows, int64_t dim, int affine, int mod, int layout,
                        int64_t mod_rows, int rms, int64_t row0);
void test_qk_norm(dit_ops *o, int64_t f, int64_t h, int64_t wd, int64_t heads, int64_t hd, int rope,
                  int layout);
/* the same with the RMS over each run of group features (0: the whole width) */
void test_qk_norm_group(dit_ops *o, int64_t f, int64_t h, int64_t wd, int64_t heads, int64_t hd,
                        int rope, int layout, int64_t group);
/* RMSNorm then the split RoPE of LTX-2 (a table per head from token bounds on naxes
 * axes) */
void test_qk_norm_split(dit_ops *o, int64_t rows, int64_t heads, int64_t hd, int naxes, int layout,
                        int64_t group);
/* The same with Cosmos-Predict2.5's table (dit_cpu_rope_cosmos_table, ratios
 * 1, 3, 3) for a tf x th x tw token grid. */
void test_qk_norm_cosmos(dit_ops *o, int64_t tf, int64_t th, int64_t tw, int64_t heads, int64_t hd,
                         int layout, int64_t group);
void test_attention(dit_ops *o, int64_t lq, int64_t lk, int64_t heads, int64_t hd, int cross);
/* the same with only keys [0, lk_valid) taking part (0: all) */
void test_attention_valid(dit_ops *o, int64_t lq, int64_t lk, int64_t lk_valid, int64_t heads,
                          int64_t hd, int cross);
void test_residual(dit_ops *o, int64_t rows, int64_t dim, int gated, int layout);
/* the same with a gate table of one row per mod_rows rows of x (0: one vector) */
void test_residual_tab(dit_ops *o, int64_t rows, int64_t dim, int gated, int layout,
                       int64_t mod_rows);
void test_time_embed(dit_ops *o, int64_t dim, int64_t freq, double t, int layout);
/* nt timesteps ts in one task, into rows row0 .. row0 + nt - 1 */
void test_time_embed_rows(dit_ops *o, int64_t dim, int64_t freq, int64_t nt, const double *ts,
                          int64_t row0, int layout);
/* the same with e0 rows of nproj * dim floats (0: 6 dim) */
void test_time_embed_proj(dit_ops *o, int64_t dim, int64_t freq, int64_t nt, const double *ts,
                          int64_t row0, int layout, int64_t nproj);
void test_text_embed(dit_ops *o, int64_t len, int64_t tdim, int64_t dim, int layout);
void test_patch_embed(dit_ops *o, int64_t c, int64_t f, int64_t h, int64_t wd, int64_t pt,
                      int64_t ph, int64_t pw, int64_t dim, int layout);
/* The same with (bias 1) or without (bias 0: b_off -1) the bias. */
void test_patch_embed_bias(dit_ops *o, int64_t c, int64_t f, int64_t h, int64_t wd, int64_t pt,
                           int64_t ph, int64_t pw, int64_t dim, int layout, int bias);
void test_head(dit_ops *o, int64_t c, int64_t tf, int64_t th, int64_t tw, int64_t pt, int64_t ph,
               int64_t pw, int64_t dim, int layout);
/* the same with e a table of one row per mod_rows tokens (0: one vector) */
void test_head_tab(dit_ops *o, int64_t c, int64_t tf, int64_t th, int64_t tw, int64_t pt,
                   int64_t ph, int64_t pw, int64_t dim, int layout, int64_t mod_rows);
/* o [rows, heads hd] times 2 sigmoid of each head's gate logit */
void test_head_gate(dit_ops *o, int64_t rows, int64_t heads, int64_t hd);
/* a slab vector added to rows [r0, r0 + rows) of x [n, ld]; CPU backends only */
void test_add_rows(dit_ops *o, int64_t n, int64_t ld, int64_t r0, int64_t rows, int64_t dim,
                   int layout);
void test_cfg(dit_ops *o, int64_t n, float scale);
void test_copy2d(dit_ops *o, int64_t count, int64_t len, int64_t src_off, int64_t src_ld,
                 int64_t dst_off, int64_t dst_ld);
void test_lincomb(dit_ops *o, int64_t n, int nterms, int self);
/* xfer brings 2 buffers to the device's memory node, leaving the host data as it was. */
void test_xfer(dit_ops *o);

/* The cases of test_opencl_ops, in the groups its kernel sets run: */
void ops_cases_gemm(dit_ops *o);       /* linear (fp32 and bf16 weights), text and patch
                                          embeddings, head */
void ops_cases_time_embed(dit_ops *o); /* time embedding */
void ops_cases_fp64(dit_ops *o);       /* layernorm, qk_norm, lincomb: float64 reductions */
void ops_cases_other(dit_ops *o);      /* attention, residual, copy2d, head_gate,
                                          add_rows (CPU), cfg, xfer */

#endif
