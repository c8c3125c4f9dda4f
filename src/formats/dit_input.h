/* Reading files that come from outside: opening without blocking, complete reads at
 * an offset, names made safe for messages, and size caps checked on JSON text before
 * it is parsed. Used by every loader (safetensors, checkpoint, archive, config). */
#ifndef DIT_INPUT_H
#define DIT_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"

/* Opens path for reading: with O_NONBLOCK, so that a FIFO or a device does not block
 * the open, then checks with fstat that it is a regular file (FIFOs, devices, sockets
 * and directories are refused, naming the kind) and clears O_NONBLOCK. label names the
 * file in messages (NULL: path, escaped). On success *fd is open (O_CLOEXEC) and *size
 * is the file's size. A missing file is DIT_ENOTFOUND, anything else DIT_EIO. */
dit_status dit_input_open(const char *path, const char *label, int *fd, uint64_t *size,
                          dit_error *err);

/* Reads len bytes at offset off of fd into buf, retrying after EINTR and short reads.
 * Returns the bytes read (less than len only at the end of the file), or -1 with errno
 * set. */
int64_t dit_input_pread(int fd, void *buf, size_t len, uint64_t off);

/* s for messages, malloc'd: printable ASCII as is, every other byte (control
 * characters such as ESC and newline, bytes of UTF-8 and invalid bytes alike) as
 * \xNN, so a message stays one line that cannot drive the terminal; NULL when out of
 * memory. Every name that comes from a file goes through this (or dit_error_quote,
 * which it wraps). */
char *dit_input_label(const char *s);

/* Caps on a JSON text, checked by a scan of its bytes before it is parsed: what the
 * parser would allocate grows with the objects and values, so a text over a cap is
 * refused before any of that memory or time is spent. 0: no cap. */
typedef struct dit_input_json_caps {
	size_t members;   /* members of the top-level object */
	size_t nested;    /* members of any one object below the top level */
	size_t objects;   /* objects at any depth, the top-level one included */
	size_t values;    /* values at any depth (objects, arrays, strings, numbers, ...) */
	const char *what; /* what a top-level member is, for messages ("tensor entries") */
} dit_input_json_caps;

/* Refuses text (len bytes, labelled label) over any cap of caps, with the count and
 * the cap, as DIT_EFORMAT. The scan stops at the first cap exceeded, so its time is
 * bounded by the caps, not by the text. Malformed JSON passes (the parser reports
 * it). */
dit_status dit_input_json_check(const char *label, const char *text, size_t len,
                                const dit_input_json_caps *caps, dit_error *err);

#endif
