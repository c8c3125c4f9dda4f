/* layernorm: y[r, :] = LN(x[r, :]) (rms: x / sqrt(mean(x^2) + eps), the mean taken
 * as 0) then, when asked, * weight + bias (affine) and * (1 + scale) + shift (mod), as
 * dit_cpu_layernorm (dit_cpu_layernorm_rms). x and y are [rows, dim],
 * contiguous. weight, bias and the first terms of shift and scale are read from
 * slab, the second terms of shift and scale from vec: from its row r / mod_rows,
 * rows mod_ld floats apart (the host passes mod_ld 0, mod_rows 1 for one vector).
 *
 * One work-group of DIT_NORM_WG work-items per row: mean (not with rms), then biased
 * variance around it, each summed in dit_acc (float64 where the device has it) per
 * work-item over a fixed stride and then over the group by dit_group_sum. xbf, ybf: x, y
 * hold bf16 activations (dit_ld, dit_st). */
kernel void dit_layernorm(global float *y, long y_off, global const float *x, long x_off, int dim,
                          float eps, int affine, int mod, global const float *slab, long w_off,
                          long b_off, long shift_off, long scale_off, global const float *vec,
                          long vshift_off, long vscale_off, long mod_ld, long mod_rows, int rms,
                          int xbf, int ybf)
{
	local dit_acc red[DIT_NORM_WG];
	int lid = (int)get_local_id(0);
	size_t r = get_group_id(0);
	size_t xr = (size_t)x_off + r * (size_t)dim; /* row r of x [dim] */
	size_t yr = (size_t)y_off + r * (size_t)dim; /* row r of y [dim] */

	dit_acc mean = 0; /* rms: x - 0 */
	if (!rms) {
		dit_acc s = 0;
		for (int i = lid; i < dim; i += DIT_NORM_WG)
			s += (dit_acc)dit_ld(x, xbf, xr + i);
		mean = dit_group_sum(s, red) / (dit_acc)dim;
	}
	dit_acc v = 0;
	for (int i = lid; i < dim; i += DIT_NORM_WG) {
		dit_acc d = (dit_acc)dit_ld(x, xbf, xr + i) - mean;
		v += d * d;
	}
	v = dit_group_sum(v, red) / (dit_acc)dim;
	dit_acc rstd = (dit_acc)1 / sqrt(v + (dit_acc)eps);
	long tr = (long)r / mod_rows * mod_ld; /* the row of the modulation table */

	for (int i = lid; i < dim; i += DIT_NORM_WG) {
		float t = (float)(((dit_acc)dit_ld(x, xbf, xr + i) - mean) * rstd);
		if (affine) {
			t *= slab[w_off + i];
			t += slab[b_off + i];
		}
		if (mod) {
			float sc = slab[scale_off + i] + vec[vscale_off + tr + i];
			float sh = slab[shift_off + i] + vec[vshift_off + tr + i];
			t = t * (1.0f + sc) + sh;
		}
		dit_st(y, ybf, yr + i, t);
	}
}
