/* Fully connected layer through one CBLAS sgemm, then a fused bias + activation
 * pass per output row. */
#include <cblas.h>

#include "dit_cpu.h"

void dit_cpu_linear(float *y, int64_t ldy, const float *x, int64_t ldx, const float *w,
                    const float *b, int64_t m, int64_t n, int64_t k, dit_act act)
{
	if (m <= 0 || n <= 0)
		return;
	/* y[m, n] = x[m, k] . w[n, k]^T */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)k, 1.0f, x,
	            (int)ldx, w, (int)k, 0.0f, y, (int)ldy);
	if (!b && act == DIT_ACT_NONE)
		return;
	for (int64_t r = 0; r < m; r++) {
		float *yr = y + r * ldy; /* [n] */
		if (b) {
			for (int64_t j = 0; j < n; j++)
				yr[j] += b[j];
		}
		dit_cpu_act(yr, n, act);
	}
}
