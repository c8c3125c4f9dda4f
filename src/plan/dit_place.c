/* Applying the offload plan (see dit_planner.h, which decides): every chunk handle
 * registered on the home node the plan chose (host RAM, pinned for streaming, or the
 * planner's StarPU disk node over the chunk store), and released again. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dit_io.h"
#include "dit_place.h"
#include "dit_store.h"

#define MIB ((size_t)1 << 20)

void dit_place_disk_ops(struct starpu_disk_ops *ops, int o_direct)
{
	dit_diskops_plain(ops, o_direct);
}

dit_status dit_place_io_error(dit_offload *off, dit_error *err)
{
	dit_disk_fault f;
	if (off->disk_node < 0 || dit_diskops_fault(&off->disk, &f) == 0)
		return DIT_OK;
	const char *base = strrchr(f.path, '/');
	base = base ? base + 1 : f.path;
	/* the store's blocks, a checkpoint file read in place (an extent offset never is
	 * negative), or a scratch file StarPU swapped data to */
	int store = strcmp(base, DIT_STORE_BLOCKS) == 0, inplace = 0;
	for (int p = 0; p < off->npools && !store; p++)
		for (int i = 0; off->inplace[p] && i < off->extents[p].nfiles; i++)
			inplace |= strcmp(off->extents[p].files[i], f.path) == 0;
	if (f.corrupt && inplace)
		return dit_error_set(err, DIT_EIO,
		                     "checkpoint %s changed during the run: block %lld, read where "
		                     "it lies, has XXH3 %016llx, its checksum when the run began "
		                     "%016llx; the blocks' checksums will be taken again on the "
		                     "next run",
		                     f.path, f.block, (unsigned long long)f.got,
		                     (unsigned long long)f.want);
	if (f.corrupt)
		return dit_error_set(err, DIT_EIO,
		                     "chunk store %s changed during the run: block %lld (%zu bytes "
		                     "at offset %lld) has XXH3 %016llx, the manifest says %016llx; "
		                     "the store will be rebuilt on the next run",
		                     f.path, f.block, f.size, f.offset, (unsigned long long)f.got,
		                     (unsigned long long)f.want);
	const char *what = store     ? "chunk store"
	                   : inplace ? "checkpoint"
	                             : "chunk store scratch file";
	char more[64] = "";
	if (f.failures > 1)
		snprintf(more, sizeof more, ", %ld failed requests in all", f.failures);
	return dit_error_set(err, DIT_EIO, "%s error on %s %s: %s (offset %lld, %zu bytes%s); %s",
	                     f.write ? "write" : "read", what, f.path,
	                     f.err ? strerror(f.err) : "unexpected end of file", f.offset, f.size,
	                     more,
	                     inplace ? "the run read its blocks where they lie"
	                             : "the store is kept but will be verified on the next run");
}

/* O_DIRECT where the filesystem takes it (tmpfs does not), else buffered I/O: tried on
 * the first pool's blocks file (a regular file only, opened without blocking: never a
 * FIFO left in its place); none when the first pool is read in place. */
static int o_direct_for(const dit_offload *off)
{
	if (off->inplace[0])
		return 0;
	char *dir =
	    off->npools > 1 ? dit_io_join(off->store, off->pool_dir[0]) : strdup(off->store);
	char *path = dir ? dit_io_join(dir, DIT_STORE_BLOCKS) : NULL;
	free(dir);
	struct stat sb;
	int fd = path && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode)
	             ? open(path, O_RDONLY | O_DIRECT | O_NONBLOCK | O_CLOEXEC)
	             : -1;
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

/* "xfer_blk_8-15", "xfer_high_blk_8-15" for each chunk of pool p: no spaces, which
 * Paje tools (pj_dump, ViTE, StarVZ) read as field separators. */
static dit_status name_xfers(dit_offload *off, int p, dit_error *err)
{
	dit_pool *m = off->pool[p];
	dit_xfer_pool *xp = &off->xfer.pool[p];
	xp->names = calloc((size_t)m->nchunks, sizeof *xp->names);
	xp->fetched = calloc((size_t)m->nchunks, 1);
	if (!xp->names || !xp->fetched)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	for (int64_t k = 0; k < m->nchunks; k++) {
		char name[64];
		snprintf(name, sizeof name, "xfer_%s%sblk_%lld-%lld", off->pool_label[p],
		         *off->pool_label[p] ? "_" : "", (long long)(k * m->chunk_size),
		         (long long)((k + 1) * m->chunk_size - 1));
		for (char *c = name; *c; c++)
			if (*c == ' ')
				*c = '_';
		xp->names[k] = strdup(name);
		if (!xp->names[k])
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
	}
	return DIT_OK;
}

/* Chunk k of pool p as a disk object's name: the extent of its blocks in the pool's
 * blocks file ("double/blocks.bin@1048576"), malloc'd. */
static char *chunk_object(const dit_offload *off, int p, int64_t k)
{
	const dit_pool *m = off->pool[p];
	char at[32];
	snprintf(at, sizeof at, "@%lld", (long long)k * (long long)dit_pool_chunk_bytes(m));
	const char *dir = off->pool_dir[p];
	size_t n = strlen(dir) + 1 + strlen(DIT_STORE_BLOCKS) + strlen(at) + 1;
	char *name = malloc(n);
	if (name)
		snprintf(name, n, "%s%s%s%s", dir, *dir ? "/" : "", DIT_STORE_BLOCKS, at);
	return name;
}

/* Chunk k of pool p read where its blocks lie in the checkpoint: the disk object's
 * name ("#extents:N"), malloc'd; NULL when the checkpoint's files cannot be opened. */
static char *inplace_object(dit_offload *off, int p, int64_t k)
{
	const dit_pool *m = off->pool[p];
	int n =
	    dit_diskops_add_extents(&off->disk, &off->extents[p], k * m->chunk_size, m->chunk_size);
	char *name = n >= 0 ? malloc(32) : NULL;
	if (name)
		snprintf(name, 32, "#extents:%d", n);
	return name;
}

/* Registers pool p's chunks on the disk node, each with its blocks' checksums, which
 * every read of it is checked against. */
static dit_status register_disk_pool(dit_offload *off, int p, dit_error *err)
{
	dit_pool *m = off->pool[p];
	size_t chunk = dit_pool_chunk_bytes(m);
	dit_status st = dit_model_check_sizes(m->model, err);
	if (st)
		return st;
	m->h_chunks = calloc((size_t)m->nchunks, sizeof *m->h_chunks);
	off->disk_obj[p] = calloc((size_t)m->nchunks, sizeof *off->disk_obj[p]);
	uint64_t *sums = calloc((size_t)m->nblocks, sizeof *sums);
	char *dir = *off->pool_dir[p] ? dit_io_join(off->store, off->pool_dir[p]) : NULL;
	if (!m->h_chunks || !off->disk_obj[p] || !sums || (*off->pool_dir[p] && !dir))
		st = dit_error_set(err, DIT_ENOMEM, "out of memory registering the weights");
	/* the manifest cannot change meanwhile: this run holds the store's lock */
	if (!st)
		st = off->inplace[p] ? dit_store_inplace_sums(dir ? dir : off->store, m, sums, err)
		                     : dit_store_block_sums(dir ? dir : off->store, m, sums, err);
	free(dir);
	if (st) {
		free(sums);
		return st;
	}
	if (m->index == 0) /* the expert's globals, once */
		dit_model_register_globals(m->model);
	for (int64_t k = 0; k < m->nchunks; k++) {
		char *name = off->inplace[p] ? inplace_object(off, p, k) : chunk_object(off, p, k);
		off->disk_obj[p][k] =
		    name ? starpu_disk_open((unsigned)off->disk_node, name, chunk) : NULL;
		if (!off->disk_obj[p][k])
			st = dit_error_set(err, DIT_EIO, "%s/%s: StarPU cannot open the chunk",
			                   off->store, name ? name : "?");
		else if (dit_diskops_expect(&off->disk, off->disk_obj[p][k], chunk,
		                            sums + k * m->chunk_size, (size_t)m->chunk_size,
		                            (long long)(k * m->chunk_size)) != 0)
			st =
			    dit_error_set(err, DIT_ENOMEM, "out of memory registering the weights");
		free(name);
		if (st) {
			free(sums);
			return st;
		}
		starpu_vector_data_register(&m->h_chunks[k], off->disk_node,
		                            (uintptr_t)off->disk_obj[p][k], (uint32_t)m->chunk_size,
		                            (size_t)m->block_stride * sizeof(float));
		starpu_data_set_coordinates(m->h_chunks[k], 2, (int)k, p);
	}
	free(sums);
	return DIT_OK;
}

/* The graph's view of the plan (tasks/dit_xfer.h): each pool's chunk handles and
 * the decisions on them. Once the chunks are registered. */
static void xfer_view(dit_offload *off)
{
	dit_xfer *x = &off->xfer;
	x->npools = off->npools;
	for (int p = 0; p < off->npools; p++) {
		dit_xfer_pool *xp = &x->pool[p];
		const dit_pool *m = off->pool[p];
		xp->id = m;
		xp->nchunks = m->nchunks;
		xp->chunk_bytes = dit_pool_chunk_bytes(m);
		xp->h = m->h_chunks;
		xp->resident = off->resident[p];
		xp->ram = off->ram[p];
		xp->nresident = off->nresident[p];
	}
	x->streams = dit_offload_streams(off);
	/* chunks that stay: brought once from host RAM to a device or from the store to
	 * RAM, never when the host computes where they are */
	x->fetch_once = off->device || off->o.mode == DIT_OFFLOAD_DISK;
	x->evict_ram = off->device && off->o.mode == DIT_OFFLOAD_DISK;
	x->prefetch = off->o.prefetch;
	x->compute_node = off->compute_node;
	x->where = off->where;
	x->tag_base = (uint64_t)1 << 40;
}

static dit_status register_chunks(dit_offload *off, dit_error *err);

/* Each chunk's handle named as its transfer is, without "xfer_" ("blk_8-15",
 * "high_blk_8-15"): the name traces give its data (StarPU copies it into the trace). */
static void name_chunks(const dit_offload *off)
{
	for (int p = 0; p < off->npools; p++)
		for (int64_t k = 0; k < off->pool[p]->nchunks; k++)
			if (off->pool[p]->h_chunks && off->pool[p]->h_chunks[k])
				starpu_data_set_name(off->pool[p]->h_chunks[k],
				                     off->xfer.pool[p].names[k] + strlen("xfer_"));
}

dit_status dit_place_register(dit_offload *off, uint32_t where, int compute_node, dit_error *err)
{
	off->where = where;
	off->compute_node = compute_node;
	dit_status st = register_chunks(off, err);
	if (!st) {
		name_chunks(off);
		xfer_view(off);
	}
	return st;
}

/* Keep what fits on the node's memory, the transfers' names, the chunks registered
 * where they live (host RAM, or the disk node and its store). */
static dit_status register_chunks(dit_offload *off, dit_error *err)
{
	dit_status st = DIT_OK;
	int compute_node = off->compute_node;
	if (off->fit_pending) {
		/* the device's memory as StarPU counts it, less the margin */
		dit_fit_memory(off, dit_fit_node_memory(off, compute_node), off->o.prefetch + 1);
	}
	if ((st = dit_fit_mark(off, err)) != DIT_OK)
		return st;
	for (int p = 0; p < off->npools && !st; p++)
		st = name_xfers(off, p, err);
	if (st)
		return st;
	if (off->o.mode != DIT_OFFLOAD_DISK) {
		for (int e = 0; e < off->nexperts; e++)
			if ((st = dit_model_register(off->expert[e], err)) != DIT_OK)
				return st;
		if (off->device && off->o.mode == DIT_OFFLOAD_CPU) {
			/* pinned host memory makes the host-to-device copies asynchronous */
			for (int p = 0; p < off->npools; p++)
				for (int64_t k = 0; k < off->pool[p]->nchunks; k++)
					starpu_memory_pin(off->pool[p]->chunks[k],
					                  dit_pool_chunk_bytes(off->pool[p]));
			off->pinned = 1;
		}
		return DIT_OK;
	}

	/* the chunks, and slack for StarPU's 16 MiB calibration file */
	size_t size = dit_offload_chunk_bytes(off) + 64 * MIB;
	dit_diskops_init(&off->disk, off->store, o_direct_for(off), off->disk_reads);
	int node = dit_diskops_register(&off->disk, (starpu_ssize_t)size);
	if (node < 0)
		return dit_error_set(err, DIT_ERUNTIME, "%s: StarPU cannot use it as a disk node",
		                     off->store);
	off->disk_node = node;
	for (int p = 0; p < off->npools && !st; p++)
		st = register_disk_pool(off, p, err);
	return st;
}

void dit_place_release(dit_offload *off)
{
	if (!off->npools) {
		dit_store_unlock(&off->lock);
		return;
	}
	/* the pinned resident chunks let go (an acquisition asked for is granted at once:
	 * the chunk is there and nothing writes it) */
	for (int p = 0; p < off->npools; p++)
		for (int64_t k = 0; off->resident[p] && k < off->pool[p]->nchunks; k++) {
			unsigned char *r = &off->resident[p][k];
			while (__atomic_load_n(r, __ATOMIC_ACQUIRE) == DIT_CHUNK_PIN_ASKED)
				sched_yield();
			if (*r == DIT_CHUNK_PINNED)
				starpu_data_release_on_node(off->pool[p]->h_chunks[k],
				                            off->compute_node);
			*r = DIT_CHUNK_RESIDENT;
			unsigned char *h = off->ram[p] ? &off->ram[p][k] : NULL;
			while (h && __atomic_load_n(h, __ATOMIC_ACQUIRE) == DIT_CHUNK_PIN_ASKED)
				sched_yield();
			if (h && *h == DIT_CHUNK_PINNED)
				starpu_data_release_on_node(off->pool[p]->h_chunks[k],
				                            STARPU_MAIN_RAM);
			if (h)
				*h = DIT_CHUNK_RESIDENT;
		}
	for (int e = 0; e < off->nexperts; e++)
		dit_model_unregister(off->expert[e]);
	for (int p = 0; p < off->npools; p++) {
		dit_pool *m = off->pool[p];
		if (off->pinned)
			for (int64_t k = 0; k < m->nchunks; k++)
				starpu_memory_unpin(m->chunks[k], dit_pool_chunk_bytes(m));
		if (off->disk_obj[p]) {
			for (int64_t k = 0; k < m->nchunks; k++)
				if (off->disk_obj[p][k])
					starpu_disk_close((unsigned)off->disk_node,
					                  off->disk_obj[p][k],
					                  dit_pool_chunk_bytes(m));
			free(off->disk_obj[p]);
			off->disk_obj[p] = NULL;
		}
		dit_xfer_pool *xp = &off->xfer.pool[p];
		if (xp->names) {
			for (int64_t k = 0; k < m->nchunks; k++)
				free(xp->names[k]);
			free(xp->names);
		}
		free(xp->fetched);
		*xp = (dit_xfer_pool){0};
		free(off->resident[p]);
		off->resident[p] = NULL;
		free(off->ram[p]);
		off->ram[p] = NULL;
	}
	dit_xfer_forget(&off->xfer);
	off->xfer.npools = 0;
	free(off->store);
	off->store = NULL;
	off->pinned = 0;
	/* disk stays: StarPU calls its ops until it shuts down (to free what it swapped
	 * to the disk node), so the offload object must outlive the runtime; the chunks
	 * read in place are closed, their extents go */
	if (off->disk_node >= 0)
		dit_diskops_forget(&off->disk);
	dit_offload_sources_free(off);
	off->npools = 0;
	/* every read of the store is done: other runs may rewrite it */
	dit_store_unlock(&off->lock);
}

void dit_place_graph_weights(const dit_weights *w, dit_graph_weights *out)
{
	memset(out, 0, sizeof *out);
	out->desc = w->desc;
	out->nexperts = w->nexperts;
	for (int e = 0; e < w->nexperts; e++) {
		const dit_model *m = w->expert[e];
		dit_graph_expert *x = &out->expert[e];
		x->cfg = m->cfg;
		x->glob = m->glob;
		x->h_globals = m->h_globals;
		x->npools = m->npools;
		for (int i = 0; i < m->npools; i++) {
			const dit_pool *pl = &m->pool[i];
			x->pool[i] = (dit_graph_pool){.d = pl->d,
			                              .id = pl,
			                              .lay = pl->lay,
			                              .nblocks = pl->nblocks,
			                              .chunk_size = pl->chunk_size,
			                              .nchunks = pl->nchunks,
			                              .block_stride = pl->block_stride,
			                              .h_chunks = pl->h_chunks};
		}
	}
}
