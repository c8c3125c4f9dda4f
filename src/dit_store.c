/* The disk chunk store (see dit_store.h). */
#define _GNU_SOURCE
#include "dit_store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <json-c/json.h>
#include <xxhash.h>

#include "dit_io.h"

#define STORE_FORMAT 2
#define MANIFEST     "manifest.json"
#define READ_BLOCK   ((size_t)8 << 20)

char *dit_store_chunk_name(int64_t k)
{
	char *s = malloc(32);
	if (s)
		snprintf(s, 32, "chunk_%04lld.bin", (long long)k);
	return s;
}

/* What the store is made from: the checkpoint's files and the chunk geometry. */
static json_object *identity(const dit_pool *pl)
{
	const dit_model *m = pl->model;
	char real[PATH_MAX];
	if (!realpath(m->dir, real))
		snprintf(real, sizeof real, "%s", m->dir);
	json_object *id = json_object_new_object();
	json_object_object_add(id, "checkpoint", json_object_new_string(real));
	json_object_object_add(id, "pool", json_object_new_string(pl->d->prefix));
	json_object_object_add(id, "chunk_size", json_object_new_int64(pl->chunk_size));
	json_object_object_add(id, "nchunks", json_object_new_int64(pl->nchunks));
	json_object_object_add(id, "block_stride", json_object_new_int64(pl->block_stride));
	json_object_object_add(id, "block_size", json_object_new_int64(pl->lay.size));
	json_object_object_add(id, "block_matrices",
	                       json_object_new_string(pl->lay.bf16 ? "bf16" : "f32"));
	json_object *files = json_object_new_array();
	/* an archive is one file; a directory lists its shards */
	size_t nfiles = m->ck->archive ? 1 : m->ck->nfiles;
	for (size_t i = 0; i < nfiles; i++) {
		struct stat sb;
		const char *path = m->ck->archive ? m->ck->dir : m->ck->files[i]->path;
		if (stat(path, &sb) != 0)
			memset(&sb, 0, sizeof sb);
		json_object *f = json_object_new_object();
		json_object_object_add(f, "file", json_object_new_string(path));
		json_object_object_add(f, "size", json_object_new_int64((int64_t)sb.st_size));
		json_object_object_add(
		    f, "mtime_ns",
		    json_object_new_int64((int64_t)sb.st_mtim.tv_sec * 1000000000 +
		                          sb.st_mtim.tv_nsec));
		json_object_array_add(files, f);
	}
	json_object_object_add(id, "files", files);
	return id;
}

static int same_json(json_object *a, json_object *b)
{
	return a && b &&
	       strcmp(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN),
	              json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN)) == 0;
}

/* XXH3-64 of a whole file; -1 on a read error. */
static int hash_file(const char *path, size_t size, void *buf, uint64_t *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	XXH3_state_t *st = XXH3_createState();
	int ok = st && XXH3_64bits_reset(st) == XXH_OK;
	for (size_t off = 0; ok && off < size;) {
		size_t want = size - off < READ_BLOCK ? size - off : READ_BLOCK;
		ssize_t r = pread(fd, buf, want, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		ok = r > 0 && XXH3_64bits_update(st, buf, (size_t)r) == XXH_OK;
		off += r > 0 ? (size_t)r : 0;
	}
	if (ok)
		*out = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	close(fd);
	return ok ? 0 : -1;
}

/* Checks an existing store against its manifest and the current identity; on any
 * difference writes the reason and returns 0. */
static int store_intact(const char *dir, const dit_pool *m, json_object *want, char *reason,
                        size_t rlen)
{
	char *mpath = dit_io_join(dir, MANIFEST);
	json_object *man = NULL;
	int ok = 0;
	if (!mpath || dit_io_read_json_object(mpath, (size_t)64 << 20, &man, NULL) != DIT_OK) {
		snprintf(reason, rlen, "no complete store in %s", dir);
		goto out;
	}
	json_object *fmt, *id, *chunks;
	if (!json_object_object_get_ex(man, "format", &fmt) ||
	    json_object_get_int(fmt) != STORE_FORMAT ||
	    !json_object_object_get_ex(man, "identity", &id) || !same_json(id, want)) {
		snprintf(reason, rlen,
		         "the store in %s was made from another checkpoint or chunking", dir);
		goto out;
	}
	if (!json_object_object_get_ex(man, "chunks", &chunks) ||
	    (int64_t)json_object_array_length(chunks) != m->nchunks) {
		snprintf(reason, rlen, "%s: manifest does not list %lld chunks", mpath,
		         (long long)m->nchunks);
		goto out;
	}
	void *buf = malloc(READ_BLOCK);
	if (!buf) {
		snprintf(reason, rlen, "out of memory checking the store");
		goto out;
	}
	size_t bytes = dit_pool_chunk_bytes(m);
	ok = 1;
	for (int64_t k = 0; ok && k < m->nchunks; k++) {
		json_object *c = json_object_array_get_idx(chunks, (size_t)k), *h;
		char *name = dit_store_chunk_name(k), *path = name ? dit_io_join(dir, name) : NULL;
		struct stat sb;
		uint64_t sum = 0;
		const char *want_sum =
		    c && json_object_object_get_ex(c, "xxh3", &h) ? json_object_get_string(h) : "";
		char have_sum[24];
		if (!path || stat(path, &sb) != 0) {
			snprintf(reason, rlen, "%s/%s is missing", dir, name ? name : "?");
			ok = 0;
		} else if ((size_t)sb.st_size != bytes) {
			snprintf(reason, rlen,
			         "%s is %lld bytes, the manifest says %zu (truncated?)", path,
			         (long long)sb.st_size, bytes);
			ok = 0;
		} else if (hash_file(path, bytes, buf, &sum) != 0) {
			snprintf(reason, rlen, "%s: cannot be read (%s)", path, strerror(errno));
			ok = 0;
		} else if (snprintf(have_sum, sizeof have_sum, "%016llx", (unsigned long long)sum),
		           strcmp(have_sum, want_sum) != 0) {
			snprintf(reason, rlen, "%s: checksum %s, the manifest says %s (corrupted)",
			         path, have_sum, want_sum);
			ok = 0;
		}
		free(name);
		free(path);
	}
	free(buf);
out:
	json_object_put(man);
	free(mpath);
	return ok;
}

static dit_status write_store(const char *dir, const dit_pool *m, json_object *id,
                              size_t extra_bytes, dit_error *err)
{
	size_t chunk = dit_pool_chunk_bytes(m);
	size_t need = chunk * (size_t)m->nchunks + extra_bytes;
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
	json_object *man = json_object_new_object();
	json_object_object_add(man, "format", json_object_new_int(STORE_FORMAT));
	json_object_object_add(man, "identity", json_object_get(id));
	json_object *chunks = json_object_new_array();
	json_object_object_add(man, "chunks", chunks);
	dit_status st = DIT_OK;
	for (int64_t k = 0; k < m->nchunks && !st; k++) {
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
			snprintf(sum, sizeof sum, "%016llx",
			         (unsigned long long)XXH3_64bits(buf, chunk));
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
	if (!st) {
		const char *text = json_object_to_json_string_ext(man, JSON_C_TO_STRING_PRETTY);
		st = dit_io_write_file_atomic(mpath, text, strlen(text), err);
	}
	json_object_put(man);
	free(mpath);
	return st;
}

dit_status dit_store_prepare(const char *dir, const dit_pool *m, size_t extra_bytes,
                             dit_store_status *res, dit_error *err)
{
	memset(res, 0, sizeof *res);
	dit_status st = dit_io_mkdir_p(dir, err);
	if (st)
		return st;
	json_object *id = identity(m);
	res->reused = store_intact(dir, m, id, res->reason, sizeof res->reason);
	if (!res->reused)
		st = write_store(dir, m, id, extra_bytes, err);
	json_object_put(id);
	return st;
}
