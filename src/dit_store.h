/* The disk chunk store of --offload disk: one file per chunk (chunk_0000.bin, ...,
 * the chunk's blocks as the weight store lays them out) and manifest.json, which ties
 * the store to the checkpoint it was made from (its files' paths, sizes and
 * modification times, and the chunk geometry) and holds each chunk's size and XXH3-64
 * checksum. Chunks are written through temporary files renamed into place and the
 * manifest last, so an interrupted write never leaves a store that looks complete.
 * Before a store is used, every chunk is checked against the manifest (size and
 * checksum): a stale, truncated or corrupted store is rebuilt, never used. */
#ifndef DIT_STORE_H
#define DIT_STORE_H

#include <stddef.h>

#include "dit_error.h"
#include "dit_weights.h"

typedef struct dit_store_status {
	int reused;       /* the store was complete and intact */
	char reason[512]; /* why it was (re)written, when it was */
} dit_store_status;

/* Makes dir hold the store of pool m's current chunking (its checkpoint must be open):
 * verifies an existing one, else writes it, after checking that the file system
 * has room for it plus extra_bytes (what StarPU writes there besides the chunks). */
dit_status dit_store_prepare(const char *dir, const dit_pool *m, size_t extra_bytes,
                             dit_store_status *res, dit_error *err);

/* Name of chunk k's file ("chunk_0003.bin"), malloc'd. */
char *dit_store_chunk_name(int64_t k);

#endif
