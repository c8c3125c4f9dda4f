/* attention: o = softmax(q k^T * scale) v per head, flash style, as dit_cpu_attention.
 * q [lq, heads * hd] (stride ldq), k and v [lk, heads * hd] (stride ldk), o
 * [lq, heads * hd] (stride ldo).
 *
 * A work-group of DIT_ATT_BQ work-items takes DIT_ATT_BQ query rows of one head
 * (grid: query blocks x heads), one row per work-item. Keys are visited in tiles of
 * bk keys (bk <= DIT_ATT_BK, chosen by the host from the local memory size), staged
 * in local memory: kt [bk, hd] and vt [bk, dc]. Per tile each work-item scores its
 * row against the tile (a dot product in dit_vecf lanes, lanes added by halving,
 * then the columns past the last whole vector, times scale), takes the tile's
 * maximum, rescales its running sum and accumulator by exp(m_old - m_new), and adds
 * the tile's exp(s - m) v key by key. No lq x lk buffer exists. The accumulator of a row holds
 * DIT_ATT_DC values of the head dimension; a head wider than that is done in passes
 * over the keys, one per DIT_ATT_DC columns of the output (the scores are recomputed
 * identically). With lk == 0 the output is zero, as on the CPU. qbf, kvbf, obf: q, k/v,
 * o hold bf16 activations (widened as they are read, o rounded as it is stored). */
#define DIT_ATT_BQ 64
#define DIT_ATT_BK 32
#define DIT_ATT_DC 128

kernel void dit_attention(global float *o, long o_off, int ldo, global const float *qb, long q_off,
                          int ldq, global const float *kvb, long k_off, long v_off, int ldk, int lq,
                          int lk, int hd, float scale, int bk, local float *kt, local float *vt,
                          int qbf, int kvbf, int obf)
{
	int lid = (int)get_local_id(0);
	int h = (int)get_group_id(1);
	int row = (int)get_group_id(0) * DIT_ATT_BQ + lid;
	int active = row < lq;
	int rr = active ? row : lq - 1; /* idle work-items still help load the tiles */
	size_t qr = (size_t)q_off + (size_t)rr * ldq + (size_t)h * hd;         /* q's row [hd] */
	size_t orow = (size_t)o_off + (size_t)rr * ldo + (size_t)h * hd;       /* o's row [hd] */
	size_t kh = (size_t)k_off + (size_t)h * hd;                            /* [lk, hd] */
	size_t vh = (size_t)v_off + (size_t)h * hd;                            /* [lk, hd] */
	global const float *q = qb + (qbf ? 0 : qr);                           /* fp32 q */
	global const ushort *q16 = (global const ushort *)qb + (qbf ? qr : 0); /* bf16 q */

	for (int d0 = 0; d0 < hd; d0 += DIT_ATT_DC) {
		int dc = min(DIT_ATT_DC, hd - d0);
		float acc[DIT_ATT_DC];
		for (int d = 0; d < dc; d++)
			acc[d] = 0.0f;
		float m = -INFINITY, l = 0.0f;
		for (int j0 = 0; j0 < lk; j0 += bk) {
			int nk = min(bk, lk - j0);
			barrier(CLK_LOCAL_MEM_FENCE); /* the previous tile is no longer read */
			for (int e = lid; e < nk * hd; e += DIT_ATT_BQ) {
				int j = e / hd, d = e % hd;
				kt[e] = dit_ld(kvb, kvbf, kh + (size_t)(j0 + j) * ldk + d);
			}
			for (int e = lid; e < nk * dc; e += DIT_ATT_BQ) {
				int j = e / dc, d = e % dc;
				vt[e] = dit_ld(kvb, kvbf, vh + (size_t)(j0 + j) * ldk + d0 + d);
			}
			barrier(CLK_LOCAL_MEM_FENCE);

			float s[DIT_ATT_BK];
			float mx = m;
			for (int j = 0; j < nk; j++) {
				local const float *kj = kt + j * hd; /* [hd] */
				dit_vecf dv = (dit_vecf)(0.0f);
				int d = 0;
				for (; d + DIT_VEC_W <= hd; d += DIT_VEC_W)
					dv = fma(qbf ? dit_vload_bf16(0, q16 + d)
					             : dit_vloadf(0, q + d),
					         dit_vloadf(0, kj + d), dv);
				float dot = dit_vsumf(dv);
				for (; d < hd; d++)
					dot = fma(qbf ? dit_bf16(q16[d]) : q[d], kj[d], dot);
				s[j] = scale * dot;
				mx = fmax(mx, s[j]);
			}
			float corr = exp(m - mx); /* 0 on the first tile (m = -inf) */
			float sum = 0.0f;
			for (int j = 0; j < nk; j++) {
				s[j] = dit_exp_nonpos(s[j] - mx);
				sum += s[j];
			}
			l = l * corr + sum;
			m = mx;
			for (int d = 0; d < dc; d++)
				acc[d] *= corr;
			for (int j = 0; j < nk; j++) {
				local const float *vj = vt + j * dc; /* [dc] */
				float p = s[j];
				for (int d = 0; d < dc; d++)
					acc[d] = fma(p, vj[d], acc[d]);
			}
		}
		if (active) {
			for (int d = 0; d < dc; d++)
				dit_st(o, obf, orow + d0 + d, lk > 0 ? acc[d] / l : 0.0f);
		}
	}
}
