/* The choice of the kernels' ISA path, once per process (see dit_cpu_isa.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_cpu_isa_impl.h"

#if defined(__x86_64__) || defined(__i386__)
#define DIT_ISA_X86 1
#endif

const dit_cpu_isa_ops dit_cpu_isa_ops_scalar = {
    .isa = DIT_CPU_ISA_SCALAR,
    .attention = dit_attention_scalar,
    .layernorm = dit_layernorm_scalar,
    .layernorm_rms = dit_layernorm_rms_scalar,
    .rmsnorm = dit_rmsnorm_scalar,
    .rmsnorm_group = dit_rmsnorm_group_scalar,
    .rope_apply = dit_rope_apply_scalar,
    .rope_split_apply = dit_rope_split_apply_scalar,
    .act = dit_act_scalar,
    .residual = dit_residual_scalar,
    .bias_act = dit_bias_act_scalar,
    .bf16_widen = dit_bf16_widen_scalar,
};

static const char *const dit_isa_names[DIT_CPU_ISA_COUNT] = {"scalar", "avx2", "avx512"};

const char *dit_cpu_isa_name(dit_cpu_isa isa)
{
	return (unsigned)isa < DIT_CPU_ISA_COUNT ? dit_isa_names[isa] : "?";
}

/* Whether this CPU (and its OS) runs isa's instructions. */
static int dit_isa_cpu_has(dit_cpu_isa isa)
{
	switch (isa) {
	case DIT_CPU_ISA_SCALAR: return 1;
#ifdef DIT_ISA_X86
	case DIT_CPU_ISA_AVX2:
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	case DIT_CPU_ISA_AVX512:
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
		       __builtin_cpu_supports("fma");
#endif
	default: return 0;
	}
}

/* isa's table as built, whatever the CPU. */
static const dit_cpu_isa_ops *dit_isa_built(dit_cpu_isa isa)
{
	switch (isa) {
	case DIT_CPU_ISA_SCALAR: return &dit_cpu_isa_ops_scalar;
#ifdef DIT_HAVE_ISA_AVX2
	case DIT_CPU_ISA_AVX2: return &dit_cpu_isa_ops_avx2;
#endif
#ifdef DIT_HAVE_ISA_AVX512
	case DIT_CPU_ISA_AVX512: return &dit_cpu_isa_ops_avx512;
#endif
	default: return NULL;
	}
}

const dit_cpu_isa_ops *dit_cpu_isa_table(dit_cpu_isa isa)
{
	if ((unsigned)isa >= DIT_CPU_ISA_COUNT || !dit_isa_cpu_has(isa))
		return NULL;
	return dit_isa_built(isa);
}

/* The process's one choice, written once under dit_isa_once. */
static pthread_once_t dit_isa_once = PTHREAD_ONCE_INIT;
static dit_cpu_isa dit_isa_chosen = DIT_CPU_ISA_SCALAR;

static void dit_isa_choose(void)
{
	dit_cpu_isa best = DIT_CPU_ISA_SCALAR;
	for (int i = DIT_CPU_ISA_COUNT - 1; i > DIT_CPU_ISA_SCALAR; i--)
		if (dit_cpu_isa_table((dit_cpu_isa)i)) {
			best = (dit_cpu_isa)i;
			break;
		}
	dit_isa_chosen = best;
	const char *env = getenv("DITSTAR_CPU_ISA");
	if (!env || !*env || !strcmp(env, "auto"))
		return;
	for (int i = 0; i < DIT_CPU_ISA_COUNT; i++) {
		if (strcmp(env, dit_isa_names[i]))
			continue;
		if (dit_cpu_isa_table((dit_cpu_isa)i)) {
			dit_isa_chosen = (dit_cpu_isa)i;
		} else {
			fprintf(stderr, "ditstar: DITSTAR_CPU_ISA=%s refused: %s; using %s\n", env,
			        dit_isa_built((dit_cpu_isa)i) ? "this CPU cannot run it"
			                                      : "not in this build",
			        dit_isa_names[best]);
		}
		return;
	}
	fprintf(stderr,
	        "ditstar: DITSTAR_CPU_ISA=%s unknown (scalar, avx2, avx512, auto); using %s\n", env,
	        dit_isa_names[best]);
}

dit_cpu_isa dit_cpu_isa_active(void)
{
	pthread_once(&dit_isa_once, dit_isa_choose);
	return dit_isa_chosen;
}

const dit_cpu_isa_ops *dit_cpu_isa_ops_active(void)
{
	return dit_isa_built(dit_cpu_isa_active());
}
