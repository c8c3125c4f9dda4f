/* safetensors reader (memory-mapped, fully validated) and atomic writer. */
#define _POSIX_C_SOURCE 200809L

#include "dit_safetensors.h"

#include "dit_bf16.h"
#include "dit_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

/* A header above this size is treated as corruption rather than allocated. */
#define ST_MAX_HEADER ((uint64_t)100 << 20)
/* Longest name quoted in an error message, in bytes of the source name. */
#define ST_QUOTE_MAX 120
/* Room for one quoted name: every byte may grow to \xNN, plus "..." and NUL. */
#define ST_QUOTE_BUF (ST_QUOTE_MAX * 4 + 8)
#define ST_METADATA  "__metadata__"

size_t dit_dtype_size(dit_dtype dt)
{
	switch (dt) {
	case DIT_DTYPE_F32: return 4;
	case DIT_DTYPE_F16: return 2;
	case DIT_DTYPE_BF16: return 2;
	case DIT_DTYPE_F64: return 8;
	case DIT_DTYPE_I64: return 8;
	case DIT_DTYPE_I32: return 4;
	}
	return 0;
}

const char *dit_dtype_name(dit_dtype dt)
{
	switch (dt) {
	case DIT_DTYPE_F32: return "F32";
	case DIT_DTYPE_F16: return "F16";
	case DIT_DTYPE_BF16: return "BF16";
	case DIT_DTYPE_F64: return "F64";
	case DIT_DTYPE_I64: return "I64";
	case DIT_DTYPE_I32: return "I32";
	}
	return "?";
}

static const char *st_quote(char *buf, size_t cap, const char *s, size_t len)
{
	return dit_error_quote(buf, cap, s, len, ST_QUOTE_MAX);
}

static uint16_t st_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t st_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static uint64_t st_le64(const uint8_t *p)
{
	return (uint64_t)st_le32(p) | ((uint64_t)st_le32(p + 4) << 32);
}

static void st_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static float st_bits_f32(uint32_t bits)
{
	float f;
	memcpy(&f, &bits, sizeof f);
	return f;
}

/* IEEE binary16 to binary32, exact for every input (subnormals, inf, NaN payloads). */
static float st_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t mant = h & 0x3ffu;
	uint32_t bits;
	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (mant << 13);
	} else if (exp != 0) {
		bits = sign | ((exp + 112u) << 23) | (mant << 13);
	} else if (mant == 0) {
		bits = sign;
	} else {
		/* mant * 2^-24: shift the leading one up to the implicit bit position */
		uint32_t s = 0;
		while (!(mant & 0x400u)) {
			mant <<= 1;
			s++;
		}
		bits = sign | ((113u - s) << 23) | ((mant & 0x3ffu) << 13);
	}
	return st_bits_f32(bits);
}

/* binary64 to binary32 with round to nearest; finite values beyond the float range
 * become infinities (the plain conversion is undefined for them in ISO C). */
static float st_f64_to_f32(double d)
{
	/* FLT_MAX plus half an ulp: from here on, rounding gives infinity */
	const double lim = 0x1.ffffffp127;
	if (d >= lim)
		return st_bits_f32(0x7f800000u);
	if (d <= -lim)
		return st_bits_f32(0xff800000u);
	return (float)d;
}

static int st_dtype_parse(const char *s, dit_dtype *dt)
{
	static const struct {
		const char *name;
		dit_dtype dt;
	} tab[] = {
	    {"F32", DIT_DTYPE_F32}, {"F16", DIT_DTYPE_F16}, {"BF16", DIT_DTYPE_BF16},
	    {"F64", DIT_DTYPE_F64}, {"I64", DIT_DTYPE_I64}, {"I32", DIT_DTYPE_I32},
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

const char *dit_st_metadata(const dit_st_file *f, const char *key)
{
	for (size_t i = 0; f && i < f->nmeta; i++)
		if (strcmp(f->meta[2 * i], key) == 0)
			return f->meta[2 * i + 1];
	return NULL;
}

/* Fills t from the header entry of one tensor; data_size bounds the offsets. */
static dit_status st_parse_entry(const char *path, const char *name, struct json_object *val,
                                 uint64_t data_size, dit_st_tensor *t, dit_error *err)
{
	char q[ST_QUOTE_BUF];
	const char *qn = st_quote(q, sizeof q, name, strlen(name));
	struct json_object *jd, *js, *jo;

	if (!json_object_is_type(val, json_type_object))
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: entry is not a JSON object (tensor '%s')", path, qn);

	if (!json_object_object_get_ex(val, "dtype", &jd))
		return dit_error_set(err, DIT_EFORMAT, "%s: dtype missing (tensor '%s')", path, qn);
	if (!json_object_is_type(jd, json_type_string))
		return dit_error_set(err, DIT_EFORMAT, "%s: dtype is not a string (tensor '%s')",
		                     path, qn);
	const char *ds = json_object_get_string(jd);
	if (!st_dtype_parse(ds, &t->dtype)) {
		char qd[ST_QUOTE_BUF];
		return dit_error_set(
		    err, DIT_EUNSUPPORTED,
		    "%s: unsupported dtype '%s', expected F32, F16, BF16, F64, I64 or I32 "
		    "(tensor '%s')",
		    path, st_quote(qd, sizeof qd, ds, (size_t)json_object_get_string_len(jd)), qn);
	}
	uint64_t esize = dit_dtype_size(t->dtype);

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
	if ((uint64_t)numel > (uint64_t)INT64_MAX / esize)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: shape is too large, byte size overflows (tensor '%s')",
		                     path, qn);
	t->numel = numel;
	t->nbytes = (uint64_t)numel * esize;

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

/* Validates the parsed header and builds the sorted tensor table of f. */
static dit_status st_build_table(dit_st_file *f, struct json_object *root, dit_error *err)
{
	const char *path = f->path;
	char q1[ST_QUOTE_BUF], q2[ST_QUOTE_BUF];
	size_t n = 0;
	json_object_object_foreach(root, k0, v0)
	{
		(void)v0;
		if (strcmp(k0, ST_METADATA) != 0)
			n++;
	}
	if (n > 0) {
		f->tensors = calloc(n, sizeof *f->tensors);
		if (!f->tensors)
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory for %zu tensors",
			                     path, n);
	}

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

	if (f->ntensors > 1) {
		qsort(f->tensors, f->ntensors, sizeof *f->tensors, st_cmp_name);
		for (size_t i = 1; i < f->ntensors; i++) {
			if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0) {
				const char *nm = f->tensors[i].name;
				return dit_error_set(
				    err, DIT_EFORMAT,
				    "%s: duplicate tensor name in header (tensor '%s')", path,
				    st_quote(q1, sizeof q1, nm, strlen(nm)));
			}
		}
	}

	/* Sorted by offset, the tensors with data must tile [0, end) of the data section
	 * without gaps or overlaps, and end must be the end of the file. */
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

static dit_status st_parse_header(dit_st_file *f, const char *hdr, size_t len, dit_error *err)
{
	struct json_object *root;
	dit_status st = dit_io_parse_json_object(f->path, hdr, len, &root, err);
	if (st == DIT_OK)
		st = st_build_table(f, root, err);
	json_object_put(root);
	return st;
}

/* Validates the image of a whole file (base, size) and fills f from it. */
static dit_status st_parse_image(dit_st_file *f, const uint8_t *base, size_t size, dit_error *err)
{
	const char *path = f->path;
	if (size < 8)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: file is truncated: %zu bytes, too short for the 8-byte "
		                     "header length",
		                     path, size);
	uint64_t hlen = st_le64(base);
	uint64_t avail = (uint64_t)size - 8;
	if (hlen < 2)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: header length %llu is below the 2-byte minimum ({})",
		                     path, (unsigned long long)hlen);
	if (hlen > ST_MAX_HEADER)
		return dit_error_set(
		    err, DIT_EFORMAT,
		    "%s: header length %llu exceeds the %llu-byte limit (corrupt file)", path,
		    (unsigned long long)hlen, (unsigned long long)ST_MAX_HEADER);
	if (hlen > avail)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: file is truncated: header length %llu but only %llu "
		                     "bytes follow",
		                     path, (unsigned long long)hlen, (unsigned long long)avail);
	f->data = base + 8 + hlen;
	f->data_size = avail - hlen;
	return st_parse_header(f, (const char *)base + 8, (size_t)hlen, err);
}

static dit_st_file *st_file_new(const char *name)
{
	dit_st_file *f = calloc(1, sizeof *f);
	if (f && !(f->path = strdup(name))) {
		free(f);
		f = NULL;
	}
	return f;
}

dit_status dit_st_open_mem(dit_st_file **out, const char *name, const void *data, size_t size,
                           dit_error *err)
{
	if (!out || !name || (!data && size > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_st_open_mem: NULL argument");
	*out = NULL;
	dit_st_file *f = st_file_new(name);
	if (!f)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", name);
	/* map_size 0: the image belongs to the caller and is never unmapped */
	f->map = (void *)(uintptr_t)data;
	f->map_size = 0;
	static const uint8_t none[1];
	dit_status st = st_parse_image(f, data ? data : none, size, err);
	if (st != DIT_OK) {
		dit_st_close(f);
		return st;
	}
	*out = f;
	return DIT_OK;
}

dit_status dit_st_open(dit_st_file **out, const char *path, dit_error *err)
{
	if (!out || !path)
		return dit_error_set(err, DIT_EINVAL, "dit_st_open: NULL argument");
	*out = NULL;

	dit_st_file *f = st_file_new(path);
	if (!f)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);

	dit_status st = DIT_OK;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		st = dit_error_set(err, e == ENOENT ? DIT_ENOTFOUND : DIT_EIO,
		                   "%s: cannot open: %s", path, strerror(e));
		goto fail;
	}
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		int e = errno;
		close(fd);
		st = dit_error_set(err, DIT_EIO, "%s: cannot stat: %s", path, strerror(e));
		goto fail;
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		st = dit_error_set(err, DIT_EIO, "%s: not a regular file", path);
		goto fail;
	}
	if (sb.st_size < 8) {
		close(fd);
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: file is truncated: %lld bytes, too short for the 8-byte "
		                   "header length",
		                   path, (long long)sb.st_size);
		goto fail;
	}
	if ((uint64_t)sb.st_size > (uint64_t)SIZE_MAX) {
		close(fd);
		st = dit_error_set(err, DIT_EUNSUPPORTED, "%s: file too large to map", path);
		goto fail;
	}
	size_t size = (size_t)sb.st_size;
	void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	int merr = errno;
	close(fd);
	if (map == MAP_FAILED) {
		st = dit_error_set(err, merr == ENOMEM ? DIT_ENOMEM : DIT_EIO, "%s: cannot map: %s",
		                   path, strerror(merr));
		goto fail;
	}
	f->map = map;
	f->map_size = size;

	st = st_parse_image(f, map, size, err);
	if (st != DIT_OK)
		goto fail;
	*out = f;
	return DIT_OK;
fail:
	dit_st_close(f);
	return st;
}

void dit_st_close(dit_st_file *f)
{
	if (!f)
		return;
	if (f->map && f->map_size > 0)
		munmap(f->map, f->map_size);
	for (size_t i = 0; i < f->ntensors; i++)
		free(f->tensors[i].name);
	free(f->tensors);
	for (size_t i = 0; f->meta && i < 2 * f->nmeta; i++)
		free(f->meta[i]);
	free(f->meta);
	free(f->path);
	free(f);
}

const dit_st_tensor *dit_st_find(const dit_st_file *f, const char *name)
{
	if (!f || !name)
		return NULL;
	size_t lo = 0, hi = f->ntensors;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, f->tensors[mid].name);
		if (c == 0)
			return &f->tensors[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Converts elements [i0, i0 + n) of src (dtype) to fp32; -1 for an unknown dtype. */
static int convert_range(const uint8_t *src, dit_dtype dtype, size_t i0, size_t n, float *dst)
{
	switch (dtype) {
	case DIT_DTYPE_F32:
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		if (n > 0)
			memcpy(dst, src + 4 * i0, n * sizeof(float));
#else
		for (size_t i = 0; i < n; i++)
			dst[i] = st_bits_f32(st_le32(src + 4 * (i0 + i)));
#endif
		break;
	case DIT_DTYPE_F16:
		for (size_t i = 0; i < n; i++)
			dst[i] = st_f16_to_f32(st_le16(src + 2 * (i0 + i)));
		break;
	case DIT_DTYPE_BF16:
		for (size_t i = 0; i < n; i++)
			dst[i] = st_bits_f32((uint32_t)st_le16(src + 2 * (i0 + i)) << 16);
		break;
	case DIT_DTYPE_F64:
		for (size_t i = 0; i < n; i++) {
			uint64_t bits = st_le64(src + 8 * (i0 + i));
			double d;
			memcpy(&d, &bits, sizeof d);
			dst[i] = st_f64_to_f32(d);
		}
		break;
	case DIT_DTYPE_I64:
		for (size_t i = 0; i < n; i++)
			dst[i] = (float)(int64_t)st_le64(src + 8 * (i0 + i));
		break;
	case DIT_DTYPE_I32:
		for (size_t i = 0; i < n; i++)
			dst[i] = (float)(int32_t)st_le32(src + 4 * (i0 + i));
		break;
	default: return -1;
	}
	return 0;
}

/* The arguments of a tensor read: the tensor is the file's, its data in bounds. */
static dit_status check_read(const dit_st_file *f, const dit_st_tensor *t, const void *dst,
                             const char *fn, dit_error *err)
{
	if (!f || !t)
		return dit_error_set(err, DIT_EINVAL, "%s: NULL argument", fn);
	if (t < f->tensors || t >= f->tensors + f->ntensors)
		return dit_error_set(err, DIT_EINVAL, "%s: tensor does not belong to this file",
		                     f->path);
	if (t->numel > 0 && !dst)
		return dit_error_set(err, DIT_EINVAL, "%s: NULL destination (tensor '%s')", f->path,
		                     t->name);
	if (t->offset > f->data_size || t->nbytes > f->data_size - t->offset)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: tensor data out of bounds (tensor '%s')", f->path,
		                     t->name);
	return DIT_OK;
}

dit_status dit_st_read_f32(const dit_st_file *f, const dit_st_tensor *t, float *dst, dit_error *err)
{
	dit_status st = check_read(f, t, dst, "dit_st_read_f32", err);
	if (st)
		return st;

	const uint8_t *src = f->data + t->offset;
	if (convert_range(src, t->dtype, 0, (size_t)t->numel, dst) != 0)
		return dit_error_set(err, DIT_EUNSUPPORTED, "%s: unsupported dtype (tensor '%s')",
		                     f->path, t->name);
	return DIT_OK;
}

dit_status dit_st_read_bf16(const dit_st_file *f, const dit_st_tensor *t, uint16_t *dst,
                            dit_error *err)
{
	dit_status st = check_read(f, t, dst, "dit_st_read_bf16", err);
	if (st)
		return st;
	const uint8_t *src = f->data + t->offset;
	size_t n = (size_t)t->numel;
	if (t->dtype == DIT_DTYPE_BF16) {
		for (size_t i = 0; i < n; i++)
			dst[i] = st_le16(src + 2 * i);
		return DIT_OK;
	}
	/* through fp32, a tile at a time */
	float tile[1024];
	for (size_t i0 = 0; i0 < n; i0 += 1024) {
		size_t k = n - i0 < 1024 ? n - i0 : 1024;
		if (convert_range(src, t->dtype, i0, k, tile) != 0)
			return dit_error_set(err, DIT_EUNSUPPORTED,
			                     "%s: unsupported dtype (tensor '%s')", f->path,
			                     t->name);
		for (size_t i = 0; i < k; i++)
			dst[i0 + i] = dit_bf16_from_f32(tile[i]);
	}
	return DIT_OK;
}

/* ---- writer ---- */

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

dit_status dit_st_writer_commit(dit_st_writer *w, const char *path, dit_error *err)
{
	if (!w || !path || !*path)
		return dit_error_set(err, DIT_EINVAL,
		                     "dit_st_writer_commit: NULL writer or empty path");

	struct json_object *root = st_header_build(w);
	if (!root)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory building the header",
		                     path);
	const char *json = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
	                                                            JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!json) {
		json_object_put(root);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory building the header",
		                     path);
	}
	size_t jlen = strlen(json);
	/* pad with spaces so that the data section starts 8-byte aligned */
	size_t hlen = (jlen + 7) & ~(size_t)7;
	if (hlen > ST_MAX_HEADER) {
		json_object_put(root);
		return dit_error_set(err, DIT_EINVAL, "%s: header would exceed %llu bytes", path,
		                     (unsigned long long)ST_MAX_HEADER);
	}
	uint8_t *head = malloc(8 + hlen);
	if (!head) {
		json_object_put(root);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory building the header",
		                     path);
	}
	st_put_le64(head, hlen);
	memcpy(head + 8, json, jlen);
	memset(head + 8 + jlen, ' ', hlen - jlen);
	json_object_put(root);

	dit_io_atomic f;
	dit_status st = dit_io_atomic_open(&f, path, err);
	if (st == DIT_OK)
		st = dit_io_atomic_write(&f, head, 8 + hlen, err);
	for (size_t i = 0; st == DIT_OK && i < w->n; i++)
		st = dit_io_atomic_write(&f, w->t[i].data, (size_t)w->t[i].nbytes, err);
	if (st == DIT_OK)
		st = dit_io_atomic_commit(&f, err);
	free(head);
	return st;
}
