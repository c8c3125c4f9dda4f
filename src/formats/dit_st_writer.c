/* safetensors writer: tensors kept in memory, then one file written under a temporary
 * name and renamed into place (see dit_safetensors.h). */
#define _POSIX_C_SOURCE 200809L

#include "dit_st_priv.h"

#include "dit_io.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

static void st_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

struct st_wtensor {
	char *name;
	int ndim;
	int64_t shape[DIT_MAX_DIMS];
	float *data;
	uint64_t nbytes;
};

struct st_wmeta {
	char *key;
	char *value;
};

struct dit_st_writer {
	struct st_wtensor *t;
	size_t n, cap;
	struct st_wmeta *m;
	size_t nm, mcap;
};

dit_st_writer *dit_st_writer_new(void)
{
	return calloc(1, sizeof(dit_st_writer));
}

void dit_st_writer_free(dit_st_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++) {
		free(w->t[i].name);
		free(w->t[i].data);
	}
	free(w->t);
	for (size_t i = 0; i < w->nm; i++) {
		free(w->m[i].key);
		free(w->m[i].value);
	}
	free(w->m);
	free(w);
}

/* Whether s is well-formed UTF-8 (no overlongs, surrogates or code points past
 * U+10FFFF), as the reader demands of the header. */
static int st_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned c = *p;
		int n;
		uint32_t cp;
		if (c < 0x80) {
			p++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return 0;
		}
		for (int i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		p += n + 1;
	}
	return 1;
}

dit_status dit_st_writer_add_f32(dit_st_writer *w, const char *name, int ndim, const int64_t *shape,
                                 const float *data, dit_error *err)
{
	char q[ST_QUOTE_BUF];
	if (!w || !name)
		return dit_error_set(err, DIT_EINVAL, "dit_st_writer_add_f32: NULL argument");
	const char *qn = st_quote(q, sizeof q, name, strlen(name));
	if (strcmp(name, ST_METADATA) == 0 || !st_utf8_valid(name))
		return dit_error_set(err, DIT_EINVAL, "invalid tensor name (tensor '%s')", qn);
	if (ndim < 0 || ndim > DIT_MAX_DIMS || (ndim > 0 && !shape))
		return dit_error_set(err, DIT_EINVAL, "ndim %d out of range 0..%d (tensor '%s')",
		                     ndim, DIT_MAX_DIMS, qn);
	int64_t numel = 1;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return dit_error_set(err, DIT_EINVAL, "shape[%d] is negative (tensor '%s')",
			                     i, qn);
		if (shape[i] > 0 && numel > INT64_MAX / 4 / shape[i])
			return dit_error_set(err, DIT_EINVAL, "shape is too large (tensor '%s')",
			                     qn);
		numel *= shape[i];
	}
	if ((uint64_t)numel > (uint64_t)SIZE_MAX / sizeof(float))
		return dit_error_set(err, DIT_EINVAL, "shape is too large (tensor '%s')", qn);
	if (numel > 0 && !data)
		return dit_error_set(err, DIT_EINVAL, "NULL data (tensor '%s')", qn);
	for (size_t i = 0; i < w->n; i++) {
		if (strcmp(w->t[i].name, name) == 0)
			return dit_error_set(err, DIT_EINVAL, "duplicate tensor name (tensor '%s')",
			                     qn);
	}
	if (w->n == w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 16;
		struct st_wtensor *nt = realloc(w->t, ncap * sizeof *nt);
		if (!nt)
			return dit_error_set(err, DIT_ENOMEM, "out of memory (tensor '%s')", qn);
		w->t = nt;
		w->cap = ncap;
	}
	struct st_wtensor *t = &w->t[w->n];
	memset(t, 0, sizeof *t);
	t->nbytes = (uint64_t)numel * sizeof(float);
	t->name = strdup(name);
	t->data = malloc(t->nbytes ? (size_t)t->nbytes : 1);
	if (!t->name || !t->data) {
		free(t->name);
		free(t->data);
		return dit_error_set(err, DIT_ENOMEM, "out of memory (tensor '%s')", qn);
	}
	if (t->nbytes)
		memcpy(t->data, data, (size_t)t->nbytes);
	t->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		t->shape[i] = shape[i];
	w->n++;
	return DIT_OK;
}

dit_status dit_st_writer_set_metadata(dit_st_writer *w, const char *key, const char *value,
                                      dit_error *err)
{
	if (!w || !key || !value)
		return dit_error_set(err, DIT_EINVAL, "dit_st_writer_set_metadata: NULL argument");
	if (!st_utf8_valid(key) || !st_utf8_valid(value)) {
		char q[ST_QUOTE_BUF];
		return dit_error_set(err, DIT_EINVAL, "metadata key '%s' or its value is not UTF-8",
		                     st_quote(q, sizeof q, key, strlen(key)));
	}
	char *v = strdup(value);
	if (!v)
		return dit_error_set(err, DIT_ENOMEM, "out of memory for metadata");
	for (size_t i = 0; i < w->nm; i++) {
		if (strcmp(w->m[i].key, key) == 0) {
			free(w->m[i].value);
			w->m[i].value = v;
			return DIT_OK;
		}
	}
	if (w->nm == w->mcap) {
		size_t ncap = w->mcap ? w->mcap * 2 : 8;
		struct st_wmeta *nm = realloc(w->m, ncap * sizeof *nm);
		if (!nm) {
			free(v);
			return dit_error_set(err, DIT_ENOMEM, "out of memory for metadata");
		}
		w->m = nm;
		w->mcap = ncap;
	}
	char *k = strdup(key);
	if (!k) {
		free(v);
		return dit_error_set(err, DIT_ENOMEM, "out of memory for metadata");
	}
	w->m[w->nm].key = k;
	w->m[w->nm].value = v;
	w->nm++;
	return DIT_OK;
}

/* Adds value under key, taking ownership of value; 0 on success. */
static int st_obj_add(struct json_object *obj, const char *key, struct json_object *value)
{
	if (!value)
		return -1;
	if (json_object_object_add(obj, key, value) != 0) {
		json_object_put(value);
		return -1;
	}
	return 0;
}

static int st_arr_add(struct json_object *arr, struct json_object *value)
{
	if (!value)
		return -1;
	if (json_object_array_add(arr, value) != 0) {
		json_object_put(value);
		return -1;
	}
	return 0;
}

/* Builds the header JSON; the caller frees it with json_object_put. */
static struct json_object *st_header_build(const dit_st_writer *w)
{
	struct json_object *root = json_object_new_object();
	if (!root)
		return NULL;
	if (w->nm > 0) {
		struct json_object *meta = json_object_new_object();
		if (st_obj_add(root, ST_METADATA, meta) != 0)
			goto fail;
		for (size_t i = 0; i < w->nm; i++) {
			if (st_obj_add(meta, w->m[i].key, json_object_new_string(w->m[i].value)) !=
			    0)
				goto fail;
		}
	}
	uint64_t off = 0;
	for (size_t i = 0; i < w->n; i++) {
		const struct st_wtensor *t = &w->t[i];
		struct json_object *e = json_object_new_object();
		if (st_obj_add(root, t->name, e) != 0)
			goto fail;
		if (st_obj_add(e, "dtype", json_object_new_string("F32")) != 0)
			goto fail;
		struct json_object *shape = json_object_new_array();
		if (st_obj_add(e, "shape", shape) != 0)
			goto fail;
		for (int d = 0; d < t->ndim; d++) {
			if (st_arr_add(shape, json_object_new_int64(t->shape[d])) != 0)
				goto fail;
		}
		struct json_object *offs = json_object_new_array();
		if (st_obj_add(e, "data_offsets", offs) != 0)
			goto fail;
		if (st_arr_add(offs, json_object_new_int64((int64_t)off)) != 0 ||
		    st_arr_add(offs, json_object_new_int64((int64_t)(off + t->nbytes))) != 0)
			goto fail;
		off += t->nbytes;
	}
	return root;
fail:
	json_object_put(root);
	return NULL;
}

/* The file's first bytes: the header length and the header, padded with spaces so that
 * the data section starts 8-byte aligned; *head is malloc'd, 8 + *hlen bytes. */
static dit_status st_head_build(const dit_st_writer *w, const char *label, uint8_t **head,
                                size_t *hlen, dit_error *err)
{
	struct json_object *root = st_header_build(w);
	if (!root)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory building the header",
		                     label);
	const char *json = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
	                                                            JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!json) {
		json_object_put(root);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory building the header",
		                     label);
	}
	size_t jlen = strlen(json);
	*hlen = (jlen + 7) & ~(size_t)7;
	if (*hlen > DIT_ST_MAX_HEADER) {
		json_object_put(root);
		return dit_error_set(err, DIT_EINVAL, "%s: header would exceed %llu bytes", label,
		                     (unsigned long long)DIT_ST_MAX_HEADER);
	}
	if (!(*head = malloc(8 + *hlen))) {
		json_object_put(root);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory building the header",
		                     label);
	}
	st_put_le64(*head, *hlen);
	memcpy(*head + 8, json, jlen);
	memset(*head + 8 + jlen, ' ', *hlen - jlen);
	json_object_put(root);
	return DIT_OK;
}

dit_status dit_st_writer_commit(dit_st_writer *w, const char *path, dit_error *err)
{
	if (!w || !path || !*path)
		return dit_error_set(err, DIT_EINVAL,
		                     "dit_st_writer_commit: NULL writer or empty path");
	uint8_t *head;
	size_t hlen;
	dit_status st = st_head_build(w, path, &head, &hlen, err);
	if (st)
		return st;
	dit_io_atomic f;
	st = dit_io_atomic_open(&f, path, err);
	if (st == DIT_OK)
		st = dit_io_atomic_write(&f, head, 8 + hlen, err);
	for (size_t i = 0; st == DIT_OK && i < w->n; i++)
		st = dit_io_atomic_write(&f, w->t[i].data, (size_t)w->t[i].nbytes, err);
	if (st == DIT_OK)
		st = dit_io_atomic_commit(&f, err);
	free(head);
	return st;
}

dit_status dit_st_writer_image(const dit_st_writer *w, void **image, size_t *size, dit_error *err)
{
	if (!w || !image || !size)
		return dit_error_set(err, DIT_EINVAL, "dit_st_writer_image: NULL argument");
	*image = NULL;
	*size = 0;
	uint8_t *head;
	size_t hlen;
	dit_status st = st_head_build(w, "safetensors image", &head, &hlen, err);
	if (st)
		return st;
	size_t n = 8 + hlen;
	for (size_t i = 0; i < w->n; i++)
		n += (size_t)w->t[i].nbytes;
	uint8_t *buf = malloc(n);
	if (!buf) {
		free(head);
		return dit_error_set(err, DIT_ENOMEM,
		                     "safetensors image: out of memory (%zu bytes)", n);
	}
	memcpy(buf, head, 8 + hlen);
	free(head);
	size_t k = 8 + hlen;
	for (size_t i = 0; i < w->n; i++) {
		memcpy(buf + k, w->t[i].data, (size_t)w->t[i].nbytes);
		k += (size_t)w->t[i].nbytes;
	}
	*image = buf;
	*size = n;
	return DIT_OK;
}
