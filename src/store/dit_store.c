/* The disk chunk store (see dit_store.h). */
#define _GNU_SOURCE
#include "dit_store_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <xxhash.h>

#include "dit_blockhash.h"
#include "dit_input.h"
#include "dit_io.h"
#include "dit_lora.h"

#define MANIFEST "manifest.json"

static size_t block_bytes(const dit_pool *m)
{
	return (size_t)m->block_stride * sizeof(float);
}

/* Reads len bytes at off into buf (dit_input_pread); 0, or -1 with errno (0: the file
 * ended). */
static int read_full(int fd, void *buf, size_t len, off_t off)
{
	errno = 0;
	int64_t got = dit_input_pread(fd, buf, len, (uint64_t)off);
	if (got == (int64_t)len)
		return 0;
	if (got >= 0)
		errno = 0;
	return -1;
}

/* The checksums of the n blocks of bytes bytes at the start of path, read front to back
 * a hash piece at a time into buf (DIT_HASH_PIECE bytes, page-aligned): with O_DIRECT
 * where the file system takes it, so that the reads, which res times alone, give the
 * drive's plain sequential rate (one read in flight, no cache). -1 with errno on a read
 * error or a file cut short (errno 0). */
static int hash_blocks(const char *path, int64_t n, size_t bytes, void *buf, uint64_t *sums,
                       dit_store_status *res)
{
	int direct = 1;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
	if (fd < 0) {
		direct = 0;
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	size_t np = dit_block_pieces(bytes);
	uint64_t *ps = fd >= 0 ? malloc(np * sizeof *ps) : NULL;
	int rc = ps ? 0 : -1;
	for (int64_t b = 0; !rc && b < n; b++) {
		for (size_t i = 0; !rc && i < np; i++) {
			size_t at = i * DIT_HASH_PIECE;
			size_t len = bytes - at < DIT_HASH_PIECE ? bytes - at : DIT_HASH_PIECE;
			off_t off = (off_t)((size_t)b * bytes + at);
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			rc = read_full(fd, buf, len, off);
			if (rc && direct && errno == EINVAL) { /* O_DIRECT refused at read time */
				close(fd);
				direct = 0;
				fd = open(path, O_RDONLY | O_CLOEXEC);
				rc = fd >= 0 ? read_full(fd, buf, len, off) : -1;
			}
			clock_gettime(CLOCK_MONOTONIC, &t1);
			res->seq_bytes += rc ? 0 : len;
			res->seq_ns += (unsigned long long)((t1.tv_sec - t0.tv_sec) * 1000000000LL +
			                                    (t1.tv_nsec - t0.tv_nsec));
			if (!rc)
				ps[i] = XXH3_64bits(buf, len);
		}
		if (!rc)
			sums[b] = dit_block_hash_of(ps, np);
	}
	int e = errno;
	free(ps);
	if (fd >= 0)
		close(fd);
	errno = e;
	return rc;
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
	json_object *man = NULL, *fmt, *have, *blocks, *old_files, *files = NULL;
	int ok = 0;
	if (!mpath || dit_io_read_json_object(mpath, (size_t)64 << 20, &man, NULL) != DIT_OK) {
		snprintf(reason, rlen, "no complete store in %s", dir);
		goto out;
	}
	if (json_object_object_get_ex(man, "format", &fmt) && json_object_get_int(fmt) < 4) {
		snprintf(reason, rlen,
		         "the store in %s has an older layout (a file per chunk; now one file "
		         "of blocks for every chunk size)",
		         dir);
		goto out;
	}
	if (!json_object_object_get_ex(man, "format", &fmt) ||
	    json_object_get_int(fmt) != STORE_FORMAT ||
	    !json_object_object_get_ex(man, "identity", &have) || !dit_store_same_json(have, id) ||
	    !json_object_object_get_ex(man, "checkpoint_files", &old_files) ||
	    !json_object_is_type(old_files, json_type_array)) {
		snprintf(reason, rlen, "the store in %s was made from another checkpoint or layout",
		         dir);
		goto out;
	}
	if (!json_object_object_get_ex(man, "blocks", &blocks) ||
	    !json_object_is_type(blocks, json_type_array) ||
	    (int64_t)json_object_array_length(blocks) != m->nblocks) {
		snprintf(reason, rlen, "%s: manifest does not list %lld blocks", mpath,
		         (long long)m->nblocks);
		goto out;
	}
	files = dit_store_ck_files(m, old_files, records, fresh, buf, res, reason, rlen);
	if (!files)
		goto out;
	size_t bytes = block_bytes(m);
	char *path = dit_io_join(dir, DIT_STORE_BLOCKS);
	uint64_t *sums = calloc((size_t)m->nblocks, sizeof *sums);
	struct stat sb;
	if (!path || !sums)
		snprintf(reason, rlen, "out of memory checking the store in %s", dir);
	else if (stat(path, &sb) != 0)
		snprintf(reason, rlen, "%s is missing", path);
	else if ((size_t)sb.st_size != bytes * (size_t)m->nblocks)
		snprintf(reason, rlen, "%s is %lld bytes, the manifest says %zu (truncated?)", path,
		         (long long)sb.st_size, bytes * (size_t)m->nblocks);
	else if (hash_blocks(path, m->nblocks, bytes, buf, sums, res) != 0)
		snprintf(reason, rlen, "%s: cannot be read (%s)", path,
		         errno ? strerror(errno) : "cut short");
	for (int64_t b = 0; !*reason && b < m->nblocks; b++) {
		const char *want =
		    dit_store_get_str(json_object_array_get_idx(blocks, (size_t)b), "xxh3");
		char have_sum[24];
		dit_store_hex(have_sum, sums[b]);
		if (strcmp(have_sum, want) != 0)
			snprintf(reason, rlen,
			         "%s: block %lld has checksum %s, the manifest says %s (corrupted)",
			         path, (long long)b, have_sum, want);
	}
	ok = !*reason;
	free(sums);
	free(path);
out:
	json_object_put(files);
	json_object_put(man);
	free(mpath);
	return ok;
}

/* The blocks file of m (its blocks one after the other, each block_stride floats) under
 * its temporary name, renamed into place once whole; each block's checksum into the
 * manifest's array blocks. */
static dit_status write_blocks(const char *dir, const dit_pool *m, json_object *blocks,
                               const dit_stage_progress *progress, dit_error *err)
{
	size_t bytes = block_bytes(m);
	char *path = dit_io_join(dir, DIT_STORE_BLOCKS);
	float *buf = NULL;
	if (!path || posix_memalign((void **)&buf, 4096, bytes) != 0) {
		free(path);
		return dit_error_set(err, DIT_ENOMEM, "out of memory for one block (%zu bytes)",
		                     bytes);
	}
	dit_io_atomic out;
	dit_status st = dit_io_atomic_open(&out, path, err);
	for (int64_t b = 0; b < m->nblocks && !st; b++) {
		dit_stage_report(progress, "writing the chunk store", (double)b, (double)m->nblocks,
		                 "blocks");
		st = dit_pool_read_block(m, b, buf, err);
		if (!st)
			st = dit_io_atomic_write(&out, buf, bytes, err);
		if (!st) {
			char sum[24];
			dit_store_hex(sum, dit_block_hash(buf, bytes));
			json_object *c = json_object_new_object();
			json_object_object_add(c, "xxh3", json_object_new_string(sum));
			json_object_array_add(blocks, c);
		}
	}
	if (!st)
		st = dit_io_atomic_commit(&out, err);
	else
		dit_io_atomic_abort(&out);
	if (!st)
		dit_stage_report(progress, "writing the chunk store", (double)m->nblocks,
		                 (double)m->nblocks, "blocks");
	free(buf);
	free(path);
	return st;
}

static dit_status write_store(const char *dir, const dit_pool *m, json_object *id,
                              size_t extra_bytes, json_object *records, json_object *fresh,
                              void *hbuf, dit_store_status *res, dit_error *err)
{
	size_t need = block_bytes(m) * (size_t)m->nblocks + extra_bytes;
	/* the store's old files (its blocks file, an older layout's chunk files) are stale:
	 * the store is rewritten, no run reads them; they count as free */
	size_t old = dit_store_old_bytes(dir);
	struct statvfs vfs;
	if (statvfs(dir, &vfs) == 0) {
		size_t avail = (size_t)vfs.f_bavail * vfs.f_frsize + old;
		if (avail < need)
			return dit_error_set(
			    err, DIT_EIO,
			    "%s: not enough space for the chunk store (%.3f GB needed "
			    "with %.3f GB of room for StarPU, %.3f GB free)",
			    dir, (double)need / 1e9, (double)extra_bytes / 1e9,
			    (double)avail / 1e9);
	}
	char *mpath = dit_io_join(dir, MANIFEST);
	if (!mpath)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	/* The store is incomplete until the manifest is back. */
	if (unlink(mpath) != 0 && errno != ENOENT) {
		dit_status st =
		    dit_error_set(err, DIT_EIO, "%s: cannot remove (%s)", mpath, strerror(errno));
		free(mpath);
		return st;
	}
	dit_store_remove_old(dir);
	/* the checkpoint's content, hashed before its blocks are read: a change after
	 * this changes the files' change time, so no record of it matches any more */
	char why[256];
	json_object *files =
	    dit_store_ck_files(m, NULL, records, fresh, hbuf, res, why, sizeof why);
	if (!files) {
		free(mpath);
		return dit_error_set(err, DIT_EIO, "%s", why);
	}
	json_object *man = json_object_new_object();
	json_object_object_add(man, "format", json_object_new_int(STORE_FORMAT));
	json_object_object_add(man, "identity", json_object_get(id));
	json_object_object_add(man, "checkpoint_files", files);
	json_object_object_add(man, "file", json_object_new_string(DIT_STORE_BLOCKS));
	json_object_object_add(man, "block_bytes", json_object_new_int64((int64_t)block_bytes(m)));
	json_object *blocks = json_object_new_array();
	json_object_object_add(man, "blocks", blocks);
	dit_status st = write_blocks(dir, m, blocks, res->progress, err);
	if (!st) {
		const char *text = json_object_to_json_string_ext(man, JSON_C_TO_STRING_PRETTY);
		st = dit_io_write_file_atomic(mpath, text, strlen(text), err);
	}
	json_object_put(man);
	free(mpath);
	return st;
}

/* write_store as a dit_store_way's make: arg the bytes StarPU needs beside. */
static dit_status make_store(const char *dir, const dit_pool *m, json_object *id,
                             json_object *known, json_object *fresh, void *buf,
                             dit_store_status *res, void *arg, dit_error *err)
{
	return write_store(dir, m, id, *(const size_t *)arg, known, fresh, buf, res, err);
}

dit_status dit_store_prepare(const char *dir, const dit_pool *m, size_t extra_bytes,
                             dit_store_lock *lk, dit_store_status *res, dit_error *err)
{
	json_object *id = dit_store_identity(m);
	dit_store_way way = {.intact = store_intact, .make = make_store, .arg = &extra_bytes};
	dit_status st = dit_store_keep_or_make(dir, m, id, &way, lk, res, err);
	json_object_put(id);
	return st;
}

dit_status dit_store_manifest_sums(const char *mpath, const dit_pool *m, uint64_t *sums,
                                   dit_error *err)
{
	json_object *man = NULL, *blocks;
	dit_status st = dit_io_read_json_object(mpath, (size_t)64 << 20, &man, err);
	if (!st && (!json_object_object_get_ex(man, "blocks", &blocks) ||
	            !json_object_is_type(blocks, json_type_array) ||
	            (int64_t)json_object_array_length(blocks) != m->nblocks))
		st = dit_error_set(err, DIT_EFORMAT, "%s: manifest does not list %lld blocks",
		                   mpath, (long long)m->nblocks);
	for (int64_t b = 0; !st && b < m->nblocks; b++) {
		const char *s =
		    dit_store_get_str(json_object_array_get_idx(blocks, (size_t)b), "xxh3");
		char *end;
		errno = 0;
		sums[b] = strtoull(s, &end, 16);
		if (strlen(s) != 16 || *end || errno)
			st = dit_error_set(err, DIT_EFORMAT, "%s: block %lld has no valid xxh3",
			                   mpath, (long long)b);
	}
	json_object_put(man);
	return st;
}

dit_status dit_store_block_sums(const char *dir, const dit_pool *m, uint64_t *sums, dit_error *err)
{
	char *mpath = dit_io_join(dir, MANIFEST);
	dit_status st = mpath ? dit_store_manifest_sums(mpath, m, sums, err)
	                      : dit_error_set(err, DIT_ENOMEM, "out of memory");
	free(mpath);
	return st;
}
