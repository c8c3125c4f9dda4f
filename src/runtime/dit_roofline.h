/* ditstar-sim --sim-roofline FILE: every task's length from a roofline of each kind of
 * worker instead of calibrated models, for a machine nobody has measured here
 *
 *   time (us) = task_us + max(flops / rate, bytes / mem_gbps)
 *
 * rate the kind's attention_gflops for attention, else gemm_gflops; flops the task's
 * (its GEMM or attention flops, 0 for the other ops); bytes the sizes of all its
 * buffers (each read or written once); a weight transfer task (the data is moved by
 * the platform's links, not by the task) task_us alone. FILE is JSON:
 *
 *   {"name": "...", "cpu": {...}, "cuda": {...}, "opencl": {...}}   each kind optional,
 *   a kind: {"gemm_gflops": G, "attention_gflops": A, "mem_gbps": B, "task_us": T}
 *
 * A task of a kind the file does not describe is refused before it is submitted. */
#ifndef DIT_ROOFLINE_H
#define DIT_ROOFLINE_H

#include "dit_error.h"

enum { DIT_ROOF_CPU, DIT_ROOF_CUDA, DIT_ROOF_OPENCL, DIT_ROOF_KINDS };

typedef struct dit_roofline {
	char name[128];
	struct dit_roof_kind {
		int set;
		double gemm_gflops, attention_gflops, mem_gbps, task_us;
	} kind[DIT_ROOF_KINDS];
} dit_roofline;

/* Reads FILE; errors name the file and the key. */
dit_status dit_roofline_load(dit_roofline *r, const char *path, dit_error *err);

struct starpu_task;
struct starpu_codelet;

/* The kind of a StarPU worker type (enum starpu_worker_archtype; -1: none the file
 * can describe). */
int dit_roofline_kind(int type);

/* The task's length in microseconds on kind k (r->kind[k].set). */
double dit_roofline_us(const dit_roofline *r, int k, const struct starpu_task *t);

/* Makes the roofline the length of every task of codelets handed to
 * dit_roofline_use from now on (one runtime per process: it is the runtime's), or
 * none (NULL). */
void dit_roofline_attach(const dit_roofline *r);
/* The attached roofline's name ("" when its file has none), or NULL: none. */
const char *dit_roofline_attached(void);

/* Gives cl's model the roofline's lengths (once, before its first task). */
void dit_roofline_use(struct starpu_codelet *cl);

#endif
