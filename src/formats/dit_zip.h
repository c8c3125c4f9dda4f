/* The members of a zip file as its central directory lists them, each checked against
 * the file: the layout torch.save writes (one folder of members stored uncompressed,
 * zip64 records when the file passes 4 GiB), read without libarchive so that every
 * member's data offset is known and tensors can be read in place.
 *
 * The image is a file read with pread (at an offset: a zip inside an uncompressed tar)
 * or bytes in memory. Checked when it is opened: the end record (zip64 or not) and the
 * central directory within the image and the caps, one disk, every entry's local
 * header where the directory says with the same name, each member's data inside the
 * image and before the central directory, no two members overlapping, unique names
 * without NUL bytes. Member data are not checked until read (dit_zip_read checks the
 * CRC of what it reads). */
#ifndef DIT_ZIP_H
#define DIT_ZIP_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"

/* Caps checked before anything is allocated for them. */
#define DIT_ZIP_MAX_MEMBERS ((size_t)1 << 20)    /* central directory entries */
#define DIT_ZIP_MAX_CDIR    ((uint64_t)64 << 20) /* central directory bytes */

/* Where the zip is read from: fd >= 0 (pread at base + offset), else mem. */
typedef struct dit_zip_src {
	int fd;
	uint64_t base;
	const uint8_t *mem;
	uint64_t size; /* bytes of the image */
} dit_zip_src;

typedef struct dit_zip_member {
	char *name;      /* as stored; no NUL inside */
	uint16_t method; /* 0: stored, 8: deflate, ... */
	uint16_t flags;  /* bit 0: encrypted */
	uint32_t crc;
	uint64_t csize, size; /* compressed and uncompressed bytes */
	uint64_t header;      /* offset of the local header in the image */
	uint64_t data;        /* offset of the member's data in the image */
} dit_zip_member;

typedef struct dit_zip {
	dit_zip_src src;
	char *label;             /* names the zip in messages (escaped) */
	dit_zip_member *members; /* sorted by name */
	size_t nmembers;
} dit_zip;

/* Opens the zip in src (borrowed: it must stay valid until dit_zip_close); name names
 * it in messages. Errors are DIT_EFORMAT naming the zip (and the member). */
dit_status dit_zip_open(dit_zip **out, const char *name, const dit_zip_src *src, dit_error *err);
void dit_zip_close(dit_zip *z);

/* The member called name; NULL when absent. */
const dit_zip_member *dit_zip_find(const dit_zip *z, const char *name);

/* Reads the whole of a stored member (at most max bytes, else DIT_EFORMAT) into a new
 * buffer (*out, NUL-terminated, *len bytes) and checks its CRC. A compressed or
 * encrypted member is DIT_EUNSUPPORTED. */
dit_status dit_zip_read(const dit_zip *z, const dit_zip_member *m, uint64_t max, uint8_t **out,
                        size_t *len, dit_error *err);

/* Whether the member is stored as is: not compressed, not encrypted. */
int dit_zip_is_stored(const dit_zip_member *m);

/* The CRC-32 of zip (and gzip) of n bytes, continuing from crc (0 to start). */
uint32_t dit_zip_crc32(uint32_t crc, const uint8_t *p, size_t n);

#endif
