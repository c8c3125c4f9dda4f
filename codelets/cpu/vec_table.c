/* The table of one vector ISA path (compiled once per vector ISA, see dit_vec.h). */
#include "dit_cpu_isa_impl.h"
#include "dit_vec.h"

#define DIT_ISA_TABLE_(sfx) dit_cpu_isa_ops_##sfx
#define DIT_ISA_TABLE(sfx)  DIT_ISA_TABLE_(sfx)

const dit_cpu_isa_ops DIT_ISA_TABLE(DIT_ISA_SUFFIX) = {
#ifdef DIT_ISA_AVX512
    .isa = DIT_CPU_ISA_AVX512,
#else
    .isa = DIT_CPU_ISA_AVX2,
#endif
    .attention = DIT_ISA_FN(attention),
    .layernorm = DIT_ISA_FN(layernorm),
    .layernorm_rms = DIT_ISA_FN(layernorm_rms),
    .rmsnorm = DIT_ISA_FN(rmsnorm),
    .rmsnorm_group = DIT_ISA_FN(rmsnorm_group),
    .rope_apply = DIT_ISA_FN(rope_apply),
    .rope_split_apply = DIT_ISA_FN(rope_split_apply),
    .act = DIT_ISA_FN(act),
    .residual = DIT_ISA_FN(residual),
    .bias_act = DIT_ISA_FN(bias_act),
    .bf16_widen = DIT_ISA_FN(bf16_widen),
};
