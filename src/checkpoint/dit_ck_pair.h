/* A two-expert model given as two one-file checkpoints without config.json, as ComfyUI
 * distributes Wan2.2 A14B (wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors beside
 * wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors, or the GGUF pair): a folder holding
 * exactly the two files, whose names say which expert each is (high_noise, highnoise or
 * high-noise, and low_..., in any case), or the two files named "HIGH,LOW". Each file is
 * then opened as a one-file checkpoint (dit_ck_file.c) whose config its family reads
 * from the shapes (models/wan_shapes.c), as the expert of the model (dit_weights.c). */
#ifndef DIT_CK_PAIR_H
#define DIT_CK_PAIR_H

#include "dit_error.h"

/* The noise level a file name says: 1 high, 2 low, 3 both, 0 neither. */
int dit_ck_pair_level(const char *name);

/* Whether model_dir is such a pair: paths[0] the high-noise expert's file, paths[1] the
 * low-noise one's (malloc'd), or both NULL when model_dir is no pair (a folder of no
 * file naming a noise level, with config.json, or anything else: opened as before).
 * Refused, naming the folder and the files: a folder whose weight files name a noise
 * level but are not two (one alone: the other expert is needed), two whose names do
 * not tell high from low; "A,B" whose order contradicts the names. */
dit_status dit_ck_pair_find(const char *model_dir, char *paths[2], dit_error *err);

#endif
