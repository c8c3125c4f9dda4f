/* What the chunk store's files share (private): the identity of a checkpoint
 * (dit_store_ident.c), used by the store (dit_store.c) and by the checksums of blocks
 * read where they lie (dit_store_inplace.c). */
#ifndef DIT_STORE_PRIV_H
#define DIT_STORE_PRIV_H

#include <json-c/json.h>

#include "dit_store.h"

#define STORE_FORMAT 4
#define READ_BLOCK   ((size_t)8 << 20) /* checkpoint files are hashed this much a read */

/* The blocks' geometry and where the checkpoint is (not the chunk size: every chunk
 * size reads the same blocks), with the pool, the matrices' dtypes and any LoRA. */
json_object *dit_store_identity(const dit_pool *pl);

/* Whether a and b print the same (both not NULL). */
int dit_store_same_json(json_object *a, json_object *b);

/* o's string key ("" when absent). */
const char *dit_store_get_str(json_object *o, const char *key);

/* v as 16 hex digits. */
void dit_store_hex(char out[24], uint64_t v);

/* The checkpoint files' entries {file, size, xxh3}, from a record of records (an array
 * or NULL) that still matches a file's stat, else hashed into buf (READ_BLOCK bytes;
 * res->hashed counts, res->progress reports); the records that hold go to fresh.
 * Against old (a manifest's, or NULL), a difference in the list, a size or a content
 * gives NULL and the reason. */
json_object *dit_store_ck_files(const dit_pool *pl, json_object *old, json_object *records,
                                json_object *fresh, void *buf, dit_store_status *res, char *reason,
                                size_t rlen);

/* records.json's records (an array), NULL when there is none; and its rewrite with now,
 * when they differ from old (a cache: a failure only costs a hash next time). */
json_object *dit_store_load_records(const char *dir);
void dit_store_save_records(const char *dir, json_object *old, json_object *now);

/* How a folder holds what a pool needs (a chunk store, or the checksums of blocks read
 * in place): whether what is there is intact for identity id and the checkpoint as it
 * is (records: earlier hashes; the ones that hold go to fresh; buf: READ_BLOCK bytes;
 * the reason in res when not), and its making (known: the records to trust). */
typedef struct dit_store_way {
	int (*intact)(const char *dir, const dit_pool *m, json_object *id, json_object *records,
	              json_object *fresh, void *buf, dit_store_status *res);
	dit_status (*make)(const char *dir, const dit_pool *m, json_object *id, json_object *known,
	                   json_object *fresh, void *buf, dit_store_status *res, void *arg,
	                   dit_error *err);
	void *arg;
} dit_store_way;

/* Keeps what dir holds for pool m when way finds it intact, else makes it again with
 * the use lock exclusive (waiting for the runs using it); records the checkpoint files'
 * hashes for the next run. */
dit_status dit_store_keep_or_make(const char *dir, const dit_pool *m, json_object *id,
                                  const dit_store_way *way, dit_store_lock *lk,
                                  dit_store_status *res, dit_error *err);

/* The blocks' checksums of the manifest at path (m->nblocks of them). */
dit_status dit_store_manifest_sums(const char *path, const dit_pool *m, uint64_t *sums,
                                   dit_error *err);

#endif
