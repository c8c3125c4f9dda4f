/* The safetensors header: its JSON checked against the caps, parsed, and every entry
 * checked into the sorted tensor table of the file (see dit_safetensors.h). */
#define _POSIX_C_SOURCE 200809L

#include "dit_st_priv.h"

#include "dit_input.h"
#include "dit_io.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

static int st_dtype_parse(const char *s, dit_dtype *dt)
{
	static const struct {
		const char *name;
		dit_dtype dt;
	} tab[] = {
	    {"F32", DIT_DTYPE_F32},         {"F16", DIT_DTYPE_F16},
	    {"BF16", DIT_DTYPE_BF16},       {"F64", DIT_DTYPE_F64},
	    {"I64", DIT_DTYPE_I64},         {"I32", DIT_DTYPE_I32},
	    {"F8_E4M3", DIT_DTYPE_F8_E4M3}, {"F8_E5M2", DIT_DTYPE_F8_E5M2},
	    {"U8", DIT_DTYPE_U8},           {"BOOL", DIT_DTYPE_BOOL},
	    {"I8", DIT_DTYPE_I8},           {"I16", DIT_DTYPE_I16},
	    {"U16", DIT_DTYPE_U16},         {"U32", DIT_DTYPE_U32},
	    {"U64", DIT_DTYPE_U64},
	};
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
		if (strcmp(s, tab[i].name) == 0) {
			*dt = tab[i].dt;
			return 1;
		}
	}
	return 0;
}

/* Reads a JSON integer that must be >= 0. Returns 0 on success, -1 when obj is not an
 * integer, -2 when negative, -3 when too large to be a real size or offset. */
static int st_get_count(struct json_object *obj, int64_t *out)
{
	if (!obj || !json_object_is_type(obj, json_type_int))
		return -1;
	int64_t v = json_object_get_int64(obj);
	if (v < 0)
		return -2;
	if (v == INT64_MAX) /* json-c clamps larger values here */
		return -3;
	*out = v;
	return 0;
}

static int st_cmp_name(const void *a, const void *b)
{
	const dit_st_tensor *x = a, *y = b;
	return strcmp(x->name, y->name);
}

static int st_cmp_offset(const void *a, const void *b)
{
	const dit_st_tensor *x = *(const dit_st_tensor *const *)a;
	const dit_st_tensor *y = *(const dit_st_tensor *const *)b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	if (x->nbytes != y->nbytes)
		return x->nbytes < y->nbytes ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Checks that __metadata__ maps strings to strings and keeps a copy in f. */
static dit_status st_check_metadata(const char *path, struct json_object *meta, dit_st_file *f,
                                    dit_error *err)
{
	char q[ST_QUOTE_BUF];
	if (!json_object_is_type(meta, json_type_object))
		return dit_error_set(err, DIT_EFORMAT, "%s: __metadata__ is not a JSON object",
		                     path);
	size_t n = (size_t)json_object_object_length(meta);
	f->meta = calloc(2 * n + 1, sizeof *f->meta);
	if (!f->meta)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory for __metadata__", path);
	json_object_object_foreach(meta, k, v)
	{
		if (!json_object_is_type(v, json_type_string))
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: __metadata__ value for key '%s' is not a string",
			                     path, st_quote(q, sizeof q, k, strlen(k)));
		f->meta[2 * f->nmeta] = strdup(k);
		f->meta[2 * f->nmeta + 1] = strdup(json_object_get_string(v));
		f->nmeta++;
		if (!f->meta[2 * f->nmeta - 2] || !f->meta[2 * f->nmeta - 1])
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory for __metadata__",
			                     path);
	}
	return DIT_OK;
}

/* The entry's dtype into t: one of the format's (those that are no weight are refused
 * when read as one, not here: a file may hold flags or indices beside its weights). qn:
 * the quoted tensor name. */
static dit_status st_entry_dtype(const char *path, const char *name, const char *qn,
                                 struct json_object *val, dit_st_tensor *t, dit_error *err)
{
	struct json_object *jd;
	if (!json_object_object_get_ex(val, "dtype", &jd))
		return dit_error_set(err, DIT_EFORMAT, "%s: dtype missing (tensor '%s')", path, qn);
	if (!json_object_is_type(jd, json_type_string))
		return dit_error_set(err, DIT_EFORMAT, "%s: dtype is not a string (tensor '%s')",
		                     path, qn);
	const char *ds = json_object_get_string(jd);
	(void)name;
	if (!st_dtype_parse(ds, &t->dtype)) {
		char qd[ST_QUOTE_BUF];
		return dit_error_set(
		    err, DIT_EUNSUPPORTED,
		    "%s: unsupported dtype '%s', expected F32, F16, BF16, F64, I64, I32, F8_E4M3, "
		    "F8_E5M2, U8, I8, I16, U16, U32, U64 or BOOL (tensor '%s')",
		    path, st_quote(qd, sizeof qd, ds, (size_t)json_object_get_string_len(jd)), qn);
	}
	return DIT_OK;
}

/* The entry's shape into t, with its element and byte counts (neither overflowing). */
static dit_status st_entry_shape(const char *path, const char *qn, struct json_object *val,
                                 dit_st_tensor *t, dit_error *err)
{
	struct json_object *js;
	if (!json_object_object_get_ex(val, "shape", &js))
		return dit_error_set(err, DIT_EFORMAT, "%s: shape missing (tensor '%s')", path, qn);
	if (!json_object_is_type(js, json_type_array))
		return dit_error_set(err, DIT_EFORMAT, "%s: shape is not an array (tensor '%s')",
		                     path, qn);
	size_t nd = json_object_array_length(js);
	if (nd > DIT_MAX_DIMS)
		return dit_error_set(
		    err, DIT_EUNSUPPORTED,
		    "%s: shape has %zu dimensions, at most %d supported (tensor '%s')", path, nd,
		    DIT_MAX_DIMS, qn);
	t->ndim = (int)nd;
	int64_t numel = 1;
	for (size_t i = 0; i < nd; i++) {
		int64_t d = 0;
		int rc = st_get_count(json_object_array_get_idx(js, i), &d);
		if (rc == -1)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: shape[%zu] is not an integer (tensor '%s')", path,
			                     i, qn);
		if (rc == -2)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: shape[%zu] is negative (tensor '%s')", path, i,
			                     qn);
		if (rc == -3 || (d > 0 && numel > INT64_MAX / d))
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: shape is too large, element count overflows "
			                     "(tensor '%s')",
			                     path, qn);
		t->shape[i] = d;
		numel *= d;
	}
	uint64_t esize = dit_dtype_size(t->dtype);
	if ((uint64_t)numel > (uint64_t)INT64_MAX / esize)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: shape is too large, byte size overflows (tensor '%s')",
		                     path, qn);
	t->numel = numel;
	t->nbytes = (uint64_t)numel * esize;
	return DIT_OK;
}

/* The entry's data_offsets: two counts spanning the shape's bytes within the data
 * section (data_size bytes); the first into t->offset. */
static dit_status st_entry_offsets(const char *path, const char *qn, struct json_object *val,
                                   uint64_t data_size, dit_st_tensor *t, dit_error *err)
{
	struct json_object *jo;
	if (!json_object_object_get_ex(val, "data_offsets", &jo))
		return dit_error_set(err, DIT_EFORMAT, "%s: data_offsets missing (tensor '%s')",
		                     path, qn);
	if (!json_object_is_type(jo, json_type_array) || json_object_array_length(jo) != 2)
		return dit_error_set(
		    err, DIT_EFORMAT,
		    "%s: data_offsets is not an array of two integers (tensor '%s')", path, qn);
	int64_t off[2];
	for (size_t i = 0; i < 2; i++) {
		int rc = st_get_count(json_object_array_get_idx(jo, i), &off[i]);
		if (rc == -1)
			return dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: data_offsets[%zu] is not an integer (tensor '%s')", path, i, qn);
		if (rc == -2)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: data_offsets[%zu] is negative (tensor '%s')",
			                     path, i, qn);
		if (rc == -3)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: data_offsets[%zu] is out of range (tensor '%s')",
			                     path, i, qn);
	}
	if (off[0] > off[1])
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: data_offsets begin %lld is after end %lld (tensor '%s')",
		                     path, (long long)off[0], (long long)off[1], qn);
	if ((uint64_t)(off[1] - off[0]) != t->nbytes)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: data_offsets span %lld bytes but %s shape needs %llu "
		                     "(tensor '%s')",
		                     path, (long long)(off[1] - off[0]), dit_dtype_name(t->dtype),
		                     (unsigned long long)t->nbytes, qn);
	if ((uint64_t)off[1] > data_size)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: file is truncated: tensor data ends at byte %lld but the "
		                     "data section holds %llu bytes (tensor '%s')",
		                     path, (long long)off[1], (unsigned long long)data_size, qn);
	t->offset = (uint64_t)off[0];
	return DIT_OK;
}

/* Fills t from the header entry of one tensor; data_size bounds the offsets. */
static dit_status st_parse_entry(const char *path, const char *name, struct json_object *val,
                                 uint64_t data_size, dit_st_tensor *t, dit_error *err)
{
	char q[ST_QUOTE_BUF];
	const char *qn = st_quote(q, sizeof q, name, strlen(name));
	if (!json_object_is_type(val, json_type_object))
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: entry is not a JSON object (tensor '%s')", path, qn);
	dit_status st = st_entry_dtype(path, name, qn, val, t, err);
	if (st == DIT_OK)
		st = st_entry_shape(path, qn, val, t, err);
	if (st != DIT_OK)
		return st;
	t->scale = 1.0f;
	return st_entry_offsets(path, qn, val, data_size, t, err);
}

/* The tensor table of f, one slot per header member but __metadata__. */
static dit_status st_table_alloc(dit_st_file *f, struct json_object *root, size_t *n,
                                 dit_error *err)
{
	*n = 0;
	json_object_object_foreach(root, k0, v0)
	{
		(void)v0;
		if (strcmp(k0, ST_METADATA) != 0)
			(*n)++;
	}
	if (*n > DIT_ST_MAX_TENSORS)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: %zu tensors, more than the limit of %zu", f->label, *n,
		                     DIT_ST_MAX_TENSORS);
	if (*n > 0) {
		f->tensors = calloc(*n, sizeof *f->tensors);
		if (!f->tensors)
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory for %zu tensors",
			                     f->label, *n);
	}
	return DIT_OK;
}

/* The header's members into the table (n slots) and __metadata__ into f, in the
 * header's order. */
static dit_status st_table_fill(dit_st_file *f, struct json_object *root, size_t n, dit_error *err)
{
	const char *path = f->label;
	json_object_object_foreach(root, key, val)
	{
		dit_status st;
		if (strcmp(key, ST_METADATA) == 0) {
			st = st_check_metadata(path, val, f, err);
			if (st != DIT_OK)
				return st;
			continue;
		}
		if (f->ntensors >= n) /* both passes see the same members */
			return dit_error_set(err, DIT_EFORMAT, "%s: header changed while parsed",
			                     path);
		dit_st_tensor *t = &f->tensors[f->ntensors];
		st = st_parse_entry(path, key, val, f->data_size, t, err);
		if (st != DIT_OK)
			return st;
		t->name = strdup(key);
		if (!t->name)
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
		f->ntensors++;
	}
	return DIT_OK;
}

/* The table sorted by name; a name twice is an error. */
static dit_status st_table_sort(dit_st_file *f, dit_error *err)
{
	char q[ST_QUOTE_BUF];
	if (f->ntensors <= 1)
		return DIT_OK;
	qsort(f->tensors, f->ntensors, sizeof *f->tensors, st_cmp_name);
	for (size_t i = 1; i < f->ntensors; i++) {
		if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0) {
			const char *nm = f->tensors[i].name;
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: duplicate tensor name in header (tensor '%s')",
			                     f->label, st_quote(q, sizeof q, nm, strlen(nm)));
		}
	}
	return DIT_OK;
}

/* Sorted by offset, the tensors with data must tile [0, end) of the data section
 * without gaps or overlaps, and end must be the end of the file. */
static dit_status st_table_tiles(dit_st_file *f, dit_error *err)
{
	const char *path = f->label;
	char q1[ST_QUOTE_BUF], q2[ST_QUOTE_BUF];
	const dit_st_tensor **byoff = NULL;
	if (f->ntensors > 0) {
		byoff = malloc(f->ntensors * sizeof *byoff);
		if (!byoff)
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
		for (size_t i = 0; i < f->ntensors; i++)
			byoff[i] = &f->tensors[i];
		qsort(byoff, f->ntensors, sizeof *byoff, st_cmp_offset);
	}
	const dit_st_tensor *prev = NULL;
	uint64_t end = 0;
	dit_status st = DIT_OK;
	for (size_t i = 0; i < f->ntensors; i++) {
		const dit_st_tensor *t = byoff[i];
		if (t->nbytes == 0)
			continue;
		if (t->offset < end) {
			st = dit_error_set(
			    err, DIT_EFORMAT, "%s: data overlaps that of tensor '%s' (tensor '%s')",
			    path, st_quote(q2, sizeof q2, prev->name, strlen(prev->name)),
			    st_quote(q1, sizeof q1, t->name, strlen(t->name)));
			break;
		}
		if (t->offset > end) {
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: tensors are not contiguous: %llu unused bytes at "
			                   "data offset %llu (tensor '%s')",
			                   path, (unsigned long long)(t->offset - end),
			                   (unsigned long long)end,
			                   st_quote(q1, sizeof q1, t->name, strlen(t->name)));
			break;
		}
		end = t->offset + t->nbytes;
		prev = t;
	}
	free(byoff);
	if (st != DIT_OK)
		return st;
	if (end != f->data_size)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: %llu trailing bytes after the tensor data: the file "
		                     "must end where the last tensor ends (data offset %llu)",
		                     path, (unsigned long long)(f->data_size - end),
		                     (unsigned long long)end);
	return DIT_OK;
}

/* Validates the parsed header and builds the sorted tensor table of f. */
static dit_status st_build_table(dit_st_file *f, struct json_object *root, dit_error *err)
{
	size_t n = 0;
	dit_status st = st_table_alloc(f, root, &n, err);
	if (st == DIT_OK)
		st = st_table_fill(f, root, n, err);
	if (st == DIT_OK)
		st = st_table_sort(f, err);
	if (st == DIT_OK)
		st = st_table_tiles(f, err);
	return st;
}

dit_status dit_st_header_parse(dit_st_file *f, const char *hdr, size_t len, dit_error *err)
{
	/* json-c spends about 2 KB per tensor entry: the caps bound that before it starts */
	const dit_input_json_caps caps = {
	    .members = DIT_ST_MAX_TENSORS + 1, /* and __metadata__ */
	    .nested = DIT_ST_MAX_METADATA,     /* __metadata__'s keys (an entry has 3) */
	    .objects = DIT_ST_MAX_TENSORS + 2, /* and the top-level one */
	    .values = DIT_ST_MAX_VALUES,
	    .what = "header entries (tensors and __metadata__)",
	};
	dit_status st = dit_input_json_check(f->label, hdr, len, &caps, err);
	if (st != DIT_OK)
		return st;
	struct json_object *root;
	st = dit_io_parse_json_object(f->label, hdr, len, &root, err);
	if (st == DIT_OK)
		st = st_build_table(f, root, err);
	json_object_put(root);
	if (st == DIT_OK)
		st = dit_st_apply_scales(f, err);
	return st;
}
