/* Plain fp32 CPU kernels, one per op. No StarPU here: the codelets in codelets/
 * unpack StarPU buffers and call these. Conventions (as in llm.c): outputs first,
 * then inputs, then weights, then sizes. Matrices are row-major; "ld" is the row
 * stride in elements. Linear weights are [out, in] (PyTorch nn.Linear layout).
 * Every GEMM goes through CBLAS. Results are deterministic: no reduction order
 * depends on timing or thread count. Attention, the norms, RoPE, the activations,
 * the residual and linear's epilogue run the ISA path chosen once per process
 * (scalar, AVX2, AVX-512; dit_cpu_isa.h, DITSTAR_CPU_ISA). */
#ifndef DIT_CPU_H
#define DIT_CPU_H

#include <stddef.h>
#include <stdint.h>

typedef enum dit_act {
	DIT_ACT_NONE = 0,
	DIT_ACT_GELU_TANH, /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
	DIT_ACT_SILU,      /* x / (1 + exp(-x)) */
	DIT_ACT_GELU,      /* 0.5 x (1 + erf(x / sqrt(2))), exact (torch.nn.GELU()); float64 */
} dit_act;

/* y[m, n] = act(x[m, k] . w[n, k]^T + b[n]); b may be NULL. */
void dit_cpu_linear(float *y, int64_t ldy, const float *x, int64_t ldx, const float *w,
                    const float *b, int64_t m, int64_t n, int64_t k, dit_act act);

/* The same with w [n, k] in bf16: w is widened to fp32 tile by tile (rows of w, as
 * many as tile [tile_elems >= k floats] holds), each tile one sgemm. */
void dit_cpu_linear_bf16w(float *y, int64_t ldy, const float *x, int64_t ldx, const uint16_t *w,
                          const float *b, int64_t m, int64_t n, int64_t k, dit_act act, float *tile,
                          size_t tile_elems);

/* The same with w [n, k] in any weight dtype wdt (dit_wdt.h; f8 values times scale,
 * else scale unused), widened exactly to fp32 tile by tile; fp32 w: dit_cpu_linear. */
void dit_cpu_linear_wdt(float *y, int64_t ldy, const float *x, int64_t ldx, const void *w, int wdt,
                        float scale, const float *b, int64_t m, int64_t n, int64_t k, dit_act act,
                        float *tile, size_t tile_elems);

/* Activations stored in bf16 (--act-dtype bf16): dst [rows, width] (rows ldd apart) =
 * the fp32 values of src's rows (lds apart), exact; and back, rounded to nearest even. */
void dit_cpu_bf16_widen_rows(float *dst, int64_t ldd, const uint16_t *src, int64_t lds,
                             int64_t rows, int64_t width);
void dit_cpu_bf16_narrow_rows(uint16_t *dst, int64_t ldd, const float *src, int64_t lds,
                              int64_t rows, int64_t width);

/* x[n] = act(x[n]) in place. */
void dit_cpu_act(float *x, int64_t n, dit_act act);

/* y[r, :] = LayerNorm(x[r, :]) (no affine, biased variance) then, when given,
 *   affine:     * weight[dim] + bias[dim]
 *   modulation: * (1 + (scale_a + scale_b)[dim]) + (shift_a + shift_b)[dim]
 * weight/bias and the shift/scale pairs may each be NULL (pairs are all-or-none).
 * Sums of the pairs are formed in fp32 first, as in the official code
 * (block.modulation + e0). The second terms may be tables of rows mod_ld floats
 * apart (per-token or per-frame modulation): row r of x uses table row
 * r / mod_rows, i.e. shift_b + (r / mod_rows) * mod_ld (scale_b likewise);
 * mod_rows <= 0 or mod_ld == 0: every row uses row 0 (one vector). y may alias x. */
void dit_cpu_layernorm(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
                       int64_t dim, float eps, const float *weight, const float *bias,
                       const float *shift_a, const float *shift_b, const float *scale_a,
                       const float *scale_b, int64_t mod_ld, int64_t mod_rows);

/* The same with the RMS normalisation of rms_norm (no weight) in place of LayerNorm:
 * y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) in float64, rounded once, then the
 * affine and modulation terms exactly as above (LTX-2: rms_norm(x) * (1 + scale) +
 * shift with per-token tables). */
void dit_cpu_layernorm_rms(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
                           int64_t dim, float eps, const float *weight, const float *bias,
                           const float *shift_a, const float *shift_b, const float *scale_a,
                           const float *scale_b, int64_t mod_ld, int64_t mod_rows);

/* x[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight[dim], in place. */
void dit_cpu_rmsnorm(float *x, int64_t ldx, int64_t rows, int64_t dim, float eps,
                     const float *weight);

/* The same over each run of group consecutive features of a row (per-head norm with
 * group = head_dim): x[r, g*group + i] *= rsqrt(mean of that run's squares + eps) *
 * weight[i], weight [group] shared by every run (a last run of dim % group features
 * takes weight[0 .. dim % group)). group <= 0: dit_cpu_rmsnorm, the whole row. */
void dit_cpu_rmsnorm_group(float *x, int64_t ldx, int64_t rows, int64_t dim, int64_t group,
                           float eps, const float *weight);

/* 3D RoPE table for a (f, h, w) latent token grid, tokens in f-major order.
 * cs[l, j, 0..1] = (cos, sin) of the angle of pair j (j < head_dim/2) of token l,
 * in float64: pairs [0, axes[0]) use the frame index, [axes[0], axes[0] + axes[1])
 * the row, the next axes[2] the column (axes[0] + axes[1] + axes[2] = head_dim/2;
 * pairs past a shorter sum are not rotated: (1, 0)), and angle = pos / theta^(2i/m) where m = 2
 * axes[a] is the axis' real size and i the pair index within the axis. Wan: theta 10000,
 * dit_cpu_rope_axes_wan. cs holds f*h*w*head_dim doubles. */
void dit_cpu_rope_table(double *cs, int64_t f, int64_t h, int64_t w, int64_t head_dim, double theta,
                        const int64_t axes[3]);

/* Wan's split of the head_dim/2 pairs: axes[1] = axes[2] = (head_dim/2)/3 (row,
 * column), axes[0] = head_dim/2 - 2 axes[1] (frame); 22/21/21 for head_dim 128. */
void dit_cpu_rope_axes_wan(int64_t head_dim, int64_t axes[3]);

/* Rotates interleaved pairs (x[2j], x[2j+1]) of every head of every token by the
 * table's angles, computing in float64 as the official code does. x is
 * [rows, heads*head_dim] with stride ldx. */
void dit_cpu_rope_apply(float *x, int64_t ldx, int64_t rows, int64_t heads, int64_t head_dim,
                        const double *cs);

/* RoPE of the "split" kind (LTX-2's apply_split_rotary_emb): in every head the pairs
 * are (x[j], x[j + head_dim/2]), j < head_dim/2, and the table is per head: cs
 * [rows, heads, head_dim/2, 2] of (cos, sin), pair j of head h of row r at
 * cs[((r * heads + h) * (head_dim/2) + j) * 2]. x1 = x[h*hd + j], x2 = x[h*hd + j +
 * hd/2] become x1 cos - x2 sin and x2 cos + x1 sin, in float64, rounded once. x is
 * [rows, heads*head_dim] with stride ldx. */
void dit_cpu_rope_split_apply(float *x, int64_t ldx, int64_t rows, int64_t heads, int64_t head_dim,
                              const double *cs);

/* The table of dit_cpu_rope_split_apply for L tokens, as LTX-2's precompute_freqs_cis
 * with rope_type SPLIT, use_middle_indices_grid and the float64 frequency grid, all in
 * float64. pos [naxes, L, 2]: the bounds [start, end) of each token on each axis;
 * max_pos [naxes]. n = inner_dim / (2 naxes) frequencies f_k = theta^(k / (n - 1)) *
 * pi/2 (f_0 = pi/2 for n == 1); the angle of (k, a) is f_k * (2 mid_a / max_pos[a] - 1),
 * mid_a = (start + end) / 2, at index k * naxes + a; those n * naxes angles are left
 * padded with inner_dim/2 - n * naxes unrotated entries (cos 1, sin 0), and entry
 * h * (hd/2) + j of the padded inner_dim/2 is pair j of head h (hd = inner_dim /
 * heads). cs: [L, heads, hd/2, 2], L * inner_dim doubles. */
void dit_cpu_rope_split_table(double *cs, const double *pos, int64_t L, int naxes,
                              const double *max_pos, double theta, int64_t inner_dim,
                              int64_t heads);

/* The table of dit_cpu_rope_split_apply for Cosmos-Predict2.5 (VideoRopePosition3DEmb
 * of minimal_v4_dit.py without fps modulation), all in float64, for a T x H x W token
 * grid, token l = (t H + h) W + w at integer positions (t, h, w) from 0. The head_dim
 * features split into axes of real sizes d_h = d_w = (head_dim / 6) 2 (row, column)
 * and d_t = head_dim - 2 d_h (frame); axis a (ratio[0..2] = t, h, w extrapolation
 * ratios) has theta_a = 10000 ratio_a^(d_a / (d_a - 2)) and frequencies f_a[i] = 1 /
 * theta_a^(2i / d_a), i < d_a / 2. The head_dim/2 angles of a token are [t f_t, h f_h,
 * w f_w] (d_t/2, d_h/2, d_w/2 of them), pair j rotating features (j, j + head_dim/2):
 * out = x cos + cat(-x2, x1) sin, the rotate-half form. Every head gets the same:
 * cs [T H W, heads, head_dim/2, 2] of (cos, sin), T H W heads head_dim doubles.
 * head_dim 128: d_t 44, d_h = d_w 42; needs head_dim even and d_h > 2 or ratio 1. */
void dit_cpu_rope_cosmos_table(double *cs, int64_t T, int64_t H, int64_t W, int64_t head_dim,
                               int64_t heads, const double ratio[3]);

/* Multi-head attention, o = softmax(q k^T * scale) v per head, flash style: keys are
 * visited in fixed tiles with an online softmax, so nothing of size lq x lk is ever
 * allocated. q [lq, heads*hd], k and v [lk, heads*hd], o [lq, heads*hd], each with
 * its own row stride; o must not overlap q, k or v. scratch holds
 * dit_cpu_attention_scratch(hd) floats. */
void dit_cpu_attention(float *o, int64_t ldo, const float *q, int64_t ldq, const float *k,
                       int64_t ldk, const float *v, int64_t ldv, int64_t lq, int64_t lk,
                       int64_t heads, int64_t hd, float scale, float *scratch);
size_t dit_cpu_attention_scratch(int64_t hd);

/* x[r, :] += y[r, :] * (gate_a + gate_b)[dim]; with gate_a == NULL: x += y; with
 * gate_b == NULL: gate_a alone. gate_b may be a table of rows mod_ld floats apart:
 * row r uses gate_b + (r / mod_rows) * mod_ld; mod_rows <= 0 or mod_ld == 0: row 0. */
void dit_cpu_residual(float *x, int64_t ldx, const float *y, int64_t ldy, int64_t rows, int64_t dim,
                      const float *gate_a, const float *gate_b, int64_t mod_ld, int64_t mod_rows);

/* o[r * ldo + h * hd + j] *= g, g = (float)(2 / (1 + exp(-gl[r * ldg + h]))) in
 * float64, for r < rows, h < heads, j < hd (the multiply in fp32). */
void dit_cpu_head_gate(float *o, int64_t ldo, const float *gl, int64_t ldg, int64_t rows,
                       int64_t heads, int64_t hd);

/* x[r * ld + j] += v[r * v_ld + j] for r < rows, j < dim, fp32 (v_ld 0: one vector
 * added to every row). */
void dit_cpu_add_rows(float *x, int64_t ld, const float *v, int64_t v_ld, int64_t rows,
                      int64_t dim);

/* out[freq_dim] = [cos(t w_k), sin(t w_k)], w_k = 10000^(-k/half), k < half =
 * freq_dim/2, computed in float64 and rounded to fp32. */
void dit_cpu_timestep_embedding(float *out, double t, int64_t freq_dim);

/* The time embedding of nt timesteps, row by row: for row i, sin = sinusoid(ts[i])
 * [freq_dim] (dit_cpu_timestep_embedding), h = SiLU(sin . w0^T + b0) [dim],
 * e[i] = h . w2^T + b2 [dim], e0[i] = SiLU(e[i]) . wp^T + bp [P], P = nproj dim
 * (nproj <= 0: 6). Each row is one chain of m = 1 GEMMs, so it does not depend on the
 * other rows (the same bytes as nt = 1 with that timestep). e [nt, dim] and e0 [nt, P]
 * are contiguous; scratch holds nt * (freq_dim + dim) floats: the sinusoids
 * [nt, freq_dim], then h [nt, dim]. */
void dit_cpu_time_embed(float *e, float *e0, const double *ts, int64_t nt, const float *w0,
                        const float *b0, const float *w2, const float *b2, const float *wp,
                        const float *bp, int64_t dim, int64_t freq_dim, int64_t nproj,
                        float *scratch);

/* Latent x [c, f, h, w] to patch rows tok [(f/pt)(h/ph)(w/pw), c*pt*ph*pw]; rows in
 * (f', h', w') order, features in (c, pt, ph, pw) order: the flattening of a Conv3d
 * weight [D, c, pt, ph, pw], so that patch embedding is one GEMM. */
void dit_cpu_patchify(float *tok, const float *x, int64_t c, int64_t f, int64_t h, int64_t w,
                      int64_t pt, int64_t ph, int64_t pw);

/* Head output tok [f'h'w', pt*ph*pw*c] with features in (pt, ph, pw, c) order
 * (channel innermost) to y [c, f'*pt, h'*ph, w'*pw]. */
void dit_cpu_unpatchify(float *y, const float *tok, int64_t c, int64_t fp, int64_t hp, int64_t wp,
                        int64_t pt, int64_t ph, int64_t pw);

/* The same with features in (c, pt, ph, pw) order (channel outermost: HunyuanVideo's
 * final layer). */
void dit_cpu_unpatchify_c_outer(float *y, const float *tok, int64_t c, int64_t fp, int64_t hp,
                                int64_t wp, int64_t pt, int64_t ph, int64_t pw);

/* out[dim] = mean of the rows [0, rows) of x (rows ld floats apart), in float64. */
void dit_cpu_row_mean(float *out, const float *x, int64_t ld, int64_t rows, int64_t dim);

/* out[n] = sum_i coef[i] * in[i][n], accumulated in float64 in term order, rounded
 * once. out may alias any in[i]. */
void dit_cpu_lincomb(float *out, int64_t n, int nterms, const float *const *in, const double *coef);

/* dst[i * dst_ld + j] = src[i * src_ld + j] for i < count, j < len, bit for bit; the
 * rows must not overlap. */
void dit_cpu_copy2d(float *dst, int64_t dst_ld, const float *src, int64_t src_ld, int64_t count,
                    int64_t len);

/* Classifier-free guidance, in fp32 exactly as the official code:
 * out[n] = uncond + scale * (cond - uncond). out may alias either input. */
void dit_cpu_cfg(float *out, const float *cond, const float *uncond, int64_t n, float scale);

/* LTX-2's default token positions (ltx_core's patchifiers), float64 [start, end)
 * bounds: video pos [3, f h w, 2] (time in seconds at fps after the causal first-frame
 * shift, rows and columns in pixels through the VAE strides), audio pos [1, t, 2]
 * (seconds: 4 mel frames of 160 samples at 16 kHz a latent frame, causal). */
void dit_cpu_ltx_video_positions(double *pos, int64_t f, int64_t h, int64_t w,
                                 const int64_t stride[3], double fps);
void dit_cpu_ltx_audio_positions(double *pos, int64_t t);

/* y [rows, dim] = x * (1 + scale) + shift, scale = scale[j] (+ vscale[j]), shift
 * likewise (the sums in fp32 first; v* NULL: none). */
void dit_cpu_modulate(float *y, const float *x, int64_t rows, int64_t dim, const float *shift,
                      const float *scale, const float *vshift, const float *vscale);

/* Conditioned elements of an x0-guided step (LTX-2's VideoConditionByLatentIndex): the
 * count runs of len elements at off, off + ld, ... whose denoise mask is mask (1 -
 * strength): their timestep is mask x sigma, and their guided x0 becomes mask x0 +
 * (1 - mask) clean (clean [count, len], post_process_latent). */
typedef struct dit_guide_cond {
	const float *clean;
	int64_t off, len, ld, count;
	double mask;
} dit_guide_cond;

/* One x0-guided Euler step (LTX-2's MultiModalGuider then EulerDiffusionStep): with
 * x0_k = x - s v[k] (s = sigma, or mask x sigma on cond's elements) for the passes cond
 * (v[0]), uncond (v[1], the negative prompt), perturbed (v[2], STG) and isolated
 * modality (v[3]), a NULL pass counting as x0 0: pred = x0_0 + (cfg - 1)(x0_0 - x0_1) +
 * stg (x0_0 - x0_2) + (modality - 1)(x0_0 - x0_3), times rescale std(x0_0)/std(pred) + 1
 * - rescale when rescale != 0 (unbiased std over the n elements); on cond's elements
 * blended with the clean latent; then x += (x - pred) / sigma (sigma_next - sigma). x0,
 * when not NULL, receives pred (the guided x0 of the step, in float). cond NULL: none. */
void dit_cpu_guide_step(float *x, float *x0, const float *const v[4], int64_t n, double sigma,
                        double sigma_next, double cfg, double stg, double rescale, double modality,
                        const dit_guide_cond *cond);

#endif
