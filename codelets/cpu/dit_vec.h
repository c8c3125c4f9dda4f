/* The small vector vocabulary the vec_*.c kernels are written in, for the one ISA
 * the including file is compiled for: DIT_ISA_AVX2 (-mavx2 -mfma) or DIT_ISA_AVX512
 * (-mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma). Every function is static inline,
 * so no copy built with these flags can be shared with code that runs elsewhere.
 *
 * dit_vf: DIT_VW fp32 lanes. dit_vd: DIT_VDW = DIT_VW / 2 float64 lanes, loaded from
 * and stored to DIT_VDW floats (widened exactly, rounded once). The _n forms touch
 * only the first n lanes (0 <= n <= the width); masked loads give 0 elsewhere.
 * Horizontal sums add lanes in one fixed tree, so results do not vary run to run. */
#ifndef DIT_VEC_H
#define DIT_VEC_H

#include <immintrin.h>
#include <stdint.h>

#if defined(DIT_ISA_AVX512)

#define DIT_VW         16
#define DIT_ISA_FN(op) dit_##op##_avx512
#define DIT_ISA_SUFFIX avx512
typedef __m512 dit_vf;
typedef __m512d dit_vd;

static inline __mmask16 dit_vmask(int n)
{
	return (__mmask16)((1u << n) - 1u);
}
static inline dit_vf dit_vf_set1(float f)
{
	return _mm512_set1_ps(f);
}
static inline dit_vf dit_vf_load(const float *p)
{
	return _mm512_loadu_ps(p);
}
static inline dit_vf dit_vf_loadn(const float *p, int n)
{
	return _mm512_maskz_loadu_ps(dit_vmask(n), p);
}
/* the first n lanes from p, fill in the others */
static inline dit_vf dit_vf_loadn_fill(const float *p, int n, float fill)
{
	return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), dit_vmask(n), p);
}
static inline void dit_vf_store(float *p, dit_vf v)
{
	_mm512_storeu_ps(p, v);
}
static inline void dit_vf_storen(float *p, dit_vf v, int n)
{
	_mm512_mask_storeu_ps(p, dit_vmask(n), v);
}
/* v in the first n lanes, 0 in the others */
static inline dit_vf dit_vf_keepn(dit_vf v, int n)
{
	return _mm512_maskz_mov_ps(dit_vmask(n), v);
}
static inline dit_vf dit_vf_add(dit_vf a, dit_vf b)
{
	return _mm512_add_ps(a, b);
}
static inline dit_vf dit_vf_sub(dit_vf a, dit_vf b)
{
	return _mm512_sub_ps(a, b);
}
static inline dit_vf dit_vf_mul(dit_vf a, dit_vf b)
{
	return _mm512_mul_ps(a, b);
}
static inline dit_vf dit_vf_div(dit_vf a, dit_vf b)
{
	return _mm512_div_ps(a, b);
}
/* a * b + c, one rounding */
static inline dit_vf dit_vf_fmadd(dit_vf a, dit_vf b, dit_vf c)
{
	return _mm512_fmadd_ps(a, b, c);
}
/* max(a, b); b when either is NaN */
static inline dit_vf dit_vf_max(dit_vf a, dit_vf b)
{
	return _mm512_max_ps(a, b);
}
static inline dit_vf dit_vf_and(dit_vf a, dit_vf b)
{
	return _mm512_and_ps(a, b);
}
static inline dit_vf dit_vf_or(dit_vf a, dit_vf b)
{
	return _mm512_or_ps(a, b);
}
static inline dit_vf dit_vf_xor(dit_vf a, dit_vf b)
{
	return _mm512_xor_ps(a, b);
}
static inline dit_vf dit_vf_andnot(dit_vf a, dit_vf b) /* ~a & b */
{
	return _mm512_andnot_ps(a, b);
}
/* per lane: neg where the sign bit of v is set, else pos */
static inline dit_vf dit_vf_select_sign(dit_vf v, dit_vf pos, dit_vf neg)
{
	return _mm512_mask_blend_ps(_mm512_movepi32_mask(_mm512_castps_si512(v)), pos, neg);
}
/* 2^n for the integer n held in the low bits of t = 1.5 * 2^23 + n */
static inline dit_vf dit_vf_pow2_from_round(dit_vf t)
{
	__m512i ti = _mm512_castps_si512(t);
	ti = _mm512_sub_epi32(ti, _mm512_set1_epi32(0x4b400000 - 127));
	return _mm512_castsi512_ps(_mm512_slli_epi32(ti, 23));
}
static inline float dit_vf_hsum(dit_vf v)
{
	__m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
	                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
	__m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
	q = _mm_add_ps(q, _mm_movehl_ps(q, q));
	q = _mm_add_ss(q, _mm_movehdup_ps(q));
	return _mm_cvtss_f32(q);
}
static inline float dit_vf_hmax(dit_vf v)
{
	__m256 h = _mm256_max_ps(_mm512_castps512_ps256(v),
	                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
	__m128 q = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
	q = _mm_max_ps(q, _mm_movehl_ps(q, q));
	q = _mm_max_ss(q, _mm_movehdup_ps(q));
	return _mm_cvtss_f32(q);
}
/* DIT_VW bf16 values widened to fp32 (exact) */
static inline dit_vf dit_vf_load_bf16(const uint16_t *p)
{
	__m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
	return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
static inline dit_vf dit_vf_loadn_bf16(const uint16_t *p, int n)
{
	__m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(dit_vmask(n), p));
	return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

#define DIT_VDW 8
static inline dit_vd dit_vd_set1(double d)
{
	return _mm512_set1_pd(d);
}
static inline dit_vd dit_vd_loadf(const float *p)
{
	return _mm512_cvtps_pd(_mm256_loadu_ps(p));
}
static inline dit_vd dit_vd_loadfn(const float *p, int n)
{
	return _mm512_cvtps_pd(_mm256_maskz_loadu_ps((__mmask8)dit_vmask(n), p));
}
static inline void dit_vd_storef(float *p, dit_vd v)
{
	_mm256_storeu_ps(p, _mm512_cvtpd_ps(v));
}
static inline void dit_vd_storefn(float *p, dit_vd v, int n)
{
	_mm256_mask_storeu_ps(p, (__mmask8)dit_vmask(n), _mm512_cvtpd_ps(v));
}
static inline dit_vd dit_vd_load(const double *p)
{
	return _mm512_loadu_pd(p);
}
static inline dit_vd dit_vd_loadn(const double *p, int n)
{
	return _mm512_maskz_loadu_pd((__mmask8)dit_vmask(n), p);
}
static inline dit_vd dit_vd_add(dit_vd a, dit_vd b)
{
	return _mm512_add_pd(a, b);
}
static inline dit_vd dit_vd_sub(dit_vd a, dit_vd b)
{
	return _mm512_sub_pd(a, b);
}
static inline dit_vd dit_vd_mul(dit_vd a, dit_vd b)
{
	return _mm512_mul_pd(a, b);
}
static inline dit_vd dit_vd_xor(dit_vd a, dit_vd b)
{
	return _mm512_xor_pd(a, b);
}
/* [a1, a0, a3, a2, ...]: the two of each pair swapped */
static inline dit_vd dit_vd_pair_swap(dit_vd a)
{
	return _mm512_permute_pd(a, 0x55);
}
/* [a0, a0, a2, a2, ...] and [a1, a1, a3, a3, ...] */
static inline dit_vd dit_vd_pair_even(dit_vd a)
{
	return _mm512_movedup_pd(a);
}
static inline dit_vd dit_vd_pair_odd(dit_vd a)
{
	return _mm512_permute_pd(a, 0xff);
}
/* [-0, 0, -0, 0, ...]: xor flips the sign of the first of each pair */
static inline dit_vd dit_vd_sign_even(void)
{
	return _mm512_setr_pd(-0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0);
}
/* The even and the odd lanes of the 2 DIT_VDW values a, b (a first): [a0, a2, ...,
 * b0, b2, ...] and [a1, a3, ..., b1, b3, ...] */
static inline dit_vd dit_vd_even2(dit_vd a, dit_vd b)
{
	return _mm512_permutex2var_pd(a, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), b);
}
static inline dit_vd dit_vd_odd2(dit_vd a, dit_vd b)
{
	return _mm512_permutex2var_pd(a, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), b);
}
static inline double dit_vd_hsum(dit_vd v)
{
	__m256d h = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
	__m128d q = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
	q = _mm_add_sd(q, _mm_unpackhi_pd(q, q));
	return _mm_cvtsd_f64(q);
}

#elif defined(DIT_ISA_AVX2)

#define DIT_VW         8
#define DIT_ISA_FN(op) dit_##op##_avx2
#define DIT_ISA_SUFFIX avx2
typedef __m256 dit_vf;
typedef __m256d dit_vd;

/* lanes [0, n) all ones: 8 - n words into { -1 x 8, 0 x 8 } */
static const int32_t dit_vmask_tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
static const int64_t dit_vmask_tab64[8] = {-1, -1, -1, -1, 0, 0, 0, 0};

static inline __m256i dit_vmask(int n)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)(dit_vmask_tab + 8 - n));
}
static inline dit_vf dit_vf_set1(float f)
{
	return _mm256_set1_ps(f);
}
static inline dit_vf dit_vf_load(const float *p)
{
	return _mm256_loadu_ps(p);
}
static inline dit_vf dit_vf_loadn(const float *p, int n)
{
	return _mm256_maskload_ps(p, dit_vmask(n));
}
static inline dit_vf dit_vf_loadn_fill(const float *p, int n, float fill)
{
	__m256i m = dit_vmask(n);
	return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m),
	                        _mm256_castsi256_ps(m));
}
static inline void dit_vf_store(float *p, dit_vf v)
{
	_mm256_storeu_ps(p, v);
}
static inline void dit_vf_storen(float *p, dit_vf v, int n)
{
	_mm256_maskstore_ps(p, dit_vmask(n), v);
}
static inline dit_vf dit_vf_keepn(dit_vf v, int n)
{
	return _mm256_and_ps(v, _mm256_castsi256_ps(dit_vmask(n)));
}
static inline dit_vf dit_vf_add(dit_vf a, dit_vf b)
{
	return _mm256_add_ps(a, b);
}
static inline dit_vf dit_vf_sub(dit_vf a, dit_vf b)
{
	return _mm256_sub_ps(a, b);
}
static inline dit_vf dit_vf_mul(dit_vf a, dit_vf b)
{
	return _mm256_mul_ps(a, b);
}
static inline dit_vf dit_vf_div(dit_vf a, dit_vf b)
{
	return _mm256_div_ps(a, b);
}
static inline dit_vf dit_vf_fmadd(dit_vf a, dit_vf b, dit_vf c)
{
	return _mm256_fmadd_ps(a, b, c);
}
static inline dit_vf dit_vf_max(dit_vf a, dit_vf b)
{
	return _mm256_max_ps(a, b);
}
static inline dit_vf dit_vf_and(dit_vf a, dit_vf b)
{
	return _mm256_and_ps(a, b);
}
static inline dit_vf dit_vf_or(dit_vf a, dit_vf b)
{
	return _mm256_or_ps(a, b);
}
static inline dit_vf dit_vf_xor(dit_vf a, dit_vf b)
{
	return _mm256_xor_ps(a, b);
}
static inline dit_vf dit_vf_andnot(dit_vf a, dit_vf b)
{
	return _mm256_andnot_ps(a, b);
}
static inline dit_vf dit_vf_select_sign(dit_vf v, dit_vf pos, dit_vf neg)
{
	return _mm256_blendv_ps(pos, neg, v);
}
static inline dit_vf dit_vf_pow2_from_round(dit_vf t)
{
	__m256i ti = _mm256_castps_si256(t);
	ti = _mm256_sub_epi32(ti, _mm256_set1_epi32(0x4b400000 - 127));
	return _mm256_castsi256_ps(_mm256_slli_epi32(ti, 23));
}
static inline float dit_vf_hsum(dit_vf v)
{
	__m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	q = _mm_add_ps(q, _mm_movehl_ps(q, q));
	q = _mm_add_ss(q, _mm_movehdup_ps(q));
	return _mm_cvtss_f32(q);
}
static inline float dit_vf_hmax(dit_vf v)
{
	__m128 q = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	q = _mm_max_ps(q, _mm_movehl_ps(q, q));
	q = _mm_max_ss(q, _mm_movehdup_ps(q));
	return _mm_cvtss_f32(q);
}
static inline dit_vf dit_vf_load_bf16(const uint16_t *p)
{
	__m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
	return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
static inline dit_vf dit_vf_loadn_bf16(const uint16_t *p, int n)
{
	uint16_t b[8] = {0};
	for (int i = 0; i < n; i++)
		b[i] = p[i];
	return dit_vf_load_bf16(b);
}

#define DIT_VDW 4
static inline __m128i dit_vmask4(int n)
{
	return _mm_loadu_si128((const __m128i *)(const void *)(dit_vmask_tab + 8 - n));
}
static inline dit_vd dit_vd_set1(double d)
{
	return _mm256_set1_pd(d);
}
static inline dit_vd dit_vd_loadf(const float *p)
{
	return _mm256_cvtps_pd(_mm_loadu_ps(p));
}
static inline dit_vd dit_vd_loadfn(const float *p, int n)
{
	return _mm256_cvtps_pd(_mm_maskload_ps(p, dit_vmask4(n)));
}
static inline void dit_vd_storef(float *p, dit_vd v)
{
	_mm_storeu_ps(p, _mm256_cvtpd_ps(v));
}
static inline void dit_vd_storefn(float *p, dit_vd v, int n)
{
	_mm_maskstore_ps(p, dit_vmask4(n), _mm256_cvtpd_ps(v));
}
static inline dit_vd dit_vd_load(const double *p)
{
	return _mm256_loadu_pd(p);
}
static inline dit_vd dit_vd_loadn(const double *p, int n)
{
	__m256i m = _mm256_loadu_si256((const __m256i *)(const void *)(dit_vmask_tab64 + 4 - n));
	return _mm256_maskload_pd(p, m);
}
static inline dit_vd dit_vd_add(dit_vd a, dit_vd b)
{
	return _mm256_add_pd(a, b);
}
static inline dit_vd dit_vd_sub(dit_vd a, dit_vd b)
{
	return _mm256_sub_pd(a, b);
}
static inline dit_vd dit_vd_mul(dit_vd a, dit_vd b)
{
	return _mm256_mul_pd(a, b);
}
static inline dit_vd dit_vd_xor(dit_vd a, dit_vd b)
{
	return _mm256_xor_pd(a, b);
}
static inline dit_vd dit_vd_pair_swap(dit_vd a)
{
	return _mm256_permute_pd(a, 0x5);
}
static inline dit_vd dit_vd_pair_even(dit_vd a)
{
	return _mm256_movedup_pd(a);
}
static inline dit_vd dit_vd_pair_odd(dit_vd a)
{
	return _mm256_permute_pd(a, 0xf);
}
static inline dit_vd dit_vd_sign_even(void)
{
	return _mm256_setr_pd(-0.0, 0.0, -0.0, 0.0);
}
static inline dit_vd dit_vd_even2(dit_vd a, dit_vd b)
{
	/* unpacklo: [a0, b0, a2, b2], then lanes 0, 2, 1, 3 */
	return _mm256_permute4x64_pd(_mm256_unpacklo_pd(a, b), 0xd8);
}
static inline dit_vd dit_vd_odd2(dit_vd a, dit_vd b)
{
	return _mm256_permute4x64_pd(_mm256_unpackhi_pd(a, b), 0xd8);
}
static inline double dit_vd_hsum(dit_vd v)
{
	__m128d q = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
	q = _mm_add_sd(q, _mm_unpackhi_pd(q, q));
	return _mm_cvtsd_f64(q);
}

#else
#error "dit_vec.h needs DIT_ISA_AVX2 or DIT_ISA_AVX512"
#endif

/* ---- built on the above, the same for every ISA ---- */

static inline dit_vf dit_vf_zero(void)
{
	return dit_vf_set1(0.0f);
}

static inline dit_vd dit_vd_zero(void)
{
	return dit_vd_set1(0.0);
}

/* exp(x) for x <= 0, the algorithm of dit_cpu_exp_nonpos (dit_cpu_exp.h) with FMA:
 * x clamped to -87 (NaN kept: dit_vf_max returns its second operand then),
 * x = n ln2 + r, e^r by its degree-7 Taylor polynomial, 2^n from exponent bits. */
static inline dit_vf dit_vf_exp_nonpos(dit_vf x)
{
	x = dit_vf_max(dit_vf_set1(-87.0f), x);
	dit_vf t = dit_vf_fmadd(x, dit_vf_set1(1.44269504088896341f), dit_vf_set1(12582912.0f));
	dit_vf nf = dit_vf_sub(t, dit_vf_set1(12582912.0f));
	dit_vf r = dit_vf_fmadd(nf, dit_vf_set1(-0.693145751953125f), x);
	r = dit_vf_fmadd(nf, dit_vf_set1(-1.42860682030941723e-06f), r);
	dit_vf p = dit_vf_set1(1.0f / 5040.0f);
	p = dit_vf_fmadd(p, r, dit_vf_set1(1.0f / 720.0f));
	p = dit_vf_fmadd(p, r, dit_vf_set1(1.0f / 120.0f));
	p = dit_vf_fmadd(p, r, dit_vf_set1(1.0f / 24.0f));
	p = dit_vf_fmadd(p, r, dit_vf_set1(1.0f / 6.0f));
	p = dit_vf_fmadd(p, r, dit_vf_set1(0.5f));
	p = dit_vf_fmadd(p, r, dit_vf_set1(1.0f));
	p = dit_vf_fmadd(p, r, dit_vf_set1(1.0f));
	return dit_vf_mul(p, dit_vf_pow2_from_round(t));
}

#endif
