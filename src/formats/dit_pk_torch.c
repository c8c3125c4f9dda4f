/* The torch part of the pickle reader (see dit_pickle.h): the accepted globals, what
 * calling them makes, persistent ids as storages and the checks of every tensor; and
 * the lookups and names the reader's users need. */
#define _POSIX_C_SOURCE 200809L

#include "dit_pk_priv.h"

#include <stdio.h>
#include <stdlib.h>

static const struct pk_dtype_info {
	const char *name; /* torch.<name> */
	size_t size;
} pk_dtypes[] = {
    [DIT_PKD_UNTYPED] = {"uint8", 1},
    [DIT_PKD_F32] = {"float32", 4},
    [DIT_PKD_F16] = {"float16", 2},
    [DIT_PKD_BF16] = {"bfloat16", 2},
    [DIT_PKD_F64] = {"float64", 8},
    [DIT_PKD_I64] = {"int64", 8},
    [DIT_PKD_I32] = {"int32", 4},
    [DIT_PKD_I16] = {"int16", 2},
    [DIT_PKD_I8] = {"int8", 1},
    [DIT_PKD_U8] = {"uint8", 1},
    [DIT_PKD_BOOL] = {"bool", 1},
    [DIT_PKD_F8_E4M3] = {"float8_e4m3fn", 1},
    [DIT_PKD_F8_E5M2] = {"float8_e5m2", 1},
};

size_t dit_pk_dtype_size(dit_pk_dtype d)
{
	return (size_t)d < sizeof pk_dtypes / sizeof pk_dtypes[0] ? pk_dtypes[d].size : 0;
}

const char *dit_pk_dtype_name(dit_pk_dtype d)
{
	static const char *const full[] = {
	    [DIT_PKD_UNTYPED] = "bytes",
	    [DIT_PKD_F32] = "torch.float32",
	    [DIT_PKD_F16] = "torch.float16",
	    [DIT_PKD_BF16] = "torch.bfloat16",
	    [DIT_PKD_F64] = "torch.float64",
	    [DIT_PKD_I64] = "torch.int64",
	    [DIT_PKD_I32] = "torch.int32",
	    [DIT_PKD_I16] = "torch.int16",
	    [DIT_PKD_I8] = "torch.int8",
	    [DIT_PKD_U8] = "torch.uint8",
	    [DIT_PKD_BOOL] = "torch.bool",
	    [DIT_PKD_F8_E4M3] = "torch.float8_e4m3fn",
	    [DIT_PKD_F8_E5M2] = "torch.float8_e5m2",
	};
	return (size_t)d < sizeof full / sizeof full[0] ? full[d] : "?";
}

/* The accepted globals, as module and name. */
static const struct pk_global_info {
	const char *mod, *name;
	dit_pk_global g;
	dit_pk_dtype dtype;
} pk_globals[] = {
    {"collections", "OrderedDict", DIT_PKG_ORDERED_DICT, 0},
    {"torch._utils", "_rebuild_tensor_v2", DIT_PKG_REBUILD_V2, 0},
    {"torch._utils", "_rebuild_tensor_v3", DIT_PKG_REBUILD_V3, 0},
    {"torch._utils", "_rebuild_parameter", DIT_PKG_REBUILD_PARAM, 0},
    {"torch", "Size", DIT_PKG_SIZE, 0},
    {"builtins", "set", DIT_PKG_SET, 0},
    {"__builtin__", "set", DIT_PKG_SET, 0}, /* protocol 2 names builtins so */
    {"builtins", "frozenset", DIT_PKG_FROZENSET, 0},
    {"__builtin__", "frozenset", DIT_PKG_FROZENSET, 0},
    {"torch", "FloatStorage", DIT_PKG_STORAGE, DIT_PKD_F32},
    {"torch", "HalfStorage", DIT_PKG_STORAGE, DIT_PKD_F16},
    {"torch", "BFloat16Storage", DIT_PKG_STORAGE, DIT_PKD_BF16},
    {"torch", "DoubleStorage", DIT_PKG_STORAGE, DIT_PKD_F64},
    {"torch", "LongStorage", DIT_PKG_STORAGE, DIT_PKD_I64},
    {"torch", "IntStorage", DIT_PKG_STORAGE, DIT_PKD_I32},
    {"torch", "ShortStorage", DIT_PKG_STORAGE, DIT_PKD_I16},
    {"torch", "CharStorage", DIT_PKG_STORAGE, DIT_PKD_I8},
    {"torch", "ByteStorage", DIT_PKG_STORAGE, DIT_PKD_U8},
    {"torch", "BoolStorage", DIT_PKG_STORAGE, DIT_PKD_BOOL},
    {"torch.storage", "UntypedStorage", DIT_PKG_STORAGE, DIT_PKD_UNTYPED},
    /* TransformerEngine's _extra_state, a BytesIO pickled with its bytes */
    {"_io", "BytesIO", DIT_PKG_BYTESIO, 0},
    {"_codecs", "encode", DIT_PKG_CODECS_ENCODE, 0},
    {"torch", "UntypedStorage", DIT_PKG_STORAGE, DIT_PKD_UNTYPED},
};

dit_status pk_global(pk_state *s, const char *mod, size_t ml, const char *name, size_t nl,
                     uint32_t *out)
{
	int found = -1;
	dit_pk_dtype dt = DIT_PKD_UNTYPED;
	for (size_t i = 0; found < 0 && i < sizeof pk_globals / sizeof pk_globals[0]; i++) {
		const struct pk_global_info *g = &pk_globals[i];
		if (strlen(g->mod) == ml && memcmp(g->mod, mod, ml) == 0 && strlen(g->name) == nl &&
		    memcmp(g->name, name, nl) == 0) {
			found = (int)g->g;
			dt = g->dtype;
		}
	}
	/* torch.<dtype>: the element type of _rebuild_tensor_v3 */
	for (size_t d = 1; found < 0 && d < sizeof pk_dtypes / sizeof pk_dtypes[0]; d++) {
		if (ml == 5 && memcmp(mod, "torch", 5) == 0 && strlen(pk_dtypes[d].name) == nl &&
		    memcmp(pk_dtypes[d].name, name, nl) == 0) {
			found = DIT_PKG_DTYPE;
			dt = (dit_pk_dtype)d;
		}
	}
	if (found < 0) {
		char q1[PK_QBUF], q2[PK_QBUF];
		return pk_fail(
		    s, DIT_EUNSUPPORTED,
		    "global '%s.%s' is not allowed (a state dict needs only OrderedDict, "
		    "tensors and their storages)",
		    pk_quote(q1, mod, ml), pk_quote(q2, name, nl));
	}
	dit_status st = pk_new(s, DIT_PK_GLOBAL, out);
	if (st == DIT_OK) {
		s->p->objs[*out].global = (uint8_t)found;
		s->p->objs[*out].dtype = (uint8_t)dt;
	}
	return st;
}

/* The name of global value g for messages: "module.name". */
static const char *pk_global_name(const dit_pk_obj *g, char *buf, size_t cap)
{
	snprintf(buf, cap, "?");
	for (size_t i = 0; i < sizeof pk_globals / sizeof pk_globals[0]; i++) {
		const struct pk_global_info *e = &pk_globals[i];
		if (e->g == g->global && (g->global != DIT_PKG_STORAGE || e->dtype == g->dtype)) {
			snprintf(buf, cap, "%s.%s", e->mod, e->name);
			return buf;
		}
	}
	if (g->global == DIT_PKG_DTYPE)
		snprintf(buf, cap, "%s", dit_pk_dtype_name((dit_pk_dtype)g->dtype));
	return buf;
}

static const dit_pk_obj *pk_obj(const pk_state *s, uint32_t i)
{
	return &s->p->objs[i];
}

/* Item i of tuple t. */
static const dit_pk_obj *pk_item(const pk_state *s, const dit_pk_obj *t, uint32_t i)
{
	return &s->p->objs[t->u.items[i]];
}

/* A tuple of at most DIT_PK_MAX_DIMS ints into v; its length, or -1. */
static int pk_ints(const pk_state *s, const dit_pk_obj *t, int64_t *v)
{
	if (t->kind != DIT_PK_TUPLE || t->n > DIT_PK_MAX_DIMS)
		return -1;
	for (uint32_t i = 0; i < t->n; i++) {
		const dit_pk_obj *x = pk_item(s, t, i);
		if (x->kind != DIT_PK_INT)
			return -1;
		v[i] = x->u.i;
	}
	return (int)t->n;
}

/* The tensor's dtype: _v3's argument, which a typed storage must match; _v2 takes its
 * storage's, which must be typed. */
static dit_status pk_rebuild_dtype(pk_state *s, int v3, const dit_pk_obj *a,
                                   const dit_pk_storage *sto, const char *qk, dit_pk_tensor *t)
{
	if (v3) {
		const dit_pk_obj *dt = pk_item(s, a, 6);
		if (dt->kind != DIT_PK_GLOBAL || dt->global != DIT_PKG_DTYPE)
			return pk_fail(s, DIT_EFORMAT, "tensor of storage '%s': dtype is %s", qk,
			               dit_pk_kind_name((dit_pk_kind)dt->kind));
		if (sto->dtype != DIT_PKD_UNTYPED && sto->dtype != dt->dtype)
			return pk_fail(s, DIT_EFORMAT,
			               "tensor of storage '%s': %s in a storage of %s", qk,
			               dit_pk_dtype_name((dit_pk_dtype)dt->dtype),
			               dit_pk_dtype_name(sto->dtype));
		t->dtype = (dit_pk_dtype)dt->dtype;
	} else if (sto->dtype == DIT_PKD_UNTYPED) {
		return pk_fail(s, DIT_EFORMAT,
		               "tensor of storage '%s': _rebuild_tensor_v2 of an untyped storage",
		               qk);
	}
	return DIT_OK;
}

/* The element count of t's shape (t->ndim sizes), and its strides: contiguous,
 * row-major except where a dimension holds one element. */
static dit_status pk_rebuild_layout(pk_state *s, const char *qk, dit_pk_tensor *t,
                                    const int64_t *stride)
{
	int nd = t->ndim;
	t->numel = 1;
	for (int i = 0; i < nd; i++) {
		if (t->shape[i] < 0 || (t->shape[i] > 0 && t->numel > INT64_MAX / 8 / t->shape[i]))
			return pk_fail(
			    s, DIT_EFORMAT,
			    "tensor of storage '%s': size[%d] is negative or the element "
			    "count overflows",
			    qk, i);
		t->numel *= t->shape[i];
	}
	int64_t want = 1;
	for (int i = nd - 1; t->numel > 0 && i >= 0; i--) {
		if (t->shape[i] != 1 && stride[i] != want)
			return pk_fail(
			    s, DIT_EUNSUPPORTED,
			    "tensor of storage '%s' is not contiguous (stride[%d] is %lld, "
			    "%lld expected)",
			    qk, i, (long long)stride[i], (long long)want);
		want *= t->shape[i];
	}
	return DIT_OK;
}

/* t's bytes, from element o of its storage, within the storage. */
static dit_status pk_rebuild_place(pk_state *s, const char *qk, const dit_pk_storage *sto,
                                   uint64_t o, dit_pk_tensor *t)
{
	uint64_t es = dit_pk_dtype_size(t->dtype);
	t->nbytes = (uint64_t)t->numel * es;
	if (o > sto->nbytes / es || t->nbytes > sto->nbytes - o * es)
		return pk_fail(s, DIT_EFORMAT,
		               "tensor of storage '%s' (offset %llu, %lld elements of %llu bytes) "
		               "ends past the storage's %llu bytes",
		               qk, (unsigned long long)o, (long long)t->numel,
		               (unsigned long long)es, (unsigned long long)sto->nbytes);
	t->offset = o * es;
	return DIT_OK;
}

/* t appended to the pickle's tensors, and a new value referring to it in *out. */
static dit_status pk_tensor_add(pk_state *s, const dit_pk_tensor *t, uint32_t *out)
{
	dit_pickle *p = s->p;
	if (p->ntensors >= s->caps.tensors)
		return pk_fail(s, DIT_EFORMAT, "more than %zu tensors, the limit", s->caps.tensors);
	if (p->ntensors == p->cap_tensors) {
		size_t n = p->cap_tensors ? p->cap_tensors * 2 : 64;
		dit_pk_tensor *v = realloc(p->tensors, n * sizeof *v);
		if (!v)
			return pk_fail(s, DIT_ENOMEM, "out of memory for %zu tensors", n);
		p->tensors = v;
		p->cap_tensors = n;
	}
	dit_status st = pk_new(s, DIT_PK_TENSOR, out);
	if (st == DIT_OK) {
		p->tensors[p->ntensors] = *t;
		p->objs[*out].u.ref = (uint32_t)p->ntensors++;
	}
	return st;
}

/* _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]) and
 * _v3(..., hooks, dtype[, metadata]): checks the arguments and the tensor's place in its
 * storage. */
static dit_status pk_rebuild(pk_state *s, int v3, const dit_pk_obj *a, uint32_t *out)
{
	uint32_t base = v3 ? 7 : 6;
	if (a->n != base && a->n != base + 1)
		return pk_fail(s, DIT_EFORMAT,
		               "_rebuild_tensor_v%d with %u arguments, not %u or %u", v3 ? 3 : 2,
		               a->n, base, base + 1);
	const dit_pk_obj *so = pk_item(s, a, 0), *off = pk_item(s, a, 1);
	const dit_pk_obj *rg = pk_item(s, a, 4), *hooks = pk_item(s, a, 5);
	if (so->kind != DIT_PK_STORAGE)
		return pk_fail(s, DIT_EFORMAT, "a tensor rebuilt from %s, not a storage",
		               dit_pk_kind_name((dit_pk_kind)so->kind));
	const dit_pk_storage *sto = &s->p->storages[so->u.ref];
	char q[PK_QBUF];
	const char *qk = pk_quote(q, sto->key, sto->keylen);
	dit_pk_tensor t = {.storage = so->u.ref, .dtype = sto->dtype};
	int64_t stride[DIT_PK_MAX_DIMS];
	int nd = pk_ints(s, pk_item(s, a, 2), t.shape);
	if (off->kind != DIT_PK_INT || off->u.i < 0 || nd < 0 ||
	    pk_ints(s, pk_item(s, a, 3), stride) != nd || rg->kind != DIT_PK_BOOL ||
	    hooks->kind != DIT_PK_DICT)
		return pk_fail(
		    s, DIT_EFORMAT,
		    "tensor of storage '%s': malformed offset, size, stride, requires_grad "
		    "or hooks (at most %d dimensions)",
		    qk, DIT_PK_MAX_DIMS);
	dit_status st = pk_rebuild_dtype(s, v3, a, sto, qk, &t);
	if (st != DIT_OK)
		return st;
	if (a->n == base + 1) {
		const dit_pk_obj *md = pk_item(s, a, base);
		if (!(md->kind == DIT_PK_NONE || (md->kind == DIT_PK_DICT && md->n == 0)))
			return pk_fail(s, DIT_EUNSUPPORTED,
			               "tensor of storage '%s' has metadata (conjugate or negative "
			               "bits), which is not read",
			               qk);
	}
	t.ndim = nd;
	if ((st = pk_rebuild_layout(s, qk, &t, stride)) != DIT_OK ||
	    (st = pk_rebuild_place(s, qk, sto, (uint64_t)off->u.i, &t)) != DIT_OK)
		return st;
	return pk_tensor_add(s, &t, out);
}

/* A set (builtins.set or frozenset) of the items of a list, tuple or set. */
static dit_status pk_make_set(pk_state *s, const dit_pk_obj *a, uint32_t *out)
{
	uint32_t src = 0;
	if (a->n > 1 || (a->n == 1 && (pk_item(s, a, 0)->kind != DIT_PK_LIST &&
	                               pk_item(s, a, 0)->kind != DIT_PK_TUPLE &&
	                               pk_item(s, a, 0)->kind != DIT_PK_SET)))
		return pk_fail(s, DIT_EFORMAT, "set() of other than one list");
	if (a->n == 1)
		src = a->u.items[0];
	uint32_t n = a->n == 1 ? pk_obj(s, src)->n : 0;
	dit_status st = pk_new(s, DIT_PK_SET, out); /* a and every value pointer move */
	for (uint32_t i = 0; st == DIT_OK && i < n; i++)
		st = pk_append(s, *out, pk_obj(s, src)->u.items[i]);
	return st;
}

dit_status pk_reduce(pk_state *s, uint32_t fn, uint32_t args, uint32_t *out)
{
	const dit_pk_obj *f = pk_obj(s, fn), *a = pk_obj(s, args);
	if (f->kind != DIT_PK_GLOBAL)
		return pk_fail(s, DIT_EUNSUPPORTED, "REDUCE of %s is not allowed",
		               dit_pk_kind_name((dit_pk_kind)f->kind));
	if (a->kind != DIT_PK_TUPLE)
		return pk_fail(s, DIT_EFORMAT, "REDUCE with %s as arguments, not a tuple",
		               dit_pk_kind_name((dit_pk_kind)a->kind));
	switch ((dit_pk_global)f->global) {
	case DIT_PKG_ORDERED_DICT:
		if (a->n != 0)
			return pk_fail(s, DIT_EUNSUPPORTED, "OrderedDict() with %u arguments",
			               a->n);
		return pk_new(s, DIT_PK_DICT, out);
	case DIT_PKG_REBUILD_V2:
	case DIT_PKG_REBUILD_V3: return pk_rebuild(s, f->global == DIT_PKG_REBUILD_V3, a, out);
	case DIT_PKG_REBUILD_PARAM:
		if (a->n != 3 || pk_item(s, a, 0)->kind != DIT_PK_TENSOR)
			return pk_fail(s, DIT_EFORMAT, "_rebuild_parameter of other than a tensor");
		*out = a->u.items[0];
		return DIT_OK;
	case DIT_PKG_SIZE:
		if (a->n != 1 || pk_item(s, a, 0)->kind != DIT_PK_TUPLE)
			return pk_fail(s, DIT_EFORMAT, "torch.Size of other than a tuple");
		*out = a->u.items[0];
		return DIT_OK;
	case DIT_PKG_SET:
	case DIT_PKG_FROZENSET: return pk_make_set(s, a, out);
	case DIT_PKG_CODECS_ENCODE: /* the string stands for its bytes, never read */
		if (a->n != 2 || pk_item(s, a, 0)->kind != DIT_PK_STR ||
		    pk_item(s, a, 1)->kind != DIT_PK_STR)
			return pk_fail(s, DIT_EFORMAT, "_codecs.encode of other than two strings");
		*out = a->u.items[0];
		return DIT_OK;
	case DIT_PKG_STORAGE:
	case DIT_PKG_DTYPE:
	case DIT_PKG_BYTESIO: break;
	}
	char name[64];
	return pk_fail(s, DIT_EUNSUPPORTED,
	               "REDUCE of '%s' is not allowed (only OrderedDict, "
	               "the tensor rebuilds, torch.Size and set are called)",
	               pk_global_name(f, name, sizeof name));
}

dit_status pk_persistent(pk_state *s, uint32_t pid, uint32_t *out)
{
	const dit_pk_obj *t = pk_obj(s, pid);
	if (t->kind != DIT_PK_TUPLE || t->n != 5 || pk_item(s, t, 0)->kind != DIT_PK_STR ||
	    pk_item(s, t, 0)->n != 7 || memcmp(pk_item(s, t, 0)->u.s, "storage", 7) != 0 ||
	    pk_item(s, t, 1)->kind != DIT_PK_GLOBAL ||
	    pk_item(s, t, 1)->global != DIT_PKG_STORAGE || pk_item(s, t, 2)->kind != DIT_PK_STR ||
	    pk_item(s, t, 3)->kind != DIT_PK_STR || pk_item(s, t, 4)->kind != DIT_PK_INT ||
	    pk_item(s, t, 4)->u.i < 0)
		return pk_fail(s, DIT_EFORMAT,
		               "persistent id is not ('storage', storage class, key, location, "
		               "numel)");
	const dit_pk_obj *k = pk_item(s, t, 2);
	dit_pk_dtype dt = (dit_pk_dtype)pk_item(s, t, 1)->dtype;
	uint64_t numel = (uint64_t)pk_item(s, t, 4)->u.i, es = dit_pk_dtype_size(dt);
	char q[PK_QBUF];
	const char *qk = pk_quote(q, k->u.s, k->n);
	uint64_t id = 0, have = 0;
	if (!s->o->resolve || memchr(k->u.s, 0, k->n) ||
	    s->o->resolve(s->o->ud, k->u.s, k->n, &id, &have) != 0)
		return pk_fail(s, DIT_EFORMAT, "storage '%s' has no data member %s%s", qk,
		               s->o->data_dir ? s->o->data_dir : "", qk);
	if (numel > UINT64_MAX / es || numel * es != have)
		return pk_fail(s, DIT_EFORMAT,
		               "storage '%s' declares %llu elements of %llu bytes, but its data "
		               "member holds %llu bytes",
		               qk, (unsigned long long)numel, (unsigned long long)es,
		               (unsigned long long)have);
	dit_pickle *p = s->p;
	if (p->nstorages >= s->caps.storages)
		return pk_fail(s, DIT_EFORMAT, "more than %zu storages, the limit",
		               s->caps.storages);
	if (p->nstorages == p->cap_storages) {
		size_t n = p->cap_storages ? p->cap_storages * 2 : 64;
		dit_pk_storage *v = realloc(p->storages, n * sizeof *v);
		if (!v)
			return pk_fail(s, DIT_ENOMEM, "out of memory for %zu storages", n);
		p->storages = v;
		p->cap_storages = n;
	}
	dit_pk_storage sto = {.key = k->u.s, .keylen = k->n, .dtype = dt, .nbytes = have, .id = id};
	dit_status st = pk_new(s, DIT_PK_STORAGE, out); /* k moves */
	if (st == DIT_OK) {
		p->storages[p->nstorages] = sto;
		p->objs[*out].u.ref = (uint32_t)p->nstorages++;
	}
	return st;
}

dit_status pk_newobj(pk_state *s, uint32_t cls, uint32_t args, uint32_t *out)
{
	const dit_pk_obj *c = pk_obj(s, cls), *a = pk_obj(s, args);
	if (c->kind != DIT_PK_GLOBAL || c->global != DIT_PKG_BYTESIO || a->kind != DIT_PK_TUPLE ||
	    a->n != 0)
		return pk_fail(s, DIT_EUNSUPPORTED,
		               "opcode NEWOBJ (0x81) is not allowed in a state dict pickle (but "
		               "for an io.BytesIO)");
	return pk_new(s, DIT_PK_BYTESIO, out);
}

dit_status pk_build(pk_state *s, uint32_t target, uint32_t state)
{
	const dit_pk_obj *t = pk_obj(s, target), *st = pk_obj(s, state);
	/* an OrderedDict's attributes (a state dict's _metadata): not needed */
	if (t->kind == DIT_PK_DICT && (st->kind == DIT_PK_DICT || st->kind == DIT_PK_NONE))
		return DIT_OK;
	/* a BytesIO's (bytes, position, attributes): never read */
	if (t->kind == DIT_PK_BYTESIO && st->kind == DIT_PK_TUPLE)
		return DIT_OK;
	return pk_fail(s, DIT_EUNSUPPORTED,
	               "BUILD of %s with %s is not allowed (only a dict's "
	               "attributes are)",
	               dit_pk_kind_name((dit_pk_kind)t->kind),
	               dit_pk_kind_name((dit_pk_kind)st->kind));
}

size_t dit_pickle_dict_find(const dit_pickle *p, const dit_pk_obj *d, const char *key, size_t len,
                            uint32_t *val)
{
	size_t hits = 0;
	for (uint32_t i = 0; d->kind == DIT_PK_DICT && i + 1 < d->n; i += 2) {
		const dit_pk_obj *k = &p->objs[d->u.items[i]];
		if (k->kind == DIT_PK_STR && k->n == len && memcmp(k->u.s, key, len) == 0) {
			hits++;
			if (val)
				*val = d->u.items[i + 1];
		}
	}
	return hits;
}

const char *dit_pk_kind_name(dit_pk_kind k)
{
	switch (k) {
	case DIT_PK_NONE: return "None";
	case DIT_PK_BOOL: return "a bool";
	case DIT_PK_INT: return "an int";
	case DIT_PK_FLOAT: return "a float";
	case DIT_PK_STR: return "a string";
	case DIT_PK_BYTES: return "bytes";
	case DIT_PK_TUPLE: return "a tuple";
	case DIT_PK_LIST: return "a list";
	case DIT_PK_DICT: return "a dict";
	case DIT_PK_SET: return "a set";
	case DIT_PK_GLOBAL: return "a global";
	case DIT_PK_STORAGE: return "a storage";
	case DIT_PK_TENSOR: return "a tensor";
	case DIT_PK_BYTESIO: return "an io.BytesIO";
	}
	return "a value";
}
