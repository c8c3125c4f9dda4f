/* The checkpoint's tensor for an entry of a family's table: its name in the
 * checkpoint's format (renames, joins of tensors stored in parts, the pools'
 * prefixes), the shape check against the model's config (or the release it assumed)
 * and the conversion into a slab. Used by the weight store (src/checkpoint/dit_weights.c). */
#define _POSIX_C_SOURCE 200809L
#include "dit_wtensor.h"
#include "dit_lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the shapes a model expects come from, for messages: "config.json", or the
 * released configuration assumed without one. */
const char *dit_wt_source(const dit_model *m, dit_wt_source_buf *b)
{
	if (!m->assumed)
		return "config.json";
	if (m->desc->config_from_shapes)
		return "the configuration read from its tensor shapes (no config.json)";
	snprintf(b->s, sizeof b->s, "the released %s configuration (assumed: no config.json)",
	         m->desc->release_name ? m->desc->release_name : m->assumed->name);
	return b->s;
}

static void shape_str(char *buf, size_t n, int ndim, const int64_t *shape)
{
	size_t used = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < ndim && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "",
		                         (long long)shape[i]);
	if (used < n)
		snprintf(buf + used, n - used, "]");
}

/* The checkpoint's tensor for table name `name` (prefix + table name; the format's
 * renames give the checkpoint's name when it differs); NULL when absent. */
const dit_st_tensor *dit_wt_find(const dit_checkpoint *ck, const dit_format_desc *d,
                                 const char *prefix, const char *tname, const dit_st_file **file)
{
	char name[256];
	const char *np = d && d->name_prefix ? d->name_prefix : "";
	snprintf(name, sizeof name, "%s%s%s", np, prefix, tname);
	const dit_st_tensor *t = dit_checkpoint_find(ck, name, file);
	for (int i = 0; !t && d && i < d->nrenames; i++) {
		if (strcmp(d->renames[i].to, tname) != 0)
			continue;
		snprintf(name, sizeof name, "%s%s%s", np, prefix, d->renames[i].from);
		t = dit_checkpoint_find(ck, name, file);
	}
	if (!t && d && d->alt_prefix) { /* "net_ema." for "net." */
		snprintf(name, sizeof name, "%s%s%s", d->alt_prefix, prefix, tname);
		t = dit_checkpoint_find(ck, name, file);
	}
	for (int i = 0; !t && d && i < d->nother_names; i++) {
		if (strcmp(d->other_names[i].to, tname) != 0)
			continue;
		const char *pre[2] = {np, d->alt_prefix};
		for (int k = 0; !t && k < 2; k++) {
			if (!pre[k])
				continue;
			snprintf(name, sizeof name, "%s%s%s", pre[k], prefix,
			         d->other_names[i].from);
			t = dit_checkpoint_find(ck, name, file);
		}
	}
	return t;
}

/* A table name as the format calls it, for messages. */
const char *dit_wt_format_name(const dit_format_desc *d, const char *tname)
{
	for (int i = 0; d && i < d->nrenames; i++)
		if (strcmp(d->renames[i].to, tname) == 0)
			return d->renames[i].from;
	return tname;
}

const dit_join *dit_wt_join(const dit_format_desc *d, const char *tname)
{
	for (int i = 0; d && i < d->njoins; i++)
		if (strcmp(d->joins[i].to, tname) == 0)
			return &d->joins[i];
	return NULL;
}

/* A table tensor from its parts: shapes checked (the parts' rows add up, the other
 * dimensions agree), then each part's rows converted into their place in dst. */
/* The index of the first value of n at v (dtype wdt, dit_wdt.h) that is not finite (NaN
 * or Inf: f8 e4m3fn has no Inf, S.1111.111 is NaN; q8_0: its blocks' scales), n if none. */
static size_t first_nonfinite(const void *v, size_t n, int wdt)
{
	size_t i = 0;
	const uint8_t *b = v;
	const uint16_t *h = v;
	const float *f = v;
	switch (wdt) {
	case DIT_WDT_BF16:
		while (i < n && (h[i] & 0x7f80u) != 0x7f80u)
			i++;
		break;
	case DIT_WDT_F16:
		while (i < n && (h[i] & 0x7c00u) != 0x7c00u)
			i++;
		break;
	case DIT_WDT_F8_E4M3:
		while (i < n && (b[i] & 0x7fu) != 0x7fu)
			i++;
		break;
	case DIT_WDT_F8_E5M2:
		while (i < n && (b[i] & 0x7cu) != 0x7cu)
			i++;
		break;
	case DIT_WDT_Q8_0:
		for (; i < n; i += 32) {
			uint16_t d;
			memcpy(&d, b + i / 32 * 34, 2);
			if ((d & 0x7c00u) == 0x7c00u)
				break;
		}
		i = i < n ? i : n;
		break;
	default:
		while (i < n && isfinite(f[i]))
			i++;
	}
	return i;
}

/* DIT_OK, or the error naming file, tensor and index of the first NaN or Inf of the n
 * values at v (dtype wdt): a weight that is not finite makes every latent NaN, found
 * only after the whole run. */
static dit_status finite_check(const void *v, size_t n, int wdt, const char *label,
                               const char *name, dit_error *err)
{
	size_t i = first_nonfinite(v, n, wdt);
	if (i == n)
		return DIT_OK;
	return dit_error_set(err, DIT_EFORMAT,
	                     "%s: tensor '%s' holds a value that is not finite (NaN or Inf) at "
	                     "index %zu",
	                     label, name, i);
}

static dit_status load_join(const dit_model *m, const dit_join *j, const dit_tensor_desc *rule,
                            const char *prefix, float *dst, int bf16, dit_error *err)
{
	const dit_checkpoint *ck = m->ck;
	const dit_hparams *cfg = &m->cfg;
	dit_wt_source_buf src;
	int64_t want[DIT_T_MAX_DIMS], rows = 0, inner = 1;
	int nd = dit_tensor_shape(cfg, rule, want);
	for (int i = 1; i < nd; i++)
		inner *= want[i];
	const dit_st_file *file[DIT_JOIN_MAX_PARTS];
	const dit_st_tensor *t[DIT_JOIN_MAX_PARTS];
	char name[200];
	for (int k = 0; k < j->nparts; k++) {
		snprintf(name, sizeof name, "%s%s", prefix, j->part[k].from);
		if (!(t[k] = dit_checkpoint_find(ck, name, &file[k])))
			return dit_error_set(err, DIT_ENOTFOUND,
			                     "%s: tensor '%s' missing (part of %s%s)", ck->dir,
			                     name, prefix, j->to);
		int same = t[k]->ndim == nd && (!j->part[k].half || t[k]->shape[0] % 2 == 0);
		for (int i = 1; same && i < nd; i++)
			same = t[k]->shape[i] == want[i];
		if (!same) {
			char have_s[128], want_s[128];
			shape_str(have_s, sizeof have_s, t[k]->ndim, t[k]->shape);
			shape_str(want_s, sizeof want_s, nd, want);
			return dit_error_set(err, DIT_ESHAPE,
			                     "%s: tensor '%s' has shape %s, not rows of %s (%s%s)",
			                     file[k]->label, name, have_s, want_s, prefix, j->to);
		}
		rows += j->part[k].half ? t[k]->shape[0] / 2 : t[k]->shape[0];
	}
	if (rows != want[0])
		return dit_error_set(err, DIT_ESHAPE,
		                     "%s: the parts of %s%s hold %lld rows, %s implies %lld",
		                     ck->dir, prefix, j->to, (long long)rows,
		                     dit_wt_source(m, &src), (long long)want[0]);
	size_t es = bf16 ? sizeof(uint16_t) : sizeof(float);
	char *out = (char *)dst;
	for (int k = 0; dst && k < j->nparts; k++) {
		void *tmp = malloc((size_t)t[k]->numel * es);
		if (!tmp)
			return dit_error_set(err, DIT_ENOMEM, "out of memory reading %s",
			                     j->part[k].from);
		dit_status st = bf16 ? dit_st_read_bf16(file[k], t[k], tmp, err)
		                     : dit_st_read_f32(file[k], t[k], tmp, err);
		if (!st) {
			snprintf(name, sizeof name, "%s%s", prefix, j->part[k].from);
			st = finite_check(tmp, (size_t)t[k]->numel,
			                  bf16 ? DIT_WDT_BF16 : DIT_WDT_F32, file[k]->label, name,
			                  err);
		}
		int64_t r = j->part[k].half ? t[k]->shape[0] / 2 : t[k]->shape[0];
		size_t skip = j->part[k].half == 2 ? (size_t)(r * inner) * es : 0;
		if (!st)
			memcpy(out, (char *)tmp + skip, (size_t)(r * inner) * es);
		free(tmp);
		if (st)
			return st;
		out += (size_t)(r * inner) * es;
	}
	return DIT_OK;
}

/* The stored dtype kept as it is (dit_wt_compact chose it): t's bytes into dst, then
 * for f8 its scale in the slot after them. */
static dit_status load_compact(const dit_st_tensor *t, const dit_st_file *file, const char *name,
                               float *dst, int wdt, dit_error *err)
{
	if (dit_wt_compact_dtype(t) != wdt) /* the pool's choice is every block's dtype */
		return dit_error_set(err, DIT_EFORMAT, "%s: tensor '%s' is %s, not %s as block 0's",
		                     file->label, name, dit_dtype_name(t->dtype),
		                     dit_wdt_name(wdt));
	dit_status st = dit_st_read_raw(file, t, dst, err);
	if (!st && dit_wdt_is_f8(wdt))
		memcpy(dst + dit_wdt_data_slots(wdt, t->numel), &t->scale, sizeof t->scale);
	if (!st && dit_wdt_is_f8(wdt) && !(isfinite(t->scale)))
		return dit_error_set(err, DIT_EFORMAT, "%s: the scale of tensor '%s' is not finite",
		                     file->label, name);
	return st ? st : finite_check(dst, (size_t)t->numel, wdt, file->label, name, err);
}

/* Checks the tensor of table rule (after prefix) against m's config and, dst not NULL,
 * converts it into dst. */
dit_status dit_wt_load(const dit_model *m, const dit_tensor_desc *rule, const char *prefix,
                       float *dst, int wdt, dit_error *err)
{
	int bf16 = wdt == DIT_WDT_BF16;
	const dit_checkpoint *ck = m->ck;
	const dit_format_desc *d = m->fmt;
	const dit_hparams *cfg = &m->cfg;
	dit_wt_source_buf src;
	if (!dit_tensor_present(cfg, rule)) /* the config turns its feature off */
		return DIT_OK;
	const dit_join *j = dit_wt_join(d, rule->name);
	if (j)
		return load_join(m, j, rule, prefix, dst, bf16, err);
	const dit_st_file *file;
	const dit_st_tensor *t = dit_wt_find(ck, d, prefix, rule->name, &file);
	const char *as = dit_wt_format_name(d, rule->name);
	char name[256];
	snprintf(name, sizeof name, "%s%s%s", d && d->name_prefix ? d->name_prefix : "", prefix,
	         as);
	if (!t)
		return dit_error_set(
		    err, DIT_ENOTFOUND,
		    "%s: tensor '%s' missing (%s implies it: %lld blocks, dim %lld)", ck->dir, name,
		    dit_wt_source(m, &src), (long long)cfg->layers[0], (long long)cfg->dim);
	if (d && d->alt_exclusive && d->alt_prefix) {
		char alt[256];
		snprintf(alt, sizeof alt, "%s%s%s", d->alt_prefix, prefix, as);
		if (strcmp(alt, name) != 0 && dit_checkpoint_find(ck, name, NULL) &&
		    dit_checkpoint_find(ck, alt, NULL))
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: tensor '%s' is there twice, also as '%s': two "
			                     "models in one file (which one is meant?)",
			                     file->label, name, alt);
	}
	int64_t want[DIT_T_MAX_DIMS];
	int nd = dit_tensor_shape(cfg, rule, want);
	int same = t->ndim == nd;
	for (int i = 0; same && i < nd; i++)
		same = t->shape[i] == want[i];
	if (!same) {
		char have_s[128], want_s[128];
		shape_str(have_s, sizeof have_s, t->ndim, t->shape);
		shape_str(want_s, sizeof want_s, nd, want);
		return dit_error_set(err, DIT_ESHAPE, "%s: tensor '%s' has shape %s, %s implies %s",
		                     file->label, name, have_s, dit_wt_source(m, &src), want_s);
	}
	if (!dit_dtype_is_weight(t->dtype))
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: tensor '%s' is %s, not a dtype of weights", file->label,
		                     name, dit_dtype_name(t->dtype));
	if (!dst)
		return DIT_OK;
	if (wdt >= DIT_WDT_F16)
		return load_compact(t, file, name, dst, wdt, err);
	dit_status st = bf16 ? dit_st_read_bf16(file, t, (uint16_t *)dst, err)
	                     : dit_st_read_f32(file, t, dst, err);
	return st ? st : finite_check(dst, (size_t)t->numel, wdt, file->label, name, err);
}

const dit_st_tensor *dit_model_find(const dit_model *m, const char *name)
{
	return dit_wt_find(m->ck, m->fmt, "", name, NULL);
}

/* One table tensor's stored dtype (its parts', when joined) counted into m->stored. */
static void count_one(dit_model *m, const dit_tensor_desc *rule, const char *prefix)
{
	if (!dit_tensor_present(&m->cfg, rule))
		return;
	const dit_join *j = dit_wt_join(m->fmt, rule->name);
	char name[200];
	for (int k = 0; j && k < j->nparts; k++) {
		snprintf(name, sizeof name, "%s%s", prefix, j->part[k].from);
		const dit_st_tensor *t = dit_checkpoint_find(m->ck, name, NULL);
		if (t && (int)t->dtype < DIT_DTYPE_COUNT)
			m->stored[t->dtype]++;
	}
	const dit_st_tensor *t = j ? NULL : dit_wt_find(m->ck, m->fmt, prefix, rule->name, NULL);
	if (t && (int)t->dtype < DIT_DTYPE_COUNT)
		m->stored[t->dtype]++;
}

void dit_wt_count_dtypes(dit_model *m)
{
	memset(m->stored, 0, sizeof m->stored);
	for (int i = 0; i < m->desc->nglobals; i++)
		count_one(m, &m->desc->globals[i], "");
	for (int p = 0; p < m->npools; p++) {
		const dit_pool *pl = &m->pool[p];
		const char *pp = m->fmt->pool_prefix[p] ? m->fmt->pool_prefix[p] : pl->d->prefix;
		for (int64_t b = 0; b < pl->nblocks; b++) {
			char prefix[96];
			snprintf(prefix, sizeof prefix, "%s%lld.", pp, (long long)b);
			for (int i = 0; i < pl->d->ntensors; i++)
				count_one(m, &pl->d->tensors[i], prefix);
		}
	}
}

void dit_model_stored_dtypes(const dit_model *m, char *buf, size_t len)
{
	size_t used = 0;
	if (len)
		buf[0] = '\0';
	for (int d = 0; d < DIT_DTYPE_COUNT && used < len; d++)
		if (m->stored[d] > 0)
			used +=
			    (size_t)snprintf(buf + used, len - used, "%s%s %lld", used ? ", " : "",
			                     dit_dtype_name((dit_dtype)d), (long long)m->stored[d]);
}

int dit_wt_compact_dtype(const dit_st_tensor *t)
{
	switch (t->dtype) {
	case DIT_DTYPE_BF16: return DIT_WDT_BF16;
	case DIT_DTYPE_F16: return DIT_WDT_F16;
	case DIT_DTYPE_F8_E4M3: return DIT_WDT_F8_E4M3;
	case DIT_DTYPE_F8_E5M2: return DIT_WDT_F8_E5M2;
	case DIT_DTYPE_Q8_0:
		return t->ndim >= 1 && t->shape[t->ndim - 1] % 32 == 0 ? DIT_WDT_Q8_0 : -1;
	default: return -1;
	}
}

int dit_wt_compact(const dit_model *m, const dit_pool *pl, int i)
{
	const dit_tensor_desc *rule = &pl->d->tensors[i];
	if (!m->ck || !(rule->flags & DIT_T_MATRIX) || !dit_tensor_present(&m->cfg, rule) ||
	    dit_wt_join(m->fmt, rule->name))
		return -1;
	const char *pp =
	    m->fmt->pool_prefix[pl->index] ? m->fmt->pool_prefix[pl->index] : pl->d->prefix;
	int w = -1;
	for (int64_t b = 0; b < pl->nblocks; b++) {
		char prefix[96];
		snprintf(prefix, sizeof prefix, "%s%lld.", pp, (long long)b);
		const dit_st_tensor *t = dit_wt_find(m->ck, m->fmt, prefix, rule->name, NULL);
		int wb = t ? dit_wt_compact_dtype(t) : -1;
		if (wb < 0 || (b > 0 && wb != w))
			return -1;
		w = wb;
	}
	return w;
}
