/* Where a pool's blocks lie in the checkpoint's files (see dit_extent.h). */
#include "dit_extent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_grow.h"
#include "dit_lora.h"
#include "dit_wdt.h"
#include "dit_wtensor.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LITTLE_ENDIAN_HOST 1
#else
#define LITTLE_ENDIAN_HOST 0
#endif

void dit_extents_free(dit_extents *x)
{
	for (int i = 0; i < x->nfiles; i++)
		free(x->files[i]);
	free(x->files);
	free(x->e);
	free(x->first);
	memset(x, 0, sizeof *x);
}

/* The index of path in x's files, added when new; -1 when out of memory. */
static int file_index(dit_extents *x, const char *path)
{
	for (int i = 0; i < x->nfiles; i++)
		if (!strcmp(x->files[i], path))
			return i;
	char **f = realloc(x->files, (size_t)(x->nfiles + 1) * sizeof *f);
	if (!f)
		return -1;
	x->files = f;
	if (!(f[x->nfiles] = strdup(path)))
		return -1;
	return x->nfiles++;
}

static int add(dit_extents *x, dit_extent e)
{
	if (dit_grow((void **)&x->e, &x->cap, x->n, sizeof *x->e, 64) != 0)
		return -1;
	x->e[x->n++] = e;
	return 0;
}

/* How tensor t of the file becomes the slot of dtype wdt: DIT_EXT_*, or -1 (a
 * conversion only the loader does). */
static int op_of(const dit_st_tensor *t, int wdt)
{
	if (wdt == DIT_WDT_F32)
		return t->dtype == DIT_DTYPE_F32    ? DIT_EXT_COPY
		       : t->dtype == DIT_DTYPE_BF16 ? DIT_EXT_BF16_F32
		       : t->dtype == DIT_DTYPE_F16  ? DIT_EXT_F16_F32
		                                    : -1;
	if (wdt == DIT_WDT_BF16)
		return t->dtype == DIT_DTYPE_BF16 ? DIT_EXT_COPY : -1;
	return dit_wt_compact_dtype(t) == wdt ? DIT_EXT_COPY : -1;
}

/* The extents of tensor i of block b (prefix its names'), or why it has none. */
static int tensor_extents(const dit_pool *pl, int64_t b, int i, const char *prefix, dit_extents *x,
                          char *why, size_t cap)
{
	const dit_model *m = pl->model;
	const dit_tensor_desc *rule = &pl->d->tensors[i];
	if (!dit_tensor_present(&m->cfg, rule))
		return 0;
	const char *name = rule->name;
	if (dit_lora_touches(m->lora, pl->index, b, i)) {
		snprintf(why, cap, "%s%s has a LoRA merged into it", prefix, name);
		return -1;
	}
	if (dit_wt_join(m->fmt, name)) {
		snprintf(why, cap, "%s%s is joined from several tensors of the checkpoint", prefix,
		         name);
		return -1;
	}
	const dit_st_file *f = NULL;
	const dit_st_tensor *t = dit_wt_find(m->ck, m->fmt, prefix, name, &f);
	if (!t || !f) {
		snprintf(why, cap, "%s%s is not in the checkpoint", prefix, name);
		return -1;
	}
	if (f->fd < 0 || f->base || f->data) {
		snprintf(why, cap, "%s: its tensors are read from memory (an archive or a .pt)",
		         f->label);
		return -1;
	}
	int wdt = pl->lay.wdt[i], op = op_of(t, wdt);
	if (op < 0) {
		snprintf(why, cap, "%s%s is %s in the file, %s in the weights (converted on load)",
		         prefix, name, dit_dtype_name(t->dtype), dit_wdt_name(wdt));
		return -1;
	}
	int fi = file_index(x, f->path);
	uint64_t at = f->data_pos + t->offset, dst = (uint64_t)pl->lay.off[i] * sizeof(float);
	uint64_t bytes = op == DIT_EXT_COPY ? t->nbytes : (uint64_t)t->numel * sizeof(float);
	int bad = fi < 0 ||
	          add(x, (dit_extent){.file = fi, .op = op, .src = at, .dst = dst, .bytes = bytes});
	if (!bad && dit_wdt_is_f8(wdt)) { /* the scale in the slot after the data */
		uint32_t v;
		memcpy(&v, &t->scale, sizeof v);
		uint64_t s = dst + (uint64_t)dit_wdt_data_slots(wdt, t->numel) * sizeof(float);
		bad =
		    add(x, (dit_extent){
		               .file = fi, .op = DIT_EXT_CONST, .dst = s, .bytes = 4, .value = v});
	}
	if (bad) {
		snprintf(why, cap, "out of memory");
		return -1;
	}
	return 0;
}

static int by_dst(const void *a, const void *b)
{
	uint64_t x = ((const dit_extent *)a)->dst, y = ((const dit_extent *)b)->dst;
	return x < y ? -1 : x > y;
}

dit_status dit_pool_extents(const dit_pool *pl, dit_extents *x, char *why, size_t cap,
                            dit_error *err)
{
	memset(x, 0, sizeof *x);
	*why = 0;
	if (!LITTLE_ENDIAN_HOST) {
		snprintf(why, cap, "the host is big-endian (the loader swaps bytes)");
		return DIT_EUNSUPPORTED;
	}
	x->nblocks = pl->nblocks;
	x->block_bytes = (size_t)pl->block_stride * sizeof(float);
	x->first = calloc((size_t)pl->nblocks + 1, sizeof *x->first);
	if (!x->first)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	int bad = 0;
	for (int64_t b = 0; !bad && b < pl->nblocks; b++) {
		char prefix[96];
		dit_pool_block_prefix(pl, b, prefix, sizeof prefix);
		x->first[b] = (int64_t)x->n;
		for (int i = 0; !bad && i < pl->d->ntensors; i++)
			bad = tensor_extents(pl, b, i, prefix, x, why, cap);
		x->first[b + 1] = (int64_t)x->n;
		if (!bad)
			qsort(x->e + x->first[b], x->n - (size_t)x->first[b], sizeof *x->e, by_dst);
	}
	if (!bad)
		return DIT_OK;
	dit_extents_free(x);
	return strcmp(why, "out of memory") ? DIT_EUNSUPPORTED
	                                    : dit_error_set(err, DIT_ENOMEM, "out of memory");
}
