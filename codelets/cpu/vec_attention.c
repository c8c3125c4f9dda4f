/* Flash-style multi-head attention, vector path (compiled once per vector ISA, see
 * dit_vec.h). The structure of the scalar attention.c with taller query tiles: per
 * head, a tile of DIT_VATT_BQ query rows is scored against tiles of DIT_VATT_BK keys
 * with cblas_sgemm (scale folded into alpha), the online softmax (row max, exp, row
 * sum, rescale of the accumulator) runs in vector registers, and P.V is a second
 * sgemm into the accumulator, which is the output rows themselves (o must not
 * overlap q, k or v). Tiles and lanes are visited in a fixed order, so results do
 * not depend on timing or threads. */
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "dit_cpu_isa_impl.h"
#include "dit_vec.h"

/* Row r of one key tile: s[nk] (scores) becomes exp(s - m_new) in place; returns
 * the row sum of those; m (running max) is updated and *corr = exp(m_old - m_new).
 * NaN scores are skipped by the max and make the row sum NaN. */
static float dit_att_row_update(float *s, int64_t nk, float *m, float *corr)
{
	dit_vf vm0 = dit_vf_set1(-INFINITY), vm1 = vm0;
	int64_t j = 0;
	for (; j + 2 * DIT_VW <= nk; j += 2 * DIT_VW) {
		vm0 = dit_vf_max(dit_vf_load(s + j), vm0);
		vm1 = dit_vf_max(dit_vf_load(s + j + DIT_VW), vm1);
	}
	for (; j < nk; j += DIT_VW) {
		int n = nk - j < DIT_VW ? (int)(nk - j) : DIT_VW;
		vm0 = dit_vf_max(dit_vf_loadn_fill(s + j, n, -INFINITY), vm0);
	}
	float tmax = dit_vf_hmax(dit_vf_max(vm0, vm1));
	float mold = *m;
	float mx = tmax > mold ? tmax : mold;
	*corr = expf(mold - mx); /* 0 on the first tile (m = -inf) */
	*m = mx;
	dit_vf vmx = dit_vf_set1(mx);
	dit_vf sum0 = dit_vf_zero(), sum1 = dit_vf_zero();
	j = 0;
	for (; j + 2 * DIT_VW <= nk; j += 2 * DIT_VW) {
		dit_vf p0 = dit_vf_exp_nonpos(dit_vf_sub(dit_vf_load(s + j), vmx));
		dit_vf p1 = dit_vf_exp_nonpos(dit_vf_sub(dit_vf_load(s + j + DIT_VW), vmx));
		dit_vf_store(s + j, p0);
		dit_vf_store(s + j + DIT_VW, p1);
		sum0 = dit_vf_add(sum0, p0);
		sum1 = dit_vf_add(sum1, p1);
	}
	for (; j < nk; j += DIT_VW) {
		int n = nk - j < DIT_VW ? (int)(nk - j) : DIT_VW;
		dit_vf p = dit_vf_exp_nonpos(dit_vf_sub(dit_vf_loadn(s + j, n), vmx));
		p = dit_vf_keepn(p, n);
		dit_vf_storen(s + j, p, n);
		sum0 = dit_vf_add(sum0, p);
	}
	return dit_vf_hsum(dit_vf_add(sum0, sum1));
}

/* x[n] *= c */
static void dit_att_scale(float *x, int64_t n, float c)
{
	dit_vf vc = dit_vf_set1(c);
	int64_t d = 0;
	for (; d + DIT_VW <= n; d += DIT_VW)
		dit_vf_store(x + d, dit_vf_mul(dit_vf_load(x + d), vc));
	if (d < n)
		dit_vf_storen(x + d, dit_vf_mul(dit_vf_loadn(x + d, (int)(n - d)), vc),
		              (int)(n - d));
}

/* y[n] = x[n] / c; y may be x */
static void dit_att_divide(float *y, const float *x, int64_t n, float c)
{
	dit_vf vc = dit_vf_set1(c);
	int64_t d = 0;
	for (; d + DIT_VW <= n; d += DIT_VW)
		dit_vf_store(y + d, dit_vf_div(dit_vf_load(x + d), vc));
	if (d < n)
		dit_vf_storen(y + d, dit_vf_div(dit_vf_loadn(x + d, (int)(n - d)), vc),
		              (int)(n - d));
}

/* One head, one tile of nq query rows: o[nq, hd] (stride ldo) from q[nq, hd]
 * against all lk keys of k, v [lk, hd]. o itself is the accumulator (unnormalised
 * until the last key tile), so the scratch holds scores and row statistics only. */
static void dit_att_tile_run(float *o, int64_t ldo, const float *q, int64_t ldq, const float *k,
                             int64_t ldk, const float *v, int64_t ldv, int64_t nq, int64_t lk,
                             int64_t hd, float scale, float *scratch)
{
	float *s = scratch;                       /* [BQ, BK] */
	float *m = s + DIT_VATT_BQ * DIT_VATT_BK; /* [BQ] */
	float *l = m + DIT_VATT_BQ;               /* [BQ] */
	for (int64_t r = 0; r < nq; r++) {
		m[r] = -INFINITY;
		l[r] = 0.0f;
	}
	for (int64_t j0 = 0; j0 < lk; j0 += DIT_VATT_BK) {
		int64_t nk = lk - j0 < DIT_VATT_BK ? lk - j0 : DIT_VATT_BK;
		/* s[nq, nk] = scale * q[nq, hd] . k[j0:j0+nk, hd]^T */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nk, (int)hd,
		            scale, q, (int)ldq, k + j0 * ldk, (int)ldk, 0.0f, s, DIT_VATT_BK);
		for (int64_t r = 0; r < nq; r++) {
			float corr;
			float sum = dit_att_row_update(s + r * DIT_VATT_BK, nk, m + r, &corr);
			l[r] = l[r] * corr + sum;
			if (j0 > 0 && corr != 1.0f)
				dit_att_scale(o + r * ldo, hd, corr);
		}
		/* o[nq, hd] (+)= p[nq, nk] . v[j0:j0+nk, hd]; the first tile overwrites */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nq, (int)hd, (int)nk,
		            1.0f, s, DIT_VATT_BK, v + j0 * ldv, (int)ldv, j0 > 0 ? 1.0f : 0.0f, o,
		            (int)ldo);
	}
	for (int64_t r = 0; r < nq; r++)
		dit_att_divide(o + r * ldo, o + r * ldo, hd, l[r]);
}

void DIT_ISA_FN(attention)(float *o, int64_t ldo, const float *q, int64_t ldq, const float *k,
                           int64_t ldk, const float *v, int64_t ldv, int64_t lq, int64_t lk,
                           int64_t heads, int64_t hd, float scale, float *scratch)
{
	if (lq <= 0 || hd <= 0)
		return;
	if (lk <= 0) {
		/* Softmax over no keys: define the output as zero. */
		for (int64_t i = 0; i < lq; i++)
			memset(o + i * ldo, 0, (size_t)(heads * hd) * sizeof(float));
		return;
	}
	for (int64_t h = 0; h < heads; h++) {
		for (int64_t i0 = 0; i0 < lq; i0 += DIT_VATT_BQ) {
			int64_t nq = lq - i0 < DIT_VATT_BQ ? lq - i0 : DIT_VATT_BQ;
			dit_att_tile_run(o + i0 * ldo + h * hd, ldo, q + i0 * ldq + h * hd, ldq,
			                 k + h * hd, ldk, v + h * hd, ldv, nq, lk, hd, scale,
			                 scratch);
		}
	}
}
