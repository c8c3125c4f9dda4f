/* The disk chunk store (see dit_store.h). */
#define _GNU_SOURCE
#include "dit_store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <xxhash.h>

#include "dit_io.h"
#include "dit_lora.h"

#define STORE_FORMAT 3
#define MANIFEST     "manifest.json"
#define RECORDS      "records.json"
#define READ_BLOCK   ((size_t)8 << 20)
/* a file record is trusted only when the file's last change is older than this
 * before the hash began (file systems with coarse times) */
#define TRUST_MARGIN_NS 2000000000LL

char *dit_store_chunk_name(int64_t k)
{
	char *s = malloc(32);
	if (s)
		snprintf(s, 32, "chunk_%04lld.bin", (long long)k);
	return s;
}

/* ------------------------------------------------------------------ locks */

void dit_store_lock_init(dit_store_lock *lk)
{
	memset(lk, 0, sizeof *lk);
	lk->build = lk->use = -1;
}

void dit_store_unlock(dit_store_lock *lk)
{
	if (lk->build >= 0)
		close(lk->build); /* closing the descriptor releases its lock */
	if (lk->use >= 0)
		close(lk->use);
	free(lk->dir);
	dit_store_lock_init(lk);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* flock(fd, op), waiting for another run as lk says; what: "preparing", "using". */
static dit_status lock_wait(dit_store_lock *lk, int fd, int op, const char *what, dit_error *err)
{
	double t0 = now_s();
	long pause_ms = 10;
	for (;;) {
		if (flock(fd, op | LOCK_NB) == 0)
			return DIT_OK;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return dit_error_set(err, DIT_EIO, "%s: cannot lock the chunk store (%s)",
			                     lk->dir, strerror(errno));
		if (lk->wait_s >= 0 && now_s() - t0 >= lk->wait_s)
			return dit_error_set(err, DIT_EIO,
			                     "%s: another run is %s this chunk store; gave up "
			                     "after %g s (DITSTAR_STORE_WAIT)",
			                     lk->dir, what, lk->wait_s);
		if (!lk->told) {
			fprintf(stderr,
			        "ditstar: waiting for the chunk store %s, which another run "
			        "is %s it\n",
			        lk->dir, what);
			fflush(stderr);
			lk->told = 1;
		}
		struct timespec ts = {0, pause_ms * 1000000L};
		nanosleep(&ts, NULL);
		if (pause_ms < 200)
			pause_ms *= 2;
	}
}

static int open_lock(const char *dir, const char *name)
{
	char *path = dit_io_join(dir, name);
	int fd = path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;
	free(path);
	return fd;
}

dit_status dit_store_lock_begin(dit_store_lock *lk, const char *dir, int adopt, double wait_s,
                                dit_error *err)
{
	dit_store_lock_init(lk);
	lk->wait_s = wait_s;
	dit_status st = dit_store_own(dir, adopt, err);
	if (st)
		return st;
	lk->dir = strdup(dir);
	if (!lk->dir)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	lk->build = open_lock(dir, "build.lock");
	lk->use = lk->build >= 0 ? open_lock(dir, "use.lock") : -1;
	if (lk->use < 0)
		st = dit_error_set(err, DIT_EIO,
		                   "%s/%s: cannot create the chunk store's lock file (%s)", dir,
		                   lk->build < 0 ? "build.lock" : "use.lock", strerror(errno));
	if (!st)
		st = lock_wait(lk, lk->build, LOCK_EX, "preparing", err);
	/* the use lock changes hands only under the build lock: readers never block us */
	if (!st && flock(lk->use, LOCK_EX | LOCK_NB) == 0) {
		lk->use_excl = 1;
		dit_store_clean_temps(dir, 2);
	} else if (!st) {
		st = lock_wait(lk, lk->use, LOCK_SH, "using", err);
	}
	if (st)
		dit_store_unlock(lk);
	return st;
}

/* The use lock exclusively: waits for the runs using the store to end. */
static dit_status lock_exclusive(dit_store_lock *lk, dit_error *err)
{
	if (lk->use_excl)
		return DIT_OK;
	flock(lk->use, LOCK_UN);
	dit_status st = lock_wait(lk, lk->use, LOCK_EX, "using", err);
	if (st)
		return st;
	lk->use_excl = 1;
	dit_store_clean_temps(lk->dir, 2);
	return DIT_OK;
}

dit_status dit_store_lock_end_prepare(dit_store_lock *lk, dit_error *err)
{
	/* not atomic, but only a reader can take the use lock meanwhile */
	if (lk->use_excl && flock(lk->use, LOCK_SH) != 0)
		return dit_error_set(err, DIT_EIO, "%s: cannot lock the chunk store (%s)", lk->dir,
		                     strerror(errno));
	lk->use_excl = 0;
	close(lk->build);
	lk->build = -1;
	return DIT_OK;
}

/* ------------------------------------------------------------------ identity */

/* The chunk geometry and where the checkpoint is. */
static json_object *geometry(const dit_pool *pl)
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
	json_object_object_add(id, "chunk_size", json_object_new_int64(pl->chunk_size));
	json_object_object_add(id, "nchunks", json_object_new_int64(pl->nchunks));
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

static int same_json(json_object *a, json_object *b)
{
	return a && b &&
	       strcmp(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN),
	              json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN)) == 0;
}

static const char *get_str(json_object *o, const char *key)
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

static void hex(char out[24], uint64_t v)
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
		if (strcmp(get_str(r, "file"), path) != 0 || strlen(get_str(r, "xxh3")) != 16)
			continue;
		json_object *now = record_of(path, &a, get_str(r, "xxh3"));
		if (same_json(now, r)) {
			snprintf(sum, sizeof sum, "%s", get_str(r, "xxh3"));
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
		hex(sum, v);
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
static json_object *checkpoint_files(const dit_pool *pl, json_object *old, json_object *records,
                                     json_object *fresh, void *buf, dit_store_status *res,
                                     char *reason, size_t rlen)
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
		if (o && strcmp(get_str(o, "file"), path) != 0)
			snprintf(reason, rlen, "the store was made from %s, not %s",
			         get_str(o, "file"), path);
		else if (!(e = file_entry(path, records, fresh, buf, res)))
			snprintf(reason, rlen, "%s: cannot be read (%s)", path, strerror(errno));
		else if (o && !same_json(o, e))
			snprintf(reason, rlen,
			         "%s changed (%s bytes, XXH3 %s; the store was made from %s "
			         "bytes, XXH3 %s)",
			         path, get_str(e, "size"), get_str(e, "xxh3"), get_str(o, "size"),
			         get_str(o, "xxh3"));
		if (e)
			json_object_array_add(files, e);
		if (!e || (o && !same_json(o, e))) {
			json_object_put(files);
			return NULL;
		}
	}
	return files;
}

/* records.json's records (an array), NULL when there is none. */
static json_object *load_records(const char *dir)
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
static void save_records(const char *dir, json_object *old, json_object *now)
{
	if (old ? same_json(old, now) : !json_object_array_length(now))
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

/* ------------------------------------------------------------------ check and write */

/* Checks an existing store against its manifest, the geometry id and the
 * checkpoint's content (from records or hashed; see file_entry for now); on any
 * difference writes the reason and returns 0. */
static int store_intact(const char *dir, const dit_pool *m, json_object *id, json_object *records,
                        json_object *fresh, void *buf, dit_store_status *res)
{
	char *reason = res->reason;
	size_t rlen = sizeof res->reason;
	char *mpath = dit_io_join(dir, MANIFEST);
	json_object *man = NULL, *fmt, *have, *chunks, *old_files, *files = NULL;
	int ok = 0;
	if (!mpath || dit_io_read_json_object(mpath, (size_t)64 << 20, &man, NULL) != DIT_OK) {
		snprintf(reason, rlen, "no complete store in %s", dir);
		goto out;
	}
	if (!json_object_object_get_ex(man, "format", &fmt) ||
	    json_object_get_int(fmt) != STORE_FORMAT ||
	    !json_object_object_get_ex(man, "identity", &have) || !same_json(have, id) ||
	    !json_object_object_get_ex(man, "checkpoint_files", &old_files) ||
	    !json_object_is_type(old_files, json_type_array)) {
		snprintf(reason, rlen,
		         "the store in %s was made from another checkpoint or chunking", dir);
		goto out;
	}
	if (!json_object_object_get_ex(man, "chunks", &chunks) ||
	    !json_object_is_type(chunks, json_type_array) ||
	    (int64_t)json_object_array_length(chunks) != m->nchunks) {
		snprintf(reason, rlen, "%s: manifest does not list %lld chunks", mpath,
		         (long long)m->nchunks);
		goto out;
	}
	files = checkpoint_files(m, old_files, records, fresh, buf, res, reason, rlen);
	if (!files)
		goto out;
	size_t bytes = dit_pool_chunk_bytes(m);
	ok = 1;
	for (int64_t k = 0; ok && k < m->nchunks; k++, ok = !*reason) {
		json_object *c = json_object_array_get_idx(chunks, (size_t)k);
		char *name = dit_store_chunk_name(k), *path = name ? dit_io_join(dir, name) : NULL;
		struct stat sb;
		uint64_t sum = 0;
		const char *want_sum = get_str(c, "xxh3");
		char have_sum[24];
		if (!path || stat(path, &sb) != 0)
			snprintf(reason, rlen, "%s/%s is missing", dir, name ? name : "?");
		else if ((size_t)sb.st_size != bytes)
			snprintf(reason, rlen,
			         "%s is %lld bytes, the manifest says %zu (truncated?)", path,
			         (long long)sb.st_size, bytes);
		else if (hash_file(path, bytes, 0, buf, &sum, NULL) != 0)
			snprintf(reason, rlen, "%s: cannot be read (%s)", path, strerror(errno));
		else if (hex(have_sum, sum), strcmp(have_sum, want_sum) != 0)
			snprintf(reason, rlen, "%s: checksum %s, the manifest says %s (corrupted)",
			         path, have_sum, want_sum);
		free(name);
		free(path);
	}
out:
	json_object_put(files);
	json_object_put(man);
	free(mpath);
	return ok;
}

static dit_status write_store(const char *dir, const dit_pool *m, json_object *id,
                              size_t extra_bytes, json_object *records, json_object *fresh,
                              void *hbuf, dit_store_status *res, dit_error *err)
{
	size_t chunk = dit_pool_chunk_bytes(m);
	size_t need = chunk * (size_t)m->nchunks + extra_bytes;
	/* an older layout's chunks past this one's are stale (the store is rewritten: no
	 * run reads them), the others are replaced one by one: both count as free */
	dit_store_remove_stale_chunks(dir, m->nchunks);
	size_t replaced = dit_store_chunk_bytes(dir, m->nchunks);
	if (replaced)
		need = need + chunk > replaced ? need + chunk - replaced : 0;
	struct statvfs vfs;
	if (statvfs(dir, &vfs) == 0) {
		size_t avail = (size_t)vfs.f_bavail * vfs.f_frsize;
		if (avail < need)
			return dit_error_set(
			    err, DIT_EIO,
			    "%s: not enough space for the chunk store (%.3f GB needed "
			    "with %.3f GB of room for StarPU, %.3f GB free)",
			    dir, (double)need / 1e9, (double)extra_bytes / 1e9,
			    (double)avail / 1e9);
	}
	char *mpath = dit_io_join(dir, MANIFEST);
	float *buf = NULL;
	if (!mpath || posix_memalign((void **)&buf, 4096, chunk) != 0) {
		free(mpath);
		return dit_error_set(err, DIT_ENOMEM, "out of memory for one chunk (%zu bytes)",
		                     chunk);
	}
	/* The store is incomplete until the manifest is back. */
	if (unlink(mpath) != 0 && errno != ENOENT) {
		dit_status st =
		    dit_error_set(err, DIT_EIO, "%s: cannot remove (%s)", mpath, strerror(errno));
		free(buf);
		free(mpath);
		return st;
	}
	/* the checkpoint's content, hashed before its blocks are read: a change after
	 * this changes the files' change time, so no record of it matches any more */
	char why[256];
	json_object *files = checkpoint_files(m, NULL, records, fresh, hbuf, res, why, sizeof why);
	if (!files) {
		free(buf);
		free(mpath);
		return dit_error_set(err, DIT_EIO, "%s", why);
	}
	json_object *man = json_object_new_object();
	json_object_object_add(man, "format", json_object_new_int(STORE_FORMAT));
	json_object_object_add(man, "identity", json_object_get(id));
	json_object_object_add(man, "checkpoint_files", files);
	json_object *chunks = json_object_new_array();
	json_object_object_add(man, "chunks", chunks);
	dit_status st = DIT_OK;
	for (int64_t k = 0; k < m->nchunks && !st; k++) {
		dit_stage_report(res->progress, "writing the chunk store", (double)k,
		                 (double)m->nchunks, "chunks");
		for (int64_t j = 0; j < m->chunk_size && !st; j++)
			st = dit_pool_read_block(m, k * m->chunk_size + j,
			                         buf + j * m->block_stride, err);
		char *name = dit_store_chunk_name(k), *path = name ? dit_io_join(dir, name) : NULL;
		if (!st && !path)
			st = dit_error_set(err, DIT_ENOMEM, "out of memory");
		if (!st)
			st = dit_io_write_file_atomic(path, buf, chunk, err);
		if (!st) {
			char sum[24];
			hex(sum, XXH3_64bits(buf, chunk));
			json_object *c = json_object_new_object();
			json_object_object_add(c, "file", json_object_new_string(name));
			json_object_object_add(c, "bytes", json_object_new_int64((int64_t)chunk));
			json_object_object_add(c, "xxh3", json_object_new_string(sum));
			json_object_array_add(chunks, c);
		}
		free(name);
		free(path);
	}
	free(buf);
	if (!st)
		dit_stage_report(res->progress, "writing the chunk store", (double)m->nchunks,
		                 (double)m->nchunks, "chunks");
	if (!st) {
		const char *text = json_object_to_json_string_ext(man, JSON_C_TO_STRING_PRETTY);
		st = dit_io_write_file_atomic(mpath, text, strlen(text), err);
	}
	if (!st)
		dit_store_remove_stale_chunks(dir, m->nchunks);
	json_object_put(man);
	free(mpath);
	return st;
}

dit_status dit_store_prepare(const char *dir, const dit_pool *m, size_t extra_bytes,
                             dit_store_lock *lk, dit_store_status *res, dit_error *err)
{
	*res = (dit_store_status){.progress = res->progress}; /* the caller's, in */
	dit_status st = dit_io_mkdir_p(dir, err);
	if (st)
		return st;
	void *buf = malloc(READ_BLOCK);
	if (!buf)
		return dit_error_set(err, DIT_ENOMEM, "out of memory checking the store");
	/* records: what earlier hashes found (facts about the files, whatever the store
	 * holds); now: the records of the current files, for the next run */
	json_object *id = geometry(m), *records = load_records(dir), *now = json_object_new_array();
	res->reused = store_intact(dir, m, id, records, now, buf, res);
	if (!res->reused) {
		/* what the check just learnt, then the older records */
		json_object *known = now;
		now = json_object_new_array();
		for (size_t i = 0; records && i < json_object_array_length(records); i++)
			json_object_array_add(
			    known, json_object_get(json_object_array_get_idx(records, i)));
		st = lock_exclusive(lk, err);
		if (!st)
			st = write_store(dir, m, id, extra_bytes, known, now, buf, res, err);
		json_object_put(known);
	}
	if (!st)
		save_records(dir, records, now);
	json_object_put(now);
	json_object_put(records);
	json_object_put(id);
	free(buf);
	return st;
}

dit_status dit_store_chunk_sums(const char *dir, const dit_pool *m, uint64_t *sums, dit_error *err)
{
	char *mpath = dit_io_join(dir, MANIFEST);
	json_object *man = NULL, *chunks;
	dit_status st = mpath ? dit_io_read_json_object(mpath, (size_t)64 << 20, &man, err)
	                      : dit_error_set(err, DIT_ENOMEM, "out of memory");
	if (!st && (!json_object_object_get_ex(man, "chunks", &chunks) ||
	            !json_object_is_type(chunks, json_type_array) ||
	            (int64_t)json_object_array_length(chunks) != m->nchunks))
		st = dit_error_set(err, DIT_EFORMAT, "%s: manifest does not list %lld chunks",
		                   mpath, (long long)m->nchunks);
	for (int64_t k = 0; !st && k < m->nchunks; k++) {
		const char *s = get_str(json_object_array_get_idx(chunks, (size_t)k), "xxh3");
		char *end;
		errno = 0;
		sums[k] = strtoull(s, &end, 16);
		if (strlen(s) != 16 || *end || errno)
			st = dit_error_set(err, DIT_EFORMAT, "%s: chunk %lld has no valid xxh3",
			                   mpath, (long long)k);
	}
	json_object_put(man);
	free(mpath);
	return st;
}
