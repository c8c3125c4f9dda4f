/* Plain CUDA kernels of ditstar, the GPU twins of the CPU kernels in codelets/cpu
 * (dit_cpu.h): each dit_cuda_<op> computes the same function as dit_cpu_<op>. No
 * StarPU here.
 *
 * Conventions (as in codelets/cpu, llm.c style):
 * - outputs first, then inputs, then weights, then sizes. Matrices are row-major,
 *   "ld" is the row stride in elements; linear weights are [out=n, in=k].
 * - every function is host-callable from C, only enqueues work on the given stream
 *   (no device synchronisation, no default stream, no allocation: all memory is
 *   passed in; the one exception is dit_cuda_first_nonfinite, a debugging op that
 *   synchronises its stream), and returns 0 on success, else the cudaError_t of the
 *   first failure, or 1000 + the cublasStatus_t of a failed cuBLAS call.
 * - results are bit-identical from run to run: no atomics in reductions (fixed
 *   shared-memory / warp-shuffle trees), launch configurations depend only on the
 *   sizes (and on pointer alignment, which picks vector or scalar accesses).
 * - elementwise fp32 arithmetic whose CPU counterpart rounds every multiply and add
 *   separately uses __fmul_rn/__fadd_rn (no FMA contraction), so that it matches the
 *   CPU build (-ffp-contract=off) bit for bit where the CPU order is reproduced.
 * - bf16 is stored as uint16_t: the upper half of an IEEE float, rounded to nearest
 *   even, NaN kept NaN.
 */
#ifndef DIT_CUDA_H
#define DIT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "dit_cpu.h" /* dit_act */

#ifdef __cplusplus
extern "C" {
#endif

#define DIT_CUDA_CUBLAS_ERR_BASE 1000 /* returned: 1000 + cublasStatus_t */

/* y[m, n] = act(x[m, k] . w[n, k]^T + b[n]); b may be NULL.
 * w_bf16 = 1: w is bf16 [n, k]; x is converted to bf16 into scratch in row tiles of at
 *   most scratch_elems / k rows (scratch_elems >= k required, else
 *   cudaErrorInvalidValue), each tile one cublasGemmEx (bf16 A and B, fp32 C,
 *   CUBLAS_COMPUTE_32F).
 * w_bf16 = 0: w is fp32; one cublasGemmEx, all fp32, CUBLAS_COMPUTE_32F_PEDANTIC (no
 *   TF32); scratch unused.
 * Then one fused kernel adds b and applies act in place on y. The handle's stream
 * must already be s and its pointer mode host (the default); its math mode and
 * workspace are left alone. Needs ldx >= k, ldy >= n; sizes must fit in int. */
int dit_cuda_linear(cublasHandle_t h, cudaStream_t s, float *y, int64_t ldy, const float *x,
                    int64_t ldx, const void *w, int w_bf16, const float *b, int64_t m, int64_t n,
                    int64_t k, dit_act act, uint16_t *scratch, size_t scratch_elems);

/* As dit_cpu_layernorm: LayerNorm (float64 statistics, biased variance, rounded once)
 * then optional fp32 affine and modulation * (1 + (scale_a + scale_b)) + (shift_a +
 * shift_b), shift_b and scale_b tables of rows mod_ld floats apart read at row
 * r / mod_rows (mod_rows <= 0 or mod_ld == 0: row 0). One CTA per row, fixed
 * reduction order. y may alias x (same ld). */
int dit_cuda_layernorm(cudaStream_t s, float *y, int64_t ldy, const float *x, int64_t ldx,
                       int64_t rows, int64_t dim, float eps, const float *weight, const float *bias,
                       const float *shift_a, const float *shift_b, const float *scale_a,
                       const float *scale_b, int64_t mod_ld, int64_t mod_rows);

/* The same with the RMS normalisation in place of LayerNorm, as dit_cpu_layernorm_rms. */
int dit_cuda_layernorm_rms(cudaStream_t s, float *y, int64_t ldy, const float *x, int64_t ldx,
                           int64_t rows, int64_t dim, float eps, const float *weight,
                           const float *bias, const float *shift_a, const float *shift_b,
                           const float *scale_a, const float *scale_b, int64_t mod_ld,
                           int64_t mod_rows);

/* x[r, :dim] = rmsnorm(x[r, :dim]) * weight (as dit_cpu_rmsnorm; weight may be NULL),
 * then, when cs != NULL, RoPE as dit_cpu_rope_apply with the float64 table cs
 * [rows, head_dim] (see dit_cpu_rope_table), rotation in float64; fused, in place.
 * With cs, dim must be heads * head_dim and head_dim even. group > 0: the RMS of each
 * run of group features instead, weight [group] shared (as dit_cpu_rmsnorm_group);
 * group must divide dim (and be even with cs), else cudaErrorInvalidValue; one CTA
 * per run. group 0: the whole row. */
int dit_cuda_rmsnorm_rope(cudaStream_t s, float *x, int64_t ldx, int64_t rows, int64_t dim,
                          float eps, const float *weight, const double *cs, int64_t heads,
                          int64_t head_dim, int64_t group);

/* The same with the split RoPE of dit_cpu_rope_split_apply: pairs (j, j + head_dim/2)
 * of each head, cs [rows, heads, head_dim/2, 2]; group must be 0 or a multiple of
 * head_dim (else cudaErrorInvalidValue). */
int dit_cuda_rmsnorm_rope_split(cudaStream_t s, float *x, int64_t ldx, int64_t rows, int64_t dim,
                                float eps, const float *weight, const double *cs, int64_t heads,
                                int64_t head_dim, int64_t group);

/* o = softmax(q k^T * scale) v per head, flash style (online softmax), nothing of size
 * lq x lk in memory. q [lq, heads*hd] (ldq), k, v [lk, heads*hd] (ldk, ldv), o [lq,
 * heads*hd] (ldo), fp32. hd in {16, 32, 64, 128} with q, k, v 16-byte aligned and
 * ldq, ldk, ldv multiples of 4: bf16 tensor cores (mma.sync m16n8k16, fp32
 * accumulation and softmax), where the device grants the kernel's shared memory (hd
 * 128 needs 102 KiB). Any other case with hd <= 256: fp32 kernel. lk == 0 gives o = 0.
 * cudaErrorInvalidValue for hd > 256. No scratch. */
int dit_cuda_attention(cudaStream_t s, float *o, int64_t ldo, const float *q, int64_t ldq,
                       const float *k, int64_t ldk, const float *v, int64_t ldv, int64_t lq,
                       int64_t lk, int64_t heads, int64_t hd, float scale);

/* x[r, :] += y[r, :] * (gate_a + gate_b)[dim] (pair summed in fp32 first);
 * gate_b == NULL: gate_a alone; gate_a == NULL: x += y. gate_b may be a table of rows
 * mod_ld floats apart read at row r / mod_rows (as dit_cpu_residual). */
int dit_cuda_residual(cudaStream_t s, float *x, int64_t ldx, const float *y, int64_t ldy,
                      int64_t rows, int64_t dim, const float *gate_a, const float *gate_b,
                      int64_t mod_ld, int64_t mod_rows);

/* o[r * ldo + h * hd + j] *= 2 / (1 + exp(-gl[r * ldg + h])), the gate in float64
 * rounded once, as dit_cpu_head_gate. */
int dit_cuda_head_gate(cudaStream_t s, float *o, int64_t ldo, const float *gl, int64_t ldg,
                       int64_t rows, int64_t heads, int64_t hd);

/* x[n] = act(x[n]) in place. */
int dit_cuda_act(cudaStream_t s, float *x, int64_t n, dit_act act);

/* out[freq_dim] as dit_cpu_timestep_embedding (float64 math, rounded to fp32). */
int dit_cuda_timestep_embedding(cudaStream_t s, float *out, double t, int64_t freq_dim);

/* As dit_cpu_patchify / dit_cpu_unpatchify. */
int dit_cuda_patchify(cudaStream_t s, float *tok, const float *x, int64_t c, int64_t f, int64_t h,
                      int64_t w, int64_t pt, int64_t ph, int64_t pw);
int dit_cuda_unpatchify(cudaStream_t s, float *y, const float *tok, int64_t c, int64_t fp,
                        int64_t hp, int64_t wp, int64_t pt, int64_t ph, int64_t pw);

/* out[n] = sum_i coef[i] * in[i][n], float64 accumulation in term order, rounded once;
 * nterms <= 4 (else cudaErrorInvalidValue); out may alias any in[i]. in and coef are
 * host arrays (of device pointers / values). */
int dit_cuda_lincomb(cudaStream_t s, float *out, int64_t n, int nterms, const float *const *in,
                     const double *coef);

/* dst[i * dst_ld + j] = src[i * src_ld + j] for i < count, j < len, as 32-bit words
 * (bit for bit), as dit_cpu_copy2d; the rows must not overlap. */
int dit_cuda_copy2d(cudaStream_t s, float *dst, int64_t dst_ld, const float *src, int64_t src_ld,
                    int64_t count, int64_t len);

/* out = uncond + scale * (cond - uncond), fp32 exactly as dit_cpu_cfg. out may alias
 * either input. */
int dit_cuda_cfg(cudaStream_t s, float *out, const float *cond, const float *uncond, int64_t n,
                 float scale);

/* Index of the first NaN/Inf of x[n], or -1, written to *first (host pointer);
 * synchronises s (a debugging op). d_tmp: device scratch of one int64. */
int dit_cuda_first_nonfinite(cudaStream_t s, const float *x, int64_t n, int64_t *d_tmp,
                             int64_t *first);

/* The ops of a block's activations with those stored in fp32 or bf16 (--act-dtype
 * bf16; a flag per buffer, pointers then to bf16 values and leading dimensions in
 * them), computed in fp32 as the functions above, every result rounded once to its
 * buffer's type.
 * linear: with bf16 weights a bf16 x goes to the tensor cores as it is and a bf16 y is
 * written by the GEMM (fp32 accumulation), then bias and activation in fp32; with fp32
 * weights bf16 rows go through fp32 copies in the scratch (scratch_elems / 2 floats,
 * a tile of rows of x and y at a time: else cudaErrorInvalidValue). */
int dit_cuda_linear_act(cublasHandle_t h, cudaStream_t s, void *y, int y_bf16, int64_t ldy,
                        const void *x, int x_bf16, int64_t ldx, const void *w, int w_bf16,
                        const float *b, int64_t m, int64_t n, int64_t k, dit_act act,
                        uint16_t *scratch, size_t scratch_elems);
/* dst [n] (bf16) = the n first elements of a compact weight matrix w of dtype wdt
 * (dit_wdt.h: DIT_WDT_F16, _F8_E4M3, _F8_E5M2 times the device scalar *scale (NULL: 1),
 * _Q8_0 with n a multiple of 32), each widened exactly to fp32 then rounded to bf16. */
int dit_cuda_wdt_to_bf16(cudaStream_t s, uint16_t *dst, const void *w, int wdt, const float *scale,
                         int64_t n);
int dit_cuda_layernorm_act(cudaStream_t s, void *y, int y_bf16, int64_t ldy, const void *x,
                           int x_bf16, int64_t ldx, int64_t rows, int64_t dim, float eps, int rms,
                           const float *weight, const float *bias, const float *shift_a,
                           const float *shift_b, const float *scale_a, const float *scale_b,
                           int64_t mod_ld, int64_t mod_rows);
int dit_cuda_rmsnorm_rope_act(cudaStream_t s, void *x, int x_bf16, int64_t ldx, int64_t rows,
                              int64_t dim, float eps, const float *weight, const double *cs,
                              int64_t heads, int64_t head_dim, int64_t group, int split);
int dit_cuda_attention_act(cudaStream_t s, void *o, int o_bf16, int64_t ldo, const void *q,
                           int q_bf16, int64_t ldq, const void *k, const void *v, int kv_bf16,
                           int64_t ldk, int64_t ldv, int64_t lq, int64_t lk, int64_t heads,
                           int64_t hd, float scale);
int dit_cuda_head_gate_act(cudaStream_t s, void *o, int o_bf16, int64_t ldo, const void *gl,
                           int g_bf16, int64_t ldg, int64_t rows, int64_t heads, int64_t hd);
int dit_cuda_residual_act(cudaStream_t s, void *x, int x_bf16, int64_t ldx, const void *y,
                          int y_bf16, int64_t ldy, int64_t rows, int64_t dim, const float *gate_a,
                          const float *gate_b, int64_t mod_ld, int64_t mod_rows);

/* dst[r, c] = bf16(src[r, c]) (round to nearest even, NaN kept NaN), rows x cols. */
int dit_cuda_f32_to_bf16(cudaStream_t s, uint16_t *dst, int64_t ldd, const float *src, int64_t lds,
                         int64_t rows, int64_t cols);

#ifdef __cplusplus
}
#endif

#endif
