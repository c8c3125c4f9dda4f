/* The names a LoRA key may give a model's tensor (see dit_lora_priv.h). */
#define _POSIX_C_SOURCE 200809L
#include "dit_lora_priv.h"
#include "dit_grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dit_lora_normalise(char *out, size_t len, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < len; i++)
		out[i] = s[i] == '.' ? '_' : s[i];
	out[i] = 0;
}

static int add_key(dit_lora_names *nm, const char *name, size_t cut, char kind,
                   const dit_lora_target *t)
{
	if (dit_grow((void **)&nm->t, &nm->cap, nm->n, sizeof *nm->t, 1024))
		return -1;
	char norm[320];
	dit_lora_normalise(norm, sizeof norm, name);
	if (cut < strlen(norm))
		norm[cut] = 0;
	size_t n = strlen(norm);
	char *key = malloc(n + 3);
	if (!key)
		return -1;
	memcpy(key, norm, n);
	key[n] = '|';
	key[n + 1] = kind;
	key[n + 2] = 0;
	nm->t[nm->n] = *t;
	nm->t[nm->n++].key = key;
	return 0;
}

/* The keys of a checkpoint name: its module (.weight or .bias cut) and itself. */
static int add_name(dit_lora_names *nm, const char *name, const dit_lora_target *t)
{
	size_t n = strlen(name);
	int r = 0;
	if (n > 7 && !strcmp(name + n - 7, ".weight"))
		r |= add_key(nm, name, n - 7, 'W', t);
	if (n > 5 && !strcmp(name + n - 5, ".bias"))
		r |= add_key(nm, name, n - 5, 'B', t);
	return r | add_key(nm, name, n, 'P', t);
}

/* The name with and without the format's prefixes. */
static int add_prefixed(dit_lora_names *nm, const dit_format_desc *f, const char *prefix,
                        const char *name, const dit_lora_target *t)
{
	char full[320];
	snprintf(full, sizeof full, "%s%s", prefix, name);
	int r = add_name(nm, full, t);
	const char *np[2] = {f ? f->name_prefix : NULL, f ? f->alt_prefix : NULL};
	for (int i = 0; i < 2; i++)
		if (np[i] && *np[i]) {
			snprintf(full, sizeof full, "%s%s%s", np[i], prefix, name);
			r |= add_name(nm, full, t);
		}
	return r;
}

/* Table tensor rule (rows: its first dimension) of pool p, block b, under prefix: its
 * name in format f (NULL: the table's), or its parts when f stores it fused. */
static int add_tensor(dit_lora_names *nm, const dit_format_desc *f, const char *prefix,
                      const dit_tensor_desc *rule, int64_t rows, dit_lora_target t)
{
	t.dst_row = t.src_row = 0;
	t.rows = t.src_rows = rows;
	t.join = NULL;
	t.table_rows = rows;
	const char *name = rule->name;
	for (int i = 0; f && i < f->nrenames; i++)
		if (!strcmp(f->renames[i].to, rule->name))
			name = f->renames[i].from;
	int r = 0;
	for (int i = 0; f && i < f->nother_names; i++) /* ComfyUI's own names */
		if (!strcmp(f->other_names[i].to, rule->name))
			r |= add_prefixed(nm, f, prefix, f->other_names[i].from, &t);
	const dit_join *j = NULL;
	for (int i = 0; f && i < f->njoins; i++)
		if (!strcmp(f->joins[i].to, rule->name))
			j = &f->joins[i];
	if (!j)
		return r | add_prefixed(nm, f, prefix, name, &t);
	for (int k = 0; k < j->nparts; k++) {
		dit_lora_target pt = t;
		if (j->part[k].half) { /* one half of a tensor of the table's rows */
			pt.rows = rows / 2;
			pt.dst_row = k * (rows / 2);
			pt.src_row = j->part[k].half == 2 ? rows / 2 : 0;
			pt.src_rows = rows;
		} else { /* placed once the LoRA's parts are known */
			pt.rows = pt.src_rows = 0;
			pt.join = j;
			pt.part = k;
		}
		r |= add_prefixed(nm, f, prefix, j->part[k].from, &pt);
	}
	return r;
}

static int cmp_target(const void *a, const void *b)
{
	return strcmp(((const dit_lora_target *)a)->key, ((const dit_lora_target *)b)->key);
}

/* Every name of m's tensors in format f (NULL: the table's own names). */
static int add_format(dit_lora_names *nm, const dit_lora_model *m, const dit_format_desc *f)
{
	int r = 0;
	int64_t shape[DIT_T_MAX_DIMS];
	for (int i = 0; i < m->desc->nglobals; i++) {
		const dit_tensor_desc *rule = &m->desc->globals[i];
		if (!dit_tensor_present(m->cfg, rule))
			continue;
		dit_tensor_shape(m->cfg, rule, shape);
		r |= add_tensor(nm, f, "", rule, shape[0],
		                (dit_lora_target){.pool = -1, .tensor = i});
	}
	for (int p = 0; p < m->desc->npools; p++) {
		const dit_pool_desc *pd = &m->desc->pools[p];
		const char *pp = f && f->pool_prefix[p] ? f->pool_prefix[p] : pd->prefix;
		for (int64_t b = 0; b < m->cfg->layers[p]; b++) {
			char prefix[96];
			snprintf(prefix, sizeof prefix, "%s%lld.", pp, (long long)b);
			for (int i = 0; i < pd->ntensors; i++) {
				const dit_tensor_desc *rule = &pd->tensors[i];
				if (!dit_tensor_present(m->cfg, rule))
					continue;
				dit_tensor_shape(m->cfg, rule, shape);
				r |= add_tensor(
				    nm, f, prefix, rule, shape[0],
				    (dit_lora_target){.pool = p, .block = b, .tensor = i});
			}
		}
	}
	return r;
}

dit_status dit_lora_names_build(dit_lora_names *nm, const dit_lora_model *m,
                                const dit_format_desc *f, dit_error *err)
{
	memset(nm, 0, sizeof *nm);
	if (add_format(nm, m, f)) {
		dit_lora_names_free(nm);
		return dit_error_set(err, DIT_ENOMEM, "out of memory for the LoRA names");
	}
	qsort(nm->t, nm->n, sizeof *nm->t, cmp_target);
	return DIT_OK;
}

const dit_lora_target *dit_lora_names_find(const dit_lora_names *nm, const char *key, size_t *count)
{
	size_t lo = 0, hi = nm->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(nm->t[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t n = 0;
	while (lo + n < nm->n && !strcmp(nm->t[lo + n].key, key))
		n++;
	*count = n;
	return n ? &nm->t[lo] : NULL;
}

void dit_lora_names_free(dit_lora_names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->t[i].key);
	free(nm->t);
	memset(nm, 0, sizeof *nm);
}
