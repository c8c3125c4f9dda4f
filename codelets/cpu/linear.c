/* Fully connected layer through one CBLAS sgemm, then a fused bias + activation
 * pass per output row, both through the ISA tables. */
#include <cblas.h>

#include "dit_bf16.h"
#include "dit_wdt.h"
#include "dit_cpu_isa_impl.h"

void dit_bf16_widen_scalar(float *dst, const uint16_t *src, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		dst[i] = dit_bf16_to_f32(src[i]);
}

/* y[r, :] = act(y[r, :] + b), row by row; nothing to do without either. */
void dit_bias_act_scalar(float *y, int64_t ldy, const float *b, int64_t m, int64_t n, dit_act act)
{
	if (!b && act == DIT_ACT_NONE)
		return;
	for (int64_t r = 0; r < m; r++) {
		float *yr = y + r * ldy; /* [n] */
		if (b) {
			for (int64_t j = 0; j < n; j++)
				yr[j] += b[j];
		}
		dit_act_scalar(yr, n, act);
	}
}

void dit_cpu_linear(float *y, int64_t ldy, const float *x, int64_t ldx, const float *w,
                    const float *b, int64_t m, int64_t n, int64_t k, dit_act act)
{
	if (m <= 0 || n <= 0)
		return;
	/* y[m, n] = x[m, k] . w[n, k]^T */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)k, 1.0f, x,
	            (int)ldx, w, (int)k, 0.0f, y, (int)ldy);
	dit_cpu_isa_ops_active()->bias_act(y, ldy, b, m, n, act);
}

void dit_cpu_linear_wdt(float *y, int64_t ldy, const float *x, int64_t ldx, const void *w, int wdt,
                        float scale, const float *b, int64_t m, int64_t n, int64_t k, dit_act act,
                        float *tile, size_t tile_elems)
{
	if (m <= 0 || n <= 0)
		return;
	if (wdt == DIT_WDT_F32) {
		dit_cpu_linear(y, ldy, x, ldx, w, b, m, n, k, act);
		return;
	}
	const dit_cpu_isa_ops *ops = dit_cpu_isa_ops_active();
	int64_t rows = k > 0 ? (int64_t)(tile_elems / (size_t)k) : n;
	if (rows < 1)
		rows = 1; /* the caller gives at least k floats */
	float lut[256];   /* f8: each byte's value times the scale */
	if (dit_wdt_is_f8(wdt))
		dit_f8_table(wdt, scale, lut);
	/* y[:, j0:j0+nt] = x[m, k] . wt[nt, k]^T, wt the rows j0.. of w widened to fp32 */
	for (int64_t j0 = 0; j0 < n; j0 += rows) {
		int64_t nt = n - j0 < rows ? n - j0 : rows;
		if (wdt == DIT_WDT_BF16)
			ops->bf16_widen(tile, (const uint16_t *)w + j0 * k, nt * k);
		else
			dit_wdt_widen(wdt, w, j0 * k, nt * k, lut, tile);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)nt, (int)k, 1.0f,
		            x, (int)ldx, tile, (int)k, 0.0f, y + j0, (int)ldy);
	}
	ops->bias_act(y, ldy, b, m, n, act);
}

void dit_cpu_linear_bf16w(float *y, int64_t ldy, const float *x, int64_t ldx, const uint16_t *w,
                          const float *b, int64_t m, int64_t n, int64_t k, dit_act act, float *tile,
                          size_t tile_elems)
{
	dit_cpu_linear_wdt(y, ldy, x, ldx, w, DIT_WDT_BF16, 1.0f, b, m, n, k, act, tile,
	                   tile_elems);
}
