/* RMSNorm over whole rows (all heads together), in place. */
#include <math.h>

#include "dit_cpu.h"

void dit_cpu_rmsnorm(float *x, int64_t ldx, int64_t rows, int64_t dim, float eps,
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
