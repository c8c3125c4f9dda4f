/* The offload plan of a run: the ways of holding its activations, tried the fastest
 * first (dit_plan_run in dit_planner.h). */
#include <stdio.h>
#include <stdlib.h>

#include "dit_cuda_env.h"
#include "dit_opencl.h"
#include "dit_planner.h"
#include "dit_starpu_env.h"

int dit_plan_device(dit_workers w)
{
	switch (dit_workers_resolve(w)) {
	case DIT_WORKERS_OPENCL: return DIT_DEVICE_OPENCL;
	case DIT_WORKERS_CUDA: return DIT_DEVICE_CUDA;
	default: return DIT_DEVICE_NONE;
	}
}

void dit_plan_act(const dit_plan_req *rq, int slots, int64_t chunk_rows, dit_act_plan *act)
{
	dit_grid gr = rq->grid;
	gr.chunk_rows = chunk_rows;
	dit_graph_act_plan(rq->w->desc, &rq->w->expert[0]->cfg, &gr, rq->npasses, slots,
	                   rq->time_rows, rq->concat, rq->first_frame, act);
}

/* One way to hold the activations: passes in flight, token chunk rows (0: none). */
typedef struct act_try {
	int slots;
	int64_t chunk_rows;
} act_try;

/* The ways the planner tries, the fastest first: every pass in flight down to one (each
 * pass fewer saves a copy of the block-lived buffers; on one device the passes run one
 * after the other anyway), then, one pass in flight, the blocks in token chunks of
 * 4096, 1024 and 256 rows where the family takes them. An option fixes its part.
 * Returns how many, at most 8. */
static int act_tries(const dit_plan_req *rq, const dit_offload_opts *oo, act_try *t)
{
	static const int64_t chunk_rows[] = {4096, 1024, 256};
	int np = rq->npasses, n = 0, want = oo->passes_in_flight;
	int hi = want > 0 && want < np ? want : np, lo = want > 0 ? hi : 1;
	for (int k = hi; k >= lo; k--)
		t[n++] = (act_try){k, oo->chunk_rows};
	if (!oo->chunk_rows && dit_graph_token_chunks(rq->w->desc))
		for (size_t i = 0; i < sizeof chunk_rows / sizeof chunk_rows[0]; i++)
			if (chunk_rows[i] < rq->grid.tokens)
				t[n++] = (act_try){lo, chunk_rows[i]};
	return n;
}

/* The offload plan of one way; DIT_OK or the planner's error. */
static dit_status plan_try(dit_offload *off, const dit_plan_req *rq, const dit_offload_opts *oo,
                           size_t device_memory, const dit_runtime_opts *rto, act_try t,
                           dit_error *err)
{
	dit_act_plan act;
	dit_plan_act(rq, t.slots, t.chunk_rows, &act);
	int cuda = dit_workers_accel(rto->workers) == DIT_WORKERS_CUDA;
	dit_status st = dit_offload_plan(off, rq->w, oo, dit_plan_device(rto->workers), cuda,
	                                 act.total + rq->extra_bytes, device_memory, err);
	off->act = act;
	off->act_extra = rq->extra_bytes;
	return st;
}

static dit_status check_act_opts(const dit_plan_req *rq, const dit_offload_opts *oo, dit_error *err)
{
	if (oo->passes_in_flight < 0)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--passes-in-flight %d: must be at least 1 (0: as many as "
		                     "the memory budget holds)",
		                     oo->passes_in_flight);
	if (oo->chunk_rows < 0)
		return dit_error_set(err, DIT_EUSAGE, "--token-chunk %lld: must be at least 1",
		                     (long long)oo->chunk_rows);
	if (oo->chunk_rows && !dit_graph_token_chunks(rq->w->desc))
		return dit_error_set(err, DIT_EUSAGE,
		                     "--token-chunk: %s computes its blocks over all tokens "
		                     "at once",
		                     rq->w->desc->name);
	return DIT_OK;
}

/* Whether the block activations are bf16 (--act-dtype; auto: when CUDA computes). */
static int act_bf16(const dit_offload_opts *oo, const dit_runtime_opts *rto)
{
	return dit_weight_dtype_bf16(oo->act_dtype,
	                             dit_workers_accel(rto->workers) == DIT_WORKERS_CUDA);
}

/* Without a device limit (--device-mem-limit, STARPU_LIMIT_CUDA_MEM or _OPENCL_MEM),
 * the budget the activations must fit in is the device's memory, asked before StarPU
 * starts (CUDA: the free bytes of device 0; OpenCL: the device's global memory) less 5%
 * and 256 MiB, as keep-what-fits takes it; *mem receives the memory. 0: a limit is
 * given, no device computes, or its memory is unknown (and ditstar-sim's devices are
 * simulated: their limit is the option's). */
static size_t memory_budget(const dit_offload_opts *oo, int device, size_t *mem)
{
	*mem = 0;
#ifdef DIT_SIMGRID
	(void)oo;
	(void)device;
	return 0;
#else
	const char *var =
	    device == DIT_DEVICE_CUDA ? "STARPU_LIMIT_CUDA_MEM" : "STARPU_LIMIT_OPENCL_MEM";
	if (device == DIT_DEVICE_NONE || oo->device_mem_limit || getenv(var))
		return 0;
	*mem = device == DIT_DEVICE_CUDA ? dit_cuda_free_bytes(0) : dit_opencl_device_memory();
	return *mem ? dit_fit_budget_of(*mem) : 0;
#endif
}

/* Why the way taken has the passes in flight it has, or its token chunks. */
static int act_why(int option, int fewer, size_t budget)
{
	return option   ? DIT_SLOTS_OPTION
	       : !fewer ? DIT_SLOTS_ALL
	       : budget ? DIT_SLOTS_MEMORY
	                : DIT_SLOTS_LIMIT;
}

/* The offload plan of the first way the memory limit holds (act_tries); refused, with
 * the last way tried, when none fits. Without a limit the way is the first the
 * device's memory holds (memory_budget), planned then as without a limit. */
static dit_status plan_activations(dit_offload *off, const dit_plan_req *rq,
                                   const dit_offload_opts *oo, const dit_runtime_opts *rto,
                                   dit_error *err)
{
	dit_status st = check_act_opts(rq, oo, err);
	if (st)
		return st;
	/* the activations' element size comes with the grid */
	dit_plan_req rb = *rq;
	rb.grid.act_bf16 = act_bf16(oo, rto);
	rq = &rb;
	act_try t[8];
	int n = act_tries(rq, oo, t), np = rq->npasses;
	size_t mem, budget = memory_budget(oo, dit_plan_device(rto->workers), &mem);
	dit_offload_opts ob = *oo;
	ob.device_mem_limit = budget;
	for (int i = 0;; i++) {
		st = plan_try(off, rq, budget ? &ob : oo, mem, rto, t[i], err);
		if (st == DIT_OK && budget) /* the way found: planned as without a limit */
			st = plan_try(off, rq, oo, 0, rto, t[i], err);
		if (st == DIT_OK) {
			off->act_from = act_why(oo->passes_in_flight > 0, t[i].slots < np, budget);
			off->chunk_from =
			    act_why(oo->chunk_rows != 0, t[i].chunk_rows != 0, budget);
			return DIT_OK;
		}
		if (i + 1 < n && off->refused_need) {
			dit_error_clear(err);
			continue;
		}
		if (i == 0 || !err)
			return st;
		char msg[sizeof err->msg], chunks[64] = "";
		snprintf(msg, sizeof msg, "%s", err->msg);
		if (off->act.chunk_rows)
			snprintf(chunks, sizeof chunks, ", the blocks in token chunks of %lld rows",
			         (long long)off->act.chunk_rows);
		return dit_error_set(err, st, "%s, with %d of the %d passes in flight%s", msg,
		                     t[i].slots, np, chunks);
	}
}

dit_status dit_plan_run(dit_offload *off, const dit_plan_req *rq, const dit_offload_opts *oo,
                        const char *cache_dir, const dit_runtime_opts *rto, dit_error *err)
{
	dit_offload_opts o = *oo;
	if (!o.cache_root)
		o.cache_root = cache_dir;
	/* the planner reads StarPU's limits: check them (and the rest) first */
	dit_status st = dit_starpu_env_check(err);
	if (!st)
		st = plan_activations(off, rq, &o, rto, err);
	return st;
}
