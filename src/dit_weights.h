/* The weight store: a loaded model's weights, converted to the compute dtype (fp32)
 * and packed into one contiguous slab per block (every tensor of blocks.N at the
 * offsets of dit_wan_layout) plus one slab of the non-block weights. Each slab becomes
 * one StarPU data handle, so that a block's weights move between memory nodes as one
 * piece and each block task names the handle it reads. */
#ifndef DIT_WEIGHTS_H
#define DIT_WEIGHTS_H

#include <starpu.h>

#include "dit_error.h"
#include "dit_wan.h"

typedef struct dit_model {
	char *dir;
	dit_wan_config cfg;
	dit_wan_layout lay;
	float *globals; /* [lay.global_size] */
	float **blocks; /* num_layers slabs of [lay.block_size] */
	starpu_data_handle_t h_globals;
	starpu_data_handle_t *h_blocks; /* NULL until registered */
} dit_model;

/* Opens the checkpoint directory, reads config.json, checks that every tensor the
 * config implies is present with the right shape, and fills the slabs. Errors name
 * the file and the tensor. StarPU need not be running. */
dit_status dit_model_load(dit_model **out, const char *dir, dit_error *err);

/* Registers the slabs with StarPU (the runtime must be started). */
dit_status dit_model_register(dit_model *m, dit_error *err);

/* Unregisters (if registered) and frees. */
void dit_model_free(dit_model *m);

/* Bytes of one block slab and of the globals slab. */
size_t dit_model_block_bytes(const dit_model *m);
size_t dit_model_global_bytes(const dit_model *m);

#endif
