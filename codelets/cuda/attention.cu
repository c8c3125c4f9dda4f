/* Multi-head attention, flash-attention-2 style.
 *
 * Tensor-core kernel (hd in {16, 32, 64, 128}): one CTA of 8 warps per (tile of
 * ATT_BQ = 128 query rows, head); warp w owns query rows [16w, 16w + 16) of the tile.
 * K and V are visited in tiles of ATT_BK = 64 keys, double-buffered in shared memory
 * as bf16 (converted from fp32 while staging: the next tile's K is loaded into
 * registers before S = Q K^T of the current tile and stored to the other buffer
 * after it, the next V likewise around softmax + P V). S and O += P V are mma.sync
 * m16n8k16 bf16 products with fp32 accumulation; fragments come from ldmatrix (V
 * with .trans); P is repacked from the S accumulators without shared memory. The
 * online softmax runs in fp32 on log2e-prescaled scores with exp2f. Every
 * reduction (quad shuffles, key tiles in order) is fixed: results are
 * deterministic.
 *
 * fp32 kernel (other hd <= 256, unaligned inputs, or a device that cannot give a
 * block att_smem_bytes<HD>() of shared memory): one warp per query row, keys
 * in chunks of 32 (one per lane), online softmax in fp32. */
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include <cuda_bf16.h>

#include "dit_cuda_common.cuh"

#define ATT_BQ      128 /* query rows per CTA */
#define ATT_BK      64  /* keys per K/V tile */
#define ATT_WARPS   8   /* 16 query rows each */
#define ATT_THREADS (ATT_WARPS * 32)
#define ATT_PAD     8 /* bf16 padding per shared row: ldmatrix rows hit distinct banks */
#define ATT_FULL    0xffffffffu

#define ATT_FB_WARPS 4   /* fp32 kernel: query rows per CTA */
#define ATT_FB_HD    256 /* fp32 kernel: largest head dim */

/* Two fp32 to a bf16x2 word, lo in the low half (round to nearest even). */
__device__ static inline uint32_t att_pack_bf16(float lo, float hi)
{
	__nv_bfloat162 t = __floats2bfloat162_rn(lo, hi);
	return *reinterpret_cast<uint32_t *>(&t);
}

/* Four 8x8 b16 matrices; lane l gives the row address of matrix l / 8. */
__device__ static inline void att_ldsm_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3,
                                          const uint16_t *p)
{
	uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
	             : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
	             : "r"(a));
}

/* Same, each matrix transposed. */
__device__ static inline void att_ldsm_x4_trans(uint32_t &r0, uint32_t &r1, uint32_t &r2,
                                                uint32_t &r3, const uint16_t *p)
{
	uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
	             : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
	             : "r"(a));
}

/* c[16x8] += a[16x16] . b[16x8], bf16 in, fp32 accumulate. */
__device__ static inline void att_mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                      uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
	             "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
	             : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
	             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Four consecutive values of an fp32 or bf16 (--act-dtype bf16) activation row as fp32:
 * p 16-byte (fp32) or 8-byte (bf16) aligned. */
__device__ static inline float4 att_load4(const float *p)
{
	return *(const float4 *)p;
}
__device__ static inline float4 att_load4(const uint16_t *p)
{
	uint2 w = *(const uint2 *)p;
	return make_float4(__uint_as_float(w.x << 16), __uint_as_float(w.x & 0xffff0000u),
	                   __uint_as_float(w.y << 16), __uint_as_float(w.y & 0xffff0000u));
}

/* Two consecutive outputs: p 8-byte (fp32) or 4-byte (bf16) aligned. */
__device__ static inline void att_store2(float *p, float a, float b)
{
	*(float2 *)p = make_float2(a, b);
}
__device__ static inline void att_store2(uint16_t *p, float a, float b)
{
	*(uint32_t *)p = att_pack_bf16(a, b);
}

/* Loads rows [0, nvalid) of a tile src[N * ATT_THREADS * 4 / HD, HD] (stride ld) of fp32
 * or bf16 T into registers, N float4 per thread (rows at or past nvalid read as zero). */
template <int HD, int N, typename T>
__device__ static inline void att_tile_load(float4 (&r)[N], const T *src, int64_t ld, int nvalid)
{
	constexpr int C4 = HD / 4; /* float4 per row */
#pragma unroll
	for (int i = 0; i < N; i++) {
		int idx = (int)threadIdx.x + i * ATT_THREADS;
		int row = idx / C4, c4 = idx % C4;
		if (row < nvalid)
			r[i] = att_load4(src + (int64_t)row * ld + c4 * 4);
		else
			r[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
	}
}

/* Stores what att_tile_load loaded, as bf16, into dst[rows, HD + ATT_PAD]. */
template <int HD, int N>
__device__ static inline void att_tile_store(uint16_t *dst, const float4 (&r)[N])
{
	constexpr int C4 = HD / 4;
	constexpr int LDS = HD + ATT_PAD;
#pragma unroll
	for (int i = 0; i < N; i++) {
		int idx = (int)threadIdx.x + i * ATT_THREADS;
		int row = idx / C4, c4 = idx % C4;
		uint2 w;
		w.x = att_pack_bf16(r[i].x, r[i].y);
		w.y = att_pack_bf16(r[i].z, r[i].w);
		*(uint2 *)(dst + row * LDS + c4 * 4) = w;
	}
}

template <int HD> static constexpr size_t att_smem_bytes()
{
	/* Q [BQ, LDS] + K [2, BK, LDS] + V [2, BK, LDS], bf16 */
	return (size_t)(ATT_BQ + 4 * ATT_BK) * (HD + ATT_PAD) * sizeof(uint16_t);
}

/* grid (ceil(lq / ATT_BQ), heads), ATT_THREADS threads, att_smem_bytes<HD>() bytes.
 * q, k, v, o already offset to nothing: head h uses columns [h HD, h HD + HD).
 * scale_log2 = scale * log2(e). o_vec2: o and ldo allow stores of two outputs. T: fp32,
 * or bf16 activations (uint16_t, staged as they are: widened then rounded back,
 * exact), q, k, v, o alike. */
template <int HD, typename T>
__global__ void __launch_bounds__(ATT_THREADS, 1)
    dit_attention_mma_kernel(T *o, int64_t ldo, const T *q, int64_t ldq, const T *k, int64_t ldk,
                             const T *v, int64_t ldv, int lq, int lk, float scale_log2, int o_vec2)
{
	static_assert(HD % 16 == 0 && HD <= 128, "head dim");
	constexpr int LDS = HD + ATT_PAD;                     /* shared row stride (bf16) */
	constexpr int KV_N = ATT_BK * (HD / 4) / ATT_THREADS; /* float4 per thread per K/V tile */
	constexpr int Q_N = ATT_BQ * (HD / 4) / ATT_THREADS;  /* float4 per thread of the Q tile */
	constexpr int NT = ATT_BK / 8;                        /* n8 tiles of S per warp */
	constexpr int DT = HD / 8;                            /* n8 tiles of O per warp */
	constexpr int KS = HD / 16;                           /* k16 steps of Q K^T */
	static_assert(KV_N >= 1 && Q_N >= 1, "tile split");

	extern __shared__ __align__(16) uint16_t att_smem[];
	uint16_t *sq = att_smem;              /* [BQ, LDS] */
	uint16_t *sk = sq + ATT_BQ * LDS;     /* [2, BK, LDS] */
	uint16_t *sv = sk + 2 * ATT_BK * LDS; /* [2, BK, LDS] */

	const int warp = (int)threadIdx.x >> 5, lane = (int)threadIdx.x & 31;
	const int q0 = (int)blockIdx.x * ATT_BQ;
	const int64_t hoff = (int64_t)blockIdx.y * HD;
	q += hoff;
	k += hoff;
	v += hoff;
	o += hoff;

	/* Q tile and the first K/V tile into shared memory */
	{
		float4 r[Q_N];
		att_tile_load<HD, Q_N>(r, q + (int64_t)q0 * ldq, ldq, min(ATT_BQ, lq - q0));
		att_tile_store<HD, Q_N>(sq, r);
	}
	{
		float4 r[KV_N];
		att_tile_load<HD, KV_N>(r, k, ldk, min(ATT_BK, lk));
		att_tile_store<HD, KV_N>(sk, r);
		att_tile_load<HD, KV_N>(r, v, ldv, min(ATT_BK, lk));
		att_tile_store<HD, KV_N>(sv, r);
	}
	__syncthreads();

	/* A fragments of this warp's 16 query rows, kept in registers: qf[ks] covers
	 * dims [16 ks, 16 ks + 16). ldmatrix: lanes 0-15 rows 0-15 at col 0, lanes 16-31
	 * rows 0-15 at col 8 -> a0 (r, 0-7), a1 (r+8, 0-7), a2 (r, 8-15), a3 (r+8, 8-15). */
	uint32_t qf[KS][4];
#pragma unroll
	for (int ks = 0; ks < KS; ks++)
		att_ldsm_x4(qf[ks][0], qf[ks][1], qf[ks][2], qf[ks][3],
		            sq + (warp * 16 + (lane & 15)) * LDS + ks * 16 + (lane >> 4) * 8);

	/* Accumulator layout (m16n8): c0, c1 at (row g, cols 2t, 2t+1), c2, c3 at (row
	 * g + 8, same cols), g = lane / 4, t = lane % 4. */
	float oacc[DT][4];
#pragma unroll
	for (int dt = 0; dt < DT; dt++)
		oacc[dt][0] = oacc[dt][1] = oacc[dt][2] = oacc[dt][3] = 0.0f;
	float mrow0 = -INFINITY, mrow1 = -INFINITY; /* running max (log2 units), rows g, g+8 */
	float lrow0 = 0.0f, lrow1 = 0.0f;           /* this thread's partial running sums */

	const int ntiles = (lk + ATT_BK - 1) / ATT_BK;
	for (int j = 0; j < ntiles; j++) {
		const int buf = j & 1;
		const int j0 = j * ATT_BK;
		const bool has_next = j + 1 < ntiles;
		const int nv_next = has_next ? min(ATT_BK, lk - j0 - ATT_BK) : 0;
		const uint16_t *skb = sk + buf * ATT_BK * LDS; /* [BK, LDS] */
		const uint16_t *svb = sv + buf * ATT_BK * LDS; /* [BK, LDS] */
		uint16_t *skn = sk + (buf ^ 1) * ATT_BK * LDS;
		uint16_t *svn = sv + (buf ^ 1) * ATT_BK * LDS;

		/* prefetch the next K tile into registers */
		float4 pre[KV_N];
		if (has_next)
			att_tile_load<HD, KV_N>(pre, k + (int64_t)(j0 + ATT_BK) * ldk, ldk,
			                        nv_next);

		/* s[16, BK] = Q[16, HD] . K[BK, HD]^T. ldmatrix of K (rows = keys):
		 * matrices (keys 0-7, dims 0-7), (keys 0-7, dims 8-15), (keys 8-15, dims
		 * 0-7), (keys 8-15, dims 8-15) -> b0, b1 of n-tile 2np, b0, b1 of 2np+1. */
		float s[NT][4];
#pragma unroll
		for (int nt = 0; nt < NT; nt++)
			s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
		for (int ks = 0; ks < KS; ks++) {
#pragma unroll
			for (int np = 0; np < NT / 2; np++) {
				uint32_t b0, b1, b2, b3;
				att_ldsm_x4(b0, b1, b2, b3,
				            skb +
				                (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * LDS +
				                ks * 16 + ((lane >> 3) & 1) * 8);
				att_mma(s[2 * np], qf[ks], b0, b1);
				att_mma(s[2 * np + 1], qf[ks], b2, b3);
			}
		}

		/* next K tile to the other buffer (last read before the previous barrier),
		 * then prefetch the next V tile */
		if (has_next) {
			att_tile_store<HD, KV_N>(skn, pre);
			att_tile_load<HD, KV_N>(pre, v + (int64_t)(j0 + ATT_BK) * ldv, ldv,
			                        nv_next);
		}

		/* scale to log2 units; keys at or past lk -> -inf */
		const int nvalid = lk - j0;
#pragma unroll
		for (int nt = 0; nt < NT; nt++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				s[nt][e] *= scale_log2;
		if (nvalid < ATT_BK) {
#pragma unroll
			for (int nt = 0; nt < NT; nt++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					if (nt * 8 + 2 * (lane & 3) + (e & 1) >= nvalid)
						s[nt][e] = -INFINITY;
		}

		/* online softmax: row max over the quad of lanes holding a row */
		float mx0 = mrow0, mx1 = mrow1;
#pragma unroll
		for (int nt = 0; nt < NT; nt++) {
			mx0 = fmaxf(mx0, fmaxf(s[nt][0], s[nt][1]));
			mx1 = fmaxf(mx1, fmaxf(s[nt][2], s[nt][3]));
		}
		mx0 = fmaxf(mx0, __shfl_xor_sync(ATT_FULL, mx0, 1));
		mx0 = fmaxf(mx0, __shfl_xor_sync(ATT_FULL, mx0, 2));
		mx1 = fmaxf(mx1, __shfl_xor_sync(ATT_FULL, mx1, 1));
		mx1 = fmaxf(mx1, __shfl_xor_sync(ATT_FULL, mx1, 2));
		/* a row with only -inf so far keeps base 0 (avoids -inf - -inf) */
		const float base0 = mx0 == -INFINITY ? 0.0f : mx0;
		const float base1 = mx1 == -INFINITY ? 0.0f : mx1;
		const float corr0 = exp2f(mrow0 - base0); /* 0 on the first tile */
		const float corr1 = exp2f(mrow1 - base1);
		mrow0 = mx0;
		mrow1 = mx1;
		float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
		for (int nt = 0; nt < NT; nt++) {
			s[nt][0] = exp2f(s[nt][0] - base0);
			s[nt][1] = exp2f(s[nt][1] - base0);
			s[nt][2] = exp2f(s[nt][2] - base1);
			s[nt][3] = exp2f(s[nt][3] - base1);
			sum0 += s[nt][0];
			sum0 += s[nt][1];
			sum1 += s[nt][2];
			sum1 += s[nt][3];
		}
		lrow0 = lrow0 * corr0 + sum0;
		lrow1 = lrow1 * corr1 + sum1;
#pragma unroll
		for (int dt = 0; dt < DT; dt++) {
			oacc[dt][0] *= corr0;
			oacc[dt][1] *= corr0;
			oacc[dt][2] *= corr1;
			oacc[dt][3] *= corr1;
		}

		/* o[16, HD] += p[16, BK] . V[BK, HD]. The S accumulators of n-tiles 2kk and
		 * 2kk+1 are the A fragment of keys [16 kk, 16 kk + 16). ldmatrix.trans of V
		 * (rows = keys): matrices (keys 0-7, dims 0-7), (keys 8-15, dims 0-7), (keys
		 * 0-7, dims 8-15), (keys 8-15, dims 8-15) -> b0, b1 of d-tile 2dp, b0, b1 of
		 * 2dp+1. */
#pragma unroll
		for (int kk = 0; kk < ATT_BK / 16; kk++) {
			uint32_t a[4];
			a[0] = att_pack_bf16(s[2 * kk][0], s[2 * kk][1]);
			a[1] = att_pack_bf16(s[2 * kk][2], s[2 * kk][3]);
			a[2] = att_pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
			a[3] = att_pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
			for (int dp = 0; dp < DT / 2; dp++) {
				uint32_t b0, b1, b2, b3;
				att_ldsm_x4_trans(
				    b0, b1, b2, b3,
				    svb + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDS +
				        dp * 16 + (lane >> 4) * 8);
				att_mma(oacc[2 * dp], a, b0, b1);
				att_mma(oacc[2 * dp + 1], a, b2, b3);
			}
		}

		if (has_next)
			att_tile_store<HD, KV_N>(svn, pre);
		/* the next tile is complete in buffer buf^1; buffer buf is free again */
		__syncthreads();
	}

	/* row sums over the quad (butterfly: all four lanes get the same bits) */
	lrow0 += __shfl_xor_sync(ATT_FULL, lrow0, 1);
	lrow0 += __shfl_xor_sync(ATT_FULL, lrow0, 2);
	lrow1 += __shfl_xor_sync(ATT_FULL, lrow1, 1);
	lrow1 += __shfl_xor_sync(ATT_FULL, lrow1, 2);
	const float inv0 = 1.0f / lrow0, inv1 = 1.0f / lrow1;
	const int row0 = q0 + warp * 16 + (lane >> 2), row1 = row0 + 8;
	T *o0 = o + (int64_t)row0 * ldo; /* [HD] */
	T *o1 = o + (int64_t)row1 * ldo; /* [HD] */
#pragma unroll
	for (int dt = 0; dt < DT; dt++) {
		const int col = dt * 8 + 2 * (lane & 3);
		if (o_vec2) {
			if (row0 < lq)
				att_store2(o0 + col, oacc[dt][0] * inv0, oacc[dt][1] * inv0);
			if (row1 < lq)
				att_store2(o1 + col, oacc[dt][2] * inv1, oacc[dt][3] * inv1);
		} else {
			if (row0 < lq) {
				dit_st1(o0 + col, oacc[dt][0] * inv0);
				dit_st1(o0 + col + 1, oacc[dt][1] * inv0);
			}
			if (row1 < lq) {
				dit_st1(o1 + col, oacc[dt][2] * inv1);
				dit_st1(o1 + col + 1, oacc[dt][3] * inv1);
			}
		}
	}
}

/* fp32 attention, grid (ceil(lq / ATT_FB_WARPS), heads), ATT_FB_WARPS warps: warp w
 * computes query row blockIdx.x * ATT_FB_WARPS + w of head blockIdx.y. Keys go in
 * chunks of 32, lane l scoring key j0 + l; lane l owns dims l, l + 32, ... of the
 * output. Butterfly reductions give every lane the same bits. o, q, k/v of fp32 or bf16
 * activations each (TO, TQ, TKV: float or uint16_t), fp32 inside. */
template <typename TO, typename TQ, typename TKV>
__global__ void __launch_bounds__(ATT_FB_WARPS * 32)
    dit_attention_f32_kernel(TO *o, int64_t ldo, const TQ *q, int64_t ldq, const TKV *k,
                             int64_t ldk, const TKV *v, int64_t ldv, int lq, int lk, int hd,
                             float scale)
{
	__shared__ float sq[ATT_FB_WARPS][ATT_FB_HD];
	const int warp = (int)threadIdx.x >> 5, lane = (int)threadIdx.x & 31;
	const int row = (int)blockIdx.x * ATT_FB_WARPS + warp;
	if (row >= lq)
		return; /* whole warp; no block barrier below */
	const int64_t hoff = (int64_t)blockIdx.y * hd;
	const TQ *qr = q + (int64_t)row * ldq + hoff; /* [hd] */
	for (int d = lane; d < hd; d += 32)
		sq[warp][d] = dit_ld1(qr + d);
	__syncwarp();

	float acc[ATT_FB_HD / 32];
#pragma unroll
	for (int i = 0; i < ATT_FB_HD / 32; i++)
		acc[i] = 0.0f;
	float m = -INFINITY, l = 0.0f;
	for (int j0 = 0; j0 < lk; j0 += 32) {
		const int key = j0 + lane;
		float sc = -INFINITY;
		if (key < lk) {
			const TKV *kr = k + (int64_t)key * ldk + hoff; /* [hd] */
			float dot = 0.0f;
			for (int d = 0; d < hd; d++)
				dot = fmaf(sq[warp][d], dit_ld1(kr + d), dot);
			sc = dot * scale;
		}
		float mx = sc;
#pragma unroll
		for (int off = 16; off > 0; off >>= 1)
			mx = fmaxf(mx, __shfl_xor_sync(ATT_FULL, mx, off));
		const float mnew = fmaxf(m, mx);
		const float base = mnew == -INFINITY ? 0.0f : mnew;
		const float corr = expf(m - base);
		const float p = expf(sc - base); /* 0 for masked keys */
		float ps = p;
#pragma unroll
		for (int off = 16; off > 0; off >>= 1)
			ps += __shfl_xor_sync(ATT_FULL, ps, off);
		l = l * corr + ps;
		m = mnew;
#pragma unroll
		for (int i = 0; i < ATT_FB_HD / 32; i++)
			acc[i] *= corr;
		const int nk = min(32, lk - j0);
		for (int jj = 0; jj < nk; jj++) {
			const float pj = __shfl_sync(ATT_FULL, p, jj);
			const TKV *vr = v + (int64_t)(j0 + jj) * ldv + hoff; /* [hd] */
#pragma unroll
			for (int i = 0; i < ATT_FB_HD / 32; i++) {
				const int d = lane + 32 * i;
				if (d < hd)
					acc[i] = fmaf(pj, dit_ld1(vr + d), acc[i]);
			}
		}
	}
	TO *orow = o + (int64_t)row * ldo + hoff; /* [hd] */
#pragma unroll
	for (int i = 0; i < ATT_FB_HD / 32; i++) {
		const int d = lane + 32 * i;
		if (d < hd)
			dit_st1(orow + d, acc[i] / l);
	}
}

/* *fits = 1 when the current device lets a block opt in to smem bytes of dynamic shared
 * memory (att_smem_bytes<128>() = 104448 exceeds the 99 KiB of sm_86 / sm_89: those
 * take the fp32 kernel instead of failing). */
static int att_smem_fits(size_t smem, int *fits)
{
	int dev = 0, optin = 0;
	cudaError_t e = cudaGetDevice(&dev);
	if (e == cudaSuccess)
		e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
	if (e != cudaSuccess)
		return (int)e;
	*fits = smem <= (size_t)optin;
	return 0;
}

template <int HD, typename T>
static int dit_attention_mma_launch(cudaStream_t s, T *o, int64_t ldo, const T *q, int64_t ldq,
                                    const T *k, int64_t ldk, const T *v, int64_t ldv, int lq,
                                    int lk, int heads, float scale)
{
	const size_t smem = att_smem_bytes<HD>();
	cudaError_t e =
	    cudaFuncSetAttribute(dit_attention_mma_kernel<HD, T>,
	                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
	if (e != cudaSuccess)
		return (int)e;
	const int o_vec2 = ((uintptr_t)o & (2 * sizeof(T) - 1)) == 0 && ldo % 2 == 0;
	dim3 grid((unsigned)((lq + ATT_BQ - 1) / ATT_BQ), (unsigned)heads, 1);
	dit_attention_mma_kernel<HD, T><<<grid, ATT_THREADS, smem, s>>>(
	    o, ldo, q, ldq, k, ldk, v, ldv, lq, lk, scale * 1.44269504088896341f, o_vec2);
	return dit_cuda_last_error();
}

/* The tensor-core kernel for head dim hd, all of o, q, k, v of T. */
template <typename T>
static int att_mma(cudaStream_t s, void *o, int64_t ldo, const void *q, int64_t ldq, const void *k,
                   int64_t ldk, const void *v, int64_t ldv, int lq, int lk, int heads, int64_t hd,
                   float scale)
{
	T *ot = (T *)o;
	const T *qt = (const T *)q, *kt = (const T *)k, *vt = (const T *)v;
	switch (hd) {
	case 16:
		return dit_attention_mma_launch<16, T>(s, ot, ldo, qt, ldq, kt, ldk, vt, ldv, lq,
		                                       lk, heads, scale);
	case 32:
		return dit_attention_mma_launch<32, T>(s, ot, ldo, qt, ldq, kt, ldk, vt, ldv, lq,
		                                       lk, heads, scale);
	case 64:
		return dit_attention_mma_launch<64, T>(s, ot, ldo, qt, ldq, kt, ldk, vt, ldv, lq,
		                                       lk, heads, scale);
	default:
		return dit_attention_mma_launch<128, T>(s, ot, ldo, qt, ldq, kt, ldk, vt, ldv, lq,
		                                        lk, heads, scale);
	}
}

/* The fp32 kernel, o, q, k/v each of fp32 or bf16. */
template <typename TO, typename TQ, typename TKV>
static int att_fb(cudaStream_t s, void *o, int64_t ldo, const void *q, int64_t ldq, const void *k,
                  int64_t ldk, const void *v, int64_t ldv, int lq, int lk, int heads, int hd,
                  float scale)
{
	dim3 grid((unsigned)((lq + ATT_FB_WARPS - 1) / ATT_FB_WARPS), (unsigned)heads, 1);
	dit_attention_f32_kernel<TO, TQ, TKV>
	    <<<grid, ATT_FB_WARPS * 32, 0, s>>>((TO *)o, ldo, (const TQ *)q, ldq, (const TKV *)k,
	                                        ldk, (const TKV *)v, ldv, lq, lk, hd, scale);
	return dit_cuda_last_error();
}

extern "C" int dit_cuda_attention_act(cudaStream_t s, void *o, int o_bf16, int64_t ldo,
                                      const void *q, int q_bf16, int64_t ldq, const void *k,
                                      const void *v, int kv_bf16, int64_t ldk, int64_t ldv,
                                      int64_t lq, int64_t lk, int64_t heads, int64_t hd,
                                      float scale)
{
	if (hd > ATT_FB_HD || hd < 0 || heads < 0 || heads > 65535 || lq > INT_MAX - ATT_BQ ||
	    lk > INT_MAX - ATT_BK)
		return (int)cudaErrorInvalidValue;
	if (lq <= 0 || hd == 0 || heads == 0)
		return 0;
	if (lk <= 0) {
		/* softmax over no keys: o = 0, as the CPU kernel (bf16 zero is zero bits) */
		const size_t osz = o_bf16 ? sizeof(uint16_t) : sizeof(float);
		return (int)cudaMemset2DAsync(o, (size_t)ldo * osz, 0, (size_t)(heads * hd) * osz,
		                              (size_t)lq, s);
	}
	/* the tensor-core kernel: every operand of one type, rows aligned for 4-value loads */
	const int bf = q_bf16 && kv_bf16 && o_bf16, f32 = !q_bf16 && !kv_bf16 && !o_bf16;
	const uintptr_t am = bf ? 7u : 15u;
	int mma = (bf || f32) && ((uintptr_t)q & am) == 0 && ((uintptr_t)k & am) == 0 &&
	          ((uintptr_t)v & am) == 0 && ldq % 4 == 0 && ldk % 4 == 0 && ldv % 4 == 0 &&
	          (hd == 16 || hd == 32 || hd == 64 || hd == 128);
	if (mma) {
		const size_t smem = hd == 16   ? att_smem_bytes<16>()
		                    : hd == 32 ? att_smem_bytes<32>()
		                    : hd == 64 ? att_smem_bytes<64>()
		                               : att_smem_bytes<128>();
		int err = att_smem_fits(smem, &mma);
		if (err)
			return err;
	}
	if (mma)
		return bf ? att_mma<uint16_t>(s, o, ldo, q, ldq, k, ldk, v, ldv, (int)lq, (int)lk,
		                              (int)heads, hd, scale)
		          : att_mma<float>(s, o, ldo, q, ldq, k, ldk, v, ldv, (int)lq, (int)lk,
		                           (int)heads, hd, scale);
#define ATT_FB(TO, TQ, TKV)                                                                        \
	att_fb<TO, TQ, TKV>(s, o, ldo, q, ldq, k, ldk, v, ldv, (int)lq, (int)lk, (int)heads,       \
	                    (int)hd, scale)
	typedef uint16_t B;
	switch ((o_bf16 ? 4 : 0) | (q_bf16 ? 2 : 0) | (kv_bf16 ? 1 : 0)) {
	case 0: return ATT_FB(float, float, float);
	case 1: return ATT_FB(float, float, B);
	case 2: return ATT_FB(float, B, float);
	case 3: return ATT_FB(float, B, B);
	case 4: return ATT_FB(B, float, float);
	case 5: return ATT_FB(B, float, B);
	case 6: return ATT_FB(B, B, float);
	default: return ATT_FB(B, B, B);
	}
#undef ATT_FB
}

extern "C" int dit_cuda_attention(cudaStream_t s, float *o, int64_t ldo, const float *q,
                                  int64_t ldq, const float *k, int64_t ldk, const float *v,
                                  int64_t ldv, int64_t lq, int64_t lk, int64_t heads, int64_t hd,
                                  float scale)
{
	return dit_cuda_attention_act(s, o, 0, ldo, q, 0, ldq, k, v, 0, ldk, ldv, lq, lk, heads, hd,
	                              scale);
}
