/* Flash-style multi-head attention on the CPU. Per head, a tile of DIT_ATT_BQ query
 * rows is scored against tiles of DIT_ATT_BK keys with cblas_sgemm; an online
 * softmax keeps a running max and sum per query row and rescales the output
 * accumulator, so memory is O(tile) whatever lq and lk are. Tiles are visited in a
 * fixed order, so results do not depend on timing. The scalar path, the reference
 * of the vector ones (vec_attention.c; dit_cpu_isa.h picks one). */
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "dit_cpu_isa_impl.h"
#include "dit_cpu_exp.h"

enum {
	DIT_ATT_BQ = 128,   /* query rows per tile */
	DIT_ATT_BK = 256,   /* keys per tile */
	DIT_ATT_LANES = 16, /* interleaved partial max/sum lanes (divides BK) */
};

size_t dit_attention_scratch_scalar(int64_t hd)
{
	/* s [BQ, BK] + acc [BQ, hd] + running max [BQ] + running sum [BQ] */
	return (size_t)DIT_ATT_BQ * DIT_ATT_BK + (size_t)DIT_ATT_BQ * (size_t)hd + 2 * DIT_ATT_BQ;
}

/* Turns scores s[nq, BK] of one key tile (nk valid columns) into exp(s - max) in
 * place, updates the running max m[nq] and sum l[nq], and rescales acc[nq, hd]
 * rows by exp(m_old - m_new). Columns [nk, BK) are set to -inf first so every row
 * loop has the fixed length BK (they become ~0 and are not used by the P.V
 * product). Partial maxima and sums use DIT_ATT_LANES interleaved lanes combined in
 * a fixed order, so the result is deterministic. */
static void dit_att_softmax_update(float *s, float *acc, int64_t hd, float *m, float *l, int64_t nq,
                                   int64_t nk)
{
	for (int64_t r = 0; r < nq; r++) {
		float *sr = s + r * DIT_ATT_BK; /* [BK] */
		for (int64_t j = nk; j < DIT_ATT_BK; j++)
			sr[j] = -INFINITY;
		float lane[DIT_ATT_LANES];
		for (int u = 0; u < DIT_ATT_LANES; u++)
			lane[u] = sr[u];
		for (int j = DIT_ATT_LANES; j < DIT_ATT_BK; j += DIT_ATT_LANES)
			for (int u = 0; u < DIT_ATT_LANES; u++)
				lane[u] = sr[j + u] > lane[u] ? sr[j + u] : lane[u];
		float mx = m[r];
		for (int u = 0; u < DIT_ATT_LANES; u++)
			mx = lane[u] > mx ? lane[u] : mx;
		float corr = expf(m[r] - mx); /* 0 on the first tile (m = -inf) */
		for (int u = 0; u < DIT_ATT_LANES; u++)
			lane[u] = 0.0f;
		for (int j = 0; j < DIT_ATT_BK; j += DIT_ATT_LANES)
			for (int u = 0; u < DIT_ATT_LANES; u++) {
				float p = dit_cpu_exp_nonpos(sr[j + u] - mx);
				sr[j + u] = p;
				lane[u] += p;
			}
		float sum = 0.0f;
		for (int u = 0; u < DIT_ATT_LANES; u++)
			sum += lane[u];
		l[r] = l[r] * corr + sum;
		m[r] = mx;
		if (corr != 1.0f) {
			float *ar = acc + r * hd; /* [hd] */
			for (int64_t d = 0; d < hd; d++)
				ar[d] *= corr;
		}
	}
}

/* One head, one tile of nq query rows: o[nq, hd] (stride ldo) from q[nq, hd]
 * against all lk keys of k, v [lk, hd]. */
static void dit_att_tile_run(float *o, int64_t ldo, const float *q, int64_t ldq, const float *k,
                             int64_t ldk, const float *v, int64_t ldv, int64_t nq, int64_t lk,
                             int64_t hd, float scale, float *scratch)
{
	float *s = scratch;                       /* [BQ, BK] */
	float *acc = s + DIT_ATT_BQ * DIT_ATT_BK; /* [BQ, hd] */
	float *m = acc + DIT_ATT_BQ * hd;         /* [BQ] */
	float *l = m + DIT_ATT_BQ;                /* [BQ] */
	for (int64_t r = 0; r < nq; r++) {
		m[r] = -INFINITY;
		l[r] = 0.0f;
	}
	memset(acc, 0, (size_t)(nq * hd) * sizeof(float));
	for (int64_t j0 = 0; j0 < lk; j0 += DIT_ATT_BK) {
		int64_t nk = lk - j0 < DIT_ATT_BK ? lk - j0 : DIT_ATT_BK;
		/* s[nq, nk] = scale * q[nq, hd] . k[j0:j0+nk, hd]^T */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nk, (int)hd,
		            scale, q, (int)ldq, k + j0 * ldk, (int)ldk, 0.0f, s, DIT_ATT_BK);
		dit_att_softmax_update(s, acc, hd, m, l, nq, nk);
		/* acc[nq, hd] += p[nq, nk] . v[j0:j0+nk, hd] */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nq, (int)hd, (int)nk,
		            1.0f, s, DIT_ATT_BK, v + j0 * ldv, (int)ldv, 1.0f, acc, (int)hd);
	}
	for (int64_t r = 0; r < nq; r++) {
		const float *ar = acc + r * hd; /* [hd] */
		float *orow = o + r * ldo;      /* [hd] */
		float lr = l[r];
		for (int64_t d = 0; d < hd; d++)
			orow[d] = ar[d] / lr;
	}
}

void dit_attention_scalar(float *o, int64_t ldo, const float *q, int64_t ldq, const float *k,
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
		for (int64_t i0 = 0; i0 < lq; i0 += DIT_ATT_BQ) {
			int64_t nq = lq - i0 < DIT_ATT_BQ ? lq - i0 : DIT_ATT_BQ;
			dit_att_tile_run(o + i0 * ldo + h * hd, ldo, q + i0 * ldq + h * hd, ldq,
			                 k + h * hd, ldk, v + h * hd, ldv, nq, lk, hd, scale,
			                 scratch);
		}
	}
}
