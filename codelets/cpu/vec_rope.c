/* RoPE rotation, vector path (compiled once per vector ISA, see dit_vec.h): the
 * float64 rotation of rope.c, a pair (a, b) by (cos, sin) to (a cos - b sin,
 * a sin + b cos), with the same float64 products and sums, so the same bytes as the
 * scalar path. */
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
