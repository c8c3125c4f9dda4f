/* Linear combinations of latents (sampler updates) and classifier-free guidance. */
#include "dit_cpu.h"

enum { DIT_LINCOMB_CHUNK = 256 }; /* elements accumulated at a time in float64 */

void dit_cpu_lincomb(float *out, int64_t n, int nterms, const float *const *in, const double *coef)
{
	double acc[DIT_LINCOMB_CHUNK];
	for (int64_t i0 = 0; i0 < n; i0 += DIT_LINCOMB_CHUNK) {
		int64_t len = n - i0 < DIT_LINCOMB_CHUNK ? n - i0 : DIT_LINCOMB_CHUNK;
		for (int64_t i = 0; i < len; i++)
			acc[i] = 0.0;
		/* All inputs of the chunk are read before out is written, so out may
		 * alias any in[t]. */
		for (int t = 0; t < nterms; t++) {
			const float *src = in[t] + i0;
			double ct = coef[t];
			for (int64_t i = 0; i < len; i++)
				acc[i] += ct * (double)src[i];
		}
		for (int64_t i = 0; i < len; i++)
			out[i0 + i] = (float)acc[i];
	}
}

void dit_cpu_cfg(float *out, const float *cond, const float *uncond, int64_t n, float scale)
{
	for (int64_t i = 0; i < n; i++) {
		float u = uncond[i];
		float d = cond[i] - u;
		out[i] = u + scale * d;
	}
}
