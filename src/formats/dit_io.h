/* File I/O shared by the loaders and writers: strict JSON files, complete writes, and
 * files replaced atomically (temporary file in the same directory, fsync, rename). */
#ifndef DIT_IO_H
#define DIT_IO_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "dit_error.h"

struct json_object;

/* Reads path and parses it as strict JSON (UTF-8) holding one object, followed by
 * whitespace only. A file above max_bytes is refused as DIT_EFORMAT; a missing file is
 * DIT_ENOTFOUND. On success *out owns the object (release with json_object_put). */
/* Reads a regular file of at most max_bytes into *text (malloc'd, NUL-terminated;
 * *len bytes). Errors name the file. */
dit_status dit_io_read_text(const char *path, size_t max_bytes, char **text, size_t *len,
                            dit_error *err);

dit_status dit_io_read_json_object(const char *path, size_t max_bytes, struct json_object **out,
                                   dit_error *err);

/* A cache file for reading as a stream: opened without blocking (a FIFO or a device
 * never blocks), a regular file of at most max_bytes, else NULL (absent, or not such a
 * file: what reads a cache treats it as not there). */
FILE *dit_io_fopen_cache(const char *path, size_t max_bytes);

/* Writes all len bytes of buf to fd, in chunks, retrying after EINTR. Returns 0, or -1
 * with errno set. */
int dit_io_write_all(int fd, const void *buf, size_t len);

/* Whether an output path is "-": standard output (written straight there, as the
 * stream it is: no temporary file, nothing to take back on a failure). */
int dit_io_is_stdout(const char *path);

/* A file being written under a temporary name next to its final path (path "-":
 * standard output, written directly). */
typedef struct dit_io_atomic {
	const char *path; /* final name (borrowed; must outlive the handle) */
	char *tmp;        /* "<path>.tmp.XXXXXX", NULL once released */
	int fd;           /* -1 once released */
	int stream;       /* standard output: fd is a copy of it, no tmp, no rename */
} dit_io_atomic;

/* Whether path may be replaced by a new file: it is absent (or cannot be inspected:
 * creating the file then reports why), or a regular file that is not a symbolic link.
 * A symbolic link, directory, device node, FIFO or socket is refused, naming path
 * (after "label " when label is not NULL, e.g. "--output"). */
dit_status dit_io_check_target(const char *label, const char *path, dit_error *err);

/* Creates the temporary file for path (O_CREAT|O_EXCL: a new regular file, never
 * through a link), with mode 0644, after dit_io_check_target. On failure nothing is
 * left behind and a->fd is -1. */
dit_status dit_io_atomic_open(dit_io_atomic *a, const char *path, dit_error *err);

/* Appends len bytes. On failure the temporary file is removed and the handle released
 * (a later commit or abort does nothing). */
dit_status dit_io_atomic_write(dit_io_atomic *a, const void *buf, size_t len, dit_error *err);

/* Syncs, closes and renames the temporary file onto the final path (checked again
 * with dit_io_check_target just before), then syncs the directory (best effort). On failure the
 * temporary file is removed. The handle is released either way; committing a released handle fails
 * with DIT_EIO. */
dit_status dit_io_atomic_commit(dit_io_atomic *a, dit_error *err);

/* Removes the temporary file and releases the handle; safe on a released handle. */
void dit_io_atomic_abort(dit_io_atomic *a);

/* Parses len bytes of text as strict UTF-8 JSON holding one object followed by
 * whitespace only, with no object naming a member twice and no member name holding
 * a NUL byte; label names the text in messages. */
dit_status dit_io_parse_json_object(const char *label, const char *text, size_t len,
                                    struct json_object **out, dit_error *err);

/* What a file of mode m that is not regular is ("a FIFO", "a directory", ...), for
 * messages. */
const char *dit_io_kind(mode_t m);

/* "dir/name" (no doubled slash; "" + name is name), malloc'd; NULL when out of
 * memory. */
char *dit_io_join(const char *dir, const char *name);

/* Creates path and its missing parents (mode 0755); an existing directory is fine.
 * Errors name the component that could not be made. */
dit_status dit_io_mkdir_p(const char *path, dit_error *err);

/* Moves the regular file from (not a link) onto to, which dit_io_check_target must
 * accept; errors name to. */
dit_status dit_io_move_into(const char *from, const char *to, dit_error *err);

/* The three steps above for one buffer: path holds buf[0..len) or is untouched. */
dit_status dit_io_write_file_atomic(const char *path, const void *buf, size_t len, dit_error *err);

#endif
