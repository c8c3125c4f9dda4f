/* Row normalisations: LayerNorm (+ affine + adaLN modulation) and RMSNorm (+ RoPE).
 * One CTA per row; statistics in float64 with a fixed reduction tree (per-thread
 * strided sums in order, warp butterfly, warp partials summed in warp order). The
 * row is read again from global memory (L1/L2) for each pass. */
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "dit_cuda_common.cuh"

#define NORM_MAX_THREADS 512
#define NORM_FULL        0xffffffffu

/* Sum of one double per thread over the block, the same bits in every thread.
 * red: shared [32]; the caller does not reuse red before another barrier. */
__device__ static inline double norm_block_sum(double v, double *red)
{
	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_xor_sync(NORM_FULL, v, off);
	const int warp = (int)threadIdx.x >> 5, lane = (int)threadIdx.x & 31;
	if (lane == 0)
		red[warp] = v;
	__syncthreads();
	double t = 0.0;
	const int nw = (int)blockDim.x >> 5;
	for (int w = 0; w < nw; w++)
		t += red[w];
	return t;
}

/* Threads per row for `items` work items: a power of two in [32, NORM_MAX_THREADS],
 * about 4 items per thread. */
static int norm_threads(int64_t items)
{
	int t = 32;
	while (t < NORM_MAX_THREADS && (int64_t)t * 4 < items)
		t *= 2;
	return t;
}

/* V floats of p[i..i+V) */
template <int V> struct norm_vec;
template <> struct norm_vec<1> {
	float a[1];
	template <typename T> __device__ static norm_vec load(const T *p)
	{
		norm_vec r;
		r.a[0] = dit_ld1(p); /* fp32, or a bf16 activation widened */
		return r;
	}
	template <typename T> __device__ void store(T *p) const
	{
		dit_st1(p, a[0]);
	}
};
template <> struct norm_vec<4> {
	float a[4];
	__device__ static norm_vec load(const float *p)
	{
		float4 t = *(const float4 *)p;
		norm_vec r;
		r.a[0] = t.x;
		r.a[1] = t.y;
		r.a[2] = t.z;
		r.a[3] = t.w;
		return r;
	}
	__device__ void store(float *p) const
	{
		*(float4 *)p = make_float4(a[0], a[1], a[2], a[3]);
	}
};

/* grid rows, block norm_threads(dim / V). y[r, :dim] = layernorm(x[r, :dim]) (rms: the
 * mean taken as 0, x / sqrt(mean(x^2) + eps), as dit_cpu_layernorm_rms) with
 * optional affine and modulation, exactly as dit_cpu_layernorm after the statistics:
 * (x - mean) * rstd in float64 rounded once, then fp32 multiplies and adds rounded
 * one by one; shift_b and scale_b read at table row r / mod_rows (mod_ld floats
 * apart; mod_ld 0, mod_rows 1 for one vector). V = 4: every pointer, ld and mod_ld
 * 16-byte aligned, dim % 4 == 0, fp32 x and y; V = 1: x (TX) and y (TY) fp32 or bf16
 * activations (uint16_t). */
template <int V, typename TY, typename TX>
__global__ void dit_layernorm_kernel(TY *y, int64_t ldy, const TX *x, int64_t ldx, int dim,
                                     float eps, const float *weight, const float *bias,
                                     const float *shift_a, const float *shift_b,
                                     const float *scale_a, const float *scale_b, int64_t mod_ld,
                                     int64_t mod_rows, int rms)
{
	__shared__ double red[2][32];
	const TX *xr = x + (int64_t)blockIdx.x * ldx;               /* [dim] */
	TY *yr = y + (int64_t)blockIdx.x * ldy;                     /* [dim], may be xr */
	const int64_t tr = (int64_t)blockIdx.x / mod_rows * mod_ld; /* modulation table row */
	const int step = (int)blockDim.x * V;

	double mean = 0.0; /* rms: x - 0 (rms is the same in every thread) */
	if (!rms) {
		double s = 0.0;
		for (int i = (int)threadIdx.x * V; i < dim; i += step) {
			norm_vec<V> xv = norm_vec<V>::load(xr + i);
#pragma unroll
			for (int e = 0; e < V; e++)
				s += (double)xv.a[e];
		}
		mean = norm_block_sum(s, red[0]) / (double)dim;
	}
	double ss = 0.0;
	for (int i = (int)threadIdx.x * V; i < dim; i += step) {
		norm_vec<V> xv = norm_vec<V>::load(xr + i);
#pragma unroll
		for (int e = 0; e < V; e++) {
			double d = (double)xv.a[e] - mean;
			ss = fma(d, d, ss);
		}
	}
	const double var = norm_block_sum(ss, red[1]) / (double)dim; /* biased */
	const double rstd = 1.0 / sqrt(var + (double)eps);
	/* every read of the row is done before any write (two barriers above) */
	const int mod = shift_a && scale_a;
	const int pair = mod && shift_b && scale_b;
	for (int i = (int)threadIdx.x * V; i < dim; i += step) {
		norm_vec<V> xv = norm_vec<V>::load(xr + i);
		norm_vec<V> yv;
#pragma unroll
		for (int e = 0; e < V; e++)
			yv.a[e] = (float)(((double)xv.a[e] - mean) * rstd);
		if (weight) {
			norm_vec<V> wv = norm_vec<V>::load(weight + i);
#pragma unroll
			for (int e = 0; e < V; e++)
				yv.a[e] = __fmul_rn(yv.a[e], wv.a[e]);
		}
		if (bias) {
			norm_vec<V> bv = norm_vec<V>::load(bias + i);
#pragma unroll
			for (int e = 0; e < V; e++)
				yv.a[e] = __fadd_rn(yv.a[e], bv.a[e]);
		}
		if (mod) {
			norm_vec<V> sc = norm_vec<V>::load(scale_a + i);
			norm_vec<V> sh = norm_vec<V>::load(shift_a + i);
			if (pair) {
				norm_vec<V> sc2 = norm_vec<V>::load(scale_b + tr + i);
				norm_vec<V> sh2 = norm_vec<V>::load(shift_b + tr + i);
#pragma unroll
				for (int e = 0; e < V; e++) {
					sc.a[e] = __fadd_rn(sc.a[e], sc2.a[e]);
					sh.a[e] = __fadd_rn(sh.a[e], sh2.a[e]);
				}
			}
#pragma unroll
			for (int e = 0; e < V; e++)
				yv.a[e] = __fadd_rn(__fmul_rn(yv.a[e], __fadd_rn(1.0f, sc.a[e])),
				                    sh.a[e]);
		}
		yv.store(yr + i);
	}
}

/* The layernorm of rows rows with x, y fp32 or bf16 (x_bf16, y_bf16). */
static int dit_cuda_layernorm_any(cudaStream_t s, void *y, int y_bf16, int64_t ldy, const void *x,
                                  int x_bf16, int64_t ldx, int64_t rows, int64_t dim, float eps,
                                  int rms, const float *weight, const float *bias,
                                  const float *shift_a, const float *shift_b, const float *scale_a,
                                  const float *scale_b, int64_t mod_ld, int64_t mod_rows)
{
	if (rows <= 0 || dim <= 0)
		return 0;
	if (rows > INT_MAX || dim > INT_MAX - NORM_MAX_THREADS * 4)
		return (int)cudaErrorInvalidValue;
	if (mod_rows <= 0 || mod_ld == 0) { /* one vector for every row */
		mod_ld = 0;
		mod_rows = 1;
	}
	const int vec = !x_bf16 && !y_bf16 && dit_cuda_aligned16(x) && dit_cuda_aligned16(y) &&
	                ldx % 4 == 0 && ldy % 4 == 0 && dim % 4 == 0 &&
	                dit_cuda_aligned16(weight) && dit_cuda_aligned16(bias) &&
	                dit_cuda_aligned16(shift_a) && dit_cuda_aligned16(shift_b) &&
	                dit_cuda_aligned16(scale_a) &&
	                dit_cuda_aligned16(scale_b) && /* NULL counts as aligned */
	                mod_ld % 4 == 0;
	const unsigned g = (unsigned)rows;
	const int t1 = norm_threads(dim);
#define LN_ARGS                                                                                    \
	ldx, (int)dim, eps, weight, bias, shift_a, shift_b, scale_a, scale_b, mod_ld, mod_rows, rms
	if (vec)
		dit_layernorm_kernel<4, float, float><<<g, norm_threads(dim / 4), 0, s>>>(
		    (float *)y, ldy, (const float *)x, LN_ARGS);
	else if (!x_bf16 && !y_bf16)
		dit_layernorm_kernel<1, float, float>
		    <<<g, t1, 0, s>>>((float *)y, ldy, (const float *)x, LN_ARGS);
	else if (!x_bf16)
		dit_layernorm_kernel<1, uint16_t, float>
		    <<<g, t1, 0, s>>>((uint16_t *)y, ldy, (const float *)x, LN_ARGS);
	else if (!y_bf16)
		dit_layernorm_kernel<1, float, uint16_t>
		    <<<g, t1, 0, s>>>((float *)y, ldy, (const uint16_t *)x, LN_ARGS);
	else
		dit_layernorm_kernel<1, uint16_t, uint16_t>
		    <<<g, t1, 0, s>>>((uint16_t *)y, ldy, (const uint16_t *)x, LN_ARGS);
#undef LN_ARGS
	return dit_cuda_last_error();
}

extern "C" int dit_cuda_layernorm_act(cudaStream_t s, void *y, int y_bf16, int64_t ldy,
                                      const void *x, int x_bf16, int64_t ldx, int64_t rows,
                                      int64_t dim, float eps, int rms, const float *weight,
                                      const float *bias, const float *shift_a, const float *shift_b,
                                      const float *scale_a, const float *scale_b, int64_t mod_ld,
                                      int64_t mod_rows)
{
	return dit_cuda_layernorm_any(s, y, y_bf16, ldy, x, x_bf16, ldx, rows, dim, eps, rms,
	                              weight, bias, shift_a, shift_b, scale_a, scale_b, mod_ld,
	                              mod_rows);
}

extern "C" int dit_cuda_layernorm(cudaStream_t s, float *y, int64_t ldy, const float *x,
                                  int64_t ldx, int64_t rows, int64_t dim, float eps,
                                  const float *weight, const float *bias, const float *shift_a,
                                  const float *shift_b, const float *scale_a, const float *scale_b,
                                  int64_t mod_ld, int64_t mod_rows)
{
	return dit_cuda_layernorm_any(s, y, 0, ldy, x, 0, ldx, rows, dim, eps, 0, weight, bias,
	                              shift_a, shift_b, scale_a, scale_b, mod_ld, mod_rows);
}

extern "C" int dit_cuda_layernorm_rms(cudaStream_t s, float *y, int64_t ldy, const float *x,
                                      int64_t ldx, int64_t rows, int64_t dim, float eps,
                                      const float *weight, const float *bias, const float *shift_a,
                                      const float *shift_b, const float *scale_a,
                                      const float *scale_b, int64_t mod_ld, int64_t mod_rows)
{
	return dit_cuda_layernorm_any(s, y, 0, ldy, x, 0, ldx, rows, dim, eps, 1, weight, bias,
	                              shift_a, shift_b, scale_a, scale_b, mod_ld, mod_rows);
}

/* grid rows * (dim / group), block norm_threads(group) (cs: group / 2). Block b takes
 * run b % (dim / group) of row b / (dim / group): x[r, g0 : g0 + group] = (x * rs) *
 * weight[0 : group] with rs = fp32 of 1 / sqrt(mean(x^2) + eps) (float64) over the
 * run, then, with cs, each interleaved pair (2p, 2p + 1) of the run, pair j = p %
 * (head_dim / 2) of its head (p counted from the row's start), rotated in float64 by
 * (cos, sin) = cs[r, 2j], cs[r, 2j + 1] with separately rounded products, as
 * dit_cpu_rope_apply. The whole row is one run of group = dim. With split (group a
 * multiple of head_dim) the pairs are (j, j + head_dim / 2) of each head and the table
 * [rows, heads, head_dim / 2, 2], as dit_cpu_rope_split_apply. x of fp32 or bf16 T (a
 * bf16 run rounded once, after the rotation). */
template <typename T>
__global__ void dit_rmsnorm_rope_kernel(T *x, int64_t ldx, int dim, int group, float eps,
                                        const float *weight, const double *cs, int head_dim,
                                        int heads, int split)
{
	__shared__ double red[32];
	const int runs = dim / group;
	const int64_t row = (int64_t)blockIdx.x / runs;
	const int g0 = (int)(blockIdx.x % (unsigned)runs) * group;
	T *xr = x + row * ldx + g0; /* [group] */
	double ss = 0.0;
	for (int i = (int)threadIdx.x; i < group; i += (int)blockDim.x) {
		double d = (double)dit_ld1(xr + i);
		ss = fma(d, d, ss);
	}
	const double tot = norm_block_sum(ss, red);
	const float rs = (float)(1.0 / sqrt(tot / (double)group + (double)eps));
	if (!cs) {
		for (int i = (int)threadIdx.x; i < group; i += (int)blockDim.x) {
			float v = __fmul_rn(dit_ld1(xr + i), rs);
			dit_st1(xr + i, weight ? __fmul_rn(v, weight[i]) : v);
		}
		return;
	}
	const int half = head_dim / 2;
	if (split) {
		/* the run holds whole heads: pair p of the run is pair j of head h0 + p / half,
		 * (j, j + half) within it, table [rows, heads, half, 2] */
		const int h0 = g0 / head_dim;
		for (int p = (int)threadIdx.x; p < group / 2; p += (int)blockDim.x) {
			const int hl = p / half, j = p % half;
			const int i1 = hl * head_dim + j, i2 = i1 + half;
			const double *csh = cs + ((row * heads + h0 + hl) * half + j) * 2;
			float a = __fmul_rn(dit_ld1(xr + i1), rs),
			      b = __fmul_rn(dit_ld1(xr + i2), rs);
			if (weight) {
				a = __fmul_rn(a, weight[i1]);
				b = __fmul_rn(b, weight[i2]);
			}
			const double ad = (double)a, bd = (double)b, co = csh[0], si = csh[1];
			dit_st1(xr + i1, (float)__dsub_rn(__dmul_rn(ad, co), __dmul_rn(bd, si)));
			dit_st1(xr + i2, (float)__dadd_rn(__dmul_rn(bd, co), __dmul_rn(ad, si)));
		}
		return;
	}
	const double *csr = cs + row * head_dim; /* [head_dim / 2, 2] */
	for (int p = (int)threadIdx.x; p < group / 2; p += (int)blockDim.x) {
		const int i = 2 * p, j = (g0 / 2 + p) % half;
		float a = __fmul_rn(dit_ld1(xr + i), rs), b = __fmul_rn(dit_ld1(xr + i + 1), rs);
		if (weight) {
			a = __fmul_rn(a, weight[i]);
			b = __fmul_rn(b, weight[i + 1]);
		}
		const double ad = (double)a, bd = (double)b;
		const double co = csr[2 * j], si = csr[2 * j + 1];
		dit_st1(xr + i, (float)__dsub_rn(__dmul_rn(ad, co), __dmul_rn(bd, si)));
		dit_st1(xr + i + 1, (float)__dadd_rn(__dmul_rn(ad, si), __dmul_rn(bd, co)));
	}
}

static int dit_cuda_rmsnorm_rope_any(cudaStream_t s, void *x, int x_bf16, int64_t ldx, int64_t rows,
                                     int64_t dim, float eps, const float *weight, const double *cs,
                                     int64_t heads, int64_t head_dim, int64_t group, int split)
{
	if (rows <= 0 || dim <= 0)
		return 0;
	if (rows > INT_MAX || dim > INT_MAX - NORM_MAX_THREADS)
		return (int)cudaErrorInvalidValue;
	if (cs && (head_dim <= 0 || head_dim % 2 != 0 || heads * head_dim != dim))
		return (int)cudaErrorInvalidValue;
	if (group <= 0)
		group = dim; /* the whole row */
	if (dim % group != 0 || (cs && group % 2 != 0) || rows * (dim / group) > INT_MAX)
		return (int)cudaErrorInvalidValue;
	split = cs && split;
	if (split && group % head_dim != 0) /* a run must hold whole heads */
		return (int)cudaErrorInvalidValue;
	const unsigned g = (unsigned)(rows * (dim / group));
	const int t = norm_threads(cs ? group / 2 : group);
	if (x_bf16)
		dit_rmsnorm_rope_kernel<uint16_t>
		    <<<g, t, 0, s>>>((uint16_t *)x, ldx, (int)dim, (int)group, eps, weight, cs,
		                     cs ? (int)head_dim : 0, (int)heads, split);
	else
		dit_rmsnorm_rope_kernel<float>
		    <<<g, t, 0, s>>>((float *)x, ldx, (int)dim, (int)group, eps, weight, cs,
		                     cs ? (int)head_dim : 0, (int)heads, split);
	return dit_cuda_last_error();
}

extern "C" int dit_cuda_rmsnorm_rope_act(cudaStream_t s, void *x, int x_bf16, int64_t ldx,
                                         int64_t rows, int64_t dim, float eps, const float *weight,
                                         const double *cs, int64_t heads, int64_t head_dim,
                                         int64_t group, int split)
{
	return dit_cuda_rmsnorm_rope_any(s, x, x_bf16, ldx, rows, dim, eps, weight, cs, heads,
	                                 head_dim, group, split);
}

extern "C" int dit_cuda_rmsnorm_rope(cudaStream_t s, float *x, int64_t ldx, int64_t rows,
                                     int64_t dim, float eps, const float *weight, const double *cs,
                                     int64_t heads, int64_t head_dim, int64_t group)
{
	return dit_cuda_rmsnorm_rope_any(s, x, 0, ldx, rows, dim, eps, weight, cs, heads, head_dim,
	                                 group, 0);
}

extern "C" int dit_cuda_rmsnorm_rope_split(cudaStream_t s, float *x, int64_t ldx, int64_t rows,
                                           int64_t dim, float eps, const float *weight,
                                           const double *cs, int64_t heads, int64_t head_dim,
                                           int64_t group)
{
	return dit_cuda_rmsnorm_rope_any(s, x, 0, ldx, rows, dim, eps, weight, cs, heads, head_dim,
	                                 group, 1);
}
