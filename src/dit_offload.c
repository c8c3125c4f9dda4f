/* The offload planner (see dit_offload.h): options, memory limits, the chunk store,
 * handle registration, and the transfer tasks with their in-flight bound. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_io.h"
#include "dit_names.h"
#include "dit_planner.h"
#include "dit_rng.h"
#include "dit_store.h"
#include "dit_synth.h"

#define MIB ((size_t)1 << 20)

/* Tags of chunk use u: 0..1 the last task of each pass, 2 the prefetch, 3 the xfer
 * task, 4..5 the first task of each pass. */
enum { TAG_END = 0, TAG_PREFETCH = 2, TAG_XFER = 3, TAG_FIRST = 4, TAGS_PER_USE = 8 };

static uint64_t use_tag(const dit_offload *off, long u, int kind)
{
	return off->tag_base + TAGS_PER_USE * (uint64_t)u + (uint64_t)kind;
}

/* ------------------------------------------------------------------ options */

void dit_offload_opts_default(dit_offload_opts *o)
{
	memset(o, 0, sizeof *o);
	o->mode = DIT_OFFLOAD_NONE;
	o->chunk_size = 1;
	o->prefetch = 1;
	o->disk_ram_slots = 2;
}

static const char *const mode_names[] = {"none", "cpu", "disk"};

const char *dit_offload_mode_name(dit_offload_mode m)
{
	return dit_name_of(mode_names, 3, (int)m);
}

dit_status dit_offload_mode_parse(dit_offload_mode *out, const char *name, dit_error *err)
{
	int i = 0;
	dit_status st = dit_name_parse(&i, mode_names, 3, name, "offload mode", err);
	if (st == DIT_OK)
		*out = (dit_offload_mode)i;
	return st;
}

/* ------------------------------------------------------------------ memory limits */

/* Sets a StarPU memory limit (MiB, rounded up) unless the environment has one. */
static size_t apply_limit(const char *var, size_t bytes)
{
	const char *have = getenv(var);
	if (have && *have)
		return (size_t)strtoull(have, NULL, 10) * MIB;
	if (!bytes)
		return 0;
	char buf[32];
	size_t mib = (bytes + MIB - 1) / MIB;
	snprintf(buf, sizeof buf, "%zu", mib);
	setenv(var, buf, 1);
	return mib * MIB;
}

/* Allocation slack on top of what the buffers need: StarPU rounds allocations and
 * keeps a few buffers in its caches. */
static size_t slack(size_t bytes)
{
	return bytes / 16 + 16 * MIB;
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

dit_status dit_offload_plan(dit_offload *off, dit_model *m, const dit_offload_opts *o, int device,
                            int cuda, size_t activation_bytes, dit_error *err)
{
	memset(off, 0, sizeof *off);
	off->o = *o;
	off->m = m;
	off->device = device;
	off->activation_bytes = activation_bytes;
	off->disk_node = -1;
	off->tag_base = (uint64_t)1 << 40;

	if (o->prefetch < 0 || o->prefetch > 64)
		return dit_error_set(err, DIT_EINVAL, "--prefetch %d: must be between 0 and 64",
		                     o->prefetch);
	if (o->disk_ram_slots < 1)
		return dit_error_set(err, DIT_EINVAL, "--disk-ram-slots %d: must be at least 1",
		                     o->disk_ram_slots);
	int bf16 =
	    o->weight_dtype == DIT_WDTYPE_BF16 || (o->weight_dtype == DIT_WDTYPE_AUTO && cuda);
	dit_status st = dit_model_set_weight_bf16(m, bf16, err);
	if (st)
		return st;
	st = dit_model_set_chunks(m, o->chunk_size, err);
	if (st)
		return st;

	size_t chunk = dit_model_chunk_bytes(m), globals = dit_model_global_bytes(m);
	size_t ahead = (size_t)o->prefetch + 1;
	if (ahead > (size_t)m->nchunks)
		ahead = (size_t)m->nchunks;

	if (o->mode == DIT_OFFLOAD_DISK && ahead > (size_t)o->disk_ram_slots)
		return dit_error_set(err, DIT_EINVAL,
		                     "--prefetch %d keeps %zu chunks in host RAM, more than "
		                     "--disk-ram-slots %d",
		                     o->prefetch, ahead, o->disk_ram_slots);
	if (o->host_mem_limit && o->mode != DIT_OFFLOAD_DISK)
		return dit_error_set(err, DIT_EINVAL,
		                     "--host-mem-limit needs --offload disk (without a disk node "
		                     "StarPU cannot evict weights from host RAM)");

	/* The device holds the non-block weights, the chunks in flight and the
	 * activations. In mode none every chunk stays there. */
	if (device) {
		size_t resident = o->mode == DIT_OFFLOAD_NONE ? (size_t)m->nchunks : ahead;
		size_t need = globals + resident * chunk + activation_bytes;
		size_t least = globals + (o->mode == DIT_OFFLOAD_NONE ? need - globals
		                                                      : chunk + activation_bytes);
		size_t limit = o->device_mem_limit;
		if (limit && limit < least)
			return dit_error_set(
			    err, DIT_EINVAL,
			    "--device-mem-limit %zu MiB is below the %zu MiB this "
			    "run needs on the device (non-block weights %.1f MiB + %s "
			    "%.1f MiB + activations %.1f MiB)",
			    limit / MIB, (least + MIB - 1) / MIB, (double)globals / MIB,
			    o->mode == DIT_OFFLOAD_NONE ? "all chunks" : "one chunk",
			    (double)((o->mode == DIT_OFFLOAD_NONE ? (size_t)m->nchunks : 1) *
			             chunk) /
			        MIB,
			    (double)activation_bytes / MIB);
		if (!limit && o->mode != DIT_OFFLOAD_NONE)
			limit = need + slack(need);
		off->device_limit = apply_limit(
		    device == DIT_DEVICE_CUDA ? "STARPU_LIMIT_CUDA_MEM" : "STARPU_LIMIT_OPENCL_MEM",
		    limit);
	} else if (o->device_mem_limit) {
		return dit_error_set(err, DIT_EINVAL,
		                     "--device-mem-limit needs an accelerator (--workers cuda or "
		                     "opencl)");
	}

	/* Disk mode: host RAM holds at most disk_ram_slots chunks besides the
	 * activations (the non-block weights are host memory StarPU does not count). */
	if (o->mode == DIT_OFFLOAD_DISK) {
		size_t need = (size_t)o->disk_ram_slots * chunk + activation_bytes;
		size_t least = chunk + activation_bytes;
		size_t limit = o->host_mem_limit;
		if (limit && limit < least)
			return dit_error_set(
			    err, DIT_EINVAL,
			    "--host-mem-limit %zu MiB is below the %zu MiB this run "
			    "needs in host RAM (one chunk %.1f MiB + activations %.1f "
			    "MiB)",
			    limit / MIB, (least + MIB - 1) / MIB, (double)chunk / MIB,
			    (double)activation_bytes / MIB);
		if (!limit)
			limit = need + slack(need);
		off->host_limit = apply_limit("STARPU_LIMIT_CPU_MEM", limit);
	}
	return DIT_OK;
}

/* ------------------------------------------------------------------ chunk store */

static dit_status prepare_store(dit_offload *off, dit_error *err)
{
	dit_model *m = off->m;
	if (off->o.dir) {
		off->store = strdup(off->o.dir);
	} else {
		char *root = off->o.cache_root ? strdup(off->o.cache_root) : dit_synth_cache_root();
		char real[PATH_MAX], sub[64];
		if (!realpath(m->dir, real))
			snprintf(real, sizeof real, "%s", m->dir);
		snprintf(sub, sizeof sub, "chunks/%016llx-c%lld%s",
		         (unsigned long long)dit_rng_stream(real), (long long)m->chunk_size,
		         m->lay.bf16 ? "-bf16" : "");
		off->store = root ? dit_io_join(root, sub) : NULL;
		free(root);
	}
	if (!off->store)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	/* besides the chunks, slack for the 16 MiB file StarPU writes to calibrate the
	 * node (activations are never swapped there: see dit_graph_vector) */
	dit_store_status res;
	dit_status st = dit_store_prepare(off->store, m, 64 * MIB, &res, err);
	off->store_reused = res.reused;
	snprintf(off->store_note, sizeof off->store_note, "%s", res.reused ? "" : res.reason);
	return st;
}

dit_status dit_offload_prepare(dit_offload *off, dit_error *err)
{
	dit_status st = off->o.mode == DIT_OFFLOAD_DISK ? prepare_store(off, err)
	                                                : dit_model_read_all(off->m, err);
	if (!st)
		dit_model_close_checkpoint(off->m);
	return st;
}

/* ------------------------------------------------------------------ registration */

void dit_offload_disk_ops(struct starpu_disk_ops *ops, int o_direct)
{
	dit_diskops_plain(ops, o_direct);
}

dit_status dit_offload_io_error(dit_offload *off, dit_error *err)
{
	dit_disk_fault f;
	if (off->disk_node < 0 || dit_diskops_fault(&off->disk, &f) == 0)
		return DIT_OK;
	const char *base = strrchr(f.path, '/');
	base = base ? base + 1 : f.path;
	/* a chunk, or a scratch file StarPU swapped data to */
	const char *what =
	    strncmp(base, "chunk_", 6) == 0 ? "chunk store" : "chunk store scratch file";
	char more[64] = "";
	if (f.failures > 1)
		snprintf(more, sizeof more, ", %ld failed requests in all", f.failures);
	return dit_error_set(err, DIT_EIO,
	                     "%s error on %s %s: %s (offset %lld, %zu bytes%s); the store "
	                     "is kept but will be verified on the next run",
	                     f.write ? "write" : "read", what, f.path,
	                     f.err ? strerror(f.err) : "unexpected end of file", f.offset, f.size,
	                     more);
}

/* O_DIRECT where the filesystem takes it (tmpfs does not), else buffered I/O. */
static int o_direct_for(const char *store)
{
	char *name = dit_store_chunk_name(0), *path = name ? dit_io_join(store, name) : NULL;
	int fd = path ? open(path, O_RDONLY | O_DIRECT) : -1;
	free(name);
	free(path);
	if (fd < 0)
		return 0;
	void *buf = NULL;
	ssize_t got = -1;
	if (posix_memalign(&buf, 4096, 4096) == 0) {
		got = pread(fd, buf, 4096, 0);
		free(buf);
	}
	close(fd);
	return got == 4096;
}

dit_status dit_offload_register(dit_offload *off, uint32_t where, int compute_node, dit_error *err)
{
	dit_model *m = off->m;
	off->where = where;
	off->compute_node = compute_node;
	off->xfer_names = calloc((size_t)m->nchunks, sizeof *off->xfer_names);
	if (!off->xfer_names)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	for (int64_t k = 0; k < m->nchunks; k++) {
		char name[64];
		snprintf(name, sizeof name, "xfer blk %lld-%lld", (long long)(k * m->chunk_size),
		         (long long)((k + 1) * m->chunk_size - 1));
		off->xfer_names[k] = strdup(name);
		if (!off->xfer_names[k])
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
	}
	if (off->o.mode != DIT_OFFLOAD_DISK) {
		dit_status st = dit_model_register(m, err);
		if (st)
			return st;
		if (off->device && off->o.mode == DIT_OFFLOAD_CPU) {
			/* pinned host memory makes the host-to-device copies asynchronous */
			for (int64_t k = 0; k < m->nchunks; k++)
				starpu_memory_pin(m->chunks[k], dit_model_chunk_bytes(m));
			off->pinned = 1;
		}
		return DIT_OK;
	}

	dit_status st = dit_model_check_sizes(m, err);
	if (st)
		return st;
	size_t chunk = dit_model_chunk_bytes(m);
	/* the chunks, and slack for StarPU's 16 MiB calibration file */
	size_t size = chunk * (size_t)m->nchunks + 64 * MIB;
	dit_diskops_init(&off->disk, off->store, o_direct_for(off->store));
	int node = dit_diskops_register(&off->disk, (starpu_ssize_t)size);
	if (node < 0)
		return dit_error_set(err, DIT_ERUNTIME, "%s: StarPU cannot use it as a disk node",
		                     off->store);
	off->disk_node = node;
	m->h_chunks = calloc((size_t)m->nchunks, sizeof *m->h_chunks);
	off->disk_obj = calloc((size_t)m->nchunks, sizeof *off->disk_obj);
	if (!m->h_chunks || !off->disk_obj)
		return dit_error_set(err, DIT_ENOMEM, "out of memory registering the weights");
	dit_model_register_globals(m);
	for (int64_t k = 0; k < m->nchunks; k++) {
		char *name = dit_store_chunk_name(k);
		off->disk_obj[k] = name ? starpu_disk_open((unsigned)node, name, chunk) : NULL;
		if (!off->disk_obj[k]) {
			st = dit_error_set(err, DIT_EIO, "%s/%s: StarPU cannot open the chunk",
			                   off->store, name ? name : "?");
			free(name);
			return st;
		}
		free(name);
		starpu_vector_data_register(&m->h_chunks[k], node, (uintptr_t)off->disk_obj[k],
		                            (uint32_t)m->chunk_size,
		                            (size_t)m->block_stride * sizeof(float));
		starpu_data_set_name(m->h_chunks[k], "chunk");
		starpu_data_set_coordinates(m->h_chunks[k], 1, (int)k);
	}
	return DIT_OK;
}

void dit_offload_release(dit_offload *off)
{
	dit_model *m = off->m;
	if (!m)
		return;
	dit_model_unregister(m);
	if (off->pinned)
		for (int64_t k = 0; k < m->nchunks; k++)
			starpu_memory_unpin(m->chunks[k], dit_model_chunk_bytes(m));
	if (off->disk_obj) {
		for (int64_t k = 0; k < m->nchunks; k++)
			if (off->disk_obj[k])
				starpu_disk_close((unsigned)off->disk_node, off->disk_obj[k],
				                  dit_model_chunk_bytes(m));
		free(off->disk_obj);
	}
	for (long u = 0; u < off->uses; u++)
		for (int i = 0; i < TAGS_PER_USE; i++)
			starpu_tag_remove(use_tag(off, u, i));
	if (off->xfer_names) {
		for (int64_t k = 0; k < m->nchunks; k++)
			free(off->xfer_names[k]);
		free(off->xfer_names);
		off->xfer_names = NULL;
	}
	free(off->store);
	off->store = NULL;
	off->disk_obj = NULL;
	off->pinned = 0;
	off->uses = 0;
	/* disk stays: StarPU calls its ops until it shuts down (to free what it swapped
	 * to the disk node), so the offload object must outlive the runtime */
	off->m = NULL;
}

/* ------------------------------------------------------------------ transfers */

uint64_t dit_offload_end_tag(const dit_offload *off, int pass)
{
	return use_tag(off, off->uses, TAG_END + pass);
}

uint64_t dit_offload_first_tag(const dit_offload *off, int pass)
{
	return use_tag(off, off->uses, TAG_FIRST + pass);
}

typedef struct prefetch_req {
	starpu_data_handle_t h;
	unsigned node;
} prefetch_req;

static void prefetch_now(void *arg)
{
	prefetch_req *r = arg;
	starpu_data_prefetch_on_node(r->h, r->node, 1);
	free(r);
}

/* Whether chunks move during the run at all (else fetch submits nothing). */
static int streams(const dit_offload *off)
{
	if (off->o.mode == DIT_OFFLOAD_DISK)
		return 1;
	return off->device && off->o.mode == DIT_OFFLOAD_CPU;
}

/* Declares that tag id waits for tags deps[0..n). */
static void tag_after(uint64_t id, int n, const uint64_t *deps)
{
	starpu_tag_t t[DIT_OFFLOAD_MAX_PASSES + 1];
	for (int i = 0; i < n; i++)
		t[i] = deps[i];
	if (n > 0)
		starpu_tag_declare_deps_array(id, (unsigned)n, t);
}

dit_status dit_offload_fetch(dit_offload *off, dit_graph *g, int64_t k, int npasses, uint64_t *gate,
                             dit_error *err)
{
	dit_model *m = off->m;
	long u = off->uses;
	*gate = 0;
	/* Mode none: only an accelerator fetches, once; on the host nothing moves. */
	if (!streams(off) && (!off->device || u >= m->nchunks))
		return DIT_OK;

	/* The copy: an asynchronous prefetch to the compute node, issued once the use
	 * prefetch + 1 places earlier has finished (what bounds the chunks in flight). */
	uint64_t deps[DIT_OFFLOAD_MAX_PASSES + 1];
	long before = u - off->o.prefetch - 1;
	int n = 0;
	if (streams(off) && before >= 0)
		for (int p = 0; p < npasses; p++)
			deps[n++] = use_tag(off, before, TAG_END + p);
	prefetch_req *r = malloc(sizeof *r);
	struct starpu_task *t = starpu_task_create();
	if (!r || !t) {
		free(r);
		return dit_error_set(err, DIT_ENOMEM, "out of memory submitting a transfer");
	}
	*r = (prefetch_req){m->h_chunks[k], (unsigned)off->compute_node};
	t->cl = NULL;
	t->use_tag = 1;
	t->tag_id = use_tag(off, u, TAG_PREFETCH);
	t->callback_func = prefetch_now;
	t->callback_arg = r;
	tag_after(t->tag_id, n, deps);
	if (starpu_task_submit(t) != 0) {
		free(r);
		return dit_error_set(err, DIT_ERUNTIME, "StarPU refused a prefetch task");
	}

	/* The transfer task, just ahead of the chunk's compute: it runs once the
	 * previous chunk is done, so it does not hold a compute worker while the copy
	 * is in flight; if the copy is late it waits for it, which is the transfer time
	 * not hidden (the stats' stall). The chunk's first tasks wait for it. */
	n = 0;
	deps[n++] = use_tag(off, u, TAG_PREFETCH);
	if (u > 0)
		for (int p = 0; p < npasses; p++)
			deps[n++] = use_tag(off, u - 1, TAG_END + p);
	uint64_t xt = use_tag(off, u, TAG_XFER);
	tag_after(xt, n, deps);
	starpu_data_handle_t h[] = {m->h_chunks[k]};
	enum starpu_data_access_mode md[] = {STARPU_R};
	dit_fp fp = {{(int64_t)dit_model_chunk_bytes(m), 0, 0, 0}};
	g->next_tag = xt;
	g->next_tag_set = 1;
	g->next_priority = STARPU_MAX_PRIO;
	g->next_where = off->where;
	g->next_callback = off->on_xfer;
	g->next_callback_arg = off->on_xfer_arg;
	off->fetches++;
	*gate = xt;
	return dit_graph_insert(g, &dit_cl_xfer, off->xfer_names[k], &fp, sizeof fp, 0, 1, h, md,
	                        err);
}

void dit_offload_done(dit_offload *off, int64_t k)
{
	if (streams(off))
		starpu_data_wont_use(off->m->h_chunks[k]);
	off->uses++;
}
