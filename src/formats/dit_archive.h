/* Archives read in place with libarchive: tar (plain, gzip or zstd) and zip. Nothing is
 * extracted to disk. The archive file is read with pread, never mapped (or given in
 * memory, see dit_archive_open_mem): the members of an uncompressed tar are used where
 * they lie in the file (no copy), members of a compressed tar or of a zip are
 * decompressed into malloc'd buffers, and only the members asked for.
 *
 * Every member is checked while the archive is read: regular files and directories only
 * (symbolic and hard links, devices, fifos and sparse files are refused), names
 * normalised ("./" and empty components dropped) and unique after normalisation,
 * absolute names and ".." components refused, a declared size within the cap, and
 * exactly the declared number of bytes present in each member that is read. Directory
 * entries are skipped. What is decompressed into memory is capped (below). Errors are
 * one line naming the archive and the member (names escaped, dit_input_label). */
#ifndef DIT_ARCHIVE_H
#define DIT_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"

/* No member may declare more than this, loaded or not. */
#define DIT_ARCHIVE_MAX_MEMBER ((uint64_t)1 << 40)
/* Entries (members and directories) of an archive file. */
#define DIT_ARCHIVE_MAX_ENTRIES ((size_t)1 << 18)
/* Decompressed into memory: per member, and all members together. */
#define DIT_ARCHIVE_MAX_INFLATED_MEMBER ((uint64_t)64 << 30)
#define DIT_ARCHIVE_MAX_INFLATED        ((uint64_t)256 << 30)
/* Compression ratio: a gzip or zstd stream may not inflate to more than RATIO times
 * the compressed bytes read so far plus GRACE (checked as it is read), and the zip
 * members loaded not to more than RATIO times the archive file plus GRACE (checked
 * on their declared sizes before they are decompressed). Real checkpoints compress
 * less than 2:1; a zip or gzip bomb reaches 1000:1. */
#define DIT_ARCHIVE_MAX_RATIO   100
#define DIT_ARCHIVE_RATIO_GRACE ((uint64_t)16 << 20)

typedef struct dit_archive_member {
	char *name;          /* normalised */
	uint64_t size;       /* bytes, as declared and, when read, as read */
	uint64_t offset;     /* in place (uncompressed tar): where the data start */
	const uint8_t *data; /* NULL when the member is not loaded into memory */
	uint8_t *owned;      /* the buffer behind data when copied, else NULL */
} dit_archive_member;

typedef struct dit_archive {
	char *path;
	char *label;       /* path for messages, escaped */
	int fd;            /* the archive file, read with pread; -1 in memory */
	const void *image; /* the archive in memory (dit_archive_open_mem), else NULL */
	uint64_t size;     /* bytes of the archive */
	int in_place;      /* uncompressed tar: members lie at their offset (in image or fd) */
	int zip;           /* a zip (else a tar) */
	int stream;        /* a gzip or zstd stream */
	uint64_t inflated; /* bytes decompressed or copied into member buffers */
	dit_archive_member *members; /* regular files, sorted by name */
	size_t nmembers;
	size_t max_entries;
} dit_archive;

/* Decides which members are loaded: returns the largest size accepted for name (a
 * normalised member name), or 0 to check the member and leave it unloaded. */
typedef uint64_t (*dit_archive_want_fn)(const char *name, void *ud);

/* Reads path (any supported format, detected from its content; opened without
 * blocking, a regular file only). want may be NULL (load nothing). A file that is not
 * a tar or zip archive is DIT_EFORMAT. The file stays open until dit_archive_close:
 * the members of an uncompressed tar are read from it (fd, offset). */
dit_status dit_archive_open(dit_archive **out, const char *path, dit_archive_want_fn want, void *ud,
                            dit_error *err);

/* The same checks and reading on an archive already in memory: data[0..size), which must
 * stay valid and unchanged until dit_archive_close (the members of an uncompressed tar
 * point into it). name labels messages. max_entries > 0 refuses an archive with more
 * entries (members and directories) than that; 0 is the default cap. */
dit_status dit_archive_open_mem(dit_archive **out, const char *name, const void *data, size_t size,
                                size_t max_entries, dit_archive_want_fn want, void *ud,
                                dit_error *err);

/* Loads the members want selects that are not loaded yet, in a second reading of the
 * archive that stops after the last of them (a compressed tar is decompressed up to
 * there again; a zip seeks to them). In an archive read in place (uncompressed tar)
 * only the members at their offset in memory are there, so nothing is loaded there:
 * read members of a file archive with (fd, offset). Fails if the archive changed since
 * it was opened. */
dit_status dit_archive_load(dit_archive *a, dit_archive_want_fn want, void *ud, dit_error *err);
void dit_archive_close(dit_archive *a);

/* The member named name (normalised); NULL when absent. */
const dit_archive_member *dit_archive_find(const dit_archive *a, const char *name);

#endif
