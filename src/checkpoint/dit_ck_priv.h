/* What the checkpoint loader (dit_checkpoint.c) and its choice of a PyTorch checkpoint
 * (dit_ck_pt.c) share (private). File names are those of the checkpoint folder: in the
 * directory, or in the archive's folder. */
#ifndef DIT_CK_PRIV_H
#define DIT_CK_PRIV_H

#include "dit_archive.h"
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

/* The names a checkpoint folder's files go by, and the limits of what is read. */
#define CK_CONFIG    "config.json"
#define CK_INDEX     "diffusion_pytorch_model.safetensors.index.json"
#define CK_INDEX_TF  "model.safetensors.index.json" /* transformers' name */
#define CK_PREFERRED "diffusion_pytorch_model.safetensors"
#define CK_SUFFIX    ".safetensors"
#define CK_MAX_INDEX DIT_CHECKPOINT_MAX_INDEX
/* The same byte cap for config.json read from an archive; a shard may reach 1 TiB. */
#define CK_MAX_JSON  ((uint64_t)CK_MAX_INDEX)
#define CK_MAX_SHARD DIT_ARCHIVE_MAX_MEMBER
#define CK_QUOTE_MAX 120

/* Shared by the opening of a checkpoint (dit_checkpoint.c) and the search of its
 * folder, archive or directory (dit_ck_find.c): s for an error message: one line, long names cut
 * (see dit_error_quote). */
const char *dit_ck_quote(char *buf, size_t cap, const char *s);

/* Whether path is a readable regular file: DIT_OK, DIT_ENOTFOUND when nothing is there
 * (no message), else the error naming the path and what it is (a FIFO, a directory,
 * ...), checked by opening it without blocking. */
dit_status dit_ck_check_file(const char *path, dit_error *err);

/* The archive member holding the checkpoint's file name; NULL when absent. */
const dit_archive_member *dit_ck_member(const dit_checkpoint *ck, const char *name);

int dit_ck_has_suffix(const char *name, const char *suffix);

/* The error of a checkpoint without config.json that cannot do without one. */
dit_status dit_ck_config_missing(const dit_checkpoint *ck, dit_error *err);

/* Reads the archive at ck->dir; sets the config (unless missing) and, when present, the
 * index's name and label. */
dit_status dit_ck_open_archive(dit_checkpoint *ck, const char **iname, char **index,
                               dit_error *err);

/* Checks config.json in the directory ck->dir (ck->config_missing when absent); sets
 * the index's name and path when present. */
dit_status dit_ck_open_dir(dit_checkpoint *ck, const char **iname, char **index, dit_error *err);

/* Whether the checkpoint folder holds any *.safetensors or *.pt file (or, in an
 * archive, *.gguf: a directory's GGUF needs its config.json). */
dit_status dit_ck_has_weights(dit_checkpoint *ck, int *has, dit_error *err);

#endif
