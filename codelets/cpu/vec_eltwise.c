/* Elementwise kernels, vector path (compiled once per vector ISA, see dit_vec.h):
 * GELU-tanh and SiLU (the exact, erf GELU is the scalar path's: no vector erf here), the linear
 * layer's bias + activation epilogue, the bf16 weight widening and the gated residual. Residual and
 * bias are the scalar path's fp32 operations (no FMA); the activations use the vector exp of
 * dit_vec.h. */
#include "dit_cpu_isa_impl.h"
#include "dit_vec.h"

/* 0.5 v (1 + tanh(u)), u = sqrt(2/pi) (v + 0.044715 v^3), tanh(u) = sign(u) (1 - t) /
 * (1 + t), t = exp(-2|u|): the formula of act.c */
static inline dit_vf dit_vgelu(dit_vf v)
{
	dit_vf sign = dit_vf_set1(-0.0f), one = dit_vf_set1(1.0f);
	dit_vf cube = dit_vf_mul(dit_vf_mul(dit_vf_mul(dit_vf_set1(0.044715f), v), v), v);
	dit_vf u = dit_vf_mul(dit_vf_set1(0.7978845608028654f), dit_vf_add(v, cube));
	dit_vf au = dit_vf_andnot(sign, u);
	dit_vf t = dit_vf_exp_nonpos(dit_vf_mul(dit_vf_set1(-2.0f), au));
	dit_vf th = dit_vf_div(dit_vf_sub(one, t), dit_vf_add(one, t));
	th = dit_vf_or(th, dit_vf_and(sign, u));
	return dit_vf_mul(dit_vf_mul(dit_vf_set1(0.5f), v), dit_vf_add(one, th));
}

/* v / (1 + exp(-v)) as (v >= 0 ? v : v e) / (1 + e), e = exp(-|v|) <= 1 */
static inline dit_vf dit_vsilu(dit_vf v)
{
	dit_vf e = dit_vf_exp_nonpos(dit_vf_or(v, dit_vf_set1(-0.0f)));
	dit_vf num = dit_vf_select_sign(v, v, dit_vf_mul(v, e));
	return dit_vf_div(num, dit_vf_add(dit_vf_set1(1.0f), e));
}

static inline dit_vf dit_vact(dit_vf v, dit_act act)
{
	switch (act) {
	case DIT_ACT_GELU_TANH: return dit_vgelu(v);
	case DIT_ACT_SILU: return dit_vsilu(v);
	case DIT_ACT_NONE:
	default: return v;
	}
}

/* y[n] = act(y + b) (b may be NULL) */
static void dit_vbias_act_row(float *y, const float *b, int64_t n, dit_act act)
{
	int64_t i = 0;
	for (; i + DIT_VW <= n; i += DIT_VW) {
		dit_vf v = dit_vf_load(y + i);
		if (b)
			v = dit_vf_add(v, dit_vf_load(b + i));
		dit_vf_store(y + i, dit_vact(v, act));
	}
	if (i < n) {
		int t = (int)(n - i);
		dit_vf v = dit_vf_loadn(y + i, t);
		if (b)
			v = dit_vf_add(v, dit_vf_loadn(b + i, t));
		dit_vf_storen(y + i, dit_vact(v, act), t);
	}
}

void DIT_ISA_FN(act)(float *x, int64_t n, dit_act act)
{
	if (act == DIT_ACT_GELU_TANH || act == DIT_ACT_SILU)
		dit_vbias_act_row(x, NULL, n, act);
	else if (act == DIT_ACT_GELU)
		dit_act_scalar(x, n, act); /* float64 erf: the scalar bytes on every ISA */
}

void DIT_ISA_FN(bias_act)(float *y, int64_t ldy, const float *b, int64_t m, int64_t n, dit_act act)
{
	if (!b && act == DIT_ACT_NONE)
		return;
	if (act == DIT_ACT_GELU) { /* the bias add is the same fp32 add; erf as above */
		dit_bias_act_scalar(y, ldy, b, m, n, act);
		return;
	}
	for (int64_t r = 0; r < m; r++)
		dit_vbias_act_row(y + r * ldy, b, n, act);
}

void DIT_ISA_FN(bf16_widen)(float *dst, const uint16_t *src, int64_t n)
{
	int64_t i = 0;
	for (; i + 2 * DIT_VW <= n; i += 2 * DIT_VW) {
		dit_vf_store(dst + i, dit_vf_load_bf16(src + i));
		dit_vf_store(dst + i + DIT_VW, dit_vf_load_bf16(src + i + DIT_VW));
	}
	for (; i < n; i += DIT_VW) {
		int t = n - i < DIT_VW ? (int)(n - i) : DIT_VW;
		dit_vf_storen(dst + i, dit_vf_loadn_bf16(src + i, t), t);
	}
}

void DIT_ISA_FN(residual)(float *x, int64_t ldx, const float *y, int64_t ldy, int64_t rows,
                          int64_t dim, const float *gate_a, const float *gate_b, int64_t mod_ld,
                          int64_t mod_rows)
{
	if (mod_rows <= 0 || mod_ld == 0) { /* one gate vector for every row */
		mod_rows = 1;
		mod_ld = 0;
	}
	for (int64_t r = 0; r < rows; r++) {
		float *xr = x + r * ldx;                                            /* [dim] */
		const float *yr = y + r * ldy;                                      /* [dim] */
		const float *gb = gate_b ? gate_b + (r / mod_rows) * mod_ld : NULL; /* [dim] */
		for (int64_t i = 0; i < dim; i += DIT_VW) {
			int t = dim - i < DIT_VW ? (int)(dim - i) : DIT_VW;
			dit_vf yv = dit_vf_loadn(yr + i, t);
			if (gate_a) {
				dit_vf g = dit_vf_loadn(gate_a + i, t);
				if (gb)
					g = dit_vf_add(g, dit_vf_loadn(gb + i, t));
				yv = dit_vf_mul(yv, g);
			}
			dit_vf_storen(xr + i, dit_vf_add(dit_vf_loadn(xr + i, t), yv), t);
		}
	}
}
