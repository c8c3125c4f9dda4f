/* Where a pool's blocks lie in the checkpoint's files, for --offload disk to read them
 * there instead of from a chunk store: per block the extents that, written at their
 * offsets of a zeroed block, give the bytes dit_pool_read_block gives (the layout's
 * slots). A tensor is an extent of its file when it is stored whole (not joined from
 * several, no LoRA merged into it) in a file read through a descriptor (not an archive
 * member or an image in memory), in the slot's dtype or, for an fp32 slot, in bf16 or
 * fp16, which the reads widen exactly; an fp8 tensor's scale is a constant after it. */
#ifndef DIT_EXTENT_H
#define DIT_EXTENT_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"
#include "dit_weights.h"

enum {
	DIT_EXT_COPY,     /* bytes bytes of the file as they are */
	DIT_EXT_BF16_F32, /* bytes / 2 bytes of bf16 in the file, widened to fp32 */
	DIT_EXT_F16_F32,  /* bytes / 2 bytes of fp16 in the file, widened to fp32 */
	DIT_EXT_CONST     /* the 4 bytes of value (an fp8 tensor's scale) */
};

typedef struct dit_extent {
	int file;       /* in the list's files */
	int op;         /* DIT_EXT_* */
	uint64_t src;   /* byte offset in the file */
	uint64_t dst;   /* byte offset in the block */
	uint64_t bytes; /* bytes written at dst */
	uint32_t value; /* DIT_EXT_CONST */
} dit_extent;

typedef struct dit_extents {
	char **files; /* the checkpoint files the extents read */
	int nfiles;
	dit_extent *e;  /* block by block, each block's by dst */
	int64_t *first; /* nblocks + 1: block b's are e[first[b]] to e[first[b + 1] - 1] */
	int64_t nblocks;
	size_t block_bytes; /* a block's stride in bytes (its padding stays zero) */
	size_t n, cap;
} dit_extents;

/* The extents of every block of pool pl (its checkpoint open, its layout set): DIT_OK,
 * or DIT_EUNSUPPORTED with why saying which tensor cannot be read where it lies and
 * why (then x holds nothing). */
dit_status dit_pool_extents(const dit_pool *pl, dit_extents *x, char *why, size_t cap,
                            dit_error *err);

void dit_extents_free(dit_extents *x);

#endif
