/* linear: y[m, n] = act(x[m, k] . w[n, k]^T + b[n]), b optional (b_off < 0).
 *
 * dit_linear, for GPUs: a work-group of DIT_GEMM_WG x DIT_GEMM_WG work-items computes one
 * DIT_GEMM_T x DIT_GEMM_T tile of y; work-item (tx, ty) holds the outputs
 * (ty + DIT_GEMM_WG i, tx + DIT_GEMM_WG j), i, j < DIT_GEMM_R, so neighbouring
 * work-items touch neighbouring columns. Slices of DIT_GEMM_TK columns of x and w
 * are staged in local memory (zero beyond m, n, k). Every output is one fp32 sum
 * over k in increasing order, one fused multiply-add per term, then the bias is
 * added and the activation applied as in dit_cpu_linear. w is [n, k] in weight dtype
 * wdt (dit_wdt.h) from byte w_byte of its buffer, widened as it is staged (f8 values
 * times the scale at float s_off); the bias stays fp32.
 * With xbf (ybf) x (y) holds bf16 activations, x_off (y_off) counting bf16 values: x
 * widened as it is staged, y rounded to bf16 as it is stored. */
/* IEEE binary16 bits to float, exact (as dit_f16_to_f32). */
float dit_f16f(uint h)
{
	uint sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
	if (exp == 0x1fu)
		return as_float(sign | 0x7f800000u | (mant << 13));
	if (exp != 0u)
		return as_float(sign | ((exp + 112u) << 23) | (mant << 13));
	float v = (float)mant * 5.9604644775390625e-8f; /* subnormal: mant x 2^-24 */
	return sign ? -v : v;
}

/* float8 e4m3fn bits to float, exact (as dit_e4m3_to_f32). */
float dit_e4m3f(uint b)
{
	uint sign = (b & 0x80u) << 24, exp = (b >> 3) & 0xfu, mant = b & 0x7u;
	if (exp == 0xfu && mant == 0x7u)
		return as_float(sign | 0x7fc00000u);
	if (exp != 0u)
		return as_float(sign | ((exp + 120u) << 23) | (mant << 20));
	float v = (float)mant * 0.001953125f; /* mant x 2^-9 */
	return sign ? -v : v;
}

/* Element i of a weight matrix of dtype wdt (dit_wdt.h) whose data starts at w: fp32,
 * bf16, fp16, f8 e4m3fn / e5m2 (times s), Q8_0 (blocks of 32: fp16 d, 32 int8 q). */
float dit_ldw(global const uchar *w, int wdt, size_t i, float s)
{
	switch (wdt) {
	case 1:
		return dit_bf16(((global const ushort *)w)[i]);
	case 2:
		return dit_f16f(((global const ushort *)w)[i]);
	case 3:
		return dit_e4m3f(w[i]) * s;
	case 4:
		return dit_f16f((uint)w[i] << 8) * s;
	case 5: {
		global const uchar *blk = w + i / 32 * 34;
		return (float)(char)blk[2 + i % 32] * dit_f16f((uint)blk[0] | ((uint)blk[1] << 8));
	}
	default:
		return ((global const float *)w)[i];
	}
}

/* DIT_VEC_W fp32 values of finite fp16 bits h (the loaders refuse Inf and NaN weights),
 * exact: as dit_f16f lane by lane. */
dit_vecf dit_vf16(dit_vecu h)
{
	dit_vecu sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	dit_vecf normal = dit_vasf(sign | ((e + 112u) << 23) | (m << 13));
	dit_vecf sub = dit_vcvtf(m) * 5.9604644775390625e-8f;
	sub = dit_vasf(dit_vasu(sub) | sign);
	return select(normal, sub, e == 0u);
}

/* The same for float8 e4m3fn bytes b (finite), as dit_e4m3f. */
dit_vecf dit_ve4m3(dit_vecu b)
{
	dit_vecu sign = (b & 0x80u) << 24, e = (b >> 3) & 0xfu, m = b & 0x7u;
	dit_vecf normal = dit_vasf(sign | ((e + 120u) << 23) | (m << 20));
	dit_vecf sub = dit_vcvtf(m) * 0.001953125f;
	sub = dit_vasf(dit_vasu(sub) | sign);
	return select(normal, sub, e == 0u);
}

/* DIT_VEC_W weights of a row from element i (wdt 0 to 4: fp32, bf16, fp16, f8 e4m3fn,
 * f8 e5m2 times s); q8_0 element by element. */
dit_vecf dit_vloadw(global const uchar *w, int wdt, size_t i, float s)
{
	if (wdt == 0)
		return dit_vloadf(0, (global const float *)w + i);
	if (wdt == 1)
		return dit_vload_bf16(0, (global const ushort *)w + i);
	if (wdt == 2)
		return dit_vf16(dit_vload_u(0, (global const ushort *)w + i));
	if (wdt == 3)
		return dit_ve4m3(dit_vload_u(0, w + i)) * s;
	if (wdt == 4)
		return dit_vf16(dit_vload_u(0, w + i) << 8) * s;
	float t[DIT_VEC_W];
	for (int l = 0; l < DIT_VEC_W; l++)
		t[l] = dit_ldw(w, wdt, i + l, s);
	return dit_vloadf(0, t);
}

#define DIT_GEMM_T  64
#define DIT_GEMM_TK 16
#define DIT_GEMM_WG 16
#define DIT_GEMM_R  (DIT_GEMM_T / DIT_GEMM_WG)

kernel void dit_linear(global float *y, long y_off, int ldy, global const float *x, long x_off,
                       int ldx, global const float *w, long w_byte, long b_off, long s_off, int m,
                       int n, int k, int act, int wdt, int xbf, int ybf)
{
	local float xs[DIT_GEMM_TK][DIT_GEMM_T + 1]; /* [k slice, tile row] */
	local float ws[DIT_GEMM_TK][DIT_GEMM_T + 1]; /* [k slice, tile column] */
	int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
	int lid = ty * DIT_GEMM_WG + tx;
	int row0 = (int)get_group_id(1) * DIT_GEMM_T, col0 = (int)get_group_id(0) * DIT_GEMM_T;
	global const uchar *wb = (global const uchar *)w + w_byte; /* [n, k] of dtype wdt */
	float ws8 = s_off >= 0 ? w[s_off] : 1.0f;
	float acc[DIT_GEMM_R][DIT_GEMM_R];
	for (int i = 0; i < DIT_GEMM_R; i++)
		for (int j = 0; j < DIT_GEMM_R; j++)
			acc[i][j] = 0.0f;

	for (int k0 = 0; k0 < k; k0 += DIT_GEMM_TK) {
		for (int l = 0; l < DIT_GEMM_T * DIT_GEMM_TK; l += DIT_GEMM_WG * DIT_GEMM_WG) {
			int e = l + lid;
			int r = e / DIT_GEMM_TK, kk = e % DIT_GEMM_TK;
			int gk = k0 + kk;
			int gr = row0 + r, gc = col0 + r;
			/* x [m, k], stride ldx, from x_off */
			xs[kk][r] = gr < m && gk < k
			                ? dit_ld(x, xbf, (size_t)x_off + (size_t)gr * ldx + gk)
			                : 0.0f;
			ws[kk][r] = gc < n && gk < k ? dit_ldw(wb, wdt, (size_t)gc * k + gk, ws8) : 0.0f;
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		for (int kk = 0; kk < DIT_GEMM_TK; kk++) {
			float a[DIT_GEMM_R], b[DIT_GEMM_R];
			for (int i = 0; i < DIT_GEMM_R; i++)
				a[i] = xs[kk][ty + DIT_GEMM_WG * i];
			for (int j = 0; j < DIT_GEMM_R; j++)
				b[j] = ws[kk][tx + DIT_GEMM_WG * j];
			for (int i = 0; i < DIT_GEMM_R; i++)
				for (int j = 0; j < DIT_GEMM_R; j++)
					acc[i][j] = fma(a[i], b[j], acc[i][j]);
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}

	for (int i = 0; i < DIT_GEMM_R; i++) {
		int r = row0 + ty + DIT_GEMM_WG * i;
		if (r >= m)
			continue;
		size_t yr = (size_t)y_off + (size_t)r * ldy; /* row r of y [n] */
		for (int j = 0; j < DIT_GEMM_R; j++) {
			int c = col0 + tx + DIT_GEMM_WG * j;
			if (c >= n)
				continue;
			float v = acc[i][j];
			if (b_off >= 0)
				v += w[b_off + c];
			dit_st(y, ybf, yr + c, dit_act(v, act));
		}
	}
}

/* dit_linear_dot: the same op for devices that run work-items as CPU threads (no
 * local memory tiling). Work-item (gx, gy) computes the DIT_DOT_R x DIT_DOT_R outputs
 * of rows DIT_DOT_R gy + i and columns DIT_DOT_R gx + j as dot products of rows of x
 * and w in vectors of W = DIT_VEC_W floats: lane l of an output's accumulator sums
 * (fused multiply-add) the terms k = l, l + W, l + 2W, ... in increasing order; the
 * lanes are then added by halving, the last k % W terms added in order, then the
 * bias and the activation as in dit_linear. */
#define DIT_DOT_R 4

kernel void dit_linear_dot(global float *y, long y_off, int ldy, global const float *x, long x_off,
                           int ldx, global const float *w, long w_byte, long b_off, long s_off,
                           int m, int n, int k, int act, int wdt, int xbf, int ybf)
{
	int c0 = (int)get_global_id(0) * DIT_DOT_R, r0 = (int)get_global_id(1) * DIT_DOT_R;
	if (c0 >= n || r0 >= m)
		return;
	global const float *xr[DIT_DOT_R];    /* rows [k]; past the end: the last */
	global const ushort *xr16[DIT_DOT_R]; /* x's rows with xbf */
	global const uchar *wb = (global const uchar *)w + w_byte; /* [n, k] of dtype wdt */
	size_t wrow[DIT_DOT_R];                                     /* W's rows, elements */
	float ws8 = s_off >= 0 ? w[s_off] : 1.0f;
	for (int i = 0; i < DIT_DOT_R; i++) {
		size_t xo = (size_t)x_off + (size_t)min(r0 + i, m - 1) * ldx;
		xr[i] = xbf ? x : x + xo;
		xr16[i] = (global const ushort *)x + (xbf ? xo : 0);
	}
	for (int j = 0; j < DIT_DOT_R; j++) {
		wrow[j] = (size_t)min(c0 + j, n - 1) * k;
	}
	dit_vecf acc[DIT_DOT_R][DIT_DOT_R];
	for (int i = 0; i < DIT_DOT_R; i++)
		for (int j = 0; j < DIT_DOT_R; j++)
			acc[i][j] = (dit_vecf)(0.0f);
	int kv = k / DIT_VEC_W * DIT_VEC_W;
	for (int kk = 0; kk < kv; kk += DIT_VEC_W) {
		dit_vecf xv[DIT_DOT_R];
		for (int i = 0; i < DIT_DOT_R; i++)
			xv[i] = xbf ? dit_vload_bf16(0, xr16[i] + kk) : dit_vloadf(0, xr[i] + kk);
		for (int j = 0; j < DIT_DOT_R; j++) {
			dit_vecf wv = dit_vloadw(wb, wdt, wrow[j] + kk, ws8);
			for (int i = 0; i < DIT_DOT_R; i++)
				acc[i][j] = fma(xv[i], wv, acc[i][j]);
		}
	}
	for (int i = 0; i < DIT_DOT_R && r0 + i < m; i++) {
		size_t yr = (size_t)y_off + (size_t)(r0 + i) * ldy; /* row r0 + i of y [n] */
		for (int j = 0; j < DIT_DOT_R && c0 + j < n; j++) {
			float v = dit_vsumf(acc[i][j]);
			for (int kk = kv; kk < k; kk++)
				v = fma(xbf ? dit_bf16(xr16[i][kk]) : xr[i][kk],
				        dit_ldw(wb, wdt, wrow[j] + kk, ws8), v);
			if (b_off >= 0)
				v += w[b_off + c0 + j];
			dit_st(y, ybf, yr + c0 + j, dit_act(v, act));
		}
	}
}
