/* Gated residual add, fp32 (the scalar path; vector ones: vec_eltwise.c), and the
 * small elementwise ops of LTX-2: the per-head attention gate and a vector added to
 * rows (scalar only). */
#include <math.h>

#include "dit_cpu_isa_impl.h"

void dit_residual_scalar(float *x, int64_t ldx, const float *y, int64_t ldy, int64_t rows,
                         int64_t dim, const float *gate_a, const float *gate_b, int64_t mod_ld,
                         int64_t mod_rows)
{
	if (mod_rows <= 0 || mod_ld == 0) { /* one gate vector for every row */
		mod_rows = 1;
		mod_ld = 0;
	}
	for (int64_t r = 0; r < rows; r++) {
		float *xr = x + r * ldx;                                            /* [dim] */
		const float *yr = y + r * ldy;                                      /* [dim] */
		const float *gb = gate_b ? gate_b + (r / mod_rows) * mod_ld : NULL; /* [dim] */
		if (!gate_a) {
			for (int64_t i = 0; i < dim; i++)
				xr[i] += yr[i];
		} else if (!gate_b) {
			for (int64_t i = 0; i < dim; i++)
				xr[i] += yr[i] * gate_a[i];
		} else {
			for (int64_t i = 0; i < dim; i++)
				xr[i] += yr[i] * (gate_a[i] + gb[i]);
		}
	}
}

void dit_cpu_head_gate(float *o, int64_t ldo, const float *gl, int64_t ldg, int64_t rows,
                       int64_t heads, int64_t hd)
{
	for (int64_t r = 0; r < rows; r++)
		for (int64_t h = 0; h < heads; h++) {
			float g = (float)(2.0 / (1.0 + exp(-(double)gl[r * ldg + h])));
			float *oh = o + r * ldo + h * hd; /* [hd] */
			for (int64_t j = 0; j < hd; j++)
				oh[j] *= g;
		}
}

void dit_cpu_add_rows(float *x, int64_t ld, const float *v, int64_t v_ld, int64_t rows, int64_t dim)
{
	for (int64_t r = 0; r < rows; r++)
		for (int64_t j = 0; j < dim; j++)
			x[r * ld + j] += v[r * v_ld + j];
}
