/* The offload planner (see dit_offload.h): options, memory limits, the plan of each
 * node (the disk mode's preparation is dit_prepare.c's, the handles' dit_place.c's). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "dit_cuda_mem.h"
#include "dit_io.h"
#include "dit_names.h"
#include "dit_planner.h"
#include "dit_rng.h"
#include "dit_store.h"
#include "dit_synth.h"

#define MIB ((size_t)1 << 20)

/* ------------------------------------------------------------------ options */

void dit_offload_opts_default(dit_offload_opts *o)
{
	memset(o, 0, sizeof *o);
	o->mode = DIT_OFFLOAD_NONE;
	o->chunk_size[0] = 1;
	o->prefetch = 1;
	o->disk_ram_slots = 2;
	o->resident = -1;
}

static const char *const mode_names[] = {"none", "cpu", "disk", "auto"};

const char *dit_offload_mode_name(dit_offload_mode m)
{
	return dit_name_of(mode_names, 4, (int)m);
}

dit_status dit_offload_mode_parse(dit_offload_mode *out, const char *name, dit_error *err)
{
	int i = 0;
	dit_status st = dit_name_parse(&i, mode_names, 4, name, "offload mode", err);
	if (st == DIT_OK)
		*out = (dit_offload_mode)i;
	return st;
}

/* ------------------------------------------------------------------ memory limits */

/* The limit StarPU's variable var already sets (MiB), in bytes; 0: unset. */
static size_t env_limit(const char *var)
{
	const char *have = getenv(var);
	return have && *have ? (size_t)strtoull(have, NULL, 10) * MIB : 0;
}

/* A StarPU memory limit (MiB, rounded up) for starpu_init, in slot env; a value the
 * environment already has wins. Returns the limit in force (0: none). */
static size_t plan_limit(dit_env_var *env, const char *var, size_t bytes)
{
	if (env_limit(var))
		return env_limit(var);
	if (!bytes)
		return 0;
	size_t mib = (bytes + MIB - 1) / MIB;
	env->name = var;
	snprintf(env->value, sizeof env->value, "%zu", mib);
	return mib * MIB;
}

/* StarPU's suballocator (datawizard/malloc.c): on a CUDA node, and in host RAM pinned
 * for CUDA, a buffer of up to 4 MiB is carved out of a 32 MiB chunk allocated whole.
 * A limit below one chunk beyond what the big buffers take can never be met: StarPU
 * then waits for memory forever (seen on an H200 with the tiny preset's 27 MiB). */
#define DIT_SUBALLOC_CHUNK (32 * MIB)

/* Allocation slack on top of what the buffers need: StarPU rounds allocations and
 * keeps a few buffers in its caches; with CUDA one suballocator chunk more, for the
 * small buffers (16 MiB of the slack covers their rounding). */
static size_t slack(size_t bytes, int cuda)
{
	return bytes / 16 + 16 * MIB + (cuda ? DIT_SUBALLOC_CHUNK : 0);
}

/* The slack a plan takes: what it wants, or under a limit at most what the limit leaves
 * beside the held bytes (then off->slack_wanted says how much it wanted). */
static size_t cut_slack(size_t *wanted, size_t want, size_t limit, size_t held)
{
	if (!limit || held + want <= limit)
		return want;
	*wanted = want;
	return limit > held ? limit - held : 0;
}

static const char *const wdtype_names[] = {"auto", "f32", "bf16"};

const char *dit_weight_dtype_name(dit_weight_dtype d)
{
	return dit_name_of(wdtype_names, 3, (int)d);
}

dit_status dit_weight_dtype_parse(dit_weight_dtype *out, const char *name, dit_error *err)
{
	int i = 0;
	dit_status st = dit_name_parse(&i, wdtype_names, 3, name, "weight dtype", err);
	if (st == DIT_OK)
		*out = (dit_weight_dtype)i;
	return st;
}

int dit_weight_dtype_bf16(dit_weight_dtype d, int cuda)
{
	return d == DIT_WDTYPE_BF16 || (d == DIT_WDTYPE_AUTO && cuda);
}

size_t dit_offload_chunk_bytes(const dit_offload *off)
{
	size_t n = 0;
	for (int p = 0; p < off->npools; p++)
		n += dit_pool_bytes(off->pool[p]);
	return n;
}

/* The largest chunk of any pool. */
static size_t max_chunk(const dit_offload *off)
{
	size_t n = 0;
	for (int p = 0; p < off->npools; p++)
		if (dit_pool_chunk_bytes(off->pool[p]) > n)
			n = dit_pool_chunk_bytes(off->pool[p]);
	return n;
}

size_t dit_offload_global_bytes(const dit_offload *off)
{
	size_t n = 0;
	for (int e = 0; e < off->nexperts; e++)
		n += dit_model_global_bytes(off->expert[e]);
	return n;
}

static int64_t total_chunks(const dit_offload *off)
{
	int64_t n = 0;
	for (int p = 0; p < off->npools; p++)
		n += off->pool[p]->nchunks;
	return n;
}

/* Whether a size given by name (--chunk POOL=N) is the one of pool i of expert e: name
 * is the pool's name ("double_blocks", its prefix before the '.'), its start before a
 * '_' ("double"), or the expert's label ("high", "low"). */
static int chunk_name_is(const dit_weights *w, int e, int i, const char *name)
{
	const char *pre = w->desc->pools[i].prefix;
	size_t len = strlen(name);
	if (strncmp(pre, name, len) == 0 && pre[len] && strchr("_.", pre[len]))
		return 1;
	return w->nexperts > 1 && strcmp(w->desc->expert_label[e], name) == 0;
}

/* The names --chunk POOL=N takes for w: its pools', then its experts'. */
static void chunk_names(const dit_weights *w, char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = '\0';
	for (int i = 0; i < w->desc->npools && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%.*s", i ? ", " : "",
		                      (int)strcspn(w->desc->pools[i].prefix, "."),
		                      w->desc->pools[i].prefix);
	for (int e = 0; w->nexperts > 1 && e < w->nexperts && k < len; e++)
		k += (size_t)snprintf(buf + k, len - k, ", %s", w->desc->expert_label[e]);
}

/* Every expert's block matrices in bf16 or not, and each pool's chunk size: the sizes in
 * pool order (the last repeating), over them those given by name (a later one over an
 * earlier). */
static dit_status set_chunks(dit_weights *w, const dit_offload_opts *o, int bf16, int compact,
                             dit_error *err)
{
	int npools = w->desc->npools;
	char names[256];
	for (int i = npools; i < DIT_MAX_POOLS; i++)
		if (o->chunk_size[i] > 0)
			return dit_error_set(
			    err, DIT_EUSAGE,
			    "--offload-chunk-size gives %d sizes, but %s has %d pool%s", i + 1,
			    w->desc->name, npools, npools > 1 ? "s" : "");
	for (int k = 0; k < o->nchunk_named; k++) {
		int found = 0;
		for (int e = 0; e < w->nexperts; e++)
			for (int i = 0; i < npools; i++)
				found |= chunk_name_is(w, e, i, o->chunk_named[k].name);
		if (!found) {
			chunk_names(w, names, sizeof names);
			return dit_error_set(
			    err, DIT_EUSAGE, "--chunk %s=%lld: %s has no pool '%s' (its pools: %s)",
			    o->chunk_named[k].name, (long long)o->chunk_named[k].size,
			    w->desc->name, o->chunk_named[k].name, names);
		}
	}
	for (int e = 0; e < w->nexperts; e++) {
		dit_status st = dit_model_set_weight_dtype(
		    w->expert[e], bf16 ? DIT_WDT_BF16 : DIT_WDT_F32, compact, err);
		for (int64_t i = 0, last = 1; i < npools && !st; i++) {
			int64_t size = last = o->chunk_size[i] > 0 ? o->chunk_size[i] : last;
			for (int k = 0; k < o->nchunk_named; k++)
				if (chunk_name_is(w, e, (int)i, o->chunk_named[k].name))
					size = o->chunk_named[k].size;
			st = dit_pool_set_chunks(&w->expert[e]->pool[i], size, err);
		}
		if (st)
			return st;
	}
	return DIT_OK;
}

/* The pools of every expert, in order, each with its label ("high", "double_blocks",
 * "high double_blocks") and the folder of its chunk store
 * ("high_noise_model/double_blocks"). */
static void pools_list(dit_offload *off, dit_weights *w)
{
	off->nexperts = w->nexperts;
	for (int e = 0; e < w->nexperts; e++) {
		dit_model *m = w->expert[e];
		off->expert[e] = m;
		for (int i = 0; i < m->npools; i++) {
			int p = off->npools++;
			off->pool[p] = &m->pool[i];
			char name[40];
			snprintf(name, sizeof name, "%.*s", (int)strcspn(m->pool[i].d->prefix, "."),
			         m->pool[i].d->prefix);
			const char *el = w->nexperts > 1 ? w->desc->expert_label[e] : "";
			const char *ed = w->nexperts > 1 ? m->fmt->expert[e] : "";
			const char *pn = m->npools > 1 ? name : "";
			snprintf(off->pool_label[p], sizeof off->pool_label[p], "%s%s%s", el,
			         *el && *pn ? " " : "", pn);
			snprintf(off->pool_dir[p], sizeof off->pool_dir[p], "%s%s%s", ed,
			         *ed && *pn ? "/" : "", pn);
		}
	}
}

/* What the CUDA codelets of the run may hold on a device outside StarPU: each worker's
 * workspaces, and the tile of compact weights when a pool has matrices the CUDA GEMM
 * widens (STARPU_NWORKER_PER_CUDA workers a device). */
static size_t cuda_outside(const dit_offload *off)
{
	int compact = 0;
	for (int p = 0; p < off->npools; p++)
		for (int i = 0; i < off->pool[p]->lay.n; i++)
			compact |= off->pool[p]->lay.wdt[i] != DIT_WDT_F32 &&
			           off->pool[p]->lay.wdt[i] != DIT_WDT_BF16;
	const char *v = getenv("STARPU_NWORKER_PER_CUDA");
	long n = v && *v ? strtol(v, NULL, 10) : 1;
	return (size_t)(n > 1 ? n : 1) * dit_cuda_outside_bytes(compact);
}

/* A device limit below what the run needs there (least bytes, outside of them the CUDA
 * codelets' own): the usage error that itemises the need. */
static dit_status device_refuse(dit_offload *off, const dit_offload_opts *o, size_t limit,
                                size_t least, size_t ahead, size_t sub, size_t outside,
                                dit_error *err)
{
	size_t chunk = max_chunk(off), globals = dit_offload_global_bytes(off),
	       chunks = dit_offload_chunk_bytes(off);
	off->refused_need = least;
	char what[96];
	if (o->mode != DIT_OFFLOAD_NONE)
		snprintf(what, sizeof what, "%zu chunk%s in flight", ahead, ahead > 1 ? "s" : "");
	else if (off->nexperts > 1)
		snprintf(what, sizeof what, "all chunks of the %d experts", off->nexperts);
	else
		snprintf(what, sizeof what, "all chunks");
	char lim[128]; /* the limit given, or the device's memory the planner took it from */
	if (off->device_memory)
		snprintf(lim, sizeof lim,
		         "the device's memory (%.0f MiB, of which the run may use %.0f)",
		         (double)off->device_memory / MIB, (double)limit / MIB);
	else
		snprintf(lim, sizeof lim, "--device-mem-limit %.4g MiB", (double)limit / MIB);
	char out[96] = "";
	if (outside)
		snprintf(out, sizeof out, " + the CUDA libraries' workspaces %.0f MiB",
		         (double)outside / MIB);
	return dit_error_set(err, DIT_EUSAGE,
	                     "%s is below the %zu MiB this run needs on the device (non-block "
	                     "weights %.1f MiB + %s %.1f MiB + activations %.1f MiB%s%s)",
	                     lim, (least + MIB - 1) / MIB, (double)globals / MIB, what,
	                     (double)(o->mode == DIT_OFFLOAD_NONE ? chunks : ahead * chunk) / MIB,
	                     (double)off->activation_bytes / MIB,
	                     sub ? " + StarPU's 32 MiB chunk for small CUDA buffers" : "", out);
}

/* The device's part. It holds the non-block weights (of every expert), the resident
 * chunks, the chunks in flight and the activations. In mode none every chunk of every
 * expert stays there; else as many as its budget holds (keep what fits). Sets StarPU's
 * device limit for the run. */
static dit_status device_plan(dit_offload *off, const dit_offload_opts *o, int cuda, size_t ahead,
                              dit_error *err)
{
	size_t chunk = max_chunk(off), globals = dit_offload_global_bytes(off),
	       chunks = dit_offload_chunk_bytes(off);
	const char *var =
	    off->device == DIT_DEVICE_CUDA ? "STARPU_LIMIT_CUDA_MEM" : "STARPU_LIMIT_OPENCL_MEM";
	size_t fixed = globals + off->activation_bytes;
	/* streaming: the chunks in flight (prefetch + 1) must fit, else StarPU evicts
	 * the chunk being computed and reads it again */
	size_t sub = cuda ? DIT_SUBALLOC_CHUNK : 0;
	size_t least = (o->mode == DIT_OFFLOAD_NONE ? fixed + chunks : fixed + ahead * chunk) + sub;
	size_t limit = o->device_mem_limit ? o->device_mem_limit : env_limit(var);
	/* a --device-mem-limit holds the CUDA codelets' own allocations too: StarPU gets
	 * the rest (its STARPU_LIMIT_CUDA_MEM is StarPU's alone) */
	off->outside_bytes = cuda ? cuda_outside(off) : 0;
	size_t outside = o->device_mem_limit ? off->outside_bytes : 0;
	if (limit && limit < least + outside)
		return device_refuse(off, o, limit, least + outside, ahead, sub, outside, err);
	limit -= limit ? outside : 0;
	/* slack for what StarPU rounds and caches; under a limit at most what the limit
	 * leaves beside the chunks in flight (at least StarPU's suballocator chunk, which
	 * least holds), so that the plan never exceeds the budget */
	size_t moving = o->mode == DIT_OFFLOAD_NONE ? chunks : ahead * chunk;
	off->fit_fixed = fixed + cut_slack(&off->slack_wanted, slack(fixed + ahead * chunk, cuda),
	                                   limit, fixed + moving);
	if (o->mode == DIT_OFFLOAD_NONE) {
		dit_fit_all(off);
	} else if (limit) {
		dit_fit(off, limit, off->fit_fixed, (int64_t)ahead);
		off->budget_from = DIT_BUDGET_LIMIT;
		/* every chunk streamed: StarPU held to the plan, not the budget, which
		 * it would fill with copies of streamed chunks (the peak is the plan) */
		size_t plan = off->fit_fixed + ahead * chunk;
		if (o->resident == 0 && plan < limit)
			limit = plan;
	} else if (o->resident != 0) {
		off->fit_pending = 1; /* from the device's memory, once StarPU runs */
	} else {
		/* streaming only: the device limited to the chunks in flight */
		size_t need = fixed + ahead * chunk;
		limit = need + slack(need, cuda);
	}
	off->device_limit = plan_limit(&off->env[0], var, limit);
	return DIT_OK;
}

/* Disk mode, host RAM's part. It holds the chunks read from the store besides the
 * activations (the non-block weights are host memory StarPU does not count): on the
 * host alone as many as its budget holds, else (or with --resident-chunks 0) at most
 * disk_ram_slots chunks. Sets StarPU's host limit for the run. */
static dit_status host_plan(dit_offload *off, const dit_offload_opts *o, int cuda, size_t ahead,
                            dit_error *err)
{
	size_t chunk = max_chunk(off), activation_bytes = off->activation_bytes;
	int device = off->device;
	size_t slots = (size_t)o->disk_ram_slots;
	/* the chunks in flight (prefetch + 1) when the host computes; one read
	 * into RAM at a time on its way to a device */
	size_t inflight = device ? 1 : ahead;
	size_t least = inflight * chunk + activation_bytes;
	size_t limit = o->host_mem_limit ? o->host_mem_limit : env_limit("STARPU_LIMIT_CPU_MEM");
	if (limit && limit < least) {
		off->refused_need = least;
		return dit_error_set(
		    err, DIT_EUSAGE,
		    "--host-mem-limit %.4g MiB is below the %zu MiB this run "
		    "needs in host RAM (%zu chunk%s in flight %.1f MiB + activations "
		    "%.1f MiB)",
		    (double)limit / MIB, (least + MIB - 1) / MIB, inflight, inflight > 1 ? "s" : "",
		    (double)(inflight * chunk) / MIB, (double)activation_bytes / MIB);
	}
	size_t host_wanted = 0; /* the compute node's slack is the device's when one computes */
	size_t fixed = activation_bytes + cut_slack(device ? &host_wanted : &off->slack_wanted,
	                                            slack(activation_bytes + slots * chunk, cuda),
	                                            limit, activation_bytes + slots * chunk);
	if (!device)
		off->fit_fixed = fixed;
	if (!device && o->resident != 0) {
		if (limit) {
			dit_fit(off, limit, fixed, (int64_t)slots);
			off->budget_from = DIT_BUDGET_LIMIT;
		} else { /* StarPU limited to what the fit keeps */
			dit_fit_memory(off, dit_fit_host_available(), (int64_t)slots);
			limit = fixed + dit_fit_resident_bytes(off) +
			        dit_fit_slot_bytes(off, (int64_t)slots);
		}
	} else if (device && o->resident != 0) {
		/* keep what fits in host RAM too: of the chunks the device streams, as
		 * many as RAM holds beside the activations and the slots stay there
		 * after their first read */
		size_t budget = limit ? limit : dit_fit_budget_of(dit_fit_host_available());
		dit_fit_ram(off, budget, fixed, (int64_t)slots);
		if (!limit) {
			size_t kept = 0;
			for (int p = 0; p < off->npools; p++)
				kept += (size_t)off->nram[p] * dit_pool_chunk_bytes(off->pool[p]);
			limit = fixed + slots * chunk + kept;
		}
	} else if (!limit) {
		size_t need = slots * chunk + activation_bytes;
		limit = need + slack(need, cuda);
	}
	off->host_limit = plan_limit(&off->env[1], "STARPU_LIMIT_CPU_MEM", limit);
	return DIT_OK;
}

dit_status dit_offload_plan(dit_offload *off, dit_weights *w, const dit_offload_opts *o, int device,
                            int cuda, size_t activation_bytes, size_t device_memory, dit_error *err)
{
	memset(off, 0, sizeof *off);
	off->o = *o;
	pools_list(off, w);
	off->device = device;
	off->activation_bytes = activation_bytes;
	off->device_memory = device_memory;
	off->disk_node = -1;
	dit_store_lock_init(&off->lock);

	if (o->mode == DIT_OFFLOAD_AUTO) /* the session chooses first (dit_auto.h) */
		return dit_error_set(err, DIT_EUSAGE, "--offload auto: no plan was chosen");
	if (o->prefetch < 0 || o->prefetch > 64)
		return dit_error_set(err, DIT_EUSAGE, "--prefetch %d: must be between 0 and 64",
		                     o->prefetch);
	if (o->disk_ram_slots < 1)
		return dit_error_set(err, DIT_EUSAGE, "--disk-ram-slots %d: must be at least 1",
		                     o->disk_ram_slots);
	dit_status st = set_chunks(w, o, dit_weight_dtype_bf16(o->weight_dtype, cuda),
	                           o->weight_dtype == DIT_WDTYPE_AUTO, err);
	if (st != DIT_OK)
		return st;

	size_t ahead = (size_t)o->prefetch + 1;
	if (ahead > (size_t)total_chunks(off))
		ahead = (size_t)total_chunks(off);
	if (o->mode == DIT_OFFLOAD_DISK && ahead > (size_t)o->disk_ram_slots)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--prefetch %d keeps %zu chunks in host RAM, more than "
		                     "--disk-ram-slots %d",
		                     o->prefetch, ahead, o->disk_ram_slots);
	if (o->host_mem_limit && o->mode != DIT_OFFLOAD_DISK)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--host-mem-limit needs --offload disk (without a disk node "
		                     "StarPU cannot evict weights from host RAM)");
	if (device)
		st = device_plan(off, o, cuda, ahead, err);
	else if (o->device_mem_limit)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--device-mem-limit needs an accelerator (--workers cuda or "
		                     "opencl)");
	else if (o->mode != DIT_OFFLOAD_DISK)
		dit_fit_all(off); /* host RAM computes and holds every chunk */
	if (st == DIT_OK && o->mode == DIT_OFFLOAD_DISK)
		st = host_plan(off, o, cuda, ahead, err);
	return st;
}

int dit_offload_pool_of(const dit_offload *off, const dit_pool *pl)
{
	for (int p = 0; p < off->npools; p++)
		if (off->pool[p] == pl)
			return p;
	return 0;
}

/* ------------------------------------------------------------------ transfers */

int dit_offload_streams(const dit_offload *off)
{
	if (off->o.mode == DIT_OFFLOAD_DISK)
		return 1;
	return off->device && off->o.mode == DIT_OFFLOAD_CPU;
}
