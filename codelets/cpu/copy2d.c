/* Strided row copy (memcpy per row: exact, NaN payloads kept). */
#include <string.h>

#include "dit_cpu.h"

void dit_cpu_copy2d(float *dst, int64_t dst_ld, const float *src, int64_t src_ld, int64_t count,
                    int64_t len)
{
	if (len <= 0)
		return;
	for (int64_t i = 0; i < count; i++)
		memcpy(dst + i * dst_ld, src + i * src_ld, (size_t)len * sizeof *dst);
}
