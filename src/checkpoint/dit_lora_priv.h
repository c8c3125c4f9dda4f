/* The names a LoRA key may give a model's tensor (src/checkpoint/dit_lora_names.c):
 * private to dit_lora.c. */
#ifndef DIT_LORA_PRIV_H
#define DIT_LORA_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "dit_lora.h"

/* What a module name covers: rows [dst_row, dst_row + rows) of a table tensor, which
 * are rows [src_row, src_row + rows) of the named tensor (src_rows of them: a part of
 * a fused tensor, or half of one); rows 0: the whole tensor. */
typedef struct dit_lora_target {
	char *key; /* the name, '.' as '_', then '|' and W (its .weight), B (.bias) or P (a
	              parameter named as it is) */
	int pool;  /* -1: the non-block tensors */
	int64_t block;
	int tensor; /* in the table */
	int64_t dst_row, rows, src_row, src_rows;
	/* a whole part of a fused tensor whose rows the table does not give (diffusers'
	 * to_q of HunyuanVideo's linear1): rows 0 here, placed from the LoRA's own parts
	 * (dit_lora.c); NULL otherwise */
	const dit_join *join;
	int part;
	int64_t table_rows;
} dit_lora_target;

typedef struct dit_lora_names {
	dit_lora_target *t; /* sorted by key */
	size_t n, cap;
} dit_lora_names;

/* Every name of m's tensors in format f (NULL: the tables' own names), with and without
 * the format's prefixes. */
dit_status dit_lora_names_build(dit_lora_names *nm, const dit_lora_model *m,
                                const dit_format_desc *f, dit_error *err);

/* The targets of key (normalised, with its kind): *count of them from the returned
 * one (NULL: none). */
const dit_lora_target *dit_lora_names_find(const dit_lora_names *nm, const char *key,
                                           size_t *count);

/* s with '.' as '_' into out (len bytes). */
void dit_lora_normalise(char *out, size_t len, const char *s);

void dit_lora_names_free(dit_lora_names *nm);

/* A delta on rows [dst_row, +rows) of a table tensor: UP's rows from src_row times
 * DOWN, or DIFF's rows from src_row, times scale. */
typedef struct lora_merge {
	int pool;
	int64_t block;
	int tensor;
	int64_t dst_row, rows, src_row, cols;
	const dit_st_file *f;
	const dit_st_tensor *down, *up, *diff;
	float scale;
	size_t order; /* merges of one tensor in the files' order */
	const dit_lora_target *tg;
} lora_merge;

struct dit_lora_set {
	dit_st_file *files[DIT_MAX_LORAS];
	int nfiles;
	lora_merge *m;
	size_t n, cap;
	char *identity;
	int modules;
};

/* One file on expert m (src/checkpoint/dit_lora_keys.c): its keys resolved in the format
 * of the family most of them name, checked, turned into merges appended to s; keys
 * that match no weight refused (one line listing them) unless ignore. */
dit_status dit_lora_file_attach(dit_lora_set *s, const dit_lora_model *m, dit_st_file *f,
                                double strength, int ignore, dit_error *err);

#endif
