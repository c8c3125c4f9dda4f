/* Reading the data of archive members (see dit_archive.h): the archive file through
 * pread, members decompressed into memory within the caps, members of an uncompressed
 * tar located in the file. */
#define _POSIX_C_SOURCE 200809L

#include "dit_archive_priv.h"

#include "dit_input.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The archive file as libarchive's client: read by pread in blocks, so that nothing is
 * mapped (a file that shrinks is a short read, reported as a truncated archive). */

static la_ssize_t ar_cl_read(struct archive *a, void *ud, const void **out)
{
	dit_archive_client *c = ud;
	uint64_t left = c->pos < c->size ? c->size - c->pos : 0;
	size_t k = left < AR_BLOCK ? (size_t)left : AR_BLOCK;
	int64_t got = dit_input_pread(c->fd, c->buf, k, c->pos);
	if (got < 0) {
		archive_set_error(a, errno, "read failed: %s", strerror(errno));
		return ARCHIVE_FATAL;
	}
	c->pos += (uint64_t)got;
	*out = c->buf;
	return (la_ssize_t)got;
}

static la_int64_t ar_cl_skip(struct archive *a, void *ud, la_int64_t n)
{
	(void)a;
	dit_archive_client *c = ud;
	uint64_t left = c->pos < c->size ? c->size - c->pos : 0;
	if (n < 0)
		return 0;
	if ((uint64_t)n > left)
		n = (la_int64_t)left;
	c->pos += (uint64_t)n;
	return n;
}

static la_int64_t ar_cl_seek(struct archive *a, void *ud, la_int64_t off, int whence)
{
	dit_archive_client *c = ud;
	int64_t base = whence == SEEK_SET   ? 0
	               : whence == SEEK_CUR ? (int64_t)c->pos
	                                    : (int64_t)c->size;
	if ((whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) ||
	    (off < 0 && -off > base) || (off > 0 && off > INT64_MAX - base)) {
		archive_set_error(a, EINVAL, "seek out of range");
		return ARCHIVE_FATAL;
	}
	c->pos = (uint64_t)(base + off);
	return (la_int64_t)c->pos;
}

/* A libarchive reader on the archive (its image, or the file through cl). */
dit_status dit_archive_reader_begin(dit_archive *ar, dit_archive_client *cl, struct archive **out,
                                    dit_error *err)
{
	char m[AR_QBUF];
	*out = NULL;
	struct archive *a = archive_read_new();
	if (!a)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ar->label);
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_zip(a);
	int r;
	if (ar->image) {
		r = archive_read_open_memory(a, ar->image, (size_t)ar->size);
	} else {
		*cl = (dit_archive_client){.fd = ar->fd, .size = ar->size, .buf = malloc(AR_BLOCK)};
		if (!cl->buf) {
			archive_read_free(a);
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ar->label);
		}
		archive_read_set_read_callback(a, ar_cl_read);
		archive_read_set_skip_callback(a, ar_cl_skip);
		archive_read_set_seek_callback(a, ar_cl_seek);
		archive_read_set_callback_data(a, cl);
		r = archive_read_open1(a);
	}
	if (r != ARCHIVE_OK) {
		dit_status st = dit_error_set(err, DIT_EFORMAT, "%s: not a tar or zip archive: %s",
		                              ar->label, ar_libmsg(m, sizeof m, a));
		dit_archive_reader_end(a, cl); /* the read buffer too */
		return st;
	}
	*out = a;
	return DIT_OK;
}

void dit_archive_reader_end(struct archive *a, dit_archive_client *cl)
{
	archive_read_free(a);
	free(cl->buf);
	cl->buf = NULL;
}

/* A gzip or zstd stream may not inflate beyond the ratio cap of what it has read. */
dit_status dit_archive_ratio_check(dit_archive *ar, struct archive *a, const char *qname,
                                   dit_error *err)
{
	if (!ar->stream)
		return DIT_OK;
	la_int64_t outb = archive_filter_bytes(a, 0), inb = archive_filter_bytes(a, -1);
	if (outb < 0 || inb < 0)
		return DIT_OK;
	if ((uint64_t)outb > DIT_ARCHIVE_MAX_RATIO * (uint64_t)inb + DIT_ARCHIVE_RATIO_GRACE)
		return dit_error_set(
		    err, DIT_EFORMAT,
		    "%s: compressed stream inflates %lld bytes from %lld (at member "
		    "'%s'), over the limit of %d times plus %llu bytes",
		    ar->label, (long long)outb, (long long)inb, qname, DIT_ARCHIVE_MAX_RATIO,
		    (unsigned long long)DIT_ARCHIVE_RATIO_GRACE);
	return DIT_OK;
}

/* The most bytes one more member may decompress into memory (within limit, the caller's
 * cap): what the per-member, total and (zip) ratio caps leave. *which names the cap. */
static uint64_t ar_budget(const dit_archive *ar, uint64_t limit, const char **which)
{
	uint64_t b = limit;
	*which = "limit for this member";
	if (DIT_ARCHIVE_MAX_INFLATED_MEMBER < b) {
		b = DIT_ARCHIVE_MAX_INFLATED_MEMBER;
		*which = "limit per decompressed member";
	}
	uint64_t left = DIT_ARCHIVE_MAX_INFLATED - ar->inflated;
	if (left < b) {
		b = left;
		*which = "limit on all decompressed members, less what is loaded";
	}
	if (ar->zip) {
		uint64_t cap = DIT_ARCHIVE_MAX_RATIO * ar->size + DIT_ARCHIVE_RATIO_GRACE;
		left = cap > ar->inflated ? cap - ar->inflated : 0;
		if (left < b) {
			b = left;
			*which =
			    "compression ratio limit (100 times the archive plus 16 MiB), less "
			    "what is loaded";
		}
	}
	return b;
}

/* Reads the current member's data: into a new buffer when keep, else only counted.
 * declared < 0 when the archive does not give the size; limit caps what is read. */
dit_status dit_archive_data_read(dit_archive *ar, struct archive *a, const char *name,
                                 int64_t declared, uint64_t limit, int keep, uint8_t **buf,
                                 uint64_t *got_out, dit_error *err)
{
	char q[AR_QBUF], m[AR_QBUF];
	uint8_t *dst = NULL;
	size_t cap = 0;
	uint64_t got = 0;
	dit_status st = DIT_OK;
	ar_quote(q, sizeof q, name);
	*buf = NULL;
	if (keep) {
		cap = declared >= 0 ? (size_t)declared : 1 << 16;
		dst = malloc(cap + 1);
		if (!dst)
			return dit_error_set(err, DIT_ENOMEM,
			                     "%s: member '%s': out of memory for %zu bytes",
			                     ar->label, q, cap);
	}
	for (;;) {
		const void *blk;
		size_t len;
		la_int64_t off;
		int r = archive_read_data_block(a, &blk, &len, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: member '%s' is truncated or corrupt: %s", ar->label,
			                   q, ar_libmsg(m, sizeof m, a));
			break;
		}
		if (off < 0 || (uint64_t)off != got) {
			st = dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: member '%s' has holes (sparse data is not supported)", ar->label,
			    q);
			break;
		}
		if (len > limit - got || (declared >= 0 && len > (uint64_t)declared - got)) {
			st = dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: member '%s' holds more than its %s of %llu bytes", ar->label, q,
			    declared >= 0 ? "declared size" : "limit",
			    (unsigned long long)(declared >= 0 ? (uint64_t)declared : limit));
			break;
		}
		if ((st = dit_archive_ratio_check(ar, a, q, err)) != DIT_OK)
			break;
		if (keep && len > 0) { /* an empty block may come as a NULL pointer */
			if (got + len > cap) {
				size_t ncap = cap * 2 > got + len ? cap * 2 : (size_t)(got + len);
				uint8_t *nd = realloc(dst, ncap + 1);
				if (!nd) {
					st = dit_error_set(err, DIT_ENOMEM,
					                   "%s: member '%s': out of memory",
					                   ar->label, q);
					break;
				}
				dst = nd;
				cap = ncap;
			}
			memcpy(dst + got, blk, len);
		}
		got += len;
	}
	if (st == DIT_OK && declared >= 0 && got != (uint64_t)declared)
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: member '%s' is truncated (%llu of %lld bytes)", ar->label,
		                   q, (unsigned long long)got, (long long)declared);
	if (st != DIT_OK) {
		free(dst);
		return st;
	}
	if (dst)
		dst[got] = '\0';
	*buf = dst;
	*got_out = got;
	return DIT_OK;
}

/* Loads the current member mb into memory (decompressing it), within the caps. */
dit_status dit_archive_member_load(dit_archive *ar, struct archive *a, dit_archive_member *mb,
                                   int64_t declared, uint64_t limit, dit_error *err)
{
	char q[AR_QBUF];
	const char *which;
	uint64_t budget = ar_budget(ar, limit, &which);
	if (declared >= 0 && (uint64_t)declared > budget)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s' declares %lld bytes to decompress into "
		                     "memory, over the %s: %llu bytes",
		                     ar->label, ar_quote(q, sizeof q, mb->name),
		                     (long long)declared, which, (unsigned long long)budget);
	uint64_t got = 0;
	dit_status st =
	    dit_archive_data_read(ar, a, mb->name, declared, budget, 1, &mb->owned, &got, err);
	if (st != DIT_OK)
		return st;
	mb->data = mb->owned;
	mb->size = got;
	ar->inflated += got;
	return DIT_OK;
}

/* The current member of an uncompressed tar: its data start from the bytes the
 * format has consumed, checked against the first block libarchive hands out. */
dit_status dit_archive_member_locate(dit_archive *ar, struct archive *a, dit_archive_member *mb,
                                     int64_t declared, dit_error *err)
{
	char q[AR_QBUF], m[AR_QBUF];
	ar_quote(q, sizeof q, mb->name);
	la_int64_t off = archive_filter_bytes(a, 0);
	if (declared < 0)
		return dit_error_set(err, DIT_EFORMAT, "%s: member '%s' has no size", ar->label, q);
	if (off < 0 || (uint64_t)off > ar->size || (uint64_t)declared > ar->size - (uint64_t)off)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s' is truncated (declares %lld bytes, only "
		                     "%lld present)",
		                     ar->label, q, (long long)declared,
		                     off < 0 || (uint64_t)off > ar->size
		                         ? 0LL
		                         : (long long)(ar->size - (uint64_t)off));
	mb->offset = (uint64_t)off;
	mb->size = (uint64_t)declared;
	if (declared == 0)
		return DIT_OK;
	const void *blk;
	size_t len;
	la_int64_t boff;
	int r = archive_read_data_block(a, &blk, &len, &boff);
	if (r < ARCHIVE_WARN)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s' is truncated or corrupt: %s", ar->label, q,
		                     ar_libmsg(m, sizeof m, a));
	if (r == ARCHIVE_EOF || boff != 0 || len == 0)
		return dit_error_set(err, DIT_EFORMAT, "%s: member '%s' has no data where expected",
		                     ar->label, q);
	size_t cmp = len < AR_VERIFY_BYTES ? len : AR_VERIFY_BYTES;
	if ((uint64_t)cmp > (uint64_t)declared)
		cmp = (size_t)declared;
	uint8_t here[AR_VERIFY_BYTES];
	const uint8_t *at = here;
	if (ar->image)
		at = (const uint8_t *)ar->image + off;
	else if (dit_input_pread(ar->fd, here, cmp, (uint64_t)off) != (int64_t)cmp)
		return dit_error_set(err, DIT_EFORMAT, "%s: member '%s' is truncated", ar->label,
		                     q);
	if (memcmp(blk, at, cmp) != 0)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s': cannot locate its data in the archive",
		                     ar->label, q);
	return DIT_OK;
}

/* Makes a located member (in place) available in memory: a pointer into the image, or
 * a copy read from the file. */
dit_status dit_archive_member_copy(dit_archive *ar, dit_archive_member *mb, uint64_t limit,
                                   dit_error *err)
{
	char q[AR_QBUF];
	if (ar->image) {
		mb->data = (const uint8_t *)ar->image + mb->offset;
		return DIT_OK;
	}
	const char *which;
	uint64_t budget = ar_budget(ar, limit, &which);
	if (mb->size > budget)
		return dit_error_set(
		    err, DIT_EFORMAT,
		    "%s: member '%s' declares %llu bytes to copy into memory, over "
		    "the %s: %llu bytes",
		    ar->label, ar_quote(q, sizeof q, mb->name), (unsigned long long)mb->size, which,
		    (unsigned long long)budget);
	if (!(mb->owned = malloc((size_t)mb->size + 1)))
		return dit_error_set(err, DIT_ENOMEM, "%s: member '%s': out of memory", ar->label,
		                     ar_quote(q, sizeof q, mb->name));
	if (dit_input_pread(ar->fd, mb->owned, (size_t)mb->size, mb->offset) != (int64_t)mb->size)
		return dit_error_set(err, DIT_EFORMAT, "%s: member '%s' is truncated", ar->label,
		                     ar_quote(q, sizeof q, mb->name));
	mb->owned[mb->size] = '\0';
	mb->data = mb->owned;
	ar->inflated += mb->size;
	return DIT_OK;
}
