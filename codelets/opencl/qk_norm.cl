/* qk_norm: RMSNorm of the rows of t [rows, dim] (stride ld) times weight [dim], in
 * place, then optionally RoPE: the interleaved pairs of the first heads * head_dim
 * columns rotated by the angles of row r of the table cs [rows, head_dim / 2, 2]
 * (cos, sin), as dit_cpu_rmsnorm then dit_cpu_rope_apply. With group > 0 (a divisor
 * of dim, even with rope) each run of group features of a row is normalised on its
 * own, weight [group] shared, as dit_cpu_rmsnorm_group, and rotated likewise. With
 * split the rotation is dit_cpu_rope_split_apply's: pairs (j, j + head_dim/2) of each
 * head, the table cs [rows, heads, head_dim / 2, 2] (group then a multiple of
 * head_dim, so that a run holds whole heads).
 *
 * One work-group of DIT_NORM_WG work-items per row (per run of a row with group); the
 * sum of squares is taken in dit_acc by dit_group_sum; the rotation is computed in
 * dit_acc (float64 where the device has it) and rounded once: with RoPE the normalised
 * pair is rotated before it is stored. tbf: t holds bf16 activations (dit_ld, dit_st),
 * each value rounded to bf16 once, as the CPU's fp32 rows are. */
kernel void dit_qk_norm(global float *t, long t_off, int ld, int dim, float eps,
                        global const float *slab, long w_off, int rope, int heads, int head_dim,
                        global const dit_f64 *cs, long cs_off, int group, int split, int tbf)
{
	local dit_acc red[DIT_NORM_WG];
	int lid = (int)get_local_id(0);
	int n = group > 0 ? group : dim; /* features of this work-group's run */
	size_t runs = (size_t)(dim / n), r = get_group_id(0) / runs;
	int g0 = (int)(get_group_id(0) % runs) * n;      /* the run's first feature */
	size_t xr = (size_t)t_off + r * (size_t)ld + g0; /* the run of t [n] */
	global const float *wt = slab + w_off;           /* [n] */

	dit_acc ss = 0;
	for (int i = lid; i < n; i += DIT_NORM_WG) {
		dit_acc xi = dit_ld(t, tbf, xr + i);
		ss += xi * xi;
	}
	ss = dit_group_sum(ss, red);
	float rs = (float)((dit_acc)1 / sqrt(ss / (dit_acc)n + (dit_acc)eps));
	if (!rope) {
		for (int i = lid; i < n; i += DIT_NORM_WG)
			dit_st(t, tbf, xr + i, (dit_ld(t, tbf, xr + i) * rs) * wt[i]);
		return;
	}
	/* With RoPE each pair is normalised and rotated by one work-item and stored once
	 * (the run's pairs cover it: the host checks heads * head_dim == dim) */
	int nh = head_dim / 2;
	/* the row's table: [nh, 2], split: [heads, nh, 2] */
	global const dit_f64 *csr = cs + cs_off + r * (size_t)(split ? heads * head_dim : head_dim);
	size_t row = xr - g0;                                     /* the row again */
	int p0 = g0 / 2, np = group > 0 ? group / 2 : heads * nh; /* the run's pairs */
	for (int p = p0 + lid; p < p0 + np; p += DIT_NORM_WG) {
		int h = p / nh, j = p % nh;
		/* the pair (x[c1], x[c2]) of head h and its (cos, sin): interleaved (2j, 2j + 1)
		 * and the row's [nh, 2]; split (j, j + nh) and the head's [nh, 2] */
		int c1 = h * head_dim + (split ? j : 2 * j),
		    c2 = h * head_dim + (split ? j + nh : 2 * j + 1);
		global const dit_f64 *cp = csr + (split ? h * head_dim : 0) + 2 * j;
		float an = (dit_ld(t, tbf, row + c1) * rs) * wt[c1 - g0];
		float bn = (dit_ld(t, tbf, row + c2) * rs) * wt[c2 - g0];
		dit_acc a = an, b = bn;
		dit_acc co = dit_f64_load(cp, 0), si = dit_f64_load(cp, 1);
		dit_st(t, tbf, row + c1, (float)(a * co - b * si));
		dit_st(t, tbf, row + c2,
		       (float)(a * si + b * co)); /* split: b cos + a sin, the same sum */
	}
}
