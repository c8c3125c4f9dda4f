/* The per-ISA kernels behind the tables of dit_cpu_isa.h; for the files of
 * codelets/cpu only. The scalar ones live in the files of their op (layernorm.c ...),
 * the vector ones in vec_*.c, compiled once per vector ISA with DIT_ISA_FN naming
 * them (dit_<op>_avx2, dit_<op>_avx512). */
#ifndef DIT_CPU_ISA_IMPL_H
#define DIT_CPU_ISA_IMPL_H

#include "dit_cpu_isa.h"

#define DIT_ISA_DECLARE(sfx)                                                                       \
	void dit_attention_##sfx(float *o, int64_t ldo, const float *q, int64_t ldq,               \
	                         const float *k, int64_t ldk, const float *v, int64_t ldv,         \
	                         int64_t lq, int64_t lk, int64_t heads, int64_t hd, float scale,   \
	                         float *scratch);                                                  \
	void dit_layernorm_##sfx(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows, \
	                         int64_t dim, float eps, const float *weight, const float *bias,   \
	                         const float *shift_a, const float *shift_b, const float *scale_a, \
	                         const float *scale_b, int64_t mod_ld, int64_t mod_rows);          \
	void dit_layernorm_rms_##sfx(float *y, int64_t ldy, const float *x, int64_t ldx,           \
	                             int64_t rows, int64_t dim, float eps, const float *weight,    \
	                             const float *bias, const float *shift_a,                      \
	                             const float *shift_b, const float *scale_a,                   \
	                             const float *scale_b, int64_t mod_ld, int64_t mod_rows);      \
	void dit_rmsnorm_##sfx(float *x, int64_t ldx, int64_t rows, int64_t dim, float eps,        \
	                       const float *weight);                                               \
	void dit_rmsnorm_group_##sfx(float *x, int64_t ldx, int64_t rows, int64_t dim,             \
	                             int64_t group, float eps, const float *weight);               \
	void dit_rope_apply_##sfx(float *x, int64_t ldx, int64_t rows, int64_t heads,              \
	                          int64_t head_dim, const double *cs);                             \
	void dit_rope_split_apply_##sfx(float *x, int64_t ldx, int64_t rows, int64_t heads,        \
	                                int64_t head_dim, const double *cs);                       \
	void dit_act_##sfx(float *x, int64_t n, dit_act act);                                      \
	void dit_residual_##sfx(float *x, int64_t ldx, const float *y, int64_t ldy, int64_t rows,  \
	                        int64_t dim, const float *gate_a, const float *gate_b,             \
	                        int64_t mod_ld, int64_t mod_rows);                                 \
	void dit_bias_act_##sfx(float *y, int64_t ldy, const float *b, int64_t m, int64_t n,       \
	                        dit_act act);                                                      \
	void dit_bf16_widen_##sfx(float *dst, const uint16_t *src, int64_t n);                     \
	extern const dit_cpu_isa_ops dit_cpu_isa_ops_##sfx

DIT_ISA_DECLARE(scalar);
DIT_ISA_DECLARE(avx2);
DIT_ISA_DECLARE(avx512);

/* The vector attention's tiles: DIT_VATT_BQ query rows against DIT_VATT_BK keys.
 * The accumulator is the output itself, so the scratch (scores and row statistics)
 * is the size of the scalar path's (128 x 256 scores + a 128 x hd accumulator):
 * the runtime budgets it per worker and pass, and a larger one made the tiny
 * model's host-RAM need tighter against test_offload's 10 MiB limit. 192 x 256
 * measured as fast as 128 x 512 or 256 x 512 (one thread, this machine's noise). */
enum {
	DIT_VATT_BQ = 192,
	DIT_VATT_BK = 256,
};

/* Scratch floats the scalar and the vector attention paths need for head dimension
 * hd (the public dit_cpu_attention_scratch returns the largest). */
size_t dit_attention_scratch_scalar(int64_t hd);
static inline size_t dit_attention_scratch_vec(int64_t hd)
{
	(void)hd;
	/* s [BQ, BK] + running max [BQ] + running sum [BQ] */
	return (size_t)DIT_VATT_BQ * DIT_VATT_BK + 2 * DIT_VATT_BQ;
}

#endif
