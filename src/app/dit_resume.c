/* Resume state files (see dit_resume.h). */
#define _POSIX_C_SOURCE 200809L
#include "dit_resume.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "dit_lora.h"
#include "dit_opts.h"
#include "dit_safetensors.h"
#include "dit_weights.h"

#define STATE_FORMAT "2"

size_t dit_resume_fp_file(char *buf, size_t k, size_t cap, const char *tag, const char *path)
{
	struct stat sb;
	if (!path || k >= cap)
		return k;
	if (stat(path, &sb) != 0)
		memset(&sb, 0, sizeof sb);
	return k + (size_t)snprintf(buf + k, cap - k, "%s:%s:%lld:%lld|", tag, path,
	                            (long long)sb.st_size, (long long)sb.st_mtime);
}

size_t dit_resume_fp_inputs(char *buf, size_t k, size_t cap, const dit_weights *w,
                            const dit_generate_opts *o)
{
	for (int e = 0; e < w->nexperts; e++) {
		const dit_checkpoint *ck = w->expert[e]->ck;
		for (size_t i = 0; ck && i < ck->nfiles; i++)
			k = dit_resume_fp_file(buf, k, cap, "w",
			                       ck->archive ? ck->dir : ck->files[i]->path);
		if (ck && ck->load_key && k < cap) /* a .pt's other dict is other weights */
			k += (size_t)snprintf(buf + k, cap - k, "key:%s|", ck->load_key);
		const char *lora = dit_lora_identity(w->expert[e]->lora);
		if (lora && k < cap) /* merged deltas too */
			k += (size_t)snprintf(buf + k, cap - k, "lora:%s", lora);
	}
	/* bf16 block weights change the numbers */
	int bf16 = dit_weight_dtype_bf16(o->offload.weight_dtype,
	                                 dit_workers_accel(o->rt.workers) == DIT_WORKERS_CUDA);
	if (bf16 && k < cap)
		k += (size_t)snprintf(buf + k, cap - k, "bf16|");
	/* so do compact weights (kept as the checkpoint stores them) */
	if (o->offload.weight_dtype == DIT_WDTYPE_AUTO && k < cap)
		k += (size_t)snprintf(buf + k, cap - k, "compact|");
	k = dit_resume_fp_file(buf, k, cap, "ctx", o->context_path);
	k = dit_resume_fp_file(buf, k, cap, "noise", o->noise_path);
	return dit_resume_fp_file(buf, k, cap, "image", o->image_path);
}

void dit_resume_fp_hash(char *out, size_t len, const char *buf, size_t k, size_t cap)
{
	snprintf(out, len, "%016llx", (unsigned long long)XXH3_64bits(buf, k < cap ? k : cap));
}

/* The checksum: XXH3-64 over the fingerprint, the next step and every buffer's bytes,
 * in order, as 16 hex digits. */
static void state_sum(char out[17], const char *fp, const char *next, const dit_resume_layout *lay,
                      float *const *bufs)
{
	XXH3_state_t *h = XXH3_createState();
	unsigned long long v = 0;
	if (h && XXH3_64bits_reset(h) == XXH_OK) {
		XXH3_64bits_update(h, fp, strlen(fp) + 1);
		XXH3_64bits_update(h, next, strlen(next) + 1);
		for (int i = 0; i < lay->count; i++)
			XXH3_64bits_update(h, bufs[i], (size_t)lay->n[i] * sizeof(float));
		v = XXH3_64bits_digest(h);
	}
	XXH3_freeState(h);
	snprintf(out, 17, "%016llx", v);
}

dit_status dit_resume_save(const char *path, const char *fingerprint, int next_step,
                           const dit_resume_layout *lay, float *const *bufs, dit_error *err)
{
	dit_st_writer *w = dit_st_writer_new();
	if (!w)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	dit_status st = DIT_OK;
	for (int i = 0; !st && i < lay->count; i++) {
		int64_t shape[1] = {lay->n[i]};
		st = dit_st_writer_add_f32(w, lay->name[i], 1, shape, bufs[i], err);
	}
	char next[16], sum[17];
	snprintf(next, sizeof next, "%d", next_step);
	state_sum(sum, fingerprint, next, lay, bufs);
	if (!st)
		st = dit_st_writer_set_metadata(w, "checksum", sum, err);
	if (!st)
		st = dit_st_writer_set_metadata(w, "ditstar_resume", STATE_FORMAT, err);
	if (!st)
		st = dit_st_writer_set_metadata(w, "fingerprint", fingerprint, err);
	if (!st)
		st = dit_st_writer_set_metadata(w, "next_step", next, err);
	if (!st)
		st = dit_st_writer_commit(w, path, err);
	dit_st_writer_free(w);
	return st;
}

dit_status dit_resume_load(const char *path, const char *fingerprint, int nsteps,
                           const dit_resume_layout *lay, float **bufs, int *next_step,
                           dit_error *err)
{
	dit_st_file *f;
	dit_status st = dit_st_open(&f, path, err);
	if (st)
		return st;
	const char *fmt = dit_st_metadata(f, "ditstar_resume");
	const char *fp = dit_st_metadata(f, "fingerprint");
	const char *next = dit_st_metadata(f, "next_step");
	const char *sum = dit_st_metadata(f, "checksum");
	if (!fmt || strcmp(fmt, STATE_FORMAT) != 0 || !fp || !next || !sum) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: not a ditstar resume state", path);
	} else if (strcmp(fp, fingerprint) != 0) {
		st = dit_error_set(err, DIT_EINVAL,
		                   "%s: resume state from another model or other arguments "
		                   "(fingerprint %s, this run %s)",
		                   path, fp, fingerprint);
	} else {
		char *end;
		long v = strtol(next, &end, 10);
		if (*end || v < 1 || v > nsteps)
			st = dit_error_set(err, DIT_EFORMAT, "%s: next_step '%s' out of range",
			                   path, next);
		*next_step = (int)v;
	}
	for (int i = 0; !st && i < lay->count; i++) {
		const dit_st_tensor *t = dit_st_find(f, lay->name[i]);
		if (!t || t->numel != lay->n[i]) {
			st = dit_error_set(err, DIT_ESHAPE,
			                   "%s: tensor '%s' missing or of the wrong size", path,
			                   lay->name[i]);
			break;
		}
		bufs[i] = malloc((size_t)lay->n[i] * sizeof(float));
		if (!bufs[i])
			st = dit_error_set(err, DIT_ENOMEM, "out of memory");
		else
			st = dit_st_read_f32(f, t, bufs[i], err);
	}
	if (!st) {
		char have[17];
		state_sum(have, fp, next, lay, bufs);
		if (strcmp(have, sum) != 0)
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: resume state damaged (checksum %s, the state says "
			                   "%.16s): it was edited or corrupted",
			                   path, have, sum);
	}
	dit_st_close(f);
	return st;
}

dit_status dit_resume_interrupted(int done, int nsteps, const char *path, dit_error *err)
{
	return dit_error_set(err, DIT_EINTERRUPTED,
	                     "interrupted after step %d of %d; state saved in %s (continue "
	                     "with --resume %s)",
	                     done, nsteps, path, path);
}
