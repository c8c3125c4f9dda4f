/* Gated residual add, fp32. The scalar path (vector ones: vec_eltwise.c). */
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
