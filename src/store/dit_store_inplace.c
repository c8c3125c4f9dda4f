/* The checksums of a pool's blocks read where they lie in the checkpoint (see
 * dit_store_prepare_inplace in dit_store.h): inplace.json in the store's folder, which
 * holds no blocks file for the pool. */
#define _GNU_SOURCE
#include "dit_store_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dit_blockhash.h"
#include "dit_io.h"

#define INPLACE "inplace.json"

static json_object *identity(const dit_pool *m)
{
	json_object *id = dit_store_identity(m);
	json_object_object_add(id, "source", json_object_new_string("checkpoint"));
	return id;
}

/* Whether dir's inplace.json holds the checksums of m's blocks for the checkpoint as it
 * is (its files' records or hashes, see dit_store_ck_files); else 0 and the reason. */
static int sums_intact(const char *dir, const dit_pool *m, json_object *id, json_object *records,
                       json_object *fresh, void *buf, dit_store_status *res)
{
	char *path = dit_io_join(dir, INPLACE);
	json_object *man = NULL, *v, *files = NULL;
	int ok = 0;
	if (!path || dit_io_read_json_object(path, (size_t)64 << 20, &man, NULL) != DIT_OK)
		snprintf(res->reason, sizeof res->reason, "no checksums of the blocks in %s", dir);
	else if (!json_object_object_get_ex(man, "format", &v) ||
	         json_object_get_int(v) != STORE_FORMAT ||
	         !json_object_object_get_ex(man, "identity", &v) || !dit_store_same_json(v, id) ||
	         !json_object_object_get_ex(man, "blocks", &v) ||
	         !json_object_is_type(v, json_type_array) ||
	         (int64_t)json_object_array_length(v) != m->nblocks ||
	         !json_object_object_get_ex(man, "checkpoint_files", &v))
		snprintf(res->reason, sizeof res->reason,
		         "the checksums in %s are of another checkpoint or layout", path);
	else if ((files = dit_store_ck_files(m, v, records, fresh, buf, res, res->reason,
	                                     sizeof res->reason)))
		ok = 1;
	json_object_put(files);
	json_object_put(man);
	free(path);
	return ok;
}

/* Takes the checksums of m's blocks as the loader makes them from the checkpoint (the
 * reads where they lie must give the same bytes) and writes inplace.json. */
static dit_status write_sums(const char *dir, const dit_pool *m, json_object *id,
                             json_object *records, json_object *fresh, void *hbuf,
                             dit_store_status *res, dit_error *err)
{
	char *path = dit_io_join(dir, INPLACE);
	size_t bytes = (size_t)m->block_stride * sizeof(float);
	float *buf = NULL;
	if (!path || posix_memalign((void **)&buf, 4096, bytes) != 0) {
		free(path);
		return dit_error_set(err, DIT_ENOMEM, "out of memory for one block (%zu bytes)",
		                     bytes);
	}
	dit_status st = DIT_OK;
	if (unlink(path) != 0 && errno != ENOENT)
		st = dit_error_set(err, DIT_EIO, "%s: cannot remove (%s)", path, strerror(errno));
	/* the checkpoint's content, hashed before its blocks are read */
	char why[256];
	json_object *files =
	    st ? NULL : dit_store_ck_files(m, NULL, records, fresh, hbuf, res, why, sizeof why);
	if (!st && !files)
		st = dit_error_set(err, DIT_EIO, "%s", why);
	json_object *man = json_object_new_object(), *blocks = json_object_new_array();
	json_object_object_add(man, "format", json_object_new_int(STORE_FORMAT));
	json_object_object_add(man, "identity", json_object_get(id));
	json_object_object_add(man, "checkpoint_files", files);
	json_object_object_add(man, "block_bytes", json_object_new_int64((int64_t)bytes));
	json_object_object_add(man, "blocks", blocks);
	for (int64_t b = 0; b < m->nblocks && !st; b++) {
		dit_stage_report(res->progress, "checking the checkpoint's blocks", (double)b,
		                 (double)m->nblocks, "blocks");
		st = dit_pool_read_block(m, b, buf, err);
		char sum[24];
		dit_store_hex(sum, st ? 0 : dit_block_hash(buf, bytes));
		json_object *c = json_object_new_object();
		json_object_object_add(c, "xxh3", json_object_new_string(sum));
		json_object_array_add(blocks, c);
	}
	if (!st) {
		dit_stage_report(res->progress, "checking the checkpoint's blocks",
		                 (double)m->nblocks, (double)m->nblocks, "blocks");
		const char *text = json_object_to_json_string_ext(man, JSON_C_TO_STRING_PRETTY);
		st = dit_io_write_file_atomic(path, text, strlen(text), err);
	}
	json_object_put(man);
	free(buf);
	free(path);
	return st;
}

static dit_status make_sums(const char *dir, const dit_pool *m, json_object *id, json_object *known,
                            json_object *fresh, void *buf, dit_store_status *res, void *arg,
                            dit_error *err)
{
	(void)arg;
	return write_sums(dir, m, id, known, fresh, buf, res, err);
}

dit_status dit_store_prepare_inplace(const char *dir, const dit_pool *m, dit_store_lock *lk,
                                     dit_store_status *res, dit_error *err)
{
	json_object *id = identity(m);
	dit_store_way way = {.intact = sums_intact, .make = make_sums};
	dit_status st = dit_store_keep_or_make(dir, m, id, &way, lk, res, err);
	json_object_put(id);
	return st;
}

dit_status dit_store_inplace_sums(const char *dir, const dit_pool *m, uint64_t *sums,
                                  dit_error *err)
{
	char *path = dit_io_join(dir, INPLACE);
	dit_status st = path ? dit_store_manifest_sums(path, m, sums, err)
	                     : dit_error_set(err, DIT_ENOMEM, "out of memory");
	free(path);
	return st;
}
