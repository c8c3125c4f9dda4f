/* head: dit_unpatchify turns the head's output tok [f'h'w', pt ph pw c] (features in
 * (pt, ph, pw, c) order, channel innermost) into y [c, f' pt, h' ph, w' pw], as
 * dit_cpu_unpatchify; the layernorm with modulation is dit_layernorm and the GEMM
 * dit_linear. One work-item per element of y. */
kernel void dit_unpatchify(global float *y, long y_off, global const float *tok, long tok_off,
                           int c, int fp, int hp, int wp, int pt, int ph, int pw)
{
	int f = fp * pt, h = hp * ph, w = wp * pw;
	size_t e = get_global_id(0);
	if (e >= (size_t)c * f * h * w)
		return;
	int xw = (int)(e % (size_t)w), xh = (int)(e / (size_t)w % (size_t)h),
	    xf = (int)(e / ((size_t)w * h) % (size_t)f), ci = (int)(e / ((size_t)w * h * f));
	int fi = xf / pt, a = xf % pt, hi = xh / ph, b = xh % ph, wi = xw / pw, d = xw % pw;
	size_t row = ((size_t)fi * hp + hi) * wp + wi;
	size_t feat = (size_t)pt * ph * pw * c;
	y[y_off + e] = tok[tok_off + row * feat + (((size_t)a * ph + b) * pw + d) * c + ci];
}
