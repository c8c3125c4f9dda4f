/* The STARPU_* variables StarPU reads as numbers, from StarPU's own sources
 * (src/runtime/starpu-vars.py writes dit_starpu_vars.c): StarPU aborts the process on
 * a value that does not parse whole, and on a negative integer. */
#ifndef DIT_STARPU_VARS_H
#define DIT_STARPU_VARS_H

typedef enum dit_starpu_var_kind {
	DIT_SPV_INT,   /* strtol, whole, >= 0, an int */
	DIT_SPV_FLOAT, /* strtof, whole */
} dit_starpu_var_kind;

typedef struct dit_starpu_var {
	const char *name;
	dit_starpu_var_kind kind;
} dit_starpu_var;

extern const dit_starpu_var dit_starpu_vars[];
extern const int dit_starpu_nvars;

#endif
