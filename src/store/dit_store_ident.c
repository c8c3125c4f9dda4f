/* The chunk store's identity of a checkpoint (see dit_store.h): the blocks' geometry,
 * the checkpoint files' sizes and XXH3-64s, and the records that let a later run trust
 * a file's hash while its stat is unchanged. */
#define _GNU_SOURCE
#include "dit_store_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "dit_io.h"
#include "dit_lora.h"

#define RECORDS    "records.json"
#define READ_BLOCK ((size_t)8 << 20)
/* a file record is trusted only when the file's last change is older than this
 * before the hash began (file systems with coarse times) */
#define TRUST_MARGIN_NS 2000000000LL

/* The blocks' geometry and where the checkpoint is (not the chunk size: every chunk
 * size reads the same blocks). */
json_object *dit_store_identity(const dit_pool *pl)
{
	const dit_model *m = pl->model;
	char real[PATH_MAX];
	if (!realpath(m->dir, real))
		snprintf(real, sizeof real, "%s", m->dir);
	json_object *id = json_object_new_object();
	json_object_object_add(id, "checkpoint", json_object_new_string(real));
	if (m->ck && m->ck->load_key) /* a .pt's other dict is other weights */
		json_object_object_add(id, "load_key", json_object_new_string(m->ck->load_key));
	json_object_object_add(id, "pool", json_object_new_string(pl->d->prefix));
	json_object_object_add(id, "blocks", json_object_new_int64(pl->nblocks));
	json_object_object_add(id, "block_stride", json_object_new_int64(pl->block_stride));
	json_object_object_add(id, "block_size", json_object_new_int64(pl->lay.size));
	char tag[48];
	dit_layout_tag(&pl->lay, pl->d->tensors, tag, sizeof tag);
	json_object_object_add(id, "block_matrices", json_object_new_string(tag));
	const char *lora = dit_lora_identity(m->lora); /* merged deltas: other weights */
	if (lora)
		json_object_object_add(id, "lora", json_object_new_string(lora));
	return id;
}

/* The checkpoint's files: an archive is one file; a directory lists its shards. */
static const char *ck_file(const dit_pool *pl, size_t i, size_t *n)
{
	const dit_checkpoint *ck = pl->model->ck;
	*n = ck->archive ? 1 : ck->nfiles;
	return i >= *n ? NULL : ck->archive ? ck->dir : ck->files[i]->path;
}

int dit_store_same_json(json_object *a, json_object *b)
{
	return a && b &&
	       strcmp(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN),
	              json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN)) == 0;
}

const char *dit_store_get_str(json_object *o, const char *key)
{
	json_object *v;
	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

/* XXH3-64 of a file's first size bytes, by pread (chunks) or, seq, by read (a whole
 * checkpoint file, front to back); -1 on a read error. */
static int hash_file(const char *path, size_t size, int seq, void *buf, uint64_t *out,
                     const dit_stage_progress *pr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	XXH3_state_t *st = XXH3_createState();
	int ok = st && XXH3_64bits_reset(st) == XXH_OK;
	for (size_t off = 0; ok && off < size;) {
		size_t want = size - off < READ_BLOCK ? size - off : READ_BLOCK;
		ssize_t r = seq ? read(fd, buf, want) : pread(fd, buf, want, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		ok = r > 0 && XXH3_64bits_update(st, buf, (size_t)r) == XXH_OK;
		off += r > 0 ? (size_t)r : 0;
		dit_stage_report(pr, "hashing the checkpoint", (double)off, (double)size, "bytes");
	}
	if (ok)
		*out = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	close(fd);
	return ok ? 0 : -1;
}

void dit_store_hex(char out[24], uint64_t v)
{
	snprintf(out, 24, "%016llx", (unsigned long long)v);
}

static int64_t ns(struct timespec t)
{
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A record (records.json): a file whose stat says this has content xxh3. */
static json_object *record_of(const char *path, const struct stat *sb, const char *xxh3)
{
	json_object *r = json_object_new_object();
	json_object_object_add(r, "file", json_object_new_string(path));
	json_object_object_add(r, "size", json_object_new_int64((int64_t)sb->st_size));
	json_object_object_add(r, "mtime_ns", json_object_new_int64(ns(sb->st_mtim)));
	json_object_object_add(r, "ctime_ns", json_object_new_int64(ns(sb->st_ctim)));
	json_object_object_add(r, "inode", json_object_new_int64((int64_t)sb->st_ino));
	json_object_object_add(r, "device", json_object_new_int64((int64_t)sb->st_dev));
	json_object_object_add(r, "xxh3", json_object_new_string(xxh3));
	return r;
}

/* A checkpoint file's manifest entry {file, size, xxh3}: the content hash of a record
 * (of records, an array or NULL) that still matches the file, else of the file itself
 * (*hashed counts the bytes). The matching record, or a new one for a hash taken over
 * TRUST_MARGIN_NS after the file's last change, goes to fresh. NULL with errno on a
 * read error. */
static json_object *file_entry(const char *path, json_object *records, json_object *fresh,
                               void *buf, dit_store_status *res)
{
	struct stat a, b;
	if (stat(path, &a) != 0)
		return NULL;
	char sum[24] = "";
	size_t n = records ? json_object_array_length(records) : 0;
	for (size_t i = 0; i < n && !*sum; i++) {
		json_object *r = json_object_array_get_idx(records, i);
		if (strcmp(dit_store_get_str(r, "file"), path) != 0 ||
		    strlen(dit_store_get_str(r, "xxh3")) != 16)
			continue;
		json_object *now = record_of(path, &a, dit_store_get_str(r, "xxh3"));
		if (dit_store_same_json(now, r)) {
			snprintf(sum, sizeof sum, "%s", dit_store_get_str(r, "xxh3"));
			json_object_array_add(fresh, json_object_get(r));
		}
		json_object_put(now);
	}
	if (!*sum) {
		struct timespec t0;
		clock_gettime(CLOCK_REALTIME, &t0);
		uint64_t v = 0;
		if (hash_file(path, (size_t)a.st_size, 1, buf, &v, res->progress) != 0)
			return NULL;
		res->hashed += (size_t)a.st_size;
		dit_store_hex(sum, v);
		if (stat(path, &b) == 0 && ns(a.st_ctim) == ns(b.st_ctim) &&
		    ns(a.st_mtim) == ns(b.st_mtim) && a.st_size == b.st_size &&
		    ns(a.st_ctim) < ns(t0) - TRUST_MARGIN_NS)
			json_object_array_add(fresh, record_of(path, &a, sum));
	}
	json_object *e = json_object_new_object();
	json_object_object_add(e, "file", json_object_new_string(path));
	json_object_object_add(e, "size", json_object_new_int64((int64_t)a.st_size));
	json_object_object_add(e, "xxh3", json_object_new_string(sum));
	return e;
}

/* The checkpoint files' entries; against old (the manifest's, or NULL), a difference
 * in the list, a size or a content gives NULL and the reason. */
json_object *dit_store_ck_files(const dit_pool *pl, json_object *old, json_object *records,
                                json_object *fresh, void *buf, dit_store_status *res, char *reason,
                                size_t rlen)
{
	size_t n;
	ck_file(pl, 0, &n);
	if (old && json_object_array_length(old) != n) {
		snprintf(reason, rlen, "the store was made from a checkpoint of %zu files, not %zu",
		         json_object_array_length(old), n);
		return NULL;
	}
	json_object *files = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		const char *path = ck_file(pl, i, &n);
		json_object *o = old ? json_object_array_get_idx(old, i) : NULL, *e = NULL;
		if (o && strcmp(dit_store_get_str(o, "file"), path) != 0)
			snprintf(reason, rlen, "the store was made from %s, not %s",
			         dit_store_get_str(o, "file"), path);
		else if (!(e = file_entry(path, records, fresh, buf, res)))
			snprintf(reason, rlen, "%s: cannot be read (%s)", path, strerror(errno));
		else if (o && !dit_store_same_json(o, e))
			snprintf(reason, rlen,
			         "%s changed (%s bytes, XXH3 %s; the store was made from %s "
			         "bytes, XXH3 %s)",
			         path, dit_store_get_str(e, "size"), dit_store_get_str(e, "xxh3"),
			         dit_store_get_str(o, "size"), dit_store_get_str(o, "xxh3"));
		if (e)
			json_object_array_add(files, e);
		if (!e || (o && !dit_store_same_json(o, e))) {
			json_object_put(files);
			return NULL;
		}
	}
	return files;
}

/* records.json's records (an array), NULL when there is none. */
json_object *dit_store_load_records(const char *dir)
{
	char *path = dit_io_join(dir, RECORDS);
	json_object *obj = NULL, *files = NULL;
	if (path && dit_io_read_json_object(path, (size_t)16 << 20, &obj, NULL) == DIT_OK &&
	    json_object_object_get_ex(obj, "files", &files) &&
	    json_object_is_type(files, json_type_array))
		json_object_get(files);
	else
		files = NULL;
	json_object_put(obj);
	free(path);
	return files;
}

/* Makes records.json hold the records of now, when they differ from old. A cache: a
 * failure only costs a hash next time. */
void dit_store_save_records(const char *dir, json_object *old, json_object *now)
{
	if (old ? dit_store_same_json(old, now) : !json_object_array_length(now))
		return;
	json_object *obj = json_object_new_object();
	json_object_object_add(obj, "files", json_object_get(now));
	char *path = dit_io_join(dir, RECORDS);
	const char *text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY);
	if (path)
		dit_io_write_file_atomic(path, text, strlen(text), NULL);
	free(path);
	json_object_put(obj);
}

dit_status dit_store_keep_or_make(const char *dir, const dit_pool *m, json_object *id,
                                  const dit_store_way *way, dit_store_lock *lk,
                                  dit_store_status *res, dit_error *err)
{
	*res = (dit_store_status){.progress = res->progress}; /* the caller's, in */
	dit_status st = dit_io_mkdir_p(dir, err);
	if (st)
		return st;
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, READ_BLOCK) != 0)
		return dit_error_set(err, DIT_ENOMEM, "out of memory checking the store");
	/* records: what earlier hashes found (facts about the files, whatever the store
	 * holds); now: the records of the current files, for the next run */
	json_object *records = dit_store_load_records(dir), *now = json_object_new_array();
	res->reused = way->intact(dir, m, id, records, now, buf, res);
	if (!res->reused) {
		/* what the check just learnt, then the older records */
		json_object *known = now;
		now = json_object_new_array();
		for (size_t i = 0; records && i < json_object_array_length(records); i++)
			json_object_array_add(
			    known, json_object_get(json_object_array_get_idx(records, i)));
		st = dit_store_lock_exclusive(lk, err);
		if (!st)
			st = way->make(dir, m, id, known, now, buf, res, way->arg, err);
		json_object_put(known);
	}
	if (!st)
		dit_store_save_records(dir, records, now);
	json_object_put(now);
	json_object_put(records);
	free(buf);
	return st;
}
