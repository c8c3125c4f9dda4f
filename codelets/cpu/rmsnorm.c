/* RMSNorm over whole rows (all heads together) or over runs of features (per head),
 * in place. The scalar path (vector ones: vec_norm.c). */
#include <math.h>

#include "dit_cpu_isa_impl.h"

void dit_rmsnorm_scalar(float *x, int64_t ldx, int64_t rows, int64_t dim, float eps,
                        const float *weight)
{
	if (dim <= 0)
		return;
	for (int64_t r = 0; r < rows; r++) {
		float *xr = x + r * ldx; /* [dim] */
		double ss = 0.0;
		for (int64_t i = 0; i < dim; i++)
			ss += (double)xr[i] * (double)xr[i];
		float rs = (float)(1.0 / sqrt(ss / (double)dim + (double)eps));
		if (weight) {
			for (int64_t i = 0; i < dim; i++)
				xr[i] = (xr[i] * rs) * weight[i];
		} else {
			for (int64_t i = 0; i < dim; i++)
				xr[i] *= rs;
		}
	}
}

void dit_rmsnorm_group_scalar(float *x, int64_t ldx, int64_t rows, int64_t dim, int64_t group,
                              float eps, const float *weight)
{
	if (group <= 0 || group >= dim) {
		dit_rmsnorm_scalar(x, ldx, rows, dim, eps, weight);
		return;
	}
	for (int64_t r = 0; r < rows; r++)
		for (int64_t g0 = 0; g0 < dim; g0 += group) {
			int64_t n = dim - g0 < group ? dim - g0 : group;
			/* one run: a row of n features */
			dit_rmsnorm_scalar(x + r * ldx + g0, n, 1, n, eps, weight);
		}
}
