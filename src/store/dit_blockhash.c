/* The chunk store's block checksums (see dit_blockhash.h). */
#include "dit_blockhash.h"

#define XXH_STATIC_LINKING_ONLY /* a hash state on the stack */
#include <xxhash.h>

uint64_t dit_block_hash_of(const uint64_t *pieces, size_t n)
{
	return XXH3_64bits(pieces, n * sizeof *pieces);
}

uint64_t dit_block_hash(const void *p, size_t n)
{
	/* the pieces' hashes streamed: the same as hashing their array at once */
	XXH3_state_t st;
	XXH3_INITSTATE(&st);
	XXH3_64bits_reset(&st);
	for (size_t i = 0; i < dit_block_pieces(n); i++) {
		size_t at = i * DIT_HASH_PIECE;
		uint64_t h = XXH3_64bits((const char *)p + at,
		                         n - at < DIT_HASH_PIECE ? n - at : DIT_HASH_PIECE);
		XXH3_64bits_update(&st, &h, sizeof h);
	}
	return XXH3_64bits_digest(&st);
}
