/* Archives read in place with libarchive (see dit_archive.h). */
#define _POSIX_C_SOURCE 200809L

#include "dit_archive.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#define AR_QUOTE_MAX 120
#define AR_QBUF      (AR_QUOTE_MAX * 4 + 8)
/* Bytes compared to check that a member's data lies where the map says. */
#define AR_VERIFY_BYTES 4096

static const char *ar_quote(char *buf, size_t cap, const char *s)
{
	return dit_error_quote(buf, cap, s, strlen(s), AR_QUOTE_MAX);
}

static const char *ar_libmsg(char *buf, size_t cap, struct archive *a)
{
	const char *m = archive_error_string(a);
	return ar_quote(buf, cap, m ? m : "unknown error");
}

/* Normalises raw into *out (malloc'd): "./" and empty components dropped. Returns NULL,
 * or why the name is refused. An empty result is "" (the archive root). */
static const char *ar_normalise(const char *raw, char **out)
{
	*out = NULL;
	if (raw[0] == '/')
		return "is an absolute path";
	size_t n = strlen(raw);
	char *s = malloc(n + 1);
	if (!s)
		return "cannot be stored: out of memory";
	size_t o = 0;
	const char *p = raw;
	while (*p) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			free(s);
			return "has a '..' component";
		}
		if (len > 0 && !(len == 1 && p[0] == '.')) {
			if (o > 0)
				s[o++] = '/';
			memcpy(s + o, p, len);
			o += len;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	s[o] = '\0';
	*out = s;
	return NULL;
}

static const char *ar_kind(struct archive_entry *e)
{
	if (archive_entry_hardlink(e))
		return "a hard link";
	switch (archive_entry_filetype(e)) {
	case AE_IFLNK: return "a symbolic link";
	case AE_IFCHR: return "a character device";
	case AE_IFBLK: return "a block device";
	case AE_IFIFO: return "a fifo";
	case AE_IFSOCK: return "a socket";
	default: return "not a regular file";
	}
}

static int ar_cmp_member(const void *a, const void *b)
{
	return strcmp(((const dit_archive_member *)a)->name, ((const dit_archive_member *)b)->name);
}

/* Reads the current member's data: into a new buffer when keep, else only counted.
 * declared < 0 when the archive does not give the size; limit caps what is read. */
static dit_status ar_read_data(dit_archive *ar, struct archive *a, const char *name,
                               int64_t declared, uint64_t limit, int keep, uint8_t **buf,
                               uint64_t *got_out, dit_error *err)
{
	char q[AR_QBUF], m[AR_QBUF];
	uint8_t *dst = NULL;
	size_t cap = 0;
	uint64_t got = 0;
	*buf = NULL;
	if (keep) {
		cap = declared >= 0 ? (size_t)declared : 1 << 16;
		dst = malloc(cap + 1);
		if (!dst)
			return dit_error_set(err, DIT_ENOMEM,
			                     "%s: member '%s': out of memory for %zu bytes",
			                     ar->path, ar_quote(q, sizeof q, name), cap);
	}
	for (;;) {
		const void *blk;
		size_t len;
		la_int64_t off;
		int r = archive_read_data_block(a, &blk, &len, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			free(dst);
			return dit_error_set(
			    err, DIT_EFORMAT, "%s: member '%s' is truncated or corrupt: %s",
			    ar->path, ar_quote(q, sizeof q, name), ar_libmsg(m, sizeof m, a));
		}
		if (off < 0 || (uint64_t)off != got) {
			free(dst);
			return dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: member '%s' has holes (sparse data is not supported)", ar->path,
			    ar_quote(q, sizeof q, name));
		}
		if (len > limit - got || (declared >= 0 && len > (uint64_t)declared - got)) {
			free(dst);
			return dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: member '%s' holds more than its %s of %llu bytes", ar->path,
			    ar_quote(q, sizeof q, name), declared >= 0 ? "declared size" : "limit",
			    (unsigned long long)(declared >= 0 ? (uint64_t)declared : limit));
		}
		if (keep && len > 0) { /* an empty block may come as a NULL pointer */
			if (got + len > cap) {
				size_t ncap = cap * 2 > got + len ? cap * 2 : (size_t)(got + len);
				uint8_t *nd = realloc(dst, ncap + 1);
				if (!nd) {
					free(dst);
					return dit_error_set(err, DIT_ENOMEM,
					                     "%s: member '%s': out of memory",
					                     ar->path, ar_quote(q, sizeof q, name));
				}
				dst = nd;
				cap = ncap;
			}
			memcpy(dst + got, blk, len);
		}
		got += len;
	}
	if (declared >= 0 && got != (uint64_t)declared) {
		free(dst);
		return dit_error_set(
		    err, DIT_EFORMAT, "%s: member '%s' is truncated (%llu of %lld bytes)", ar->path,
		    ar_quote(q, sizeof q, name), (unsigned long long)got, (long long)declared);
	}
	if (dst)
		dst[got] = '\0';
	*buf = dst;
	*got_out = got;
	return DIT_OK;
}

/* The current member of an uncompressed tar: its data start from the bytes the
 * format has consumed, checked against the first block libarchive hands out. */
/* Whether libarchive decodes the current zip member as stored or deflated: its format
 * name for the member is "ZIP v.v (METHOD)". Other methods are refused: libarchive's
 * LZMA, XZ and BZip2 decoders allocate the dictionary a 100-byte header declares
 * (GBs) before any data is read. method receives the name (for the message). */
static int ar_zip_method_ok(struct archive *a, char *method, size_t len)
{
	const char *f = archive_format_name(a);
	const char *open = f ? strchr(f, '(') : NULL, *close = open ? strchr(open, ')') : NULL;
	snprintf(method, len, "%.*s", close ? (int)(close - open - 1) : 7,
	         close ? open + 1 : "unknown");
	return strcmp(method, "uncompressed") == 0 || strcmp(method, "deflation") == 0;
}

static dit_status ar_locate(dit_archive *ar, struct archive *a, const char *name, int64_t declared,
                            const uint8_t **data, dit_error *err)
{
	char q[AR_QBUF], m[AR_QBUF];
	la_int64_t off = archive_filter_bytes(a, 0);
	if (declared < 0)
		return dit_error_set(err, DIT_EFORMAT, "%s: member '%s' has no size", ar->path,
		                     ar_quote(q, sizeof q, name));
	if (off < 0 || (uint64_t)off > ar->map_size ||
	    (uint64_t)declared > ar->map_size - (uint64_t)off)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s' is truncated (declares %lld bytes, only "
		                     "%lld present)",
		                     ar->path, ar_quote(q, sizeof q, name), (long long)declared,
		                     off < 0 || (uint64_t)off > ar->map_size
		                         ? 0LL
		                         : (long long)(ar->map_size - (uint64_t)off));
	*data = (const uint8_t *)ar->map + off;
	if (declared == 0)
		return DIT_OK;
	const void *blk;
	size_t len;
	la_int64_t boff;
	int r = archive_read_data_block(a, &blk, &len, &boff);
	if (r < ARCHIVE_WARN)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s' is truncated or corrupt: %s", ar->path,
		                     ar_quote(q, sizeof q, name), ar_libmsg(m, sizeof m, a));
	if (r == ARCHIVE_EOF || boff != 0 || len == 0)
		return dit_error_set(err, DIT_EFORMAT, "%s: member '%s' has no data where expected",
		                     ar->path, ar_quote(q, sizeof q, name));
	size_t cmp = len < AR_VERIFY_BYTES ? len : AR_VERIFY_BYTES;
	if ((uint64_t)cmp > (uint64_t)declared)
		cmp = (size_t)declared;
	if (memcmp(blk, *data, cmp) != 0)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s': cannot locate its data in the archive",
		                     ar->path, ar_quote(q, sizeof q, name));
	return DIT_OK;
}

static dit_status ar_map(dit_archive *ar, dit_error *err)
{
	int fd = open(ar->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return dit_error_set(err, e == ENOENT ? DIT_ENOTFOUND : DIT_EIO,
		                     "%s: cannot open: %s", ar->path, strerror(e));
	}
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return dit_error_set(err, DIT_EIO, "%s: not a readable regular file", ar->path);
	}
	if (sb.st_size <= 0) {
		close(fd);
		return dit_error_set(err, DIT_EFORMAT, "%s: empty file, not an archive", ar->path);
	}
	void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	int e = errno;
	close(fd);
	if (p == MAP_FAILED)
		return dit_error_set(err, DIT_EIO, "%s: cannot map: %s", ar->path, strerror(e));
	ar->map = p;
	ar->map_size = (size_t)sb.st_size;
	ar->map_owned = 1;
	return DIT_OK;
}

/* Reads every entry of the archive at ar->map; max_entries > 0 caps the entries. */
static dit_status ar_read_all(dit_archive *ar, size_t max_entries, dit_archive_want_fn want,
                              void *ud, dit_error *err)
{
	char q[AR_QBUF], m[AR_QBUF];
	struct archive *a = archive_read_new();
	if (!a)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ar->path);
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_zip(a);
	dit_status st = DIT_OK;
	size_t cap = 0;
	char *name = NULL;
	char last[AR_QBUF] = "";
	size_t entries = 0;
	if (archive_read_open_memory(a, ar->map, ar->map_size) != ARCHIVE_OK) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: not a tar or zip archive: %s", ar->path,
		                   ar_libmsg(m, sizeof m, a));
		goto out;
	}
	for (int first = 1;; first = 0) {
		struct archive_entry *e;
		int r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			if (first)
				st = dit_error_set(err, DIT_EFORMAT,
				                   "%s: not a tar or zip archive: %s", ar->path,
				                   ar_libmsg(m, sizeof m, a));
			else
				st = dit_error_set(err, DIT_EFORMAT,
				                   "%s: truncated or corrupt after member '%s': %s",
				                   ar->path, last, ar_libmsg(m, sizeof m, a));
			goto out;
		}
		if (max_entries > 0 && ++entries > max_entries) {
			st = dit_error_set(err, DIT_EFORMAT, "%s: more than %zu entries", ar->path,
			                   max_entries);
			goto out;
		}
		if (first)
			ar->in_place =
			    archive_filter_code(a, 0) == ARCHIVE_FILTER_NONE &&
			    (archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_TAR;
		const char *raw = archive_entry_pathname(e);
		if (!raw)
			raw = archive_entry_pathname_utf8(e);
		if (!raw) {
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: member after '%s' has a name that cannot be read",
			                   ar->path, last);
			goto out;
		}
		ar_quote(last, sizeof last, raw);
		const char *why = ar_normalise(raw, &name);
		if (why) {
			st = dit_error_set(err, DIT_EFORMAT, "%s: member '%s' %s", ar->path, last,
			                   why);
			goto out;
		}
		if (archive_entry_filetype(e) == AE_IFDIR && !archive_entry_hardlink(e)) {
			free(name);
			name = NULL;
			continue;
		}
		if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e)) {
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: member '%s' is %s (only regular files and "
			                   "directories are accepted)",
			                   ar->path, last, ar_kind(e));
			goto out;
		}
		if (name[0] == '\0') {
			st = dit_error_set(err, DIT_EFORMAT, "%s: member '%s' has an empty name",
			                   ar->path, last);
			goto out;
		}
		if (archive_entry_sparse_count(e) > 0) {
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: member '%s' is a sparse file (not supported)",
			                   ar->path, last);
			goto out;
		}
		uint64_t limit = want ? want(name, ud) : 0;
		int keep = limit > 0;
		if (!keep || limit > DIT_ARCHIVE_MAX_MEMBER)
			limit = DIT_ARCHIVE_MAX_MEMBER;
		int64_t declared = archive_entry_size_is_set(e) ? archive_entry_size(e) : -1;
		if (declared >= 0 && (uint64_t)declared > limit) {
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: member '%s' declares %lld bytes, more than the "
			                   "limit of %llu",
			                   ar->path, last, (long long)declared,
			                   (unsigned long long)limit);
			goto out;
		}
		if (ar->nmembers == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			dit_archive_member *nm = realloc(ar->members, ncap * sizeof *nm);
			if (!nm) {
				st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ar->path);
				goto out;
			}
			ar->members = nm;
			cap = ncap;
		}
		char method[64];
		if ((archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_ZIP &&
		    !ar_zip_method_ok(a, method, sizeof method)) {
			st = dit_error_set(err, DIT_EUNSUPPORTED,
			                   "%s: member '%s' uses zip compression '%s' (only stored "
			                   "and deflate members are accepted)",
			                   ar->path, last, method);
			goto out;
		}
		dit_archive_member *mb = &ar->members[ar->nmembers];
		memset(mb, 0, sizeof *mb);
		mb->name = name;
		name = NULL;
		ar->nmembers++;
		if (ar->in_place) {
			st = ar_locate(ar, a, mb->name, declared, &mb->data, err);
			mb->size = (uint64_t)declared;
			if (!keep)
				mb->data = NULL;
		} else {
			uint64_t got = 0;
			st = ar_read_data(ar, a, mb->name, declared, limit, keep, &mb->owned, &got,
			                  err);
			mb->data = mb->owned;
			mb->size = got;
		}
		if (st != DIT_OK)
			goto out;
	}
	if (ar->nmembers > 1)
		qsort(ar->members, ar->nmembers, sizeof *ar->members, ar_cmp_member);
	for (size_t i = 1; i < ar->nmembers; i++) {
		if (strcmp(ar->members[i - 1].name, ar->members[i].name) == 0) {
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: member '%s' appears more than once (after removing "
			                   "'./' and '//')",
			                   ar->path, ar_quote(q, sizeof q, ar->members[i].name));
			goto out;
		}
	}
out:
	free(name);
	archive_read_free(a);
	return st;
}

/* A new archive labelled path, its map from the file (data NULL) or data[0..size). */
static dit_status ar_open(dit_archive **out, const char *path, const void *data, size_t size,
                          size_t max_entries, dit_archive_want_fn want, void *ud, dit_error *err)
{
	*out = NULL;
	dit_archive *ar = calloc(1, sizeof *ar);
	if (!ar || !(ar->path = strdup(path))) {
		free(ar);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	}
	dit_status st = DIT_OK;
	if (data) {
		/* read-only like the file's map: nothing writes through it */
		ar->map = (void *)(uintptr_t)data;
		ar->map_size = size;
	} else {
		st = ar_map(ar, err);
	}
	if (st == DIT_OK)
		st = ar_read_all(ar, max_entries, want, ud, err);
	if (st != DIT_OK) {
		dit_archive_close(ar);
		return st;
	}
	*out = ar;
	return DIT_OK;
}

dit_status dit_archive_open(dit_archive **out, const char *path, dit_archive_want_fn want, void *ud,
                            dit_error *err)
{
	if (!out || !path)
		return dit_error_set(err, DIT_EINVAL, "dit_archive_open: NULL argument");
	return ar_open(out, path, NULL, 0, 0, want, ud, err);
}

dit_status dit_archive_open_mem(dit_archive **out, const char *name, const void *data, size_t size,
                                size_t max_entries, dit_archive_want_fn want, void *ud,
                                dit_error *err)
{
	if (!out || !name || (!data && size > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_archive_open_mem: NULL argument");
	*out = NULL;
	if (size == 0)
		return dit_error_set(err, DIT_EFORMAT, "%s: empty, not an archive", name);
	return ar_open(out, name, data, size, max_entries, want, ud, err);
}

void dit_archive_close(dit_archive *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nmembers; i++) {
		free(a->members[i].name);
		free(a->members[i].owned);
	}
	free(a->members);
	if (a->map && a->map_owned)
		munmap(a->map, a->map_size);
	free(a->path);
	free(a);
}

const dit_archive_member *dit_archive_find(const dit_archive *a, const char *name)
{
	if (!a || !name || a->nmembers == 0)
		return NULL;
	dit_archive_member key = {.name = (char *)name};
	return bsearch(&key, a->members, a->nmembers, sizeof *a->members, ar_cmp_member);
}
