/* The kernels of dit_cpu.h that have ISA paths: each calls the table chosen once per
 * process (dit_cpu_isa.h). */
#include "dit_cpu_isa_impl.h"

size_t dit_cpu_attention_scratch(int64_t hd)
{
	size_t scalar = dit_attention_scratch_scalar(hd);
	size_t vec = dit_attention_scratch_vec(hd);
	return scalar > vec ? scalar : vec;
}

void dit_cpu_attention(float *o, int64_t ldo, const float *q, int64_t ldq, const float *k,
                       int64_t ldk, const float *v, int64_t ldv, int64_t lq, int64_t lk,
                       int64_t heads, int64_t hd, float scale, float *scratch)
{
	dit_cpu_isa_ops_active()->attention(o, ldo, q, ldq, k, ldk, v, ldv, lq, lk, heads, hd,
	                                    scale, scratch);
}

void dit_cpu_layernorm(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
                       int64_t dim, float eps, const float *weight, const float *bias,
                       const float *shift_a, const float *shift_b, const float *scale_a,
                       const float *scale_b, int64_t mod_ld, int64_t mod_rows)
{
	dit_cpu_isa_ops_active()->layernorm(y, ldy, x, ldx, rows, dim, eps, weight, bias, shift_a,
	                                    shift_b, scale_a, scale_b, mod_ld, mod_rows);
}

void dit_cpu_layernorm_rms(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
                           int64_t dim, float eps, const float *weight, const float *bias,
                           const float *shift_a, const float *shift_b, const float *scale_a,
                           const float *scale_b, int64_t mod_ld, int64_t mod_rows)
{
	dit_cpu_isa_ops_active()->layernorm_rms(y, ldy, x, ldx, rows, dim, eps, weight, bias,
	                                        shift_a, shift_b, scale_a, scale_b, mod_ld,
	                                        mod_rows);
}

void dit_cpu_rmsnorm(float *x, int64_t ldx, int64_t rows, int64_t dim, float eps,
                     const float *weight)
{
	dit_cpu_isa_ops_active()->rmsnorm(x, ldx, rows, dim, eps, weight);
}

void dit_cpu_rmsnorm_group(float *x, int64_t ldx, int64_t rows, int64_t dim, int64_t group,
                           float eps, const float *weight)
{
	dit_cpu_isa_ops_active()->rmsnorm_group(x, ldx, rows, dim, group, eps, weight);
}

void dit_cpu_rope_apply(float *x, int64_t ldx, int64_t rows, int64_t heads, int64_t head_dim,
                        const double *cs)
{
	dit_cpu_isa_ops_active()->rope_apply(x, ldx, rows, heads, head_dim, cs);
}

void dit_cpu_rope_split_apply(float *x, int64_t ldx, int64_t rows, int64_t heads, int64_t head_dim,
                              const double *cs)
{
	dit_cpu_isa_ops_active()->rope_split_apply(x, ldx, rows, heads, head_dim, cs);
}

void dit_cpu_act(float *x, int64_t n, dit_act act)
{
	dit_cpu_isa_ops_active()->act(x, n, act);
}

void dit_cpu_residual(float *x, int64_t ldx, const float *y, int64_t ldy, int64_t rows, int64_t dim,
                      const float *gate_a, const float *gate_b, int64_t mod_ld, int64_t mod_rows)
{
	dit_cpu_isa_ops_active()->residual(x, ldx, y, ldy, rows, dim, gate_a, gate_b, mod_ld,
	                                   mod_rows);
}
