/* The classes of tasks, heteroprio's buckets under --priorities op-class. A task's priority is its
 * bucket (heteroprio takes it as such), chosen by the task's op and by which kinds of worker can
 * run it (tasks/priorities.c):
 *
 *   DIT_BUCKET_GEMM       ops submitted with GEMM flops (linear, the patch and text
 *                         embeddings, the head)
 *   DIT_BUCKET_ATTENTION  attention
 *   DIT_BUCKET_LIGHT      the other ops (norms, RoPE, modulation, residuals, copies)
 *   DIT_BUCKET_HOST       tasks only the CPU workers run (the solver, the guidance, the
 *                         checks) and the weight transfers to a node of CPU workers
 *   DIT_BUCKET_DEVICE     tasks only the accelerators run (every op with --workers
 *                         opencl|cuda) and the weight transfers to an accelerator
 *
 * the first three when every kind of worker of the run can run the task. Each kind of
 * worker looks at the buckets in its own order: CPU workers HOST, LIGHT, ATTENTION,
 * GEMM (their own work first, the light ops next, the GEMMs last); accelerators
 * DEVICE, GEMM, ATTENTION, LIGHT. The accelerator is the faster kind for GEMM,
 * ATTENTION and LIGHT, and a CPU worker takes a task of those buckets only while the
 * bucket holds at least the slow factor's tasks per accelerator worker. */
#ifndef DIT_TASK_CLASS_H
#define DIT_TASK_CLASS_H

enum {
	DIT_BUCKET_GEMM = 0,
	DIT_BUCKET_ATTENTION,
	DIT_BUCKET_LIGHT,
	DIT_BUCKET_HOST,
	DIT_BUCKET_DEVICE,
	DIT_BUCKET_COUNT
};

#endif
