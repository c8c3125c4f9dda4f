/* A checkpoint directory: config.json plus either one *.safetensors file, a shard index
 * (diffusion_pytorch_model.safetensors.index.json, or transformers'
 * model.safetensors.index.json; both there is an error) whose "weight_map" names the
 * shard holding each tensor, or (without either) one PyTorch checkpoint *.pt
 * (dit_pt.h): the one *.pt that is not a *_map.pt, with the fp8 scales of
 * <stem>_map.pt when that file is there. All shards are opened and validated up front.
 * config.json may be missing (the official HunyuanVideo release ships its .pt alone):
 * the weights are opened all the same, config_missing is set, and the model layer
 * decides (dit_release.h).
 *
 * The same layout may come as a .tar, .tar.gz, .tar.zst or .zip archive, at its top or
 * in one top-level folder (the folder of config.json, or without one the folder of the
 * weight files), read without extracting (see dit_archive.h): the shards of an
 * uncompressed tar are mapped in place, those of a compressed tar or zip are
 * decompressed into memory. */
#ifndef DIT_CHECKPOINT_H
#define DIT_CHECKPOINT_H

#include "dit_error.h"
#include "dit_safetensors.h"
#include "dit_config.h"

struct dit_archive;

typedef struct dit_checkpoint {
	char *dir;         /* the directory, or the archive file */
	char *config_path; /* dir/config.json; for an archive "ARCHIVE:member", a name for
	                      messages only: load the config with dit_checkpoint_load_config */
	char *config_text; /* config.json as read from an archive (NUL-terminated), else NULL */
	size_t config_len;
	int config_missing;          /* no config.json: config_path names where it would be, and
	                                dit_checkpoint_load_config reports it missing */
	struct dit_archive *archive; /* NULL for a directory */
	char *archive_root;          /* the archive's checkpoint folder ("" at its top) */
	char *load_key;              /* the .pt's state dict was under this key; else NULL */
	int one_file;        /* dir is one weights file (.safetensors, .gguf): the config from its
	                        header, a config.json beside it, or (config_missing) a family's
	                        reading of the tensor shapes (dit_ck_file.c) */
	dit_st_file **files; /* f->path is "ARCHIVE:member" for an archive */
	size_t nfiles;
} dit_checkpoint;

/* Opens dir, a directory or an archive file. Errors: neither config.json nor weights
 * (reported as config.json missing), no safetensors file, several *.safetensors files
 * without an index, both index names, an index that is not valid JSON or whose
 * weight_map names a missing shard, a shard that is malformed, a tensor the index places
 * in a shard that does not hold it. */
dit_status dit_checkpoint_open(dit_checkpoint **out, const char *dir, dit_error *err);
void dit_checkpoint_close(dit_checkpoint *ck);

/* A LoRA file merged into the weights as they are read (dit_lora.h). */
#define DIT_MAX_LORAS 16
typedef struct dit_lora_spec {
	const char *path;
	double strength;    /* the delta's factor (1: as trained) */
	const char *expert; /* an expert's label ("high", "low"): that expert only; NULL:
	                       every expert */
} dit_lora_spec;

/* How a checkpoint is opened. */
typedef struct dit_checkpoint_opts {
	const char *load_key; /* a .pt's key of the state dict ("module", "ema"); NULL:
	                         "module" (a bare state dict needs none) */
	int headers_only;     /* a plan: every tensor's header is checked, no weight is read
	                         (dit_model_open leaves the non-block slab unallocated) */
	dit_lora_spec lora[DIT_MAX_LORAS]; /* merged in this order */
	int nlora;
	int lora_ignore_unmatched; /* keys matching no weight are skipped, not refused */
} dit_checkpoint_opts;

/* The defaults: the load key "module", the weights read. */
void dit_checkpoint_opts_default(dit_checkpoint_opts *o);

/* dit_checkpoint_open with opts (NULL: the defaults). A .pt whose dict has "module" or
 * "ema" but not the load key is DIT_ENOTFOUND naming the keys it has. */
dit_status dit_checkpoint_open_opts(dit_checkpoint **out, const char *dir,
                                    const dit_checkpoint_opts *opts, dit_error *err);

/* Loads and checks the checkpoint's config.json, from the directory or the archive;
 * DIT_ENOTFOUND naming it when config_missing. */
dit_status dit_checkpoint_load_config(const dit_checkpoint *ck, dit_hparams *cfg, dit_error *err);

/* Caps on an index, checked before it is parsed (json-c spends a few hundred bytes
 * per weight_map entry): bytes, and weight_map entries. */
#define DIT_CHECKPOINT_MAX_INDEX         ((size_t)16 << 20)
#define DIT_CHECKPOINT_MAX_INDEX_ENTRIES ((size_t)1 << 19)

/* A parsed shard index (either name): the shard files its
 * "weight_map" names and the shard of each tensor. */
typedef struct dit_checkpoint_index {
	char **shards; /* plain file names, sorted, unique, nshards >= 1 */
	size_t nshards;
	char **tensors;   /* the weight_map keys, in the index's order */
	size_t *shard_of; /* tensors[i] is in shards[shard_of[i]] */
	size_t ntensors;  /* >= 1 */
} dit_checkpoint_index;

/* Parses len bytes of index text (no NUL needed); name labels messages. Strict: one JSON
 * object (no repeated member names) holding a non-empty object "weight_map" whose values
 * are plain file names (non-empty, no '/', no "..", not ".", no NUL). On success *out
 * owns its arrays (release with dit_checkpoint_index_free); on failure *out is empty.
 * dit_checkpoint_open reads every index through this function. */
dit_status dit_checkpoint_parse_index(const char *name, const char *text, size_t len,
                                      dit_checkpoint_index *out, dit_error *err);
/* Frees what dit_checkpoint_parse_index allocated and empties *idx; safe on an empty
 * or zeroed index. */
void dit_checkpoint_index_free(dit_checkpoint_index *idx);

/* Finds a tensor by its state-dict name in any shard; NULL when absent. *file (may
 * be NULL) receives the shard. */
const dit_st_tensor *dit_checkpoint_find(const dit_checkpoint *ck, const char *name,
                                         const dit_st_file **file);

#endif
