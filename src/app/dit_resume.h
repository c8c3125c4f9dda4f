/* The resume state file of --state / --resume: named float tensors (a sampler's
 * buffers), the run's fingerprint (what a resumed run must match: the model, the
 * arguments that shape the sampling, the inputs), the next step, and an XXH3-64
 * checksum over all three. Written atomically after a step; read and checked before a
 * resumed run. Shared by the generate loops of every family. */
#ifndef DIT_RESUME_H
#define DIT_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"

struct dit_weights;
struct dit_generate_opts;

/* The buffers of a state: count tensors, each name[i] of n[i] floats. */
typedef struct dit_resume_layout {
	int count;
	const char *const *name;
	const int64_t *n;
} dit_resume_layout;

/* Appends "tag:path:size:mtime|" of a file (zeros when it cannot be read; nothing for
 * a NULL path) to buf[k, cap); returns the new length. */
size_t dit_resume_fp_file(char *buf, size_t k, size_t cap, const char *tag, const char *path);

/* Appends what identifies the weights (each checkpoint's files, a .pt's load key, bf16
 * block weights) and the input files (--context, --noise, --image-latent). */
size_t dit_resume_fp_inputs(char *buf, size_t k, size_t cap, const struct dit_weights *w,
                            const struct dit_generate_opts *o);

/* The fingerprint of buf[0, min(k, cap)): 16 hex digits into out[len]. */
void dit_resume_fp_hash(char *out, size_t len, const char *buf, size_t k, size_t cap);

/* Writes the state of a run whose next step is next_step to path, atomically. */
dit_status dit_resume_save(const char *path, const char *fingerprint, int next_step,
                           const dit_resume_layout *lay, float *const *bufs, dit_error *err);

/* Reads the state at path: refuses another format, another fingerprint, a next step
 * outside [1, nsteps], a missing or mis-sized tensor, a wrong checksum (each naming
 * path); else bufs[i] (malloc'd; the caller frees them, also after an error) hold the
 * tensors and *next_step the step to continue at. */
dit_status dit_resume_load(const char *path, const char *fingerprint, int nsteps,
                           const dit_resume_layout *lay, float **bufs, int *next_step,
                           dit_error *err);

/* DIT_EINTERRUPTED: a signal stopped the run after step done of nsteps, its state in
 * path. */
dit_status dit_resume_interrupted(int done, int nsteps, const char *path, dit_error *err);

#endif
