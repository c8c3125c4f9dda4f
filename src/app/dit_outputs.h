/* The files a run reads and writes, checked together before the run: an output must be
 * absent or a regular file (never a link, directory, device node, FIFO or socket), and
 * may name neither an input nor another output. Files are compared by device and inode;
 * outputs not yet there by their resolved directory and name. */
#ifndef DIT_OUTPUTS_H
#define DIT_OUTPUTS_H

#include <stddef.h>

#include "dit_error.h"

struct dit_weights;

typedef struct dit_path_use {
	const char *what; /* the option ("--output", "--context") or "checkpoint file" */
	const char *path; /* NULL: not given, skipped */
	/* outputs only: the path pointer of the one input this output may be (a resume
	 * state updated in place), or NULL */
	const char *may_be;
} dit_path_use;

/* Refuses, in one line naming the options and paths: an output that exists and is not
 * a regular file, an output that is the same file as an input (other than its may_be)
 * or as another output, two outputs "-" (standard output, dit_io_is_stdout). Inputs that cannot be
 * inspected are skipped: reading them reports why. */
dit_status dit_outputs_check(const dit_path_use *in, size_t nin, const dit_path_use *out,
                             size_t nout, dit_error *err);

/* dit_outputs_check with the checkpoint files of every expert of w (config.json, the
 * index, the shards; an archive as one file) added to the inputs. */
dit_status dit_outputs_check_run(const struct dit_weights *w, const dit_path_use *in, size_t nin,
                                 const dit_path_use *out, size_t nout, dit_error *err);

/* Refuses an output whose folder is dir (the --trace folder, the chunk store: the run
 * writes its own files there); dir NULL or absent: nothing to check. */
dit_status dit_outputs_outside(const dit_path_use *out, size_t nout, const char *what,
                               const char *dir, dit_error *err);

/* Before any work: the folder of every output file exists and takes a new file (one is
 * created there and removed, as the atomic write will); DIT_EUSAGE naming the option,
 * the path and why. Paths NULL are skipped. */
dit_status dit_outputs_probe(const dit_path_use *out, size_t nout, dit_error *err);

/* A folder option a run may only read (a plan's --cache-dir and --offload-dir): absent,
 * or a folder (through a link); a file, a FIFO, a device or a dangling link is a usage
 * error naming what and path. path NULL: nothing to check. */
dit_status dit_outputs_check_dir(const char *what, const char *path, dit_error *err);

/* The same for an output folder the run creates (--trace): the folder, or the nearest
 * one above it that exists, takes a new file. path NULL: nothing to check. */
dit_status dit_outputs_probe_dir(const char *what, const char *path, dit_error *err);

#endif
