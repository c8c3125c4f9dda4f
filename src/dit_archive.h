/* Archives read in place with libarchive: tar (plain, gzip or zstd) and zip. Nothing is
 * extracted to disk. The archive file is memory-mapped once (or given in memory, see
 * dit_archive_open_mem); the members of an uncompressed tar point into that map (no
 * copy), members of a compressed tar or of a zip are decompressed into malloc'd buffers.
 *
 * Every member is checked while the archive is read: regular files and directories only
 * (symbolic and hard links, devices, fifos and sparse files are refused), names
 * normalised ("./" and empty components dropped) and unique after normalisation,
 * absolute names and ".." components refused, a declared size within the cap, and
 * exactly the declared number of bytes present. Directory entries are skipped. Errors
 * are one line naming the archive and the member. */
#ifndef DIT_ARCHIVE_H
#define DIT_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"

/* No member may declare more than this, loaded or not. */
#define DIT_ARCHIVE_MAX_MEMBER ((uint64_t)1 << 40)

typedef struct dit_archive_member {
	char *name;          /* normalised */
	uint64_t size;       /* bytes, as declared and as read */
	const uint8_t *data; /* NULL when the member was not loaded */
	uint8_t *owned;      /* the buffer behind data when decompressed, else NULL */
} dit_archive_member;

typedef struct dit_archive {
	char *path;
	void *map; /* the whole archive file, read-only */
	size_t map_size;
	int map_owned;               /* map is an mmap of the file (else the caller's buffer) */
	int in_place;                /* members point into map (uncompressed tar) */
	dit_archive_member *members; /* regular files, sorted by name */
	size_t nmembers;
} dit_archive;

/* Decides which members are loaded: returns the largest size accepted for name (a
 * normalised member name), or 0 to check the member and leave it unloaded. */
typedef uint64_t (*dit_archive_want_fn)(const char *name, void *ud);

/* Reads path (any supported format, detected from its content). want may be NULL (load
 * nothing). A file that is not a tar or zip archive is DIT_EFORMAT. */
dit_status dit_archive_open(dit_archive **out, const char *path, dit_archive_want_fn want, void *ud,
                            dit_error *err);

/* The same checks and reading on an archive already in memory: data[0..size), which must
 * stay valid and unchanged until dit_archive_close (the members of an uncompressed tar
 * point into it). name labels messages. max_entries > 0 refuses an archive with more
 * entries (members and directories) than that; 0 is no cap. */
dit_status dit_archive_open_mem(dit_archive **out, const char *name, const void *data, size_t size,
                                size_t max_entries, dit_archive_want_fn want, void *ud,
                                dit_error *err);
void dit_archive_close(dit_archive *a);

/* The member named name (normalised); NULL when absent. */
const dit_archive_member *dit_archive_find(const dit_archive *a, const char *name);

#endif
