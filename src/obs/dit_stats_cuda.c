/* The stats' "cuda_libraries": which library computed the CUDA workers' attention and
 * GEMM tasks, how many each path ran, and why the own kernels ran where they did
 * (dit_cuda_libs.h). */
#include "dit_stats.h"

#include <json-c/json.h>

#include "dit_cuda_libs.h"

static json_object *path_json(const dit_cuda_path *p, const char *lib, const char *mode,
                              const char *absent)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "library", lib ? json_object_new_string(lib) : NULL);
	json_object_object_add(o, "mode", json_object_new_string(mode));
	json_object_object_add(o, "unavailable",
	                       absent && *absent ? json_object_new_string(absent) : NULL);
	json_object_object_add(o, "library_tasks", json_object_new_int64(p->lib));
	json_object_object_add(o, "own_kernel_tasks", json_object_new_int64(p->own));
	json_object *why = json_object_new_object();
	for (int i = 0; i < DIT_CUDA_LIBS_REASONS && p->why[i]; i++)
		json_object_object_add(why, p->why[i], json_object_new_int64(p->why_n[i]));
	json_object_object_add(o, "own_kernel_reasons", why);
	return o;
}

static const char *mode_name(dit_libmode m, const char *lib_word)
{
	return m == DIT_LIBMODE_LIB ? lib_word : m == DIT_LIBMODE_OWN ? "own" : "auto";
}

json_object *dit_stats_cuda_json(const struct dit_cuda_libs *L)
{
	if (!L)
		return NULL;
	dit_cuda_path att, gemm;
	dit_cuda_libs_sum(L, &att, &gemm);
	char name[64];
	json_object *o = json_object_new_object();
	if (L->cudnn_version)
		dit_cuda_libs_attention_name(L, name, sizeof name);
	json_object_object_add(o, "attention",
	                       path_json(&att, L->cudnn_version ? name : NULL,
	                                 mode_name(L->att_mode, "cudnn"), L->cudnn_absent));
	json_object_object_add(o, "linear",
	                       path_json(&gemm, L->lt_loaded ? "cuBLASLt" : NULL,
	                                 mode_name(L->gemm_mode, "cublaslt"), L->lt_absent));
	return o;
}
