/* What the archive reader's entry checks (dit_archive.c) and its data reads
 * (dit_archive_data.c) share (private). */
#ifndef DIT_ARCHIVE_PRIV_H
#define DIT_ARCHIVE_PRIV_H

#include <string.h>

#include <archive.h>
#include <archive_entry.h>

#include "dit_archive.h"

#define AR_QUOTE_MAX 120
#define AR_QBUF      (AR_QUOTE_MAX * 4 + 8)
/* Bytes compared to check that a member's data lies where the offset says. */
#define AR_VERIFY_BYTES 4096
/* Bytes read from the archive file per call. */
#define AR_BLOCK ((size_t)1 << 20)

static inline const char *ar_quote(char *buf, size_t cap, const char *s)
{
	return dit_error_quote(buf, cap, s, strlen(s), AR_QUOTE_MAX);
}

static inline const char *ar_libmsg(char *buf, size_t cap, struct archive *a)
{
	const char *m = archive_error_string(a);
	return ar_quote(buf, cap, m ? m : "unknown error");
}

/* The archive file as libarchive's client: read by pread in blocks, so that nothing is
 * mapped (a file that shrinks is a short read, reported as a truncated archive). */
typedef struct dit_archive_client {
	int fd;
	uint64_t size, pos;
	uint8_t *buf;
} dit_archive_client;

/* A libarchive reader on the archive: its image, or the file through cl (released by
 * dit_archive_reader_end). */
dit_status dit_archive_reader_begin(dit_archive *ar, dit_archive_client *cl, struct archive **out,
                                    dit_error *err);
void dit_archive_reader_end(struct archive *a, dit_archive_client *cl);

/* A gzip or zstd stream may not inflate beyond the ratio cap of what it has read;
 * qname is the quoted member name. */
dit_status dit_archive_ratio_check(dit_archive *ar, struct archive *a, const char *qname,
                                   dit_error *err);

/* Reads the current member's data: into a new buffer (*buf) when keep, else only
 * counted. declared < 0 when the archive does not give the size; limit caps what is
 * read. */
dit_status dit_archive_data_read(dit_archive *ar, struct archive *a, const char *name,
                                 int64_t declared, uint64_t limit, int keep, uint8_t **buf,
                                 uint64_t *got_out, dit_error *err);

/* Loads the current member mb into memory (decompressing it), within limit and the
 * caps on what is decompressed. */
dit_status dit_archive_member_load(dit_archive *ar, struct archive *a, dit_archive_member *mb,
                                   int64_t declared, uint64_t limit, dit_error *err);

/* The current member of an uncompressed tar: sets its offset and size from the bytes the
 * format has consumed, checked against the first block libarchive hands out. */
dit_status dit_archive_member_locate(dit_archive *ar, struct archive *a, dit_archive_member *mb,
                                     int64_t declared, dit_error *err);

/* Makes a located member available in memory: a pointer into the image, or a copy read
 * from the file (within limit and the caps). */
dit_status dit_archive_member_copy(dit_archive *ar, dit_archive_member *mb, uint64_t limit,
                                   dit_error *err);

#endif
