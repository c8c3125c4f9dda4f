/* RoPE rotation, vector path (compiled once per vector ISA, see dit_vec.h): the
 * float64 rotations of rope.c, a pair (a, b) by (cos, sin) to (a cos - b sin,
 * a sin + b cos) (split: (b cos + a sin) for the second), with the same float64
 * products and sums, so the same bytes as the scalar path. */
#include "dit_cpu_isa_impl.h"
#include "dit_vec.h"

void DIT_ISA_FN(rope_apply)(float *x, int64_t ldx, int64_t rows, int64_t heads, int64_t head_dim,
                            const double *cs)
{
	int64_t n = 2 * (head_dim / 2); /* floats rotated per head: whole pairs */
	dit_vd flip = dit_vd_sign_even();
	for (int64_t r = 0; r < rows; r++) {
		const double *cs_l = cs + r * head_dim; /* [c, 2] */
		for (int64_t h = 0; h < heads; h++) {
			float *xh = x + r * ldx + h * head_dim; /* [c, 2] */
			/* DIT_VDW is even: a chunk holds whole pairs */
			for (int64_t i = 0; i < n; i += DIT_VDW) {
				int t = n - i < DIT_VDW ? (int)(n - i) : DIT_VDW;
				dit_vd xv = dit_vd_loadfn(xh + i, t);             /* a0 b0 a1 b1 */
				dit_vd cv = dit_vd_loadn(cs_l + i, t);            /* c0 s0 c1 s1 */
				dit_vd ac = dit_vd_mul(xv, dit_vd_pair_even(cv)); /* a c, b c */
				dit_vd bs = dit_vd_mul(dit_vd_pair_swap(xv), dit_vd_pair_odd(cv));
				dit_vd_storefn(xh + i, dit_vd_add(ac, dit_vd_xor(bs, flip)), t);
			}
		}
	}
}

void DIT_ISA_FN(rope_split_apply)(float *x, int64_t ldx, int64_t rows, int64_t heads,
                                  int64_t head_dim, const double *cs)
{
	int64_t c = head_dim / 2; /* pairs per head */
	for (int64_t r = 0; r < rows; r++)
		for (int64_t h = 0; h < heads; h++) {
			const double *cs_h = cs + (r * heads + h) * c * 2;    /* [c, 2] */
			float *x1 = x + r * ldx + h * head_dim, *x2 = x1 + c; /* [c] each */
			for (int64_t j = 0; j < c; j += DIT_VDW) {
				int t = c - j < DIT_VDW ? (int)(c - j) : DIT_VDW; /* pairs */
				int t0 = 2 * t < DIT_VDW ? 2 * t : DIT_VDW, t1 = 2 * t - t0;
				dit_vd p0 = dit_vd_loadn(cs_h + 2 * j, t0);
				dit_vd p1 = dit_vd_loadn(cs_h + 2 * j + DIT_VDW, t1);
				dit_vd co = dit_vd_even2(p0, p1), si = dit_vd_odd2(p0, p1);
				dit_vd a = dit_vd_loadfn(x1 + j, t), b = dit_vd_loadfn(x2 + j, t);
				dit_vd o1 = dit_vd_sub(dit_vd_mul(a, co), dit_vd_mul(b, si));
				dit_vd o2 = dit_vd_add(dit_vd_mul(b, co), dit_vd_mul(a, si));
				dit_vd_storefn(x1 + j, o1, t);
				dit_vd_storefn(x2 + j, o2, t);
			}
		}
}
