/* One Euler step of x0-guided sampling over several passes (LTX-2's MultiModalGuider
 * and EulerDiffusionStep, with its latent conditioning's post_process_latent), in double
 * per element. Plain C. */
#include <math.h>

#include "dit_cpu.h"

/* The guided x0 of element i: v[k] the velocity of pass k (NULL: the pass did not run,
 * its x0 enters as 0), x0_k = x - sigma v_k. */
static double guide_pred(const float *x, const float *const v[4], int64_t i, double sigma,
                         const double sc[4], double *cond)
{
	double xi = x[i], x0[4];
	for (int k = 0; k < 4; k++)
		x0[k] = v[k] ? xi - sigma * (double)v[k][i] : 0.0;
	*cond = x0[0];
	return x0[0] + (sc[0] - 1.0) * (x0[0] - x0[1]) + sc[1] * (x0[0] - x0[2]) +
	       (sc[3] - 1.0) * (x0[0] - x0[3]);
}

/* The index into cond->clean of element i, or -1 when i is not conditioned. */
static int64_t cond_index(const dit_guide_cond *cond, int64_t i)
{
	if (!cond || i < cond->off)
		return -1;
	int64_t r = (i - cond->off) / cond->ld, j = (i - cond->off) % cond->ld;
	return r < cond->count && j < cond->len ? r * cond->len + j : -1;
}

void dit_cpu_guide_step(float *x, float *x0, const float *const v[4], int64_t n, double sigma,
                        double sigma_next, double cfg, double stg, double rescale, double modality,
                        const dit_guide_cond *cond)
{
	const double sc[4] = {cfg, stg, 0.0, modality};
	double factor = 1.0, csigma = cond ? cond->mask * sigma : sigma;
	if (rescale != 0.0 && n > 1) { /* std(cond) / std(pred), unbiased, over every element */
		double sc1 = 0, sc2 = 0, sp1 = 0, sp2 = 0;
		for (int64_t i = 0; i < n; i++) {
			double s = cond_index(cond, i) >= 0 ? csigma : sigma;
			double c, p = guide_pred(x, v, i, s, sc, &c);
			sc1 += c;
			sc2 += c * c;
			sp1 += p;
			sp2 += p * p;
		}
		double nn = (double)n;
		double vc = (sc2 - sc1 * sc1 / nn) / (nn - 1.0),
		       vp = (sp2 - sp1 * sp1 / nn) / (nn - 1.0);
		double r = vp > 0.0 ? sqrt(fmax(vc, 0.0) / vp) : 1.0;
		factor = rescale * r + (1.0 - rescale);
	}
	double dt = sigma_next - sigma;
	for (int64_t i = 0; i < n; i++) {
		int64_t k = cond_index(cond, i);
		double c, p = guide_pred(x, v, i, k >= 0 ? csigma : sigma, sc, &c) * factor;
		if (k >= 0)
			p = cond->mask * p + (1.0 - cond->mask) * (double)cond->clean[k];
		double xi = x[i];
		if (x0)
			x0[i] = (float)p;
		x[i] = (float)(xi + (xi - p) / sigma * dt);
	}
}
