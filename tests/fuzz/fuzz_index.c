/* libFuzzer target: diffusion_pytorch_model.safetensors.index.json text parsed in
 * memory by the parser dit_checkpoint_open uses, then the result checked. */
#include "dit_checkpoint.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz/diffusion_pytorch_model.safetensors.index.json"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dit_error e;
	dit_error_clear(&e);
	dit_checkpoint_index idx;
	dit_status st = dit_checkpoint_parse_index(NAME, (const char *)data, size, &idx, &e);
	if (st != DIT_OK) {
		/* a failure reports itself, names the index and leaves nothing behind */
		if (e.code != st || !strstr(e.msg, NAME) || idx.shards || idx.tensors ||
		    idx.shard_of || idx.nshards || idx.ntensors)
			abort();
		return 0;
	}
	if (idx.nshards == 0 || idx.ntensors == 0 || idx.nshards > idx.ntensors)
		abort();
	for (size_t i = 0; i < idx.nshards; i++) {
		const char *s = idx.shards[i];
		/* plain names only: what the checkpoint joins to its directory */
		if (!s[0] || strchr(s, '/') || strstr(s, "..") || strcmp(s, ".") == 0)
			abort();
		if (i > 0 && strcmp(idx.shards[i - 1], s) >= 0)
			abort();
	}
	for (size_t k = 0; k < idx.ntensors; k++) {
		if (idx.shard_of[k] >= idx.nshards || !idx.tensors[k])
			abort();
	}
	/* every shard holds at least one tensor */
	for (size_t i = 0; i < idx.nshards; i++) {
		size_t k = 0;
		while (k < idx.ntensors && idx.shard_of[k] != i)
			k++;
		if (k == idx.ntensors)
			abort();
	}
	dit_checkpoint_index_free(&idx);
	if (idx.shards || idx.ntensors)
		abort();
	return 0;
}
