/* copy2d: dst[dst_off + i dst_ld + j] = src[src_off + i src_ld + j] for i < count,
 * j < len, as 32-bit words (no float arithmetic: bit for bit, NaN payloads kept), as
 * dit_cpu_copy2d; with b16, as 16-bit words (bf16 activations). One work-item per
 * copied element. */
kernel void dit_copy2d(global uint *dst, long dst_off, long dst_ld, global const uint *src,
                       long src_off, long src_ld, long count, long len, int b16)
{
	size_t e = get_global_id(0);
	if (e >= (size_t)count * (size_t)len)
		return;
	long i = (long)(e / (size_t)len), j = (long)(e % (size_t)len);
	if (b16) /* bf16 activations on both sides: 16-bit elements */
		((global ushort *)dst)[dst_off + i * dst_ld + j] =
		    ((global const ushort *)src)[src_off + i * src_ld + j];
	else
		dst[dst_off + i * dst_ld + j] = src[src_off + i * src_ld + j];
}
