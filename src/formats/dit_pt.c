/* PyTorch checkpoints as tensor tables (see dit_pt.h): the zip's members, the pickle
 * read by the restricted reader, the state dict under the load key, and the fp8
 * scales of a separate map. */
#define _POSIX_C_SOURCE 200809L

#include "dit_pt.h"

#include "dit_input.h"
#include "dit_pickle.h"
#include "dit_zip.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_QUOTE_MAX 120
#define PT_QBUF      (PT_QUOTE_MAX * 4 + 8)
#define PT_KEYS_MAX  240 /* bytes of the key list in a missing-key message */
#define PT_MAX_KEY   255 /* bytes of a storage key */
#define PT_SUFFIX    ".weight"

static const char *pt_quote(char *buf, const char *s, size_t len)
{
	return dit_error_quote(buf, PT_QBUF, s, len, PT_QUOTE_MAX);
}

/* What resolving a storage key needs: the zip and the data folder ("<root>/data/"). */
typedef struct pt_ctx {
	const dit_zip *zip;
	char *data_dir;
	size_t dlen;
} pt_ctx;

static int pt_resolve(void *ud, const char *key, size_t len, uint64_t *id, uint64_t *nbytes)
{
	const pt_ctx *c = ud;
	if (len == 0 || len > PT_MAX_KEY || memchr(key, '/', len))
		return -1;
	char *name = malloc(c->dlen + len + 1);
	if (!name)
		return -1;
	memcpy(name, c->data_dir, c->dlen);
	memcpy(name + c->dlen, key, len);
	name[c->dlen + len] = '\0';
	const dit_zip_member *m = dit_zip_find(c->zip, name);
	free(name);
	if (!m)
		return -1;
	*id = m->data;
	*nbytes = m->size;
	return 0;
}

/* The checkpoint's folder: the one "<root>/data.pkl" member (no '/' in root). */
static dit_status pt_find_root(const dit_zip *z, const char *label, char **root, dit_error *err)
{
	const char *found = NULL;
	char q1[PT_QBUF], q2[PT_QBUF];
	for (size_t i = 0; i < z->nmembers; i++) {
		const char *nm = z->members[i].name, *sl = strchr(nm, '/');
		if (!sl || sl == nm || strcmp(sl, "/data.pkl") != 0)
			continue;
		if (found)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: members '%s' and '%s': two pickles (a torch "
			                     "checkpoint holds one)",
			                     label, pt_quote(q1, found, strlen(found)),
			                     pt_quote(q2, nm, strlen(nm)));
		found = nm;
	}
	if (!found)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: not a torch checkpoint: no member <folder>/data.pkl",
		                     label);
	if (!(*root = strndup(found, (size_t)(strchr(found, '/') - found))))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", label);
	return DIT_OK;
}

/* Every data member stored as is; byteorder, when present, "little". */
static dit_status pt_check_members(const dit_zip *z, const char *label, const pt_ctx *c,
                                   const char *root, dit_error *err)
{
	char q[PT_QBUF];
	for (size_t i = 0; i < z->nmembers; i++) {
		const dit_zip_member *m = &z->members[i];
		if (strncmp(m->name, c->data_dir, c->dlen) == 0 && !dit_zip_is_stored(m))
			return dit_error_set(
			    err, DIT_EUNSUPPORTED,
			    "%s: member '%s' is %s (method %u): tensor data are read "
			    "in place, stored as torch.save writes them",
			    label, pt_quote(q, m->name, strlen(m->name)),
			    m->flags & 1u ? "encrypted" : "compressed", (unsigned)m->method);
	}
	size_t rl = strlen(root);
	char *bo = malloc(rl + 11);
	if (!bo)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", label);
	memcpy(bo, root, rl);
	memcpy(bo + rl, "/byteorder", 11);
	const dit_zip_member *m = dit_zip_find(z, bo);
	free(bo);
	if (!m)
		return DIT_OK;
	uint8_t *text = NULL;
	size_t len = 0;
	dit_status st = dit_zip_read(z, m, 16, &text, &len, err);
	if (st == DIT_OK && !(len == 6 && memcmp(text, "little", 6) == 0))
		st = dit_error_set(
		    err, len == 3 && memcmp(text, "big", 3) == 0 ? DIT_EUNSUPPORTED : DIT_EFORMAT,
		    "%s: byteorder '%s': only little-endian checkpoints are read", label,
		    pt_quote(q, (const char *)text, len));
	free(text);
	return st;
}

/* The keys of dict d for a message: 'a', 'b', ... */
static void pt_key_list(const dit_pickle *pk, const dit_pk_obj *d, char *buf, size_t cap)
{
	size_t used = 0;
	buf[0] = '\0';
	for (uint32_t i = 0; i + 1 < d->n && used + 8 < cap; i += 2) {
		const dit_pk_obj *k = dit_pickle_obj(pk, d->u.items[i]);
		char q[PT_QBUF];
		const char *s = k->kind == DIT_PK_STR
		                    ? dit_error_quote(q, sizeof q, k->u.s, k->n, 40)
		                    : dit_pk_kind_name((dit_pk_kind)k->kind);
		int w = snprintf(buf + used, cap - used, "%s'%s'", i ? ", " : "", s);
		if (w < 0 || (size_t)w >= cap - used) {
			snprintf(buf + used, cap - used, ", ...");
			return;
		}
		used += (size_t)w;
	}
}

/* The state dict: the dict under key, or the top-level dict when it has neither key
 * nor "module" nor "ema". *used: the key, or NULL. */
static dit_status pt_state_dict(const dit_pickle *pk, const char *label, const char *key,
                                const dit_pk_obj **sd, const char **used, dit_error *err)
{
	const dit_pk_obj *top = dit_pickle_obj(pk, pk->root);
	char q[PT_QBUF], keys[PT_KEYS_MAX];
	if (top->kind != DIT_PK_DICT)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: the pickle holds %s, not a dict of tensors", label,
		                     dit_pk_kind_name((dit_pk_kind)top->kind));
	uint32_t v;
	size_t hits = dit_pickle_dict_find(pk, top, key, strlen(key), &v);
	if (hits > 1)
		return dit_error_set(err, DIT_EFORMAT, "%s: key '%s' appears %zu times", label,
		                     pt_quote(q, key, strlen(key)), hits);
	if (hits == 1) {
		const dit_pk_obj *d = dit_pickle_obj(pk, v);
		if (d->kind != DIT_PK_DICT)
			return dit_error_set(
			    err, DIT_EFORMAT, "%s: '%s' holds %s, not a state dict", label,
			    pt_quote(q, key, strlen(key)), dit_pk_kind_name((dit_pk_kind)d->kind));
		*sd = d;
		*used = key;
		return DIT_OK;
	}
	if (dit_pickle_dict_find(pk, top, "module", 6, NULL) ||
	    dit_pickle_dict_find(pk, top, "ema", 3, NULL)) {
		pt_key_list(pk, top, keys, sizeof keys);
		return dit_error_set(err, DIT_ENOTFOUND,
		                     "%s: load key '%s' missing; the checkpoint's keys are %s",
		                     label, pt_quote(q, key, strlen(key)), keys);
	}
	*sd = top;
	*used = NULL;
	return DIT_OK;
}

static int pt_dtype(dit_pk_dtype d, dit_dtype *out)
{
	switch (d) {
	case DIT_PKD_F32: *out = DIT_DTYPE_F32; return 1;
	case DIT_PKD_F16: *out = DIT_DTYPE_F16; return 1;
	case DIT_PKD_BF16: *out = DIT_DTYPE_BF16; return 1;
	case DIT_PKD_F64: *out = DIT_DTYPE_F64; return 1;
	case DIT_PKD_I64: *out = DIT_DTYPE_I64; return 1;
	case DIT_PKD_I32: *out = DIT_DTYPE_I32; return 1;
	case DIT_PKD_F8_E4M3: *out = DIT_DTYPE_F8_E4M3; return 1;
	default: return 0;
	}
}

static int pt_cmp_name(const void *a, const void *b)
{
	return strcmp(((const dit_st_tensor *)a)->name, ((const dit_st_tensor *)b)->name);
}

/* f's tensor table from the state dict sd. */
static dit_status pt_build_table(dit_st_file *f, const dit_pickle *pk, const dit_pk_obj *sd,
                                 dit_error *err)
{
	char q[PT_QBUF];
	size_t n = sd->n / 2;
	if (n > DIT_ST_MAX_TENSORS)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: %zu tensors, more than the limit of %zu", f->label, n,
		                     DIT_ST_MAX_TENSORS);
	if (n && !(f->tensors = calloc(n, sizeof *f->tensors)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory for %zu tensors", f->label,
		                     n);
	for (size_t i = 0; i < n; i++) {
		const dit_pk_obj *k = dit_pickle_obj(pk, sd->u.items[2 * i]);
		const dit_pk_obj *v = dit_pickle_obj(pk, sd->u.items[2 * i + 1]);
		if (k->kind != DIT_PK_STR || memchr(k->u.s, 0, k->n))
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: state dict key %zu is %s, not a tensor name",
			                     f->label, i, dit_pk_kind_name((dit_pk_kind)k->kind));
		const char *qn = pt_quote(q, k->u.s, k->n);
		/* TransformerEngine's per-module state (a BytesIO or an empty byte tensor):
		 * never a weight */
		static const char xs[] = "._extra_state";
		if (k->n >= sizeof xs - 1 &&
		    memcmp(k->u.s + k->n - (sizeof xs - 1), xs, sizeof xs - 1) == 0)
			continue;
		if (v->kind != DIT_PK_TENSOR)
			return dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: the state dict holds %s, not a tensor (tensor '%s')", f->label,
			    dit_pk_kind_name((dit_pk_kind)v->kind), qn);
		const dit_pk_tensor *pt = &pk->tensors[v->u.ref];
		dit_st_tensor *t = &f->tensors[f->ntensors];
		if (!pt_dtype(pt->dtype, &t->dtype))
			return dit_error_set(err, DIT_EUNSUPPORTED,
			                     "%s: dtype %s is not read (tensor '%s')", f->label,
			                     dit_pk_dtype_name(pt->dtype), qn);
		t->ndim = pt->ndim;
		memcpy(t->shape, pt->shape, sizeof pt->shape);
		t->numel = pt->numel;
		t->nbytes = pt->nbytes;
		t->offset = pk->storages[pt->storage].id + pt->offset;
		t->scale = 1.0f;
		if (t->offset > f->data_size || t->nbytes > f->data_size - t->offset)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: tensor data out of bounds (tensor '%s')",
			                     f->label, qn);
		if (!(t->name = strndup(k->u.s, k->n)))
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
		f->ntensors++;
	}
	if (f->ntensors > 1)
		qsort(f->tensors, f->ntensors, sizeof *f->tensors, pt_cmp_name);
	for (size_t i = 1; i < f->ntensors; i++) {
		const char *nm = f->tensors[i].name;
		if (strcmp(f->tensors[i - 1].name, nm) == 0)
			return dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: the state dict names a tensor twice (tensor '%s')", f->label,
			    pt_quote(q, nm, strlen(nm)));
	}
	return DIT_OK;
}

/* f->meta: format "pt" and, when one was used, the load key. */
static dit_status pt_set_meta(dit_st_file *f, const char *used, dit_error *err)
{
	const char *kv[] = {"format", "pt", DIT_PT_META_LOAD_KEY, used};
	size_t n = used ? 2 : 1;
	if (!(f->meta = calloc(2 * n, sizeof *f->meta)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
	for (; f->nmeta < n; f->nmeta++) {
		f->meta[2 * f->nmeta] = strdup(kv[2 * f->nmeta]);
		f->meta[2 * f->nmeta + 1] = strdup(kv[2 * f->nmeta + 1]);
		if (!f->meta[2 * f->nmeta] || !f->meta[2 * f->nmeta + 1]) {
			f->nmeta++;
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
		}
	}
	return DIT_OK;
}

/* Reads the checkpoint image of f (f->fd or f->data, f->data_size bytes). */
static dit_status pt_parse(dit_st_file *f, const char *key, dit_error *err)
{
	dit_zip_src src = {.fd = f->fd, .base = f->base, .mem = f->data, .size = f->data_size};
	dit_zip *z = NULL;
	char *root = NULL, *plabel = NULL;
	uint8_t *pkl = NULL;
	size_t plen = 0;
	dit_pickle pk;
	memset(&pk, 0, sizeof pk);
	pt_ctx c = {0};
	dit_status st = dit_zip_open(&z, f->path, &src, err);
	if (st == DIT_OK)
		st = pt_find_root(z, f->label, &root, err);
	if (st == DIT_OK) {
		size_t rl = strlen(root);
		c.zip = z;
		c.dlen = rl + 6;
		size_t ll = strlen(f->path) + rl + 16;
		char *raw = malloc(ll);
		c.data_dir = malloc(rl + 7);
		if (raw)
			snprintf(raw, ll, "%s:%s/data.pkl", f->path, root);
		if (c.data_dir)
			snprintf(c.data_dir, rl + 7, "%s/data/", root);
		plabel = raw ? dit_input_label(raw) : NULL;
		free(raw);
		if (!c.data_dir || !plabel)
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
	}
	if (st == DIT_OK)
		st = pt_check_members(z, f->label, &c, root, err);
	if (st == DIT_OK) {
		size_t pl = strlen(root) + 10;
		char *pname = malloc(pl);
		const dit_zip_member *m = NULL;
		if (pname) {
			snprintf(pname, pl, "%s/data.pkl", root);
			m = dit_zip_find(z, pname);
		}
		free(pname);
		st = !m ? dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label)
		        : dit_zip_read(z, m, DIT_PT_MAX_PICKLE, &pkl, &plen, err);
	}
	if (st == DIT_OK) {
		dit_pickle_opts po = {
		    .label = plabel, .resolve = pt_resolve, .ud = &c, .data_dir = c.data_dir};
		st = dit_pickle_load(&pk, pkl, plen, &po, err);
	}
	const dit_pk_obj *sd = NULL;
	const char *used = NULL;
	if (st == DIT_OK)
		st = pt_state_dict(&pk, f->label, key, &sd, &used, err);
	if (st == DIT_OK)
		st = pt_build_table(f, &pk, sd, err);
	if (st == DIT_OK)
		st = pt_set_meta(f, used, err);
	dit_pickle_free(&pk);
	free(pkl);
	free(plabel);
	free(c.data_dir);
	free(root);
	dit_zip_close(z);
	return st;
}

static dit_status pt_open(dit_st_file **out, const char *name, int fd, int owned, uint64_t off,
                          const void *mem, uint64_t size, const char *key, dit_error *err)
{
	dit_st_file *f = calloc(1, sizeof *f);
	if (!f || !(f->path = strdup(name)) || !(f->label = dit_input_label(name))) {
		if (f)
			free(f->path);
		free(f);
		if (owned)
			close(fd);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", name);
	}
	f->fd = fd;
	f->fd_owned = owned;
	f->base = off;
	f->data = mem;
	f->data_size = size;
	dit_status st = pt_parse(f, key ? key : DIT_PT_LOAD_KEY, err);
	if (st != DIT_OK) {
		dit_st_close(f);
		return st;
	}
	*out = f;
	return DIT_OK;
}

dit_status dit_pt_open(dit_st_file **out, const char *path, const char *load_key, dit_error *err)
{
	if (!out || !path)
		return dit_error_set(err, DIT_EINVAL, "dit_pt_open: NULL argument");
	*out = NULL;
	int fd;
	uint64_t size;
	dit_status st = dit_input_open(path, NULL, &fd, &size, err);
	if (st != DIT_OK)
		return st;
	return pt_open(out, path, fd, 1, 0, NULL, size, load_key, err);
}

dit_status dit_pt_open_fd(dit_st_file **out, const char *name, int fd, uint64_t off, uint64_t size,
                          const char *load_key, dit_error *err)
{
	if (!out || !name || fd < 0)
		return dit_error_set(err, DIT_EINVAL, "dit_pt_open_fd: bad argument");
	*out = NULL;
	return pt_open(out, name, fd, 0, off, NULL, size, load_key, err);
}

dit_status dit_pt_open_mem(dit_st_file **out, const char *name, const void *data, size_t size,
                           const char *load_key, dit_error *err)
{
	static const uint8_t none[1];
	if (!out || !name || (!data && size > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_pt_open_mem: NULL argument");
	*out = NULL;
	return pt_open(out, name, -1, 0, 0, data ? data : none, size, load_key, err);
}

/* The map's entry for tensor name: "<name without .weight>" or name. */
static dit_status pt_scale_of(const dit_st_file *f, const dit_st_file *map, const char *name,
                              float *scale, dit_error *err)
{
	char q1[PT_QBUF], q2[PT_QBUF];
	size_t nl = strlen(name), sl = strlen(PT_SUFFIX);
	char *mod =
	    nl > sl && strcmp(name + nl - sl, PT_SUFFIX) == 0 ? strndup(name, nl - sl) : NULL;
	const dit_st_tensor *a = mod ? dit_st_find(map, mod) : NULL, *b = dit_st_find(map, name);
	const char *qn = pt_quote(q2, name, nl);
	dit_status st = DIT_OK;
	if (a && b)
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: scales for both '%s' and the tensor's name "
		                   "(tensor '%s')",
		                   map->label, pt_quote(q1, mod, strlen(mod)), qn);
	else if (!a && !b)
		st = dit_error_set(err, DIT_ENOTFOUND,
		                   "%s: no scale for %s's float8_e4m3fn tensor (tensor '%s')",
		                   map->label, f->label, qn);
	free(mod);
	const dit_st_tensor *t = a ? a : b;
	if (st == DIT_OK && (t->numel != 1 || t->dtype == DIT_DTYPE_I64 ||
	                     t->dtype == DIT_DTYPE_I32 || t->dtype == DIT_DTYPE_F8_E4M3))
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: the scale is not a one-element float tensor (tensor '%s')",
		                   map->label, pt_quote(q1, t->name, strlen(t->name)));
	if (st == DIT_OK)
		st = dit_st_read_f32(map, t, scale, err);
	if (st == DIT_OK && !isfinite(*scale))
		st = dit_error_set(err, DIT_EFORMAT, "%s: the scale is not finite (tensor '%s')",
		                   map->label, pt_quote(q1, t->name, strlen(t->name)));
	return st;
}

dit_status dit_pt_apply_scales(dit_st_file *f, dit_st_file *map, const char *map_name,
                               dit_error *err)
{
	char q1[PT_QBUF], q2[PT_QBUF];
	for (size_t i = 0; i < f->ntensors; i++) {
		dit_st_tensor *t = &f->tensors[i];
		if (t->dtype != DIT_DTYPE_F8_E4M3)
			continue;
		if (!map)
			return dit_error_set(err, DIT_ENOTFOUND,
			                     "%s: float8_e4m3fn tensors need their scales from %s, "
			                     "which is missing (tensor '%s')",
			                     f->label, map_name ? map_name : "a scale map",
			                     pt_quote(q1, t->name, strlen(t->name)));
		dit_status st = pt_scale_of(f, map, t->name, &t->scale, err);
		if (st != DIT_OK)
			return st;
	}
	for (size_t i = 0; map && i < map->ntensors; i++) {
		const char *k = map->tensors[i].name;
		size_t kl = strlen(k);
		char *w = malloc(kl + sizeof PT_SUFFIX);
		if (!w)
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", map->label);
		memcpy(w, k, kl);
		memcpy(w + kl, PT_SUFFIX, sizeof PT_SUFFIX);
		const dit_st_tensor *t = dit_st_find(f, w);
		free(w);
		if (!t)
			t = dit_st_find(f, k);
		if (t && t->dtype != DIT_DTYPE_F8_E4M3)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: a scale for %s's tensor '%s', which is %s, not "
			                     "float8_e4m3fn (tensor '%s')",
			                     map->label, f->label,
			                     pt_quote(q1, t->name, strlen(t->name)),
			                     dit_dtype_name(t->dtype), pt_quote(q2, k, kl));
	}
	for (size_t i = 0; map && i < map->ntensors; i++)
		free(map->tensors[i].name);
	if (map) {
		free(map->tensors);
		map->tensors = NULL;
		map->ntensors = 0;
	}
	return DIT_OK;
}
