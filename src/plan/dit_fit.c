/* Keep what fits (see dit_planner.h): how many chunks of each pool stay resident on
 * the compute node within its memory budget, and which ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_cuda_env.h"
#include "dit_planner.h"

#define MIB ((size_t)1 << 20)

size_t dit_fit_margin(size_t total)
{
	return total / 20 + 256 * MIB;
}

size_t dit_fit_budget_of(size_t total)
{
	size_t m = dit_fit_margin(total);
	return total > m ? total - m : 0;
}

size_t dit_fit_host_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	char line[128];
	unsigned long long kb = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (size_t)kb * 1024;
}

/* The largest chunk of the pools that still stream. */
static size_t streamed_chunk(const dit_offload *off)
{
	size_t n = 0;
	for (int p = 0; p < off->npools; p++)
		if (off->nresident[p] < off->pool[p]->nchunks &&
		    dit_pool_chunk_bytes(off->pool[p]) > n)
			n = dit_pool_chunk_bytes(off->pool[p]);
	return n;
}

size_t dit_fit_resident_bytes(const dit_offload *off)
{
	size_t n = 0;
	for (int p = 0; p < off->npools; p++)
		n += (size_t)off->nresident[p] * dit_pool_chunk_bytes(off->pool[p]);
	return n;
}

/* On a device a kept chunk takes no slot, so while it computes the prefetch reaches
 * one streamed chunk further than in a streamed-only plan: mixed plans need one slot
 * more, else StarPU evicts the next chunk to read the one after it and moves it twice
 * (perf/results/sim-h200.md). */
static int64_t mixed_plan_slot(const dit_offload *off)
{
	return off->device != DIT_DEVICE_NONE;
}

size_t dit_fit_slot_bytes(const dit_offload *off, int64_t slots)
{
	int64_t streamed = 0, kept = 0;
	for (int p = 0; p < off->npools; p++) {
		streamed += off->pool[p]->nchunks - off->nresident[p];
		kept += off->nresident[p];
	}
	int64_t ahead = slots + (kept > 0 && streamed > 0 ? mixed_plan_slot(off) : 0);
	if (ahead > streamed)
		ahead = streamed;
	return (size_t)ahead * streamed_chunk(off);
}

void dit_fit_all(dit_offload *off)
{
	for (int p = 0; p < off->npools; p++)
		off->nresident[p] = off->pool[p]->nchunks;
}

void dit_fit(dit_offload *off, size_t budget, size_t fixed, int64_t nslots)
{
	int64_t cap = off->o.resident < 0 ? INT64_MAX : off->o.resident, total = 0;
	size_t chunks = 0;
	for (int p = 0; p < off->npools; p++) {
		total += off->pool[p]->nchunks;
		chunks += dit_pool_bytes(off->pool[p]);
	}
	off->budget = budget;
	/* everything fits (nothing then streams: no slots) */
	if (total <= cap && budget >= fixed && budget - fixed >= chunks) {
		dit_fit_all(off);
		return;
	}
	for (int p = 0; p < off->npools; p++)
		off->nresident[p] = 0;
	/* the slots of a mixed plan (every chunk streamed for now) */
	size_t slots = dit_fit_slot_bytes(off, nslots + mixed_plan_slot(off));
	size_t avail = budget > fixed + slots ? budget - fixed - slots : 0;
	/* the same fraction of every pool's chunks, then what is left chunk by chunk in
	 * pool order */
	double frac = chunks ? (double)avail / (double)chunks : 0.0;
	int64_t kept = 0;
	for (int p = 0; p < off->npools; p++) {
		dit_pool *m = off->pool[p];
		int64_t r = (int64_t)(frac * (double)m->nchunks);
		if (r > m->nchunks)
			r = m->nchunks;
		if (r > cap - kept)
			r = cap - kept;
		off->nresident[p] = r;
		kept += r;
		avail -= (size_t)r * dit_pool_chunk_bytes(m);
	}
	for (int grew = 1; grew && kept < cap;) {
		grew = 0;
		for (int p = 0; p < off->npools && kept < cap; p++) {
			size_t c = dit_pool_chunk_bytes(off->pool[p]);
			if (off->nresident[p] < off->pool[p]->nchunks && c <= avail) {
				off->nresident[p]++;
				kept++;
				avail -= c;
				grew = 1;
			}
		}
	}
}

int dit_fit_is_resident(int64_t k, int64_t r, int64_t n)
{
	return r >= n || (r > 0 && (k * r) % n < r);
}

void dit_fit_ram(dit_offload *off, size_t budget, size_t fixed, int64_t slots)
{
	size_t chunks = 0, c = 0;
	for (int p = 0; p < off->npools; p++) {
		chunks += dit_pool_bytes(off->pool[p]);
		if (dit_pool_chunk_bytes(off->pool[p]) > c)
			c = dit_pool_chunk_bytes(off->pool[p]);
		off->nram[p] = 0;
	}
	off->ram_budget = budget;
	size_t need = fixed + (size_t)slots * c;
	size_t avail = budget > need ? budget - need : 0;
	double frac = chunks ? (double)avail / (double)chunks : 0.0;
	for (int p = 0; p < off->npools; p++) {
		dit_pool *m = off->pool[p];
		int64_t r = (int64_t)(frac * (double)m->nchunks);
		off->nram[p] = r < m->nchunks ? r : m->nchunks;
		avail -= (size_t)off->nram[p] * dit_pool_chunk_bytes(m);
	}
	for (int grew = 1; grew;) {
		grew = 0;
		for (int p = 0; p < off->npools; p++) {
			size_t b = dit_pool_chunk_bytes(off->pool[p]);
			if (off->nram[p] < off->pool[p]->nchunks && b <= avail) {
				off->nram[p]++;
				avail -= b;
				grew = 1;
			}
		}
	}
}

int dit_fit_in_ram(const dit_offload *off, int p, int64_t k)
{
	int64_t n = off->pool[p]->nchunks, r = off->nresident[p];
	if (!off->nram[p] || dit_fit_is_resident(k, r, n))
		return 0;
	int64_t j = 0, ns = 0; /* k's index among the streamed chunks, and their count */
	for (int64_t i = 0; i < n; i++) {
		if (dit_fit_is_resident(i, r, n))
			continue;
		if (i < k)
			j++;
		ns++;
	}
	return dit_fit_is_resident(j, off->nram[p] < ns ? off->nram[p] : ns, ns);
}

size_t dit_fit_ram_bytes(const dit_offload *off)
{
	size_t n = 0;
	for (int p = 0; p < off->npools; p++)
		for (int64_t k = 0; k < off->pool[p]->nchunks; k++)
			if (dit_fit_in_ram(off, p, k))
				n += dit_pool_chunk_bytes(off->pool[p]);
	return n;
}

size_t dit_fit_step_bytes(const dit_offload *off, int p, int npasses, int store_only)
{
	const dit_pool *m = off->pool[p];
	if (!dit_offload_streams(off))
		return 0;
	int64_t n = m->nchunks - off->nresident[p];
	for (int64_t k = 0; store_only && k < m->nchunks; k++)
		n -= dit_fit_in_ram(off, p, k);
	int uses = off->o.pass_major ? npasses : 1;
	return (size_t)n * dit_pool_chunk_bytes(m) * (size_t)uses;
}

dit_status dit_fit_mark(dit_offload *off, dit_error *err)
{
	for (int p = 0; p < off->npools; p++) {
		dit_pool *m = off->pool[p];
		free(off->resident[p]);
		free(off->ram[p]);
		off->resident[p] = calloc((size_t)m->nchunks, 1);
		off->ram[p] = calloc((size_t)m->nchunks, 1);
		if (!off->resident[p] || !off->ram[p])
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		for (int64_t k = 0; k < m->nchunks; k++) {
			off->resident[p][k] = dit_fit_is_resident(k, off->nresident[p], m->nchunks)
			                          ? DIT_CHUNK_RESIDENT
			                          : DIT_CHUNK_STREAMED;
			off->ram[p][k] =
			    dit_fit_in_ram(off, p, k) ? DIT_CHUNK_RESIDENT : DIT_CHUNK_STREAMED;
		}
	}
	return DIT_OK;
}

size_t dit_fit_node_memory(const dit_offload *off, int node)
{
	starpu_ssize_t total = starpu_memory_get_total((unsigned)node);
	size_t t = total > 0 ? (size_t)total : 0;
	if (off->device == DIT_DEVICE_CUDA) {
		/* what other processes hold is not ours */
		size_t f = dit_cuda_free_bytes(starpu_memory_node_get_devid((unsigned)node));
		if (f && f < t)
			t = f;
	}
	return t;
}

void dit_fit_memory(dit_offload *off, size_t total, int64_t slots)
{
	dit_fit(off, dit_fit_budget_of(total), off->fit_fixed, slots);
	off->budget_from = DIT_BUDGET_MEMORY;
	off->fit_pending = 0;
}
