/* What the checkpoint loader (dit_checkpoint.c) and its choice of a PyTorch checkpoint
 * (dit_ck_pt.c) share (private). File names are those of the checkpoint folder: in the
 * directory, or in the archive's folder. */
#ifndef DIT_CK_PRIV_H
#define DIT_CK_PRIV_H

#include "dit_checkpoint.h"

/* The regular files named *suffix, unsorted (the caller frees them: dit_ck_names_free). */
dit_status dit_ck_list(dit_checkpoint *ck, const char *suffix, char ***names, size_t *n,
                       dit_error *err);
void dit_ck_names_free(char **names, size_t n);

/* Whether the file name is there (an archive member, or anything but a directory). */
int dit_ck_exists(const dit_checkpoint *ck, const char *name);

/* Loads names[0..n) of an archive that is not read in place (a no-op otherwise); those
 * absent are left for dit_ck_add to report. */
dit_status dit_ck_load(dit_checkpoint *ck, char *const *names, size_t n, dit_error *err);

/* Opens the file name (pt 1: a PyTorch checkpoint read with load_key; 2: a GGUF file;
 * else safetensors; in an archive from its member, in memory or in place) and appends it to
 * ck->files. */
dit_status dit_ck_add(dit_checkpoint *ck, const char *name, int pt, const char *load_key,
                      dit_error *err);

/* How messages name the file name: dir/name, or archive:member (malloc'd, raw). */
char *dit_ck_label(const dit_checkpoint *ck, const char *name);

/* Without safetensors files: the one *.pt (not *_map.pt) and its <stem>_map.pt, or
 * (a folder or archive without *.pt) its one *.gguf. */
dit_status dit_ck_open_pt(dit_checkpoint *ck, const char *load_key, dit_error *err);

/* Whether path names a one-file checkpoint (*.safetensors, *.gguf). */
int dit_ck_is_file(const char *path);

/* ck->dir is a .safetensors file: its tensors, and the "transformer" object of its
 * header's "config" as the config text (dit_ck_file.c). */
dit_status dit_ck_open_file(dit_checkpoint *ck, dit_error *err);

#endif
