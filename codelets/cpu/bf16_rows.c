/* bf16 activation rows to and from fp32: the CPU kernels compute in fp32, so an op
 * whose activations are stored in bf16 (--act-dtype bf16) widens the rows it reads
 * into fp32 and narrows the rows it wrote, a block of rows at a time. */
#include "dit_bf16.h"
#include "dit_cpu_isa_impl.h"

void dit_cpu_bf16_widen_rows(float *dst, int64_t ldd, const uint16_t *src, int64_t lds,
                             int64_t rows, int64_t width)
{
	const dit_cpu_isa_ops *ops = dit_cpu_isa_ops_active();
	for (int64_t r = 0; r < rows; r++)
		ops->bf16_widen(dst + r * ldd, src + r * lds, width);
}

void dit_cpu_bf16_narrow_rows(uint16_t *dst, int64_t ldd, const float *src, int64_t lds,
                              int64_t rows, int64_t width)
{
	for (int64_t r = 0; r < rows; r++) {
		uint16_t *d = dst + r * ldd;
		const float *s = src + r * lds;
		for (int64_t j = 0; j < width; j++)
			d[j] = dit_bf16_from_f32(s[j]);
	}
}
