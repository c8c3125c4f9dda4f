/* Runtime choice of the instruction set the plain CPU kernels run with, as OpenBLAS's
 * DYNAMIC_ARCH does it: every ISA path is compiled on its own (the same vector
 * sources built once with AVX2 + FMA flags and once with AVX-512 F/BW/VL/DQ + FMA
 * flags, configure checking that the compiler takes them), each path is a static
 * const table of function pointers, and the kernels of dit_cpu.h call through the
 * table chosen once per process. The scalar path is the reference and is always
 * there; on a compiler or host that is not x86 it is the only one.
 *
 * The choice: the widest path the CPU runs (avx512 needs avx512f, avx512bw, avx512vl,
 * avx512dq and fma; avx2 needs avx2 and fma; both need the OS to save the vector
 * state, which __builtin_cpu_supports checks). The environment variable
 * DITSTAR_CPU_ISA = scalar | avx2 | avx512 | auto overrides it, read once at the first
 * kernel call. An ISA that this build or CPU lacks, or an unknown name, is refused:
 * one line on stderr says so and the automatic choice is kept (never a crash on a
 * missing instruction). Nothing else in the process changes after that choice.
 *
 * Results are deterministic per ISA (same inputs and ISA, same bytes); different
 * ISAs agree within the tolerances tests/test_cpu_isa.c states, not bit for bit. */
#ifndef DIT_CPU_ISA_H
#define DIT_CPU_ISA_H

#include "dit_cpu.h"

typedef enum dit_cpu_isa {
	DIT_CPU_ISA_SCALAR = 0, /* portable C, the reference */
	DIT_CPU_ISA_AVX2,       /* 8 fp32 lanes, AVX2 + FMA */
	DIT_CPU_ISA_AVX512,     /* 16 fp32 lanes, AVX-512 F/BW/VL/DQ + FMA */
	DIT_CPU_ISA_COUNT,
} dit_cpu_isa;

/* One ISA's kernels; each has the signature and meaning of the dit_cpu_ function of
 * the same name, except the two pieces of dit_cpu_linear*:
 *   bias_act:   y[r, :] = act(y[r, :] + b) for r < m (b may be NULL), the GEMM epilogue
 *   bf16_widen: dst[n] = the fp32 values of the bf16 src[n] (exact) */
typedef struct dit_cpu_isa_ops {
	dit_cpu_isa isa;
	void (*attention)(float *o, int64_t ldo, const float *q, int64_t ldq, const float *k,
	                  int64_t ldk, const float *v, int64_t ldv, int64_t lq, int64_t lk,
	                  int64_t heads, int64_t hd, float scale, float *scratch);
	void (*layernorm)(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
	                  int64_t dim, float eps, const float *weight, const float *bias,
	                  const float *shift_a, const float *shift_b, const float *scale_a,
	                  const float *scale_b, int64_t mod_ld, int64_t mod_rows);
	void (*layernorm_rms)(float *y, int64_t ldy, const float *x, int64_t ldx, int64_t rows,
	                      int64_t dim, float eps, const float *weight, const float *bias,
	                      const float *shift_a, const float *shift_b, const float *scale_a,
	                      const float *scale_b, int64_t mod_ld, int64_t mod_rows);
	void (*rmsnorm)(float *x, int64_t ldx, int64_t rows, int64_t dim, float eps,
	                const float *weight);
	void (*rmsnorm_group)(float *x, int64_t ldx, int64_t rows, int64_t dim, int64_t group,
	                      float eps, const float *weight);
	void (*rope_apply)(float *x, int64_t ldx, int64_t rows, int64_t heads, int64_t head_dim,
	                   const double *cs);
	void (*rope_split_apply)(float *x, int64_t ldx, int64_t rows, int64_t heads,
	                         int64_t head_dim, const double *cs);
	void (*act)(float *x, int64_t n, dit_act act);
	void (*residual)(float *x, int64_t ldx, const float *y, int64_t ldy, int64_t rows,
	                 int64_t dim, const float *gate_a, const float *gate_b, int64_t mod_ld,
	                 int64_t mod_rows);
	void (*bias_act)(float *y, int64_t ldy, const float *b, int64_t m, int64_t n, dit_act act);
	void (*bf16_widen)(float *dst, const uint16_t *src, int64_t n);
} dit_cpu_isa_ops;

/* The table of isa, or NULL when this build lacks it or this CPU cannot run it (so a
 * test or benchmark may call any non-NULL table directly). */
const dit_cpu_isa_ops *dit_cpu_isa_table(dit_cpu_isa isa);

/* "scalar", "avx2", "avx512"; "?" for a value out of range. */
const char *dit_cpu_isa_name(dit_cpu_isa isa);

/* The ISA the dit_cpu_ kernels use in this process (chosen at the first call, see
 * above), and its table. */
dit_cpu_isa dit_cpu_isa_active(void);
const dit_cpu_isa_ops *dit_cpu_isa_ops_active(void);

#endif
