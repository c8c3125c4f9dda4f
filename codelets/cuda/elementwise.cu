/* Elementwise ops: gated residual, strided copy, activation, classifier-free guidance,
 * linear combinations, timestep embedding, patchify / unpatchify, NaN/Inf search. fp32
 * arithmetic that the CPU kernels round step by step uses __fmul_rn/__fadd_rn. */
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "dit_cuda_common.cuh"

#define ELEM_ROWS_GRID_MAX 65535

/* ---- residual ---- */

/* x[r, c] += y[r, c] * g[c], g = gate_a + gate_b (fp32) or gate_a alone; no gate: x += y.
 * gate_b at table row r / mod_rows (mod_ld floats apart; mod_ld 0, mod_rows 1 for one
 * vector). grid.x over columns, grid.y over rows (grid-stride). */
__device__ static inline float elem_residual1(float x, float y, const float *ga, const float *gb,
                                              int64_t c)
{
	if (!ga)
		return __fadd_rn(x, y);
	float g = gb ? __fadd_rn(ga[c], gb[c]) : ga[c];
	return __fadd_rn(x, __fmul_rn(y, g));
}

template <typename TX, typename TY>
__global__ void dit_residual_kernel(TX *x, int64_t ldx, const TY *y, int64_t ldy, int64_t rows,
                                    int64_t dim, const float *ga, const float *gb, int64_t mod_ld,
                                    int64_t mod_rows)
{
	int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= dim)
		return;
	for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
		const float *gbr = gb ? gb + r / mod_rows * mod_ld : NULL; /* [dim] */
		dit_st1(x + r * ldx + c, elem_residual1(dit_ld1(x + r * ldx + c),
		                                        dit_ld1(y + r * ldy + c), ga, gbr, c));
	}
}

/* Same, 4 columns per thread (all rows, gates and gate table rows 16-byte aligned,
 * dim % 4 == 0). */
__global__ void dit_residual_kernel4(float *x, int64_t ldx, const float *y, int64_t ldy,
                                     int64_t rows, int64_t dim, const float *ga, const float *gb,
                                     int64_t mod_ld, int64_t mod_rows)
{
	int64_t c = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * 4;
	if (c >= dim)
		return;
	for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
		const float *gbr = gb ? gb + r / mod_rows * mod_ld : NULL; /* [dim] */
		float4 *xp = (float4 *)(x + r * ldx + c);
		float4 xv = *xp, yv = *(const float4 *)(y + r * ldy + c);
		xv.x = elem_residual1(xv.x, yv.x, ga, gbr, c);
		xv.y = elem_residual1(xv.y, yv.y, ga, gbr, c + 1);
		xv.z = elem_residual1(xv.z, yv.z, ga, gbr, c + 2);
		xv.w = elem_residual1(xv.w, yv.w, ga, gbr, c + 3);
		*xp = xv;
	}
}

extern "C" int dit_cuda_residual_act(cudaStream_t s, void *x, int x_bf16, int64_t ldx,
                                     const void *y, int y_bf16, int64_t ldy, int64_t rows,
                                     int64_t dim, const float *gate_a, const float *gate_b,
                                     int64_t mod_ld, int64_t mod_rows)
{
	if (rows <= 0 || dim <= 0)
		return 0;
	const float *gb = gate_a ? gate_b : NULL;
	if (mod_rows <= 0 || mod_ld == 0) { /* one gate vector for every row */
		mod_ld = 0;
		mod_rows = 1;
	}
	const int vec = !x_bf16 && !y_bf16 && dit_cuda_aligned16(x) && dit_cuda_aligned16(y) &&
	                ldx % 4 == 0 && ldy % 4 == 0 && dim % 4 == 0 &&
	                dit_cuda_aligned16(gate_a) && dit_cuda_aligned16(gb) && mod_ld % 4 == 0;
	const int64_t items = vec ? dim / 4 : dim;
	dim3 grid((unsigned)((items + DIT_CUDA_THREADS - 1) / DIT_CUDA_THREADS),
	          (unsigned)(rows < ELEM_ROWS_GRID_MAX ? rows : ELEM_ROWS_GRID_MAX), 1);
#define RES_ARGS ldy, rows, dim, gate_a, gb, mod_ld, mod_rows
	if (vec)
		dit_residual_kernel4<<<grid, DIT_CUDA_THREADS, 0, s>>>((float *)x, ldx,
		                                                       (const float *)y, RES_ARGS);
	else if (!x_bf16 && !y_bf16)
		dit_residual_kernel<float, float>
		    <<<grid, DIT_CUDA_THREADS, 0, s>>>((float *)x, ldx, (const float *)y, RES_ARGS);
	else if (!x_bf16)
		dit_residual_kernel<float, uint16_t><<<grid, DIT_CUDA_THREADS, 0, s>>>(
		    (float *)x, ldx, (const uint16_t *)y, RES_ARGS);
	else if (!y_bf16)
		dit_residual_kernel<uint16_t, float><<<grid, DIT_CUDA_THREADS, 0, s>>>(
		    (uint16_t *)x, ldx, (const float *)y, RES_ARGS);
	else
		dit_residual_kernel<uint16_t, uint16_t><<<grid, DIT_CUDA_THREADS, 0, s>>>(
		    (uint16_t *)x, ldx, (const uint16_t *)y, RES_ARGS);
#undef RES_ARGS
	return dit_cuda_last_error();
}

extern "C" int dit_cuda_residual(cudaStream_t s, float *x, int64_t ldx, const float *y, int64_t ldy,
                                 int64_t rows, int64_t dim, const float *gate_a,
                                 const float *gate_b, int64_t mod_ld, int64_t mod_rows)
{
	return dit_cuda_residual_act(s, x, 0, ldx, y, 0, ldy, rows, dim, gate_a, gate_b, mod_ld,
	                             mod_rows);
}

/* ---- strided copy ---- */

/* dst[i, j] = src[i, j] as 32-bit words (no float arithmetic: NaN payloads kept);
 * grid.x over columns, grid.y over rows (grid-stride both ways). */
__global__ void dit_copy2d_kernel(uint32_t *dst, int64_t dst_ld, const uint32_t *src,
                                  int64_t src_ld, int64_t count, int64_t len)
{
	const int64_t cstride = (int64_t)gridDim.x * blockDim.x;
	for (int64_t i = blockIdx.y; i < count; i += gridDim.y)
		for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < len;
		     j += cstride)
			dst[i * dst_ld + j] = src[i * src_ld + j];
}

extern "C" int dit_cuda_copy2d(cudaStream_t s, float *dst, int64_t dst_ld, const float *src,
                               int64_t src_ld, int64_t count, int64_t len)
{
	if (count <= 0 || len <= 0)
		return 0;
	dim3 grid(dit_cuda_blocks(len),
	          (unsigned)(count < ELEM_ROWS_GRID_MAX ? count : ELEM_ROWS_GRID_MAX), 1);
	dit_copy2d_kernel<<<grid, DIT_CUDA_THREADS, 0, s>>>(
	    (uint32_t *)dst, dst_ld, (const uint32_t *)src, src_ld, count, len);
	return dit_cuda_last_error();
}

/* ---- activation ---- */

/* x[n] = act(x[n]); vec: x 16-byte aligned, the first n/4*4 elements as float4, the
 * tail by the first threads. Grid-stride. */
__global__ void dit_act_kernel(float *x, int64_t n, dit_act act, int vec)
{
	const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	int64_t done = 0;
	if (vec) {
		const int64_t n4 = n / 4;
		for (int64_t i = tid; i < n4; i += stride) {
			float4 v = ((float4 *)x)[i];
			v.x = dit_act_apply(v.x, act);
			v.y = dit_act_apply(v.y, act);
			v.z = dit_act_apply(v.z, act);
			v.w = dit_act_apply(v.w, act);
			((float4 *)x)[i] = v;
		}
		done = n4 * 4;
	}
	for (int64_t i = done + tid; i < n; i += stride)
		x[i] = dit_act_apply(x[i], act);
}

extern "C" int dit_cuda_act(cudaStream_t s, float *x, int64_t n, dit_act act)
{
	if (n <= 0 || act == DIT_ACT_NONE)
		return 0;
	const int vec = dit_cuda_aligned16(x);
	dit_act_kernel<<<dit_cuda_blocks(vec ? (n + 3) / 4 : n), DIT_CUDA_THREADS, 0, s>>>(
	    x, n, act, vec);
	return dit_cuda_last_error();
}

/* ---- classifier-free guidance ---- */

__device__ static inline float elem_cfg1(float c, float u, float scale)
{
	return __fadd_rn(u, __fmul_rn(scale, __fsub_rn(c, u)));
}

/* out[n] = uncond + scale * (cond - uncond); each element read before written. */
__global__ void dit_cfg_kernel(float *out, const float *cond, const float *uncond, int64_t n,
                               float scale, int vec)
{
	const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	int64_t done = 0;
	if (vec) {
		const int64_t n4 = n / 4;
		for (int64_t i = tid; i < n4; i += stride) {
			float4 c = ((const float4 *)cond)[i], u = ((const float4 *)uncond)[i];
			float4 r;
			r.x = elem_cfg1(c.x, u.x, scale);
			r.y = elem_cfg1(c.y, u.y, scale);
			r.z = elem_cfg1(c.z, u.z, scale);
			r.w = elem_cfg1(c.w, u.w, scale);
			((float4 *)out)[i] = r;
		}
		done = n4 * 4;
	}
	for (int64_t i = done + tid; i < n; i += stride)
		out[i] = elem_cfg1(cond[i], uncond[i], scale);
}

extern "C" int dit_cuda_cfg(cudaStream_t s, float *out, const float *cond, const float *uncond,
                            int64_t n, float scale)
{
	if (n <= 0)
		return 0;
	const int vec =
	    dit_cuda_aligned16(out) && dit_cuda_aligned16(cond) && dit_cuda_aligned16(uncond);
	dit_cfg_kernel<<<dit_cuda_blocks(vec ? (n + 3) / 4 : n), DIT_CUDA_THREADS, 0, s>>>(
	    out, cond, uncond, n, scale, vec);
	return dit_cuda_last_error();
}

/* ---- linear combination ---- */

#define LINCOMB_MAX 4

typedef struct dit_lincomb_args {
	const float *in[LINCOMB_MAX];
	double coef[LINCOMB_MAX];
	int nterms;
} dit_lincomb_args;

/* out[n] = sum_t coef[t] * in[t][n]: float64, products and sums rounded one by one in
 * term order from 0.0, as dit_cpu_lincomb; all inputs of an element are read before
 * it is written. */
__device__ static inline float elem_lincomb1(const dit_lincomb_args &a, int64_t i)
{
	double acc = 0.0;
#pragma unroll
	for (int t = 0; t < LINCOMB_MAX; t++) /* unrolled: no local copy of a */
		if (t < a.nterms)
			acc = __dadd_rn(acc, __dmul_rn(a.coef[t], (double)a.in[t][i]));
	return (float)acc;
}

__global__ void dit_lincomb_kernel(float *out, int64_t n, dit_lincomb_args a, int vec)
{
	const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	int64_t done = 0;
	if (vec) {
		const int64_t n4 = n / 4;
		for (int64_t i = tid; i < n4; i += stride) {
			double acc[4] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll
			for (int t = 0; t < LINCOMB_MAX; t++) {
				if (t >= a.nterms)
					break;
				float4 v = ((const float4 *)a.in[t])[i];
				const double ct = a.coef[t];
				acc[0] = __dadd_rn(acc[0], __dmul_rn(ct, (double)v.x));
				acc[1] = __dadd_rn(acc[1], __dmul_rn(ct, (double)v.y));
				acc[2] = __dadd_rn(acc[2], __dmul_rn(ct, (double)v.z));
				acc[3] = __dadd_rn(acc[3], __dmul_rn(ct, (double)v.w));
			}
			((float4 *)out)[i] =
			    make_float4((float)acc[0], (float)acc[1], (float)acc[2], (float)acc[3]);
		}
		done = n4 * 4;
	}
	for (int64_t i = done + tid; i < n; i += stride)
		out[i] = elem_lincomb1(a, i);
}

extern "C" int dit_cuda_lincomb(cudaStream_t s, float *out, int64_t n, int nterms,
                                const float *const *in, const double *coef)
{
	if (nterms < 0 || nterms > LINCOMB_MAX)
		return (int)cudaErrorInvalidValue;
	if (n <= 0)
		return 0;
	dit_lincomb_args a;
	int vec = dit_cuda_aligned16(out);
	for (int t = 0; t < LINCOMB_MAX; t++) {
		a.in[t] = t < nterms ? in[t] : NULL;
		a.coef[t] = t < nterms ? coef[t] : 0.0;
		if (t < nterms)
			vec = vec && dit_cuda_aligned16(in[t]);
	}
	a.nterms = nterms;
	dit_lincomb_kernel<<<dit_cuda_blocks(vec ? (n + 3) / 4 : n), DIT_CUDA_THREADS, 0, s>>>(
	    out, n, a, vec);
	return dit_cuda_last_error();
}

/* ---- head gate ---- */

/* One thread per element of o [rows, heads * hd] (stride ldo), grid-stride. */
template <typename TO, typename TG>
__global__ void dit_head_gate_kernel(TO *o, int64_t ldo, const TG *gl, int64_t ldg, int64_t rows,
                                     int64_t heads, int64_t hd)
{
	const int64_t stride = (int64_t)gridDim.x * blockDim.x, w = heads * hd;
	for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < rows * w;
	     e += stride) {
		const int64_t r = e / w, c = e % w;
		const double x = (double)dit_ld1(gl + r * ldg + c / hd);
		const float g = (float)__ddiv_rn(2.0, __dadd_rn(1.0, exp(-x)));
		dit_st1(o + r * ldo + c, __fmul_rn(dit_ld1(o + r * ldo + c), g));
	}
}

extern "C" int dit_cuda_head_gate_act(cudaStream_t s, void *o, int o_bf16, int64_t ldo,
                                      const void *gl, int g_bf16, int64_t ldg, int64_t rows,
                                      int64_t heads, int64_t hd)
{
	const int64_t n = rows * heads * hd;
	if (n <= 0)
		return 0;
	const unsigned b = dit_cuda_blocks(n);
	typedef uint16_t B;
	if (o_bf16 && g_bf16)
		dit_head_gate_kernel<B, B><<<b, DIT_CUDA_THREADS, 0, s>>>(
		    (B *)o, ldo, (const B *)gl, ldg, rows, heads, hd);
	else if (o_bf16)
		dit_head_gate_kernel<B, float><<<b, DIT_CUDA_THREADS, 0, s>>>(
		    (B *)o, ldo, (const float *)gl, ldg, rows, heads, hd);
	else if (g_bf16)
		dit_head_gate_kernel<float, B><<<b, DIT_CUDA_THREADS, 0, s>>>(
		    (float *)o, ldo, (const B *)gl, ldg, rows, heads, hd);
	else
		dit_head_gate_kernel<float, float><<<b, DIT_CUDA_THREADS, 0, s>>>(
		    (float *)o, ldo, (const float *)gl, ldg, rows, heads, hd);
	return dit_cuda_last_error();
}

extern "C" int dit_cuda_head_gate(cudaStream_t s, float *o, int64_t ldo, const float *gl,
                                  int64_t ldg, int64_t rows, int64_t heads, int64_t hd)
{
	return dit_cuda_head_gate_act(s, o, 0, ldo, gl, 0, ldg, rows, heads, hd);
}

/* ---- timestep embedding ---- */

/* out[k] = cos(t w_k), out[half + k] = sin(t w_k), w_k = 10000^(-k/half), float64;
 * grid-stride (dit_cuda_blocks caps the grid). */
__global__ void dit_timestep_kernel(float *out, double t, int64_t half)
{
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	for (int64_t kk = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; kk < half; kk += stride) {
		const double wk = pow(10000.0, -(double)kk / (double)half);
		const double a = t * wk;
		out[kk] = (float)cos(a);
		out[half + kk] = (float)sin(a);
	}
}

extern "C" int dit_cuda_timestep_embedding(cudaStream_t s, float *out, double t, int64_t freq_dim)
{
	const int64_t half = freq_dim / 2;
	if (half <= 0)
		return 0;
	dit_timestep_kernel<<<dit_cuda_blocks(half), DIT_CUDA_THREADS, 0, s>>>(out, t, half);
	return dit_cuda_last_error();
}

/* ---- patchify / unpatchify ---- */

/* One thread per tok element: tok [fp hp wp, c pt ph pw], row (fi, hi, wi), feature
 * (ci, a, b, d) <- x[ci, fi pt + a, hi ph + b, wi pw + d] of x [c, f, h, w]. */
__global__ void dit_patchify_kernel(float *tok, const float *x, int64_t c, int64_t f, int64_t h,
                                    int64_t w, int64_t pt, int64_t ph, int64_t pw, int64_t hp,
                                    int64_t wp, int64_t total)
{
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	const int64_t feat = c * pt * ph * pw;
	for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
	     idx += stride) {
		int64_t row = idx / feat, col = idx % feat;
		const int64_t wi = row % wp, hi = (row / wp) % hp, fi = row / (wp * hp);
		const int64_t d = col % pw, b = (col / pw) % ph, a = (col / (pw * ph)) % pt;
		const int64_t ci = col / (pw * ph * pt);
		tok[idx] = x[((ci * f + fi * pt + a) * h + hi * ph + b) * w + wi * pw + d];
	}
}

extern "C" int dit_cuda_patchify(cudaStream_t s, float *tok, const float *x, int64_t c, int64_t f,
                                 int64_t h, int64_t w, int64_t pt, int64_t ph, int64_t pw)
{
	if (pt <= 0 || ph <= 0 || pw <= 0)
		return (int)cudaErrorInvalidValue;
	const int64_t fp = f / pt, hp = h / ph, wp = w / pw;
	const int64_t total = fp * hp * wp * c * pt * ph * pw;
	if (total <= 0)
		return 0;
	dit_patchify_kernel<<<dit_cuda_blocks(total), DIT_CUDA_THREADS, 0, s>>>(
	    tok, x, c, f, h, w, pt, ph, pw, hp, wp, total);
	return dit_cuda_last_error();
}

/* One thread per y element: y [c, f, h, w] (f = fp pt, ...), (ci, ff, hh, ww) <-
 * tok[(fi hp + hi) wp + wi, ((a ph + b) pw + d) c + ci] with ff = fi pt + a etc. */
__global__ void dit_unpatchify_kernel(float *y, const float *tok, int64_t c, int64_t hp, int64_t wp,
                                      int64_t pt, int64_t ph, int64_t pw, int64_t f, int64_t h,
                                      int64_t w, int64_t total)
{
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	const int64_t feat = pt * ph * pw * c;
	for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
	     idx += stride) {
		const int64_t ww = idx % w, hh = (idx / w) % h, ff = (idx / (w * h)) % f;
		const int64_t ci = idx / (w * h * f);
		const int64_t fi = ff / pt, a = ff % pt, hi = hh / ph, b = hh % ph;
		const int64_t wi = ww / pw, d = ww % pw;
		const int64_t row = (fi * hp + hi) * wp + wi;
		y[idx] = tok[row * feat + ((a * ph + b) * pw + d) * c + ci];
	}
}

extern "C" int dit_cuda_unpatchify(cudaStream_t s, float *y, const float *tok, int64_t c,
                                   int64_t fp, int64_t hp, int64_t wp, int64_t pt, int64_t ph,
                                   int64_t pw)
{
	if (pt <= 0 || ph <= 0 || pw <= 0)
		return (int)cudaErrorInvalidValue;
	const int64_t f = fp * pt, h = hp * ph, w = wp * pw;
	const int64_t total = c * f * h * w;
	if (total <= 0)
		return 0;
	dit_unpatchify_kernel<<<dit_cuda_blocks(total), DIT_CUDA_THREADS, 0, s>>>(
	    y, tok, c, hp, wp, pt, ph, pw, f, h, w, total);
	return dit_cuda_last_error();
}

/* ---- first non-finite element ---- */

__global__ void dit_i64_set_kernel(int64_t *p, int64_t v)
{
	*p = v;
}

/* *first = min(*first, index of the first NaN/Inf): each thread takes the first hit
 * of its grid-stride sequence (the smallest it sees), the block takes the minimum
 * in shared memory, one atomicMin per block. The minimum does not depend on order. */
__global__ void dit_first_nonfinite_kernel(const float *x, int64_t n, int64_t *first)
{
	__shared__ int64_t red[DIT_CUDA_THREADS];
	const int64_t stride = (int64_t)gridDim.x * blockDim.x;
	int64_t mine = INT64_MAX;
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		if ((__float_as_uint(x[i]) & 0x7f800000u) == 0x7f800000u) {
			mine = i;
			break;
		}
	red[threadIdx.x] = mine;
	__syncthreads();
	for (int off = DIT_CUDA_THREADS / 2; off > 0; off >>= 1) {
		if ((int)threadIdx.x < off && red[threadIdx.x + off] < red[threadIdx.x])
			red[threadIdx.x] = red[threadIdx.x + off];
		__syncthreads();
	}
	if (threadIdx.x == 0 && red[0] != INT64_MAX)
		atomicMin((unsigned long long *)first, (unsigned long long)red[0]);
}

extern "C" int dit_cuda_first_nonfinite(cudaStream_t s, const float *x, int64_t n, int64_t *d_tmp,
                                        int64_t *first)
{
	*first = -1;
	if (n <= 0)
		return 0;
	dit_i64_set_kernel<<<1, 1, 0, s>>>(d_tmp, INT64_MAX);
	int err = dit_cuda_last_error();
	if (err)
		return err;
	dit_first_nonfinite_kernel<<<dit_cuda_blocks(n), DIT_CUDA_THREADS, 0, s>>>(x, n, d_tmp);
	err = dit_cuda_last_error();
	if (err)
		return err;
	int64_t r = INT64_MAX;
	err = (int)cudaMemcpyAsync(&r, d_tmp, sizeof(r), cudaMemcpyDeviceToHost, s);
	if (err)
		return err;
	err = (int)cudaStreamSynchronize(s);
	if (err)
		return err;
	*first = r == INT64_MAX ? -1 : r;
	return 0;
}
