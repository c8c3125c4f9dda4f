/* LayerNorm (or the RMS normalisation of rms_norm) over rows with optional affine
 * and adaLN modulation. The normalisation is computed in float64 and rounded once;
 * affine and modulation are fp32. The scalar path (vector ones: vec_norm.c). */
#include <math.h>

#include "dit_cpu_isa_impl.h"

/* Mean and 1/sqrt(biased variance + eps) of x[dim], two passes in float64; with rms
 * the mean is taken as 0 (1/sqrt(mean(x^2) + eps), one pass). */
static void dit_layernorm_stats(const float *x, int64_t dim, float eps, int rms, double *mean,
                                double *rstd)
{
	double mu = 0.0;
	if (!rms) {
		double s = 0.0;
		for (int64_t i = 0; i < dim; i++)
			s += x[i];
		mu = s / (double)dim;
	}
	double v = 0.0;
	for (int64_t i = 0; i < dim; i++) {
		double d = (double)x[i] - mu;
		v += d * d;
	}
	v /= (double)dim;
	*mean = mu;
	*rstd = 1.0 / sqrt(v + (double)eps);
}

/* dit_cpu_layernorm (rms 0) and dit_cpu_layernorm_rms (rms 1) */
static void dit_layernorm_rows(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
                               int64_t dim, float eps, int rms, const float *weight,
                               const float *bias, const float *shift_a, const float *shift_b,
                               const float *scale_a, const float *scale_b, int64_t mod_ld,
                               int64_t mod_rows)
{
	if (dim <= 0)
		return;
	if (mod_rows <= 0 || mod_ld == 0) { /* one vector for every row */
		mod_rows = 1;
		mod_ld = 0;
	}
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * ldx; /* [dim] */
		float *yr = y + r * ldy;       /* [dim], may be xr */
		double mean, rstd;
		dit_layernorm_stats(xr, dim, eps, rms, &mean, &rstd);
		/* centre (rms: x - 0, exact) and scale in float64, rounded once to fp32 */
		for (int64_t i = 0; i < dim; i++)
			yr[i] = (float)(((double)xr[i] - mean) * rstd);
		if (weight) {
			for (int64_t i = 0; i < dim; i++)
				yr[i] *= weight[i];
		}
		if (bias) {
			for (int64_t i = 0; i < dim; i++)
				yr[i] += bias[i];
		}
		if (shift_a && scale_a) {
			/* A missing second term of a pair counts as zero. */
			if (shift_b && scale_b) {
				int64_t tr = (r / mod_rows) * mod_ld; /* its table row */
				const float *shb = shift_b + tr, *scb = scale_b + tr;
				for (int64_t i = 0; i < dim; i++) {
					float sc = scale_a[i] + scb[i];
					float sh = shift_a[i] + shb[i];
					yr[i] = yr[i] * (1.0f + sc) + sh;
				}
			} else {
				for (int64_t i = 0; i < dim; i++)
					yr[i] = yr[i] * (1.0f + scale_a[i]) + shift_a[i];
			}
		}
	}
}

void dit_layernorm_scalar(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
                          int64_t dim, float eps, const float *weight, const float *bias,
                          const float *shift_a, const float *shift_b, const float *scale_a,
                          const float *scale_b, int64_t mod_ld, int64_t mod_rows)
{
	dit_layernorm_rows(y, ldy, x, ldx, rows, dim, eps, 0, weight, bias, shift_a, shift_b,
	                   scale_a, scale_b, mod_ld, mod_rows);
}

void dit_layernorm_rms_scalar(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
                              int64_t dim, float eps, const float *weight, const float *bias,
                              const float *shift_a, const float *shift_b, const float *scale_a,
                              const float *scale_b, int64_t mod_ld, int64_t mod_rows)
{
	dit_layernorm_rows(y, ldy, x, ldx, rows, dim, eps, 1, weight, bias, shift_a, shift_b,
	                   scale_a, scale_b, mod_ld, mod_rows);
}
