/* Sinusoidal timestep embedding, float64 then rounded to fp32 (cos half first), and
 * the time embedding MLP over it. */
#include <math.h>
#include <string.h>

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

void dit_cpu_time_embed(float *e, float *e0, const double *ts, int64_t nt, const float *w0,
                        const float *b0, const float *w2, const float *b2, const float *wp,
                        const float *bp, int64_t dim, int64_t freq_dim, int64_t nproj,
                        float *scratch)
{
	int64_t P = (nproj > 0 ? nproj : 6) * dim; /* a row of e0 */
	for (int64_t i = 0; i < nt; i++) {
		float *sin_t = scratch + i * freq_dim;          /* [freq_dim] */
		float *hid = scratch + nt * freq_dim + i * dim; /* [dim] */
		float *er = e + i * dim, *e0r = e0 + i * P;     /* [dim], [P] */
		dit_cpu_timestep_embedding(sin_t, ts[i], freq_dim);
		dit_cpu_linear(hid, dim, sin_t, freq_dim, w0, b0, 1, dim, freq_dim, DIT_ACT_SILU);
		dit_cpu_linear(er, dim, hid, dim, w2, b2, 1, dim, dim, DIT_ACT_NONE);
		memcpy(hid, er, (size_t)dim * sizeof *hid);
		dit_cpu_act(hid, dim, DIT_ACT_SILU);
		dit_cpu_linear(e0r, P, hid, dim, wp, bp, 1, P, dim, DIT_ACT_NONE);
	}
}
