/* patch_embed: dit_patchify rearranges the latent x [c, f, h, w] into patch rows
 * tok [(f/pt)(h/ph)(w/pw), c pt ph pw] (rows in (f', h', w') order, features in
 * (c, pt, ph, pw) order), as dit_cpu_patchify; the GEMM is dit_linear. One
 * work-item per element of tok. */
kernel void dit_patchify(global float *tok, long tok_off, global const float *x, long x_off, int c,
                         int f, int h, int w, int pt, int ph, int pw)
{
	int fp = f / pt, hp = h / ph, wp = w / pw;
	int feat = c * pt * ph * pw;
	size_t e = get_global_id(0);
	if (e >= (size_t)fp * hp * wp * feat)
		return;
	int q = (int)(e % (size_t)feat);
	size_t row = e / (size_t)feat;
	int wi = (int)(row % (size_t)wp), hi = (int)(row / (size_t)wp % (size_t)hp),
	    fi = (int)(row / ((size_t)wp * hp));
	int d = q % pw, b = q / pw % ph, a = q / (pw * ph) % pt, ci = q / (pw * ph * pt);
	size_t src = (((size_t)ci * f + (size_t)fi * pt + a) * h + (size_t)hi * ph + b) * w +
	             (size_t)wi * pw + d;
	tok[tok_off + e] = x[x_off + src];
}
