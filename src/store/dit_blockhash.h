/* A block's checksum in the chunk store: the XXH3-64 of the XXH3-64s of its pieces,
 * DIT_HASH_PIECE bytes each from the block's start (the last one shorter), in the
 * host's byte order. Pieces can so be read and hashed apart, in any order, by several
 * threads (the disk ops' reads in flight), each while it is in the core's cache. */
#ifndef DIT_BLOCKHASH_H
#define DIT_BLOCKHASH_H

#include <stddef.h>
#include <stdint.h>

#define DIT_HASH_PIECE ((size_t)4 << 20)

/* The pieces of a block of n bytes (at least one). */
static inline size_t dit_block_pieces(size_t n)
{
	return n ? (n + DIT_HASH_PIECE - 1) / DIT_HASH_PIECE : 1;
}

/* The checksum of a block from its pieces' XXH3-64s (n of them). */
uint64_t dit_block_hash_of(const uint64_t *pieces, size_t n);

/* The checksum of the block of n bytes at p. */
uint64_t dit_block_hash(const void *p, size_t n);

#endif
