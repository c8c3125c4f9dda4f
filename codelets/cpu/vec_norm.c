/* LayerNorm and RMSNorm, vector path (compiled once per vector ISA, see dit_vec.h).
 * The statistics are float64 as in layernorm.c and rmsnorm.c (lanes summed in one
 * fixed order, so they differ from the scalar sums by float64 rounding alone); the
 * centring and scaling of LayerNorm is float64 rounded once, the rest fp32 with the
 * scalar path's operations (no FMA). */
#include <math.h>

#include "dit_cpu_isa_impl.h"
#include "dit_vec.h"

/* sum of x[n], float64 */
static double dit_vnorm_sum(const float *x, int64_t n)
{
	dit_vd a0 = dit_vd_zero(), a1 = dit_vd_zero();
	int64_t i = 0;
	for (; i + 2 * DIT_VDW <= n; i += 2 * DIT_VDW) {
		a0 = dit_vd_add(a0, dit_vd_loadf(x + i));
		a1 = dit_vd_add(a1, dit_vd_loadf(x + i + DIT_VDW));
	}
	if (i + DIT_VDW <= n) {
		a0 = dit_vd_add(a0, dit_vd_loadf(x + i));
		i += DIT_VDW;
	}
	if (i < n) /* masked lanes load as 0 */
		a1 = dit_vd_add(a1, dit_vd_loadfn(x + i, (int)(n - i)));
	return dit_vd_hsum(dit_vd_add(a0, a1));
}

/* sum of (x[n] - mu)^2, float64 */
static double dit_vnorm_sumsq(const float *x, int64_t n, double mu)
{
	dit_vd vmu = dit_vd_set1(mu);
	dit_vd a0 = dit_vd_zero(), a1 = dit_vd_zero();
	int64_t i = 0;
	for (; i + 2 * DIT_VDW <= n; i += 2 * DIT_VDW) {
		dit_vd d0 = dit_vd_sub(dit_vd_loadf(x + i), vmu);
		dit_vd d1 = dit_vd_sub(dit_vd_loadf(x + i + DIT_VDW), vmu);
		a0 = dit_vd_add(a0, dit_vd_mul(d0, d0));
		a1 = dit_vd_add(a1, dit_vd_mul(d1, d1));
	}
	if (i + DIT_VDW <= n) {
		dit_vd d0 = dit_vd_sub(dit_vd_loadf(x + i), vmu);
		a0 = dit_vd_add(a0, dit_vd_mul(d0, d0));
		i += DIT_VDW;
	}
	double s = dit_vd_hsum(dit_vd_add(a0, a1));
	for (; i < n; i++) { /* the last < DIT_VDW, in order */
		double d = (double)x[i] - mu;
		s += d * d;
	}
	return s;
}

/* y[n] = (float)((x[n] - mean) * rstd) in float64; y may be x */
static void dit_vnorm_centre(float *y, const float *x, int64_t n, double mean, double rstd)
{
	dit_vd vm = dit_vd_set1(mean), vr = dit_vd_set1(rstd);
	int64_t i = 0;
	for (; i + DIT_VDW <= n; i += DIT_VDW)
		dit_vd_storef(y + i, dit_vd_mul(dit_vd_sub(dit_vd_loadf(x + i), vm), vr));
	if (i < n) {
		int t = (int)(n - i);
		dit_vd_storefn(y + i, dit_vd_mul(dit_vd_sub(dit_vd_loadfn(x + i, t), vm), vr), t);
	}
}

/* y[n] = y * (1 + (sa + sb)) + (ha + hb), sb/hb NULL: y * (1 + sa) + ha; the
 * operations of layernorm.c, fp32 */
static void dit_vnorm_modulate(float *y, int64_t n, const float *ha, const float *hb,
                               const float *sa, const float *sb)
{
	dit_vf one = dit_vf_set1(1.0f);
	for (int64_t i = 0; i < n; i += DIT_VW) {
		int t = n - i < DIT_VW ? (int)(n - i) : DIT_VW;
		dit_vf sc = dit_vf_loadn(sa + i, t), sh = dit_vf_loadn(ha + i, t);
		if (sb) {
			sc = dit_vf_add(sc, dit_vf_loadn(sb + i, t));
			sh = dit_vf_add(sh, dit_vf_loadn(hb + i, t));
		}
		dit_vf yv = dit_vf_loadn(y + i, t);
		yv = dit_vf_add(dit_vf_mul(yv, dit_vf_add(one, sc)), sh);
		dit_vf_storen(y + i, yv, t);
	}
}

/* y[n] = y * w (w may be NULL) + b (b may be NULL), fp32 */
static void dit_vnorm_affine(float *y, int64_t n, const float *w, const float *b)
{
	for (int64_t i = 0; i < n; i += DIT_VW) {
		int t = n - i < DIT_VW ? (int)(n - i) : DIT_VW;
		dit_vf yv = dit_vf_loadn(y + i, t);
		if (w)
			yv = dit_vf_mul(yv, dit_vf_loadn(w + i, t));
		if (b)
			yv = dit_vf_add(yv, dit_vf_loadn(b + i, t));
		dit_vf_storen(y + i, yv, t);
	}
}

/* layernorm (rms 0) and layernorm_rms (rms 1: the mean taken as 0) */
static void dit_vnorm_rows(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
                           int64_t dim, float eps, int rms, const float *weight, const float *bias,
                           const float *shift_a, const float *shift_b, const float *scale_a,
                           const float *scale_b, int64_t mod_ld, int64_t mod_rows)
{
	if (dim <= 0)
		return;
	if (mod_rows <= 0 || mod_ld == 0) { /* one vector for every row */
		mod_rows = 1;
		mod_ld = 0;
	}
	int mod = shift_a && scale_a, pair = mod && shift_b && scale_b;
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * ldx; /* [dim] */
		float *yr = y + r * ldy;       /* [dim], may be xr */
		double mean = rms ? 0.0 : dit_vnorm_sum(xr, dim) / (double)dim;
		double var = dit_vnorm_sumsq(xr, dim, mean) / (double)dim;
		double rstd = 1.0 / sqrt(var + (double)eps);
		dit_vnorm_centre(yr, xr, dim, mean, rstd);
		if (weight || bias)
			dit_vnorm_affine(yr, dim, weight, bias);
		if (mod) {
			int64_t tr = (r / mod_rows) * mod_ld; /* its table row */
			dit_vnorm_modulate(yr, dim, shift_a, pair ? shift_b + tr : NULL, scale_a,
			                   pair ? scale_b + tr : NULL);
		}
	}
}

void DIT_ISA_FN(layernorm)(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
                           int64_t dim, float eps, const float *weight, const float *bias,
                           const float *shift_a, const float *shift_b, const float *scale_a,
                           const float *scale_b, int64_t mod_ld, int64_t mod_rows)
{
	dit_vnorm_rows(y, ldy, x, ldx, rows, dim, eps, 0, weight, bias, shift_a, shift_b, scale_a,
	               scale_b, mod_ld, mod_rows);
}

void DIT_ISA_FN(layernorm_rms)(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
                               int64_t dim, float eps, const float *weight, const float *bias,
                               const float *shift_a, const float *shift_b, const float *scale_a,
                               const float *scale_b, int64_t mod_ld, int64_t mod_rows)
{
	dit_vnorm_rows(y, ldy, x, ldx, rows, dim, eps, 1, weight, bias, shift_a, shift_b, scale_a,
	               scale_b, mod_ld, mod_rows);
}

/* x[n] = (x * rsqrt(mean(x^2) + eps)) * w (w may be NULL), the sum in float64 */
static void dit_vnorm_rms_run(float *x, int64_t n, float eps, const float *w)
{
	dit_vd a0 = dit_vd_zero(), a1 = dit_vd_zero();
	int64_t i = 0;
	for (; i + 2 * DIT_VDW <= n; i += 2 * DIT_VDW) {
		dit_vd v0 = dit_vd_loadf(x + i), v1 = dit_vd_loadf(x + i + DIT_VDW);
		a0 = dit_vd_add(a0, dit_vd_mul(v0, v0));
		a1 = dit_vd_add(a1, dit_vd_mul(v1, v1));
	}
	if (i + DIT_VDW <= n) {
		dit_vd v0 = dit_vd_loadf(x + i);
		a0 = dit_vd_add(a0, dit_vd_mul(v0, v0));
		i += DIT_VDW;
	}
	if (i < n) { /* masked lanes load as 0 */
		dit_vd v1 = dit_vd_loadfn(x + i, (int)(n - i));
		a1 = dit_vd_add(a1, dit_vd_mul(v1, v1));
	}
	double ss = dit_vd_hsum(dit_vd_add(a0, a1));
	dit_vf rs = dit_vf_set1((float)(1.0 / sqrt(ss / (double)n + (double)eps)));
	for (i = 0; i < n; i += DIT_VW) {
		int t = n - i < DIT_VW ? (int)(n - i) : DIT_VW;
		dit_vf v = dit_vf_mul(dit_vf_loadn(x + i, t), rs);
		if (w)
			v = dit_vf_mul(v, dit_vf_loadn(w + i, t));
		dit_vf_storen(x + i, v, t);
	}
}

void DIT_ISA_FN(rmsnorm)(float *x, int64_t ldx, int64_t rows, int64_t dim, float eps,
                         const float *weight)
{
	if (dim <= 0)
		return;
	for (int64_t r = 0; r < rows; r++)
		dit_vnorm_rms_run(x + r * ldx, dim, eps, weight);
}

void DIT_ISA_FN(rmsnorm_group)(float *x, int64_t ldx, int64_t rows, int64_t dim, int64_t group,
                               float eps, const float *weight)
{
	if (group <= 0 || group >= dim) {
		DIT_ISA_FN(rmsnorm)(x, ldx, rows, dim, eps, weight);
		return;
	}
	for (int64_t r = 0; r < rows; r++)
		for (int64_t g0 = 0; g0 < dim; g0 += group) {
			int64_t n = dim - g0 < group ? dim - g0 : group;
			dit_vnorm_rms_run(x + r * ldx + g0, n, eps, weight);
		}
}
