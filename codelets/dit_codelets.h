/* StarPU codelets, one per op. Each wraps the plain kernel of its backend
 * (codelets/cpu/) and carries a history-based performance model and a name that
 * shows in traces. Arguments travel as one struct per op (STARPU_CL_ARGS); its first
 * member, fp, holds the sizes that determine the cost and is what the performance
 * model's footprint hashes.
 *
 * Buffers are StarPU vectors of float (the rope table: of double); tensors inside a
 * buffer are addressed by element offsets given in the arguments. A weight slab is
 * one buffer holding every tensor of a block (or of the non-block weights). */
#ifndef DIT_CODELETS_H
#define DIT_CODELETS_H

#include <pthread.h>
#include <stdint.h>

#include <starpu.h>

#include "config.h"
#include "dit_cpu.h"
#include "dit_wdt.h"
#ifdef DIT_HAVE_CUDA
#include <starpu_cublas_v2.h>

#include "dit_cuda.h"
#include "dit_cudnn.h"
#endif

typedef struct dit_fp {
	int64_t v[4];
} dit_fp;

/* linear: y[m, n] = act(x[m, k] . W[n, k]^T + b[n])
 * buffers: 0 x (R), 1 slab (R), 2 y (W), 3 scratch (only with narrow weights or bf16
 * activations): the CPU widens W to fp32 there a tile at a time, CUDA narrows x to
 * bf16 there for the tensor cores (and widens compact weights to bf16 beside it).
 * W is the tensor at slot w_off of the slab in dtype wdt (dit_wdt.h), from its row
 * w_row0 (dit_linear_w); an f8 tensor's scale is slot s_off (0: none); b fp32. */
typedef struct dit_linear_args {
	dit_fp fp; /* m, n, k, act */
	int64_t m, n, k, ldx, ldy;
	int64_t x_off, y_off, w_off, b_off; /* b_off < 0: no bias */
	int64_t w_row0;                     /* W's first row inside the tensor at w_off */
	int64_t s_off; /* the f8 scale's slot (0: none; a scale follows its data, never slot 0) */
	int act;
	int wdt; /* dit_wdt */
} dit_linear_args;

/* The buffers of a linear task: 4, its scratch last, with narrow weights or bf16
 * activations in or out (CUDA's fp32 copies of them), else 3. */
static inline int dit_linear_nbuf(int wdt, int x_bf16, int y_bf16)
{
	return wdt != DIT_WDT_F32 || x_bf16 || y_bf16 ? 4 : 3;
}

/* W's first element (row w_row0 of the tensor at w_off) in slab, on any node. */
static inline const void *dit_linear_w(const dit_linear_args *a, const float *slab)
{
	return (const char *)(slab + a->w_off) + dit_wdt_data_bytes(a->wdt, a->w_row0 * a->k);
}

/* Floats of the linear scratch for GEMMs of at most rows rows and inner size at most
 * kmax: a bf16 copy of up to DIT_LINEAR_TILE_ROWS rows of x (CUDA), which also holds
 * a CPU weight tile of half as many rows. */
#define DIT_LINEAR_TILE_ROWS 4096
static inline int64_t dit_linear_scratch(int64_t rows, int64_t kmax)
{
	int64_t r = rows < DIT_LINEAR_TILE_ROWS ? rows : DIT_LINEAR_TILE_ROWS;
	return (r + 1) / 2 * kmax;
}

/* layernorm: y = LN(x) [* weight + bias] [* (1 + scale) + shift]
 * buffers: 0 x (R), 1 y (W), 2 slab (R), 3 modulation vector (R, only when mod)
 * With rms, LN(x) is the RMS normalisation of rms_norm without weight, x /
 * sqrt(mean(x^2) + eps) (no mean subtracted; LTX-2), the rest unchanged.
 * with mod: shift = slab[shift_off..] + vec[vshift_off..], scale likewise.
 * The modulation buffer may hold a table of rows mod_ld floats apart (Wan2.2
 * per-token timesteps, per-frame AdaLN): row r of x [rows, dim] uses table row
 * tr = (row0 + r) / mod_rows, shift[j] = slab[shift_off + j] + vec[tr * mod_ld + vshift_off + j]
 * (summed in fp32 first), scale likewise; mod_rows <= 0 or mod_ld == 0: every row
 * uses row 0 (one vector). */
typedef struct dit_layernorm_args {
	dit_fp fp; /* rows, dim */
	int64_t rows, dim;
	float eps;
	int affine, mod;
	int64_t w_off, b_off;
	int64_t shift_off, scale_off, vshift_off, vscale_off;
	int64_t mod_ld;   /* floats between table rows of buffer 3 (0: one vector) */
	int64_t mod_rows; /* rows of x per table row (<= 0: one vector) */
	int64_t row0;     /* x is a row tile: its row 0 is row row0 of the table's rows */
	int rms;          /* 1: x / sqrt(mean(x^2) + eps) in place of LN(x) (0: LayerNorm) */
	int64_t x_off;    /* floats into buffer 0 where x's row 0 is (a token chunk of x) */
} dit_layernorm_args;

/* qk_norm: RMSNorm over the whole row of a column slice, then optionally RoPE.
 * buffers: 0 t (RW), 1 slab (R), 2 rope table (R, only when rope)
 * t[r, 0..dim) at t_off + r * ld; weight slab[w_off..] [dim]. With group > 0 the RMS
 * is taken over each run of group consecutive features instead (group = head_dim:
 * per-head q/k norm), weight [group] shared by every run; group must divide dim
 * (and be even with rope). RoPE after it is unchanged.
 * With rope_split the RoPE is LTX-2's "split" one (dit_cpu_rope_split_apply): the
 * pairs (h*hd + j, h*hd + j + hd/2), j < hd/2 = head_dim/2, and a table per head
 * [rows, heads, hd/2, 2] of doubles, row r head h pair j at rope_off + ((r * heads +
 * h) * (hd/2) + j) * 2 (cos, sin); group must then be 0 or a multiple of head_dim. */
typedef struct dit_qknorm_args {
	dit_fp fp; /* rows, dim, rope */
	int64_t rows, dim, ld, t_off, w_off;
	int64_t heads, head_dim;
	float eps;
	int rope;
	int64_t group;    /* features per RMS (0: the whole dim) */
	int64_t rope_off; /* doubles into the rope table of t's row 0 (a row tile's) */
	int rope_split;   /* 1: split RoPE, a table per head (0: interleaved pairs) */
	int rope_shared;  /* split: one table for all heads, [rows, hd/2, 2] (Cosmos'); the
	                     op then runs head by head, so group must be head_dim */
} dit_qknorm_args;

/* attention: o = softmax(q k^T / sqrt(hd)) v per head
 * buffers (self):  0 qkv (R), 1 o (W), 2 scratch
 * buffers (cross): 0 q (R), 1 kv (R), 2 o (W), 3 scratch
 * With lk_valid >= 1, only keys [0, lk_valid) of the lk take part (a padded text
 * context, padded tokens): the result is attention over those keys alone, and the
 * other rows of k and v are never read. 0 (or >= lk): all lk keys. */
typedef struct dit_attention_args {
	dit_fp fp; /* lq, lk, heads, hd */
	int64_t lq, lk, heads, hd;
	int64_t q_off, ldq, k_off, v_off, ldk; /* k and v share a stride */
	int64_t ldo;
	int cross;
	int64_t lk_valid; /* keys that take part (0: all lk) */
} dit_attention_args;

/* The number of keys an attention task visits: lk_valid when in [1, lk), else lk. */
static inline int64_t dit_attention_keys(const dit_attention_args *a)
{
	return a->lk_valid > 0 && a->lk_valid < a->lk ? a->lk_valid : a->lk;
}

/* A row tile of rows rows whose row 0 is row row0 of the whole, against a modulation
 * table (mod_ld, mod_rows as in layernorm): rows [0, *head) all use the table row at
 * *head_off, rows [*head, rows) start on a table row boundary, the table row at
 * *rest_off, mod_rows rows each. Without a table (or at row0 0) *head is 0 and
 * *rest_off 0. A codelet makes at most two kernel calls of this, so the kernels need
 * not know tiles. */
static inline void dit_mod_split(int64_t row0, int64_t rows, int64_t mod_ld, int64_t mod_rows,
                                 int64_t *head, int64_t *head_off, int64_t *rest_off)
{
	*head = *head_off = *rest_off = 0;
	if (mod_rows <= 0 || mod_ld == 0 || row0 <= 0)
		return;
	int64_t phase = row0 % mod_rows;
	*head_off = row0 / mod_rows * mod_ld;
	*head = phase ? (rows < mod_rows - phase ? rows : mod_rows - phase) : 0;
	*rest_off = (row0 + *head) / mod_rows * mod_ld;
}

/* The row spans of a tile (dit_mod_split) for a codelet's kernel calls: span s covers
 * rows [r0, r0 + n) and reads the table from toff with mod_ld, mod_rows (0, 0: one
 * vector). Returns the number of spans (0 to 2). */
typedef struct dit_mod_span {
	int64_t r0, n, toff, mod_ld, mod_rows;
} dit_mod_span;

static inline int dit_mod_spans(int64_t row0, int64_t rows, int64_t mod_ld, int64_t mod_rows,
                                dit_mod_span sp[2])
{
	int64_t head, hoff, roff;
	dit_mod_split(row0, rows, mod_ld, mod_rows, &head, &hoff, &roff);
	int n = 0;
	if (head > 0)
		sp[n++] = (dit_mod_span){0, head, hoff, 0, 0};
	if (rows - head > 0)
		sp[n++] = (dit_mod_span){head, rows - head, roff, mod_ld, mod_rows};
	return n;
}

/* residual: x += y * (slab[gate_off..] + vec[vgate_off..]) or x += y (gate_off < 0)
 * buffers: 0 x (RW), 1 y (R), 2 slab (R), 3 modulation vector (R)
 * As in layernorm the modulation buffer may be a table: row r of x [rows, dim] uses
 * gate[j] = slab[gate_off + j] + vec[((row0 + r) / mod_rows) * mod_ld + vgate_off + j];
 * mod_rows <= 0 or mod_ld == 0: every row uses row 0. */
typedef struct dit_residual_args {
	dit_fp fp; /* rows, dim */
	int64_t rows, dim, gate_off, vgate_off;
	int64_t mod_ld;   /* floats between table rows of buffer 3 (0: one vector) */
	int64_t mod_rows; /* rows of x per table row (<= 0: one vector) */
	int64_t row0;     /* x is a row tile: its row 0 is row row0 of the table's rows */
	int64_t x_off;    /* floats into buffer 0 where x's row 0 is (a token chunk of x) */
} dit_residual_args;

/* head_gate: o[r * ldo + o_off + h * hd + j] *= 2 * sigmoid(gl[r * ldg + g_off + h]) for
 * r < rows, h < heads, j < hd (LTX-2's gated attention: the output of each head times
 * 2 sigmoid of its gate logit). The gate is computed in float64, 2 / (1 + exp(-x)),
 * rounded once, and multiplies in fp32 (OpenCL devices without float64: in float).
 * buffers: 0 o (RW), 1 logits (R) */
typedef struct dit_head_gate_args {
	dit_fp fp; /* rows, heads, hd */
	int64_t rows, heads, hd, ldo, o_off, ldg, g_off;
} dit_head_gate_args;

/* time_embed: e = time_embedding(sinusoid(t)), e0 = time_projection(e)
 * e0 has P = nproj * D outputs (0: 6 D, Wan; LTX-2: 6 or 9); "6D" below is P.
 * buffers: 0 globals (R), 1 e [D] (W), 2 e0 [6D] (W), 3 scratch [freq + D];
 *          with nt > 0: 1 e [rows, D] (W or RW), 2 e0 [rows, 6D] (W or RW),
 *          3 scratch [nt, freq + D] (sinusoids [nt, freq], then hidden rows [nt, D])
 * With nt > 0 the task embeds the nt timesteps ts[0 .. nt) (Wan2.2 per-token
 * timesteps, per-frame AdaLN) into rows row0 .. row0 + nt - 1 of e [rows, D] and e0
 * [rows, 6D] (buffers 1 and 2 hold at least row0 + nt rows; the codelet takes its
 * access modes from the task: RW keeps the other rows); scratch holds
 * dit_time_embed_scratch(nt, freq_dim, D) floats. Row i is the chain of a task with
 * nt 0 and t = ts[i], on the same shapes (m = 1 GEMMs, row by row): on the CPU and
 * OpenCL the same bytes. nt 0: t into row 0, as before. */
#define DIT_TIME_MAX_T 64
typedef struct dit_time_embed_args {
	dit_fp fp; /* dim, freq_dim, nt */
	int64_t dim, freq_dim;
	double t;
	int64_t w0, b0, w2, b2, wp, bp;
	int64_t nt;                /* timesteps in ts (0: the one t) */
	int64_t row0;              /* the first row of e and e0 written (with nt > 0) */
	double ts[DIT_TIME_MAX_T]; /* the timesteps, nt <= DIT_TIME_MAX_T */
	int64_t nproj;             /* e0 rows of nproj * dim floats (0: 6) */
} dit_time_embed_args;

/* Floats of a row of e0: nproj * dim (nproj 0: 6 dim). */
static inline int64_t dit_time_embed_proj(const dit_time_embed_args *a)
{
	return (a->nproj > 0 ? a->nproj : 6) * a->dim;
}

/* Floats of the time_embed scratch for nt timesteps (nt 0: one). */
static inline int64_t dit_time_embed_scratch(int64_t nt, int64_t freq_dim, int64_t dim)
{
	return (nt > 0 ? nt : 1) * (freq_dim + dim);
}

/* text_embed: ctx = Linear2(GELU_tanh(Linear1(context))) on the padded context
 * buffers: 0 globals (R), 1 context [len, text_dim] (R), 2 ctx [len, D] (W),
 *          3 scratch [len, D] */
typedef struct dit_text_embed_args {
	dit_fp fp; /* len, text_dim, dim */
	int64_t len, text_dim, dim;
	int64_t w0, b0, w2, b2;
} dit_text_embed_args;

/* patch_embed: x = patchify(latent) . Wp^T + bp (no bp with b_off < 0: Cosmos)
 * buffers: 0 globals (R), 1 latent [C,F,H,W] (R), 2 x [L, D] (W), 3 scratch [L, C*P] */
typedef struct dit_patch_embed_args {
	dit_fp fp; /* tokens, c*P, dim */
	int64_t c, f, h, w, pt, ph, pw, dim;
	int64_t w_off, b_off; /* b_off < 0: no bias */
} dit_patch_embed_args;

/* head: v = unpatchify(Linear(LN(x) * (1 + scale) + shift)), shift = head.modulation[0]
 * + e, scale = head.modulation[1] + e (globals[mod_off..], [2, D]).
 * buffers: 0 globals (R), 1 x [L, D] (R), 2 e [D] (R), 3 out [C,F,H,W] (W),
 *          4 scratch [L, D + C*P]
 * e may be a table [rows, >= D] of rows mod_ld floats apart: token l uses row
 * l / mod_rows (e + (l / mod_rows) * mod_ld); mod_rows <= 0 or mod_ld == 0: e [D]
 * for every token. */
typedef struct dit_head_args {
	dit_fp fp;                              /* tokens, dim, c*P */
	int64_t c, tf, th, tw, pt, ph, pw, dim; /* token grid tf x th x tw */
	float eps;
	int64_t w_off, b_off, mod_off;
	int64_t mod_ld;   /* floats between rows of e (0: one vector) */
	int64_t mod_rows; /* tokens per row of e (<= 0: one vector) */
	int64_t chunk;    /* tokens normed a call (0: all): the scratch holds chunk x D */
} dit_head_args;

/* Tokens the head norms a call, and the floats of its scratch: the normed chunk [chunk,
 * D] and the projected tokens [tokens, C*P]. */
static inline int64_t dit_head_chunk(const dit_head_args *a, int64_t tokens)
{
	return a->chunk > 0 && a->chunk < tokens ? a->chunk : tokens;
}
static inline int64_t dit_head_scratch(int64_t tokens, int64_t dim, int64_t cp, int64_t chunk)
{
	return (chunk > 0 && chunk < tokens ? chunk : tokens) * dim + tokens * cp;
}

/* copy2d: dst[dst_off + i * dst_ld + j] = src[src_off + i * src_ld + j] for i < count,
 * j < len, bit for bit (NaN payloads too): concatenating the channels of a latent
 * (count 1), re-inserting the first latent frame of an image latent into every
 * channel (count = C, len = H*W, ld = F*H*W).
 * buffers: 0 dst (RW: the rest of dst is kept), 1 src (R) */
typedef struct dit_copy2d_args {
	dit_fp fp; /* count, len */
	int64_t count, len, src_off, src_ld, dst_off, dst_ld;
} dit_copy2d_args;

/* cfg: out = uncond + scale * (cond - uncond)
 * buffers: 0 cond (R), 1 uncond (R), 2 out (W) */
typedef struct dit_cfg_args {
	dit_fp fp; /* n */
	int64_t n;
	float scale;
} dit_cfg_args;

/* lincomb: buf[dst] = sum coef_i * src_i
 * buffers: 0 dst (W, or RW when it is also a source), then the other sources (R).
 * src[i] names the buffer index (0 for dst itself). */
#define DIT_LINCOMB_MAX 4
typedef struct dit_lincomb_args {
	dit_fp fp; /* n, nterms */
	int64_t n;
	int nterms;
	int src[DIT_LINCOMB_MAX];
	double coef[DIT_LINCOMB_MAX];
} dit_lincomb_args;

/* check_finite: records where a buffer first holds NaN or Inf.
 * buffers: 0 the buffer (R) */
typedef struct dit_finite_guard {
	pthread_mutex_t lock;
	int found;
	int step, pass;
	int64_t block; /* -1: the head's output */
	int64_t index; /* first bad element */
} dit_finite_guard;

/* Keeps the earliest (step, block, pass) reported. */
void dit_finite_guard_record(dit_finite_guard *g, int step, int64_t block, int pass, int64_t index);

typedef struct dit_check_finite_args {
	dit_fp fp; /* n */
	int64_t n;
	int step, pass;
	int64_t block;
	dit_finite_guard *guard;
} dit_check_finite_args;

/* sinusoid: out [dim] = (cos(t w_k), sin(t w_k)), w_k = 10000^(-k / (dim/2)), in
 * float64 then rounded (the timestep and guidance sinusoids of HunyuanVideo).
 * buffers: 0 out (W). CPU only: a vector. */
typedef struct dit_sinusoid_args {
	dit_fp fp; /* dim */
	int64_t dim;
	double t;
} dit_sinusoid_args;

/* add_rows: x[(r0 + r) * ld + j] += v[v_off + r * v_ld + j] for r < rows, j < dim
 * (LTX-2.5's keyframe embedding added to the first latent frame's tokens, v_ld 0;
 * Wan2.1 FLF2V's positions added to the image features, a table of rows).
 * buffers: 0 x (RW), 1 v (R: a weight slab). CPU only: a few rows once per step. */
typedef struct dit_add_rows_args {
	dit_fp fp; /* rows, dim */
	int64_t r0, rows, dim, ld, v_off;
	int64_t v_ld; /* floats between v's rows (0: one vector for every row) */
} dit_add_rows_args;

/* act: x[0..n) = act(x) in place.  buffers: 0 x (RW). CPU only: small vectors. */
typedef struct dit_act_args {
	dit_fp fp; /* n, act */
	int64_t n;
	int act;
} dit_act_args;

/* row_mean: out [dim] = mean of rows [0, rows) of x [>= rows, dim], in float64.
 * buffers: 0 x (R), 1 out (W). CPU only (once per run). */
typedef struct dit_row_mean_args {
	dit_fp fp; /* rows, dim */
	int64_t rows, dim;
} dit_row_mean_args;

/* unpatchify: out [C, f, h, w] from tok [tf th tw, C pt ph pw], features in
 * (pt, ph, pw, C) order (Wan) or, with c_outer, (C, pt, ph, pw) (HunyuanVideo).
 * buffers: 0 tok (R), 1 out (W). CPU only: latent-sized. */
typedef struct dit_unpatchify_args {
	dit_fp fp; /* tokens, C P */
	int64_t c, tf, th, tw, pt, ph, pw;
	int c_outer;
} dit_unpatchify_args;

extern struct starpu_codelet dit_cl_sinusoid;
extern struct starpu_codelet dit_cl_act;
extern struct starpu_codelet dit_cl_row_mean;
extern struct starpu_codelet dit_cl_unpatchify;
extern struct starpu_codelet dit_cl_add_rows;
extern struct starpu_codelet dit_cl_head_gate;
extern struct starpu_codelet dit_cl_linear;
extern struct starpu_codelet dit_cl_layernorm;
extern struct starpu_codelet dit_cl_qk_norm;
extern struct starpu_codelet dit_cl_attention;
extern struct starpu_codelet dit_cl_residual;
extern struct starpu_codelet dit_cl_time_embed;
extern struct starpu_codelet dit_cl_text_embed;
extern struct starpu_codelet dit_cl_patch_embed;
extern struct starpu_codelet dit_cl_head;
extern struct starpu_codelet dit_cl_cfg;
extern struct starpu_codelet dit_cl_lincomb;
extern struct starpu_codelet dit_cl_copy2d;
/* No-op that reads its buffers where it runs: a weight transfer as a task. */
extern struct starpu_codelet dit_cl_xfer;
extern struct starpu_codelet dit_cl_check_finite;

#if defined(DIT_SIMGRID) && !defined(DIT_HAVE_CUDA)
/* ditstar-sim: what the codelets with a CUDA kernel in a CUDA build name as their CUDA
 * function, so that simulated CUDA workers can take them (SimGrid never calls it). */
void dit_sim_kernel(void *buffers[], void *cl_arg);
#endif

/* Footprint of a task whose cl_arg starts with a dit_fp. */
uint32_t dit_codelet_footprint(struct starpu_task *task);
size_t dit_codelet_size_base(struct starpu_task *task, unsigned nimpl);

#ifdef DIT_HAVE_CUDA
/* A CUDA codelet's kernel failed: a launch or cuBLAS error is a bug or a broken
 * device, not bad input, so it stops the process with the op and the reason. */
void dit_cuda_fail(const char *op, int rc);
#define DIT_CUDA_CHECK(op, call)                                                                   \
	do {                                                                                       \
		int rc_ = (call);                                                                  \
		if (rc_ != 0)                                                                      \
			dit_cuda_fail((op), rc_);                                                  \
	} while (0)

/* The calling CUDA worker's library path (codelets/cuda_glue.c, dit_cuda_libs.h): 1
 * when the library enqueued the op, 0 when the caller runs its own kernel (the reason
 * counted); a library error stops the process as dit_cuda_fail. */
int dit_cuda_lib_attention(cudaStream_t s, void *o, const void *q, const void *k, const void *v,
                           const dit_sdpa_shape *sh, float scale);
int dit_cuda_lib_linear(cudaStream_t s, void *y, int y_bf16, int64_t ldy, const void *x, int x_bf16,
                        int64_t ldx, const void *w, int w_bf16, const float *b, int64_t m,
                        int64_t n, int64_t k, dit_act act);
void dit_cuda_wtile_free(void);
#endif

/* A CUDA worker's tile of compact weights widened to bf16 (codelets/linear.c) is
 * DIT_CUDA_WTILE_BYTES (dit_cuda_mem.h), allocated at its first GEMM of compact
 * weights, outside StarPU's memory manager (as the libraries' workspaces: the planner
 * counts them); dit_cuda_wtile_free frees the calling worker's. */
#include "dit_cuda_mem.h"

/* rope_split: the split RoPE table (dit_cpu_rope_split_table) of positions pos.
 * buffers: 0 pos [>= naxes, L, 2] doubles (R), 1 table [L, heads, inner/heads/2, 2]
 * doubles (W). CPU only. */
typedef struct dit_rope_split_args {
	dit_fp fp; /* L, inner, naxes */
	int64_t L, inner, heads;
	int naxes;
	double theta;
	double max_pos[3];
} dit_rope_split_args;

/* ltx_positions: LTX-2's default token positions (dit_cpu_ltx_*_positions) of the
 * video grid f x h x w (audio 0) or the t audio tokens (audio 1).
 * buffers: 0 pos doubles (W). CPU only. */
typedef struct dit_positions_args {
	dit_fp fp; /* video tokens, audio tokens */
	int64_t f, h, w, t;
	int64_t stride[3];
	double fps;
	int audio;
} dit_positions_args;

/* modulate: y [rows, dim] = x * (1 + scale) + shift, shift = slab[shift_off..] (+
 * vec[vshift_off..] when vec), scale likewise: a modulated input without a norm (LTX-2.3's
 * text keys and values). buffers: 0 x (R), 1 y (W), 2 slab (R), 3 vec (R, when vec).
 * CPU only. */
typedef struct dit_modulate_args {
	dit_fp fp; /* rows, dim */
	int64_t rows, dim, shift_off, scale_off, vshift_off, vscale_off;
	int vec;
} dit_modulate_args;

/* rope_cosmos: Cosmos' split RoPE table (dit_cpu_rope_cosmos_table) of the t x h x w grid.
 * buffers: 0 table [t h w, heads, head_dim/2, 2] doubles (W). CPU only. */
typedef struct dit_rope_cosmos_args {
	dit_fp fp; /* tokens, head_dim */
	int64_t t, h, w, head_dim, heads;
	double ratio[3];
} dit_rope_cosmos_args;

extern struct starpu_codelet dit_cl_rope_split;
extern struct starpu_codelet dit_cl_rope_cosmos;
extern struct starpu_codelet dit_cl_ltx_positions;
extern struct starpu_codelet dit_cl_modulate;

/* guide_step: one x0-guided Euler step (dit_cpu_guide_step) of x over the velocities of
 * the passes present (have[k]: cond, uncond, perturbed, isolated modality).
 * buffers: 0 x (RW), then one velocity (R) per pass present, in that order, then with
 * x0 the guided x0 (W, --preview), then with cond the clean latent [c_count, c_len] (R).
 * CPU only. */
typedef struct dit_guide_args {
	dit_fp fp; /* n */
	int64_t n;
	double sigma, sigma_next, cfg, stg, rescale, modality;
	int have[4];
	int x0;
	/* conditioned elements (dit_guide_cond): c_count runs of c_len at c_off, c_ld
	 * apart, denoise mask c_mask; cond 0: none */
	int cond;
	int64_t c_off, c_len, c_ld, c_count;
	double c_mask;
} dit_guide_args;

extern struct starpu_codelet dit_cl_guide_step;

/* Pointer to the floats of buffer i of a CPU task (of a CUDA task: on the GPU): a
 * vector, or a matrix (the column tile of an activation, tasks/dit_tiles.h, whose
 * rows are the activation's row stride apart: the ops take that stride as an
 * argument). Every interface begins with its id. */
static inline float *dit_buf_f32(void *buf)
{
	if (*(const enum starpu_data_interface_id *)buf == STARPU_MATRIX_INTERFACE_ID)
		return (float *)STARPU_MATRIX_GET_PTR(buf);
	return (float *)STARPU_VECTOR_GET_PTR(buf);
}
#define DIT_BUF_F32(buffers, i) dit_buf_f32((buffers)[i])

/* The row stride of buffer buf: a matrix's own (on a device StarPU may hold a copy of
 * a column tile packed, its stride its width), else ld. */
static inline int64_t dit_buf_ld(void *buf, int64_t ld)
{
	if (*(const enum starpu_data_interface_id *)buf == STARPU_MATRIX_INTERFACE_ID)
		return (int64_t)STARPU_MATRIX_GET_LD(buf);
	return ld;
}
/* Whether buffer buf holds bf16 activations (elements of two bytes: --act-dtype bf16,
 * dit_grid.act_bf16); its element offsets then count bf16 values. */
static inline int dit_buf_bf16(void *buf)
{
	if (*(const enum starpu_data_interface_id *)buf == STARPU_MATRIX_INTERFACE_ID)
		return STARPU_MATRIX_GET_ELEMSIZE(buf) == 2;
	return STARPU_VECTOR_GET_ELEMSIZE(buf) == 2;
}

/* Element off of an activation buffer, fp32 or bf16 (on a CUDA worker: a device
 * address). */
static inline void *dit_buf_at(void *buf, int64_t off)
{
	char *base = *(const enum starpu_data_interface_id *)buf == STARPU_MATRIX_INTERFACE_ID
	                 ? (char *)STARPU_MATRIX_GET_PTR(buf)
	                 : (char *)STARPU_VECTOR_GET_PTR(buf);
	return base + off * (dit_buf_bf16(buf) ? 2 : (int64_t)sizeof(float));
}

/* Rows [rows, width] of an activation buffer as fp32 for a CPU kernel (codelets/stage.c):
 * p, ld the buffer's own floats when it is fp32, else an fp32 copy of its bf16 rows
 * (widened when opened for reading, narrowed back when closed after writing). */
typedef struct dit_f32rows {
	float *p;
	int64_t ld;
	uint16_t *bf; /* the bf16 rows behind p, bld apart (NULL: p is the buffer) */
	int64_t bld, rows, width;
} dit_f32rows;

/* Opens rows rows of width values of buffer buf from element off, ld apart; read:
 * widen them (else p's values are undefined until the kernel writes them). op names
 * the codelet in the message when the host is out of memory (which aborts, as a
 * CUDA launch failure does). */
void dit_f32rows_open(dit_f32rows *r, void *buf, int64_t off, int64_t ld, int64_t rows,
                      int64_t width, int read, const char *op);
/* Closes r; written: narrow p's values into the bf16 rows first. */
void dit_f32rows_close(dit_f32rows *r, int written);
/* Rows a CPU codelet stages at once (the fp32 copies of bf16 activations). */
#define DIT_STAGE_ROWS 256

/* Whether any of the first nbuf buffers is bf16 (dit_bufs_bf16); the rows of a block a
 * CPU row-wise op over n rows takes at once, those buffers its activations (dit_stage_rows):
 * all n when none is bf16, else DIT_STAGE_ROWS rounded up
 * to whole rows of a modulation table of mod_rows rows (mod_ld 0: none). */
static inline int dit_bufs_bf16(void *buffers[], int nbuf)
{
	int bf = 0;
	for (int i = 0; i < nbuf; i++)
		bf |= dit_buf_bf16(buffers[i]);
	return bf;
}

static inline int64_t dit_stage_rows(void *buffers[], int nbuf, int64_t n, int64_t mod_ld,
                                     int64_t mod_rows)
{
	if (!dit_bufs_bf16(buffers, nbuf) || n < 1)
		return n > 0 ? n : 1;
	int64_t blk = DIT_STAGE_ROWS;
	if (mod_rows > 0 && mod_ld != 0)
		blk = (blk + mod_rows - 1) / mod_rows * mod_rows;
	return blk;
}
/* Whether linear task's buffers hold its scratch (dit_linear_nbuf). */
static inline int dit_linear_has_scratch(const dit_linear_args *a, void *buffers[])
{
	return dit_linear_nbuf(a->wdt, dit_buf_bf16(buffers[0]), dit_buf_bf16(buffers[2])) == 4;
}

#define DIT_BUF_F64(buffers, i) ((double *)STARPU_VECTOR_GET_PTR((buffers)[i]))

/* Declares the history-based performance model of an op. */
#define DIT_PERFMODEL(var, sym)                                                                    \
	static struct starpu_perfmodel var = {.type = STARPU_HISTORY_BASED,                        \
	                                      .symbol = (sym),                                     \
	                                      .footprint = dit_codelet_footprint,                  \
	                                      .size_base = dit_codelet_size_base}

#endif
