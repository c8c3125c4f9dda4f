/* Sinusoidal timestep embedding, float64 then rounded to fp32 (cos half first). */
#include <math.h>

#include "dit_cpu.h"

void dit_cpu_timestep_embedding(float *out, double t, int64_t freq_dim)
{
	int64_t half = freq_dim / 2;
	for (int64_t k = 0; k < half; k++) {
		double wk = pow(10000.0, -(double)k / (double)half);
		double a = t * wk;
		out[k] = (float)cos(a);
		out[half + k] = (float)sin(a);
	}
}
