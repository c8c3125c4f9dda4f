/* The names a LoRA key may give a model's tensor (src/checkpoint/dit_lora_names.c):
 * private to dit_lora.c. */
#ifndef DIT_LORA_PRIV_H
#define DIT_LORA_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "dit_weights.h"

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
dit_status dit_lora_names_build(dit_lora_names *nm, const dit_model *m, const dit_format_desc *f,
                                dit_error *err);

/* The targets of key (normalised, with its kind): *count of them from the returned
 * one (NULL: none). */
const dit_lora_target *dit_lora_names_find(const dit_lora_names *nm, const char *key,
                                           size_t *count);

/* s with '.' as '_' into out (len bytes). */
void dit_lora_normalise(char *out, size_t len, const char *s);

void dit_lora_names_free(dit_lora_names *nm);

#endif
