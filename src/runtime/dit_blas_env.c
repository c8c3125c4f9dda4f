#define _GNU_SOURCE
#include "dit_blas_env.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config.h"
#ifdef HAVE_OPENBLAS_GET_CORENAME
#include <cblas.h>
#endif

const char *dit_blas_core_name(void)
{
#ifdef HAVE_OPENBLAS_GET_CORENAME
	const char *n = openblas_get_corename();
	return n ? n : "?";
#else
	return "?";
#endif
}

static int generic_core(const char *name)
{
	static const char *const generic[] = {"prescott",  "core2",  "penryn", "dunnington",
	                                      "nehalem",   "atom",   "katmai", "coppermine",
	                                      "northwood", "banias", "unknown"};
	for (size_t i = 0; i < sizeof generic / sizeof generic[0]; i++)
		if (strcasecmp(name, generic[i]) == 0)
			return 1;
	return 0;
}

void dit_blas_env_prepare(char **argv)
{
#if defined(HAVE_OPENBLAS_GET_CORENAME) && (defined(__x86_64__) || defined(__i386__))
	if (getenv("OPENBLAS_CORETYPE") || getenv("DITSTAR_BLAS_REEXEC"))
		return;
	if (!generic_core(dit_blas_core_name()))
		return;
	const char *core = NULL;
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
		core = "SkylakeX";
	else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		core = "Haswell";
	if (!core)
		return;
	setenv("OPENBLAS_CORETYPE", core, 1);
	setenv("DITSTAR_BLAS_REEXEC", "1", 1);
	execv("/proc/self/exe", argv);
	/* exec failed: carry on with the kernels we have */
	unsetenv("OPENBLAS_CORETYPE");
#else
	(void)argv;
#endif
}
