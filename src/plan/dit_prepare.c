/* Disk mode's preparation (see dit_offload_prepare in dit_planner.h): where each pool's
 * blocks are read from, the checkpoint's files where they lie or the chunk store, and
 * the store's folder made ready for it (the checksums of blocks read in place, or the
 * store written or checked); other modes read the weights into host chunks. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dit_io.h"
#include "dit_planner.h"
#include "dit_rng.h"
#include "dit_store.h"
#include "dit_synth.h"

#define MIB ((size_t)1 << 20)

dit_status dit_offload_sources(dit_offload *off, dit_error *err)
{
	if (off->sources_known)
		return DIT_OK;
	for (int p = 0; p < off->npools; p++) {
		char *why = off->source_why[p];
		size_t cap = sizeof off->source_why[p];
		off->inplace[p] = 0;
		if (off->o.disk_source == DIT_DISK_SOURCE_STORE) {
			snprintf(why, cap, "--disk-source store");
			continue;
		}
		if (!off->pool[p]->model->ck) {
			snprintf(why, cap,
			         "the plan does not open the checkpoint: a run reads it "
			         "where it lies when it can");
			continue;
		}
		dit_status st = dit_pool_extents(off->pool[p], &off->extents[p], why, cap, err);
		if (st == DIT_OK) {
			off->inplace[p] = 1;
			*why = 0;
		} else if (st != DIT_EUNSUPPORTED) {
			dit_offload_sources_free(off);
			return st;
		} else if (off->o.disk_source == DIT_DISK_SOURCE_CHECKPOINT) {
			dit_status e = dit_error_set(
			    err, DIT_EUSAGE,
			    "--disk-source checkpoint: %s cannot be read where %s: %s",
			    *off->pool_label[p] ? off->pool_label[p] : "the checkpoint",
			    *off->pool_label[p] ? "its blocks lie" : "its blocks lie", why);
			dit_offload_sources_free(off);
			return e;
		}
	}
	off->sources_known = 1;
	return DIT_OK;
}

void dit_offload_sources_free(dit_offload *off)
{
	for (int p = 0; p < off->npools; p++)
		dit_extents_free(&off->extents[p]);
	off->sources_known = 0;
}

/* Whether the store (its first pool's folder) has a manifest, or the checksums of
 * blocks read in place: written before. */
static int store_has_manifest(const dit_offload *off)
{
	char *dir = off->npools > 1 ? dit_io_join(off->store, off->pool_dir[0]) : NULL;
	char *m =
	    dit_io_join(dir ? dir : off->store, off->inplace[0] ? "inplace.json" : "manifest.json");
	struct stat sb;
	int has = m && stat(m, &sb) == 0;
	free(m);
	free(dir);
	return has;
}

/* The stores of this checkpoint the cache removed, said after why the store was
 * written (the stats' store note). */
static void store_note_reaped(dit_offload *off, int n, size_t bytes)
{
	size_t k = strlen(off->store_note);
	snprintf(off->store_note + k, sizeof off->store_note - k,
	         "%sremoved %d other store%s of this checkpoint from the cache (%.3f GB)",
	         k ? "; " : "", n, n > 1 ? "s" : "", (double)bytes / 1e9);
}

/* The store: one folder, or with several pools one sub-folder per pool (the experts'
 * folder names), each a dit_store. */
static dit_status prepare_store(dit_offload *off, dit_error *err)
{
	const dit_model *m = off->expert[0];
	const dit_pool *p0 = off->pool[0];
	if (off->o.dir) {
		off->store = strdup(off->o.dir);
	} else {
		char *root = off->o.cache_root ? strdup(off->o.cache_root) : dit_synth_cache_root();
		char real[PATH_MAX], sub[96], tag[48];
		if (!realpath(m->dir, real))
			snprintf(real, sizeof real, "%s", m->dir);
		/* the matrices' dtypes name the store too: "-bf16", "-f8_e4m3+f32"; none for
		 * fp32 */
		dit_layout_tag(&p0->lay, p0->d->tensors, tag, sizeof tag);
		snprintf(sub, sizeof sub, "chunks/%016llx%s%s",
		         (unsigned long long)dit_rng_stream(real), strcmp(tag, "f32") ? "-" : "",
		         strcmp(tag, "f32") ? tag : "");
		off->store = root ? dit_io_join(root, sub) : NULL;
		free(root);
	}
	if (!off->store)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	off->store_reused = 1;
	/* how long to wait for another run using the store (unset: as long as it takes) */
	double wait_s = -1;
	const char *w = getenv("DITSTAR_STORE_WAIT");
	if (w && *w) {
		char *end;
		wait_s = strtod(w, &end);
		if (*end || !isfinite(wait_s) || wait_s < 0)
			return dit_error_set(err, DIT_EINVAL,
			                     "DITSTAR_STORE_WAIT=%s: must be a number of seconds",
			                     w);
	}
	off->disk_reads = dit_diskops_reads_env();
	if (off->disk_reads < 0)
		return dit_error_set(err, DIT_EINVAL,
		                     "DITSTAR_DISK_READS=%s: must be a number of reads in flight "
		                     "from 1 to %d",
		                     getenv("DITSTAR_DISK_READS"), DIT_DISK_READS_MAX);
	/* held until dit_place_release: no other run rewrites the store meanwhile */
	dit_status st = dit_store_lock_begin(&off->lock, off->store, !off->o.dir, wait_s, err);
	if (st)
		return st;
	/* one store per checkpoint and dtype in the cache, for every chunk size: a new one
	 * (no manifest yet) takes the room of an older version's per chunk size, before its
	 * space is counted */
	size_t reaped_bytes = 0;
	int reaped = -1;
	if (!off->o.dir && !store_has_manifest(off))
		reaped = dit_store_reap_siblings(off->store, &reaped_bytes);
	for (int p = 0; p < off->npools && !st; p++) {
		char *dir = off->npools > 1 ? dit_io_join(off->store, off->pool_dir[p])
		                            : strdup(off->store);
		/* besides the chunks, slack for the 16 MiB file StarPU writes to calibrate
		 * the node (activations are never swapped there: see dit_graph_vector) */
		dit_store_status res = {.progress = &off->progress};
		if (!dir)
			st = dit_error_set(err, DIT_ENOMEM, "out of memory");
		else if (off->inplace[p])
			st = dit_store_prepare_inplace(dir, off->pool[p], &off->lock, &res, err);
		else
			st = dit_store_prepare(dir, off->pool[p], p == 0 ? 64 * MIB : 0, &off->lock,
			                       &res, err);
		free(dir);
		if (st)
			break;
		off->seq_read_bytes += res.seq_bytes;
		off->seq_read_ns += res.seq_ns;
		if (!res.reused && off->store_reused) {
			off->store_reused = 0;
			size_t k = 0;
			if (*off->pool_label[p])
				k = (size_t)snprintf(
				    off->store_note, sizeof off->store_note,
				    "%s%s: ", off->pool_label[p],
				    off->nexperts > 1 && off->pool[p]->model->npools < 2 ? " expert"
				                                                         : "");
			memcpy(off->store_note + k, res.reason,
			       strnlen(res.reason, sizeof off->store_note - k - 1));
			off->store_note[k + strnlen(res.reason, sizeof off->store_note - k - 1)] =
			    0;
		}
	}
	if (!st && !off->o.dir && !off->store_reused && reaped < 0)
		reaped = dit_store_reap_siblings(off->store, &reaped_bytes);
	if (reaped > 0)
		store_note_reaped(off, reaped, reaped_bytes);
	if (!st)
		st = dit_store_lock_end_prepare(&off->lock, err);
	if (st)
		dit_store_unlock(&off->lock);
	return st;
}

dit_status dit_offload_prepare(dit_offload *off, dit_error *err)
{
	dit_status st = DIT_OK;
	if (off->o.mode == DIT_OFFLOAD_DISK)
		st = dit_offload_sources(off, err);
	if (!st && off->o.mode == DIT_OFFLOAD_DISK)
		st = prepare_store(off, err);
	for (int e = 0; e < off->nexperts && !st; e++)
		if (off->o.mode != DIT_OFFLOAD_DISK) {
			off->expert[e]->progress = &off->progress;
			st = dit_model_read_all(off->expert[e], err);
			off->expert[e]->progress = NULL;
		}
	if (!st)
		for (int e = 0; e < off->nexperts; e++)
			dit_model_close_checkpoint(off->expert[e]);
	return st;
}
