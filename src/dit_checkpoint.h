/* A checkpoint directory: config.json plus either one *.safetensors file or
 * diffusion_pytorch_model.safetensors.index.json whose "weight_map" names the shard
 * holding each tensor. All shards are opened (memory-mapped) and validated up front. */
#ifndef DIT_CHECKPOINT_H
#define DIT_CHECKPOINT_H

#include "dit_error.h"
#include "dit_safetensors.h"

typedef struct dit_checkpoint {
	char *dir;
	char *config_path; /* dir/config.json */
	dit_st_file **files;
	size_t nfiles;
} dit_checkpoint;

/* Opens dir. Errors: missing config.json, no safetensors file, several *.safetensors
 * files without an index, an index that is not valid JSON or whose weight_map names a
 * missing shard, a shard that is malformed, a tensor the index places in a shard that
 * does not hold it. */
dit_status dit_checkpoint_open(dit_checkpoint **out, const char *dir, dit_error *err);
void dit_checkpoint_close(dit_checkpoint *ck);

/* Finds a tensor by its state-dict name in any shard; NULL when absent. *file (may
 * be NULL) receives the shard. */
const dit_st_tensor *dit_checkpoint_find(const dit_checkpoint *ck, const char *name,
                                         const dit_st_file **file);

#endif
