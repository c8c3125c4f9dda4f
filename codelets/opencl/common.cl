/* Definitions shared by every ditstar OpenCL kernel. This file comes first in the
 * program source; the build options add -DDIT_FP64=1 when the device has
 * cl_khr_fp64.
 *
 * Conventions: every tensor is a global buffer plus an ELEMENT offset (a long) of its
 * first value; matrices are row-major with a row stride in elements. Reductions use
 * a fixed order (sequential loops or a fixed tree over a fixed work-group size), and
 * nothing uses atomics, so a result depends only on the inputs and the device. */

/* a * b + c must round the product: results must not depend on whether the compiler
 * fuses (the CPU kernels are built with -ffp-contract=off). */
#pragma OPENCL FP_CONTRACT OFF

#ifdef DIT_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double dit_acc; /* accumulator of the reductions that the CPU does in float64 */
typedef double dit_f64; /* element of a float64 buffer (the RoPE table) */
#else
typedef float dit_acc;
typedef ulong dit_f64; /* float64 bit patterns, converted by dit_f64_load */
#endif

/* Activations, as enum dit_act (codelets/cpu/dit_cpu.h). */
#define DIT_ACT_NONE      0
#define DIT_ACT_GELU_TANH 1
#define DIT_ACT_SILU      2
#define DIT_ACT_GELU      3

/* dit_vecf: a vector of DIT_VEC_W floats (4, 8 or 16: the device's preferred width,
 * from the host) for the dot products of dit_linear_dot and dit_attention;
 * dit_vsumf adds its lanes by halving. */
#ifndef DIT_VEC_W
#define DIT_VEC_W 4
#endif
/* dit_vecu: as many uints, for the bits of compact weights (dit_vload_u: widened from
 * bytes or ushorts, dit_vasf: reinterpreted, dit_vcvtf: converted). */
#if DIT_VEC_W == 16
typedef float16 dit_vecf;
typedef uint16 dit_vecu;
#define dit_vloadf           vload16
#define dit_vload_bf16(i, p) as_float16(convert_uint16(vload16((i), (p))) << 16)
#define dit_vload_u(i, p)    convert_uint16(vload16((i), (p)))
#define dit_vasf             as_float16
#define dit_vasu             as_uint16
#define dit_vcvtf            convert_float16
#elif DIT_VEC_W == 8
typedef float8 dit_vecf;
typedef uint8 dit_vecu;
#define dit_vloadf           vload8
#define dit_vload_bf16(i, p) as_float8(convert_uint8(vload8((i), (p))) << 16)
#define dit_vload_u(i, p)    convert_uint8(vload8((i), (p)))
#define dit_vasf             as_float8
#define dit_vasu             as_uint8
#define dit_vcvtf            convert_float8
#else
#undef DIT_VEC_W
#define DIT_VEC_W            4
typedef float4 dit_vecf;
typedef uint4 dit_vecu;
#define dit_vloadf           vload4
#define dit_vload_bf16(i, p) as_float4(convert_uint4(vload4((i), (p))) << 16)
#define dit_vload_u(i, p)    convert_uint4(vload4((i), (p)))
#define dit_vasf             as_float4
#define dit_vasu             as_uint4
#define dit_vcvtf            convert_float4
#endif

/* bf16 (the upper half of a float) widened: exact. */
float dit_bf16(ushort h)
{
	return as_float((uint)h << 16);
}

/* float to bf16, to nearest even (a NaN stays a quiet NaN), as dit_bf16_from_f32. */
ushort dit_bf16_rne(float f)
{
	uint u = as_uint(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (ushort)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (ushort)(u >> 16);
}

/* Activations stored in bf16 (--act-dtype bf16): a buffer of floats or, with bf set, of
 * bf16 values, at ELEMENT index i of its own type. */
float dit_ld(global const float *p, int bf, size_t i)
{
	return bf ? dit_bf16(((global const ushort *)p)[i]) : p[i];
}

void dit_st(global float *p, int bf, size_t i, float v)
{
	if (bf)
		((global ushort *)p)[i] = dit_bf16_rne(v);
	else
		p[i] = v;
}

float dit_vsumf(dit_vecf v)
{
#if DIT_VEC_W == 16
	float8 v8 = v.lo + v.hi;
#elif DIT_VEC_W == 8
	float8 v8 = v;
#endif
#if DIT_VEC_W >= 8
	float4 v4 = v8.lo + v8.hi;
#else
	float4 v4 = v;
#endif
	float2 v2 = v4.lo + v4.hi;
	return v2.x + v2.y;
}

/* Work-group size of the row reductions (layernorm, qk_norm): a power of two. */
#define DIT_NORM_WG 64
/* Work-group size of the elementwise kernels. */
#define DIT_ELEM_WG 256

/* exp(x) for x <= 0, the same operations as dit_cpu_exp_nonpos
 * (codelets/cpu/dit_cpu_exp.h), so that softmax and GELU round as on the CPU:
 * x = n ln2 + r, e^r by a degree-7 polynomial, 2^n from the exponent bits, x below
 * -87 clamped to -87, NaN kept. */
float dit_exp_nonpos(float x)
{
	const uint min_bits = 0xc2ae0000u;     /* -87.0f */
	const uint neg_inf_bits = 0xff800000u; /* -inf */
	const uint round_bits = 0x4b400000u;   /* 1.5 * 2^23 */
	uint xb = as_uint(x);
	uint above = xb - (min_bits + 1u);
	uint in_range = above <= neg_inf_bits - (min_bits + 1u) ? 1u : 0u;
	uint mask = 0u - in_range;
	xb = (xb & ~mask) | (min_bits & mask);
	float xc = as_float(xb);
	float t = xc * 1.44269504088896341f + 12582912.0f;
	float nf = t - 12582912.0f;
	float r = (xc - nf * 0.693145751953125f) - nf * 1.42860682030941723e-06f;
	float p = 1.0f / 5040.0f;
	p = p * r + 1.0f / 720.0f;
	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	uint bits = (as_uint(t) - round_bits + 127u) << 23; /* 2^n */
	return p * as_float(bits);
}

/* 0.5 v (1 + tanh(u)), u = sqrt(2/pi) (v + 0.044715 v^3), tanh through
 * dit_exp_nonpos as in codelets/cpu/act.c. */
float dit_gelu_tanh(float v)
{
	const float c = 0.7978845608028654f;
	float u = c * (v + 0.044715f * v * v * v);
	float t = dit_exp_nonpos(-2.0f * fabs(u));
	float th = copysign((1.0f - t) / (1.0f + t), u);
	return 0.5f * v * (1.0f + th);
}

/* 0.5 v (1 + erf(v / sqrt(2))): in float64 rounded once as codelets/cpu/act.c (the
 * builtin erf); devices without float64 in float (within a few ulps). */
float dit_gelu_erf(float v)
{
#ifdef DIT_FP64
	double d = v;
	return (float)(0.5 * d * (1.0 + erf(d / 1.4142135623730951)));
#else
	return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));
#endif
}

float dit_act(float v, int act)
{
	if (act == DIT_ACT_GELU_TANH)
		return dit_gelu_tanh(v);
	if (act == DIT_ACT_GELU)
		return dit_gelu_erf(v);
	if (act == DIT_ACT_SILU)
		return v / (1.0f + exp(-v));
	return v;
}

#ifndef DIT_FP64
/* A float64 bit pattern rounded to the nearest fp32 (ties to even); float64 values
 * below the fp32 normal range become signed zeros. */
float dit_f64_bits_to_f32(ulong b)
{
	uint sign = (uint)(b >> 63) << 31;
	int e = (int)((b >> 52) & 0x7ff);
	ulong mant = b & 0xfffffffffffffUL;
	if (e == 0x7ff)
		return mant ? as_float(0x7fc00000u) : as_float(sign | 0x7f800000u);
	int fe = e - 1023 + 127;
	if (e == 0 || fe <= 0)
		return as_float(sign);
	uint m = (uint)(mant >> 29);
	ulong rem = mant & 0x1fffffffUL;
	if (rem > 0x10000000UL || (rem == 0x10000000UL && (m & 1u))) {
		m++;
		if (m == 0x800000u) {
			m = 0;
			fe++;
		}
	}
	if (fe >= 255)
		return as_float(sign | 0x7f800000u);
	return as_float(sign | ((uint)fe << 23) | m);
}
#endif

/* Element i of a float64 buffer as an accumulator value. */
dit_acc dit_f64_load(global const dit_f64 *p, size_t i)
{
#ifdef DIT_FP64
	return p[i];
#else
	return dit_f64_bits_to_f32(p[i]);
#endif
}

/* The sum of every work-item's v over a work-group of DIT_NORM_WG work-items, by a
 * fixed pairwise tree in local memory buf [DIT_NORM_WG]; every work-item gets it. */
dit_acc dit_group_sum(dit_acc v, local dit_acc *buf)
{
	int lid = (int)get_local_id(0);
	buf[lid] = v;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (int s = DIT_NORM_WG / 2; s > 0; s >>= 1) {
		if (lid < s)
			buf[lid] += buf[lid + s];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	dit_acc r = buf[0];
	barrier(CLK_LOCAL_MEM_FENCE);
	return r;
}
