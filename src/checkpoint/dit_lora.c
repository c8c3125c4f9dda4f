/* LoRA files read, their keys resolved against a model's tensors, their deltas merged
 * (see dit_lora.h). */
#define _GNU_SOURCE /* realpath */
#include "dit_lora.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "dit_lora_priv.h"

/* t of f read as fp32 into a new buffer (*out), checked finite. */
static dit_status read_checked(const dit_st_file *f, const dit_st_tensor *t, float **out,
                               dit_error *err)
{
	*out = malloc((size_t)(t->numel ? t->numel : 1) * sizeof **out);
	if (!*out)
		return dit_error_set(err, DIT_ENOMEM, "--lora %s: out of memory for '%s'", f->label,
		                     t->name);
	dit_status st = dit_st_read_f32(f, t, *out, err);
	for (int64_t i = 0; !st && i < t->numel; i++)
		if (!isfinite((*out)[i]))
			st = dit_error_set(
			    err, DIT_EFORMAT, "--lora %s: tensor '%s' holds %s at index %lld",
			    f->label, t->name, isnan((*out)[i]) ? "NaN" : "Inf", (long long)i);
	if (st) {
		free(*out);
		*out = NULL;
	}
	return st;
}

static dit_status apply_one(const lora_merge *mg, float *w, dit_error *err)
{
	float *a = NULL, *b = NULL;
	dit_status st = read_checked(mg->f, mg->diff ? mg->diff : mg->down, &a, err);
	if (!st && mg->up)
		st = read_checked(mg->f, mg->up, &b, err);
	if (!st && mg->up) { /* w[rows, cols] += scale * up[src rows, r] @ down[r, cols] */
		int64_t r = mg->down->shape[0];
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mg->rows, (int)mg->cols,
		            (int)r, mg->scale, b + mg->src_row * r, (int)r, a, (int)mg->cols, 1.0f,
		            w + mg->dst_row * mg->cols, (int)mg->cols);
	} else if (!st) {
		const float *d = a + mg->src_row * mg->cols;
		float *o = w + mg->dst_row * mg->cols;
		for (int64_t i = 0; i < mg->rows * mg->cols; i++)
			o[i] += mg->scale * d[i];
	}
	free(a);
	free(b);
	return st;
}

static int cmp_merge(const void *a, const void *b)
{
	const lora_merge *x = a, *y = b;
	if (x->pool != y->pool)
		return x->pool < y->pool ? -1 : 1;
	if (x->block != y->block)
		return x->block < y->block ? -1 : 1;
	if (x->tensor != y->tensor)
		return x->tensor < y->tensor ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The merges of tensor i of block b of pool p (sorted by cmp_merge: a run), *n of them
 * from the returned one; NULL when none. A binary search: called for every tensor read. */
static const lora_merge *first_of(const dit_lora_set *s, int p, int64_t b, int i, size_t *n)
{
	*n = 0;
	if (!s)
		return NULL;
	lora_merge key = {.pool = p, .block = p < 0 ? 0 : b, .tensor = i};
	size_t lo = 0, hi = s->n;
	while (lo < hi) { /* the first merge not before key (order 0 sorts first) */
		size_t mid = (lo + hi) / 2;
		if (cmp_merge(&s->m[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo + *n < s->n && s->m[lo + *n].pool == p && s->m[lo + *n].block == key.block &&
	       s->m[lo + *n].tensor == i)
		++*n;
	return *n ? &s->m[lo] : NULL;
}

int dit_lora_touches(const dit_lora_set *s, int p, int64_t b, int i)
{
	size_t n;
	return first_of(s, p, b, i, &n) != NULL;
}

dit_status dit_lora_merge(const dit_lora_set *s, int p, int64_t b, int i, float *w,
                          const char *name, dit_error *err)
{
	size_t n;
	const lora_merge *m = first_of(s, p, b, i, &n);
	dit_status st = DIT_OK;
	for (size_t k = 0; k < n && !st; k++)
		st = apply_one(&m[k], w, err);
	if (!st && n) { /* the merged tensor: its rows as the merges cover them */
		int64_t rows = 0, cols = m[0].cols;
		for (size_t k = 0; k < n; k++)
			if (m[k].dst_row + m[k].rows > rows)
				rows = m[k].dst_row + m[k].rows;
		for (int64_t q = 0; q < rows * cols; q++)
			if (!isfinite(w[q]))
				return dit_error_set(
				    err, DIT_EFORMAT,
				    "tensor '%s' holds %s at index %lld after the LoRA "
				    "merge",
				    name, isnan(w[q]) ? "NaN" : "Inf", (long long)q);
	}
	return st;
}

/* "path:size:xxh3:strength|" of a file into the set's identity. */
static dit_status identity_add(dit_lora_set *s, const dit_st_file *f, double strength,
                               dit_error *err)
{
	char real[PATH_MAX];
	if (!realpath(f->path, real))
		snprintf(real, sizeof real, "%s", f->path);
	XXH3_state_t *h = XXH3_createState();
	char *buf = malloc(1 << 20);
	struct stat sb;
	dit_status st = DIT_OK;
	if (!h || !buf || fstat(f->fd, &sb) != 0)
		st = dit_error_set(err, DIT_ENOMEM, "--lora %s: cannot hash it", f->label);
	if (!st) {
		XXH3_64bits_reset(h);
		for (off_t at = 0; !st && at < sb.st_size;) {
			ssize_t r = pread(f->fd, buf, 1 << 20, at);
			if (r <= 0)
				st =
				    dit_error_set(err, DIT_EIO, "--lora %s: read failed", f->label);
			else
				XXH3_64bits_update(h, buf, (size_t)r);
			at += r > 0 ? r : 0;
		}
	}
	if (!st) {
		size_t old = s->identity ? strlen(s->identity) : 0, add = strlen(real) + 96;
		char *id = realloc(s->identity, old + add);
		if (!id)
			st = dit_error_set(err, DIT_ENOMEM, "out of memory for the LoRA");
		else {
			snprintf(id + old, add, "%s:%lld:%016llx:%.17g|", real,
			         (long long)sb.st_size, (unsigned long long)XXH3_64bits_digest(h),
			         strength);
			s->identity = id;
		}
	}
	XXH3_freeState(h);
	free(buf);
	return st;
}

dit_status dit_lora_open(dit_lora_set **out, const dit_lora_model *m,
                         const dit_lora_spec *const *specs, int n, int ignore_unmatched, int hash,
                         dit_error *err)
{
	*out = NULL;
	if (n <= 0)
		return DIT_OK;
	dit_lora_set *s = calloc(1, sizeof *s);
	if (!s)
		return dit_error_set(err, DIT_ENOMEM, "out of memory for the LoRA");
	dit_status st = DIT_OK;
	for (int i = 0; i < n && !st; i++) {
		dit_st_file *f;
		st = dit_st_open(&f, specs[i]->path, err);
		if (st) {
			char why[DIT_ERROR_MSG_MAX];
			snprintf(why, sizeof why, "%s", err->msg);
			st = dit_error_set(err, st, "--lora: %s", why);
			break;
		}
		s->files[s->nfiles++] = f;
		st = dit_lora_file_attach(s, m, f, specs[i]->strength, ignore_unmatched, err);
		if (!st && hash)
			st = identity_add(s, f, specs[i]->strength, err);
	}
	if (!st && s->n)
		qsort(s->m, s->n, sizeof *s->m, cmp_merge);
	if (st) {
		dit_lora_free(s);
		return st;
	}
	*out = s;
	return DIT_OK;
}

const char *dit_lora_identity(const dit_lora_set *s)
{
	return s ? s->identity : NULL;
}

int dit_lora_modules(const dit_lora_set *s)
{
	return s ? s->modules : 0;
}

void dit_lora_free(dit_lora_set *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nfiles; i++)
		dit_st_close(s->files[i]);
	free(s->m);
	free(s->identity);
	free(s);
}
