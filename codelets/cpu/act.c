/* Elementwise activations, fp32. The scalar path (vector ones: vec_eltwise.c). */
#include <math.h>

#include "dit_cpu_isa_impl.h"
#include "dit_cpu_exp.h"

/* 0.5 v (1 + tanh(u)), u = sqrt(2/pi) (v + 0.044715 v^3), with
 * tanh(u) = sign(u) (1 - t) / (1 + t), t = exp(-2|u|) in (0, 1]: no tanhf call and no
 * branch, so that loops over it vectorise. */
static inline float dit_gelu_tanh1(float v)
{
	const float c = 0.7978845608028654f; /* sqrt(2/pi) */
	float u = c * (v + 0.044715f * v * v * v);
	float t = dit_cpu_exp_nonpos(-2.0f * fabsf(u));
	float th = copysignf((1.0f - t) / (1.0f + t), u);
	return 0.5f * v * (1.0f + th);
}

/* x[n] = gelu_tanh(x) in place, in fixed-length chunks the compiler vectorises. */
static void dit_gelu_tanh_apply(float *x, int64_t n)
{
	enum { CHUNK = 16 };
	int64_t i = 0;
	for (; i + CHUNK <= n; i += CHUNK)
		for (int j = 0; j < CHUNK; j++)
			x[i + j] = dit_gelu_tanh1(x[i + j]);
	for (; i < n; i++)
		x[i] = dit_gelu_tanh1(x[i]);
}

/* x[n] = x / (1 + exp(-x)) in place. */
static void dit_silu_apply(float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		x[i] = v / (1.0f + expf(-v));
	}
}

/* x[n] = 0.5 x (1 + erf(x / sqrt(2))) in place, in float64 rounded once. The vector
 * paths call this too (no vector erf), so every ISA gives these bytes. */
static void dit_gelu_apply(float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		double v = x[i];
		x[i] = (float)(0.5 * v * (1.0 + erf(v / 1.4142135623730951)));
	}
}

void dit_act_scalar(float *x, int64_t n, dit_act act)
{
	switch (act) {
	case DIT_ACT_GELU_TANH: dit_gelu_tanh_apply(x, n); break;
	case DIT_ACT_SILU: dit_silu_apply(x, n); break;
	case DIT_ACT_GELU: dit_gelu_apply(x, n); break;
	case DIT_ACT_NONE:
	default: break;
	}
}
