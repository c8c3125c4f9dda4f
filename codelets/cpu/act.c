/* Elementwise activations, fp32. */
#include <math.h>

#include "dit_cpu.h"

/* x[n] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) in place. */
static void dit_gelu_tanh_apply(float *x, int64_t n)
{
	const float c = 0.7978845608028654f; /* sqrt(2/pi) */
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		float u = c * (v + 0.044715f * v * v * v);
		x[i] = 0.5f * v * (1.0f + tanhf(u));
	}
}

/* x[n] = x / (1 + exp(-x)) in place. */
static void dit_silu_apply(float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		x[i] = v / (1.0f + expf(-v));
	}
}

void dit_cpu_act(float *x, int64_t n, dit_act act)
{
	switch (act) {
	case DIT_ACT_GELU_TANH: dit_gelu_tanh_apply(x, n); break;
	case DIT_ACT_SILU: dit_silu_apply(x, n); break;
	case DIT_ACT_NONE:
	default: break;
	}
}
