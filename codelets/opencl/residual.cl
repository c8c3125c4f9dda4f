/* residual: x[r, i] += y[r, i] * (ga[i] + gb[i]), or x += y when gated is 0, as
 * dit_cpu_residual. x and y are [rows, dim], contiguous; ga is read from the slab,
 * gb from the modulation vector, its row r / mod_rows of rows mod_ld floats apart
 * (the host passes mod_ld 0, mod_rows 1 for one vector). One work-item per element.
 * xbf, ybf: x, y hold bf16 activations (dit_ld, dit_st). */
kernel void dit_residual(global float *x, long x_off, global const float *y, long y_off, long rows,
                         int dim, int gated, global const float *ga, long ga_off,
                         global const float *gb, long gb_off, long mod_ld, long mod_rows, int xbf,
                         int ybf)
{
	size_t e = get_global_id(0);
	if (e >= (size_t)rows * (size_t)dim)
		return;
	int i = (int)(e % (size_t)dim);
	float v = dit_ld(y, ybf, (size_t)y_off + e);
	if (gated) {
		/* the row of the gate table (no division for one vector) */
		long tr = mod_ld ? (long)(e / (size_t)dim) / mod_rows * mod_ld : 0;
		v = v * (ga[ga_off + i] + gb[gb_off + tr + i]);
	}
	size_t xe = (size_t)x_off + e;
	dit_st(x, xbf, xe, dit_ld(x, xbf, xe) + v);
}

/* head_gate: o[r ldo + h hd + j] *= 2 / (1 + exp(-gl[r ldg + h])) for r < rows,
 * h < heads, j < hd, as dit_cpu_head_gate: the gate in dit_acc (float64 where the
 * device has it) rounded once, the multiply in float. One work-item per element. obf,
 * gbf: o, gl hold bf16 activations. */
kernel void dit_head_gate(global float *o, long o_off, long ldo, global const float *gl, long g_off,
                          long ldg, long rows, int heads, int hd, int obf, int gbf)
{
	size_t e = get_global_id(0), w = (size_t)heads * (size_t)hd;
	if (e >= (size_t)rows * w)
		return;
	size_t r = e / w, c = e % w, h = c / (size_t)hd;
	dit_acc x = dit_ld(gl, gbf, (size_t)(g_off + (long)r * ldg + (long)h));
	float g = (float)((dit_acc)2 / ((dit_acc)1 + exp(-x)));
	size_t oe = (size_t)(o_off + (long)r * ldo + (long)c);
	dit_st(o, obf, oe, dit_ld(o, obf, oe) * g);
}
