/* GGUF reader (see dit_gguf.h): the header, metadata and tensor infos read through a
 * bounded cursor (pread in windows from a file, or an image in memory), checked, and
 * turned into a dit_st_file whose tensors the safetensors reads convert. */
#define _POSIX_C_SOURCE 200809L

#include "dit_gguf.h"

#include "dit_input.h"
#include "dit_st_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GG_QUOTE_MAX 120
#define GG_QBUF      (GG_QUOTE_MAX * 4 + 8)
#define GG_WINDOW    ((size_t)64 << 10) /* bytes read from a file at a time */
#define GG_ALIGN     32u                /* general.alignment's default */
#define GG_MAX_ALIGN ((uint32_t)1 << 20)
#define GG_TYPE_ARR  9u /* the metadata value types: 0..12 */
#define GG_TYPE_STR  8u
#define GG_TYPE_U32  4u
#define GG_TYPE_BOOL 7u

/* ggml's tensor types, by id (ggml.h's enum ggml_type; the gaps are removed types). */
static const char *const gg_type_names[] = {
    "F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
    "Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
    "Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
    "IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
    "F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
    "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",
};

const char *dit_gguf_type_name(uint32_t type)
{
	return type < sizeof gg_type_names / sizeof gg_type_names[0] ? gg_type_names[type] : NULL;
}

/* The bytes of one value of the scalar metadata types (0 for string and array). */
static size_t gg_scalar_size(uint32_t t)
{
	static const uint8_t sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
	return t < sizeof sz ? sz[t] : 0;
}

static const char *gg_quote(char *buf, const char *s, size_t len)
{
	return dit_error_quote(buf, GG_QBUF, s, len, GG_QUOTE_MAX);
}

/* A bounded cursor over the image: reads never pass its end. */
typedef struct gg_rd {
	const char *label;
	int fd;
	const uint8_t *mem;
	uint64_t size, pos;
	uint8_t *win; /* a file's window: [win_at, win_at + win_len) */
	uint64_t win_at;
	size_t win_len;
	uint64_t base; /* where the image starts in fd (an archive member), else 0 */
} gg_rd;

static uint64_t gg_left(const gg_rd *r)
{
	return r->size - r->pos;
}

/* n bytes at the cursor into dst; what names the part for a truncated file. */
static dit_status gg_read(gg_rd *r, void *dst, size_t n, const char *what, dit_error *err)
{
	if (n > gg_left(r))
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: file is truncated: it ends at byte %llu, inside %s",
		                     r->label, (unsigned long long)r->size, what);
	if (r->mem) {
		memcpy(dst, r->mem + r->pos, n);
		r->pos += n;
		return DIT_OK;
	}
	uint8_t *out = dst;
	while (n > 0) {
		if (r->pos < r->win_at || r->pos >= r->win_at + r->win_len) {
			uint64_t want = gg_left(r) < GG_WINDOW ? gg_left(r) : GG_WINDOW;
			int64_t got =
			    dit_input_pread(r->fd, r->win, (size_t)want, r->base + r->pos);
			if (got < 0)
				return dit_error_set(err, DIT_EIO,
				                     "%s: read failed at byte %llu: %s", r->label,
				                     (unsigned long long)r->pos, strerror(errno));
			if (got == 0)
				return dit_error_set(err, DIT_EFORMAT,
				                     "%s: file is truncated: it now ends at byte "
				                     "%llu, inside %s (it shrank while read)",
				                     r->label, (unsigned long long)r->pos, what);
			r->win_at = r->pos;
			r->win_len = (size_t)got;
		}
		size_t off = (size_t)(r->pos - r->win_at), k = r->win_len - off;
		if (k > n)
			k = n;
		memcpy(out, r->win + off, k);
		out += k;
		n -= k;
		r->pos += k;
	}
	return DIT_OK;
}

static dit_status gg_u32(gg_rd *r, uint32_t *v, const char *what, dit_error *err)
{
	uint8_t b[4];
	dit_status st = gg_read(r, b, 4, what, err);
	*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return st;
}

static dit_status gg_u64(gg_rd *r, uint64_t *v, const char *what, dit_error *err)
{
	uint32_t lo = 0, hi = 0;
	dit_status st = gg_u32(r, &lo, what, err);
	if (!st)
		st = gg_u32(r, &hi, what, err);
	*v = (uint64_t)hi << 32 | lo;
	return st;
}

/* A string of at most cap bytes (malloc'd, NUL-terminated; *len its length). The
 * length is checked against the cap and the bytes left before anything is allocated. */
static dit_status gg_string(gg_rd *r, uint64_t cap, char **s, size_t *len, const char *what,
                            dit_error *err)
{
	uint64_t n = 0;
	*s = NULL;
	dit_status st = gg_u64(r, &n, what, err);
	if (st)
		return st;
	if (n > cap)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: %s is a string of %llu bytes (%llu at most)", r->label,
		                     what, (unsigned long long)n, (unsigned long long)cap);
	if (n > gg_left(r))
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: file is truncated: %s declares %llu bytes, %llu are left",
		                     r->label, what, (unsigned long long)n,
		                     (unsigned long long)gg_left(r));
	if (!(*s = malloc((size_t)n + 1)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", r->label);
	st = gg_read(r, *s, (size_t)n, what, err);
	(*s)[n] = '\0';
	*len = (size_t)n;
	if (st) {
		free(*s);
		*s = NULL;
	}
	return st;
}

/* What the metadata pass keeps. */
typedef struct gg_meta {
	uint32_t align;
	int has_align;
	char **keys; /* every key, to refuse one twice */
	size_t nkeys;
} gg_meta;

/* Skips or reads one value of type t (not an array) for key k; a string value is
 * returned in *sv when sv is not NULL, a scalar's bytes in raw (8 bytes) when not NULL. */
static dit_status gg_value(gg_rd *r, uint32_t t, const char *k, char **sv, uint8_t *raw,
                           dit_error *err)
{
	char q[GG_QBUF];
	if (t == GG_TYPE_STR) {
		char *s = NULL;
		size_t n = 0;
		char what[GG_QBUF + 32];
		snprintf(what, sizeof what, "the value of key '%s'", gg_quote(q, k, strlen(k)));
		dit_status st = gg_string(r, DIT_GGUF_MAX_STRING, &s, &n, what, err);
		if (!st && sv)
			*sv = s;
		else
			free(s);
		return st;
	}
	uint8_t b[8] = {0};
	size_t sz = gg_scalar_size(t);
	if (sz == 0)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: key '%s' has value type %u, not one of "
		                     "GGUF's 0 to 12",
		                     r->label, gg_quote(q, k, strlen(k)), (unsigned)t);
	dit_status st = gg_read(r, b, sz, "the metadata", err);
	if (!st && t == GG_TYPE_BOOL && b[0] > 1)
		st = dit_error_set(err, DIT_EFORMAT, "%s: key '%s' is a boolean of value %u",
		                   r->label, gg_quote(q, k, strlen(k)), (unsigned)b[0]);
	if (raw)
		memcpy(raw, b, sizeof b);
	return st;
}

/* An array value: its type, count (checked against the cap and the bytes left: each
 * value takes at least one byte, a string eight) and values. */
static dit_status gg_array(gg_rd *r, const char *k, dit_error *err)
{
	char q[GG_QBUF];
	uint32_t t = 0;
	uint64_t n = 0;
	dit_status st = gg_u32(r, &t, "the metadata", err);
	if (!st)
		st = gg_u64(r, &n, "the metadata", err);
	if (st)
		return st;
	if (t == GG_TYPE_ARR)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: key '%s' is an array of arrays, which is not read",
		                     r->label, gg_quote(q, k, strlen(k)));
	uint64_t least = t == GG_TYPE_STR ? 8 : gg_scalar_size(t) ? gg_scalar_size(t) : 1;
	if (n > DIT_GGUF_MAX_ARRAY || n > gg_left(r) / least)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: key '%s' declares an array of %llu values (%llu at "
		                     "most, and the %llu bytes left)",
		                     r->label, gg_quote(q, k, strlen(k)), (unsigned long long)n,
		                     (unsigned long long)DIT_GGUF_MAX_ARRAY,
		                     (unsigned long long)gg_left(r));
	uint64_t start = r->pos;
	for (uint64_t i = 0; i < n && !st; i++) {
		st = gg_value(r, t, k, NULL, NULL, err);
		if (!st && r->pos - start > DIT_GGUF_MAX_META)
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: key '%s' holds more than %llu bytes of metadata",
			                   r->label, gg_quote(q, k, strlen(k)),
			                   (unsigned long long)DIT_GGUF_MAX_META);
	}
	return st;
}

static dit_status gg_add_meta(dit_st_file *f, char *k, char *v, dit_error *err)
{
	char **nm = realloc(f->meta, (2 * f->nmeta + 2) * sizeof *nm);
	if (!nm) {
		free(k);
		free(v);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
	}
	f->meta = nm;
	f->meta[2 * f->nmeta] = k;
	f->meta[2 * f->nmeta + 1] = v;
	f->nmeta++;
	if (!k || !v)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
	return DIT_OK;
}

static int gg_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The metadata: n entries; string values kept in f->meta, general.alignment read. */
static dit_status gg_read_meta(gg_rd *r, dit_st_file *f, uint64_t n, gg_meta *m, dit_error *err)
{
	char q[GG_QBUF];
	uint64_t start = r->pos;
	dit_status st = gg_add_meta(f, strdup("format"), strdup("gguf"), err);
	if (!st && !(m->keys = calloc((size_t)n + 1, sizeof *m->keys)))
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
	for (uint64_t i = 0; i < n && !st; i++) {
		char *k = NULL, *sv = NULL;
		size_t kl = 0;
		uint32_t t = 0;
		st = gg_string(r, DIT_GGUF_MAX_KEY, &k, &kl, "a metadata key", err);
		if (st)
			break;
		m->keys[m->nkeys++] = k;
		if (kl == 0 || memchr(k, 0, kl))
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: metadata key %llu is empty or holds "
			                   "a NUL byte",
			                   f->label, (unsigned long long)i);
		if (!st)
			st = gg_u32(r, &t, "the metadata", err);
		uint8_t b[8] = {0};
		if (!st && t == GG_TYPE_ARR)
			st = gg_array(r, k, err);
		else if (!st)
			st = gg_value(r, t, k, t == GG_TYPE_STR ? &sv : NULL, b, err);
		if (!st && strcmp(k, "general.alignment") == 0) {
			if (t != GG_TYPE_U32)
				st = dit_error_set(err, DIT_EFORMAT,
				                   "%s: key 'general.alignment' is not a u32",
				                   f->label);
			m->align = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
			           (uint32_t)b[3] << 24;
			m->has_align = 1;
		}
		if (!st && sv && strcmp(k, "format") != 0)
			st = gg_add_meta(f, strdup(k), sv, err);
		else
			free(sv);
		if (!st && r->pos - start > DIT_GGUF_MAX_META)
			st = dit_error_set(
			    err, DIT_EFORMAT, "%s: more than %llu bytes of metadata (key '%s')",
			    f->label, (unsigned long long)DIT_GGUF_MAX_META, gg_quote(q, k, kl));
	}
	if (!st && m->nkeys > 1) {
		qsort(m->keys, m->nkeys, sizeof *m->keys, gg_cmp_str);
		for (size_t i = 1; i < m->nkeys && !st; i++)
			if (strcmp(m->keys[i - 1], m->keys[i]) == 0)
				st = dit_error_set(err, DIT_EFORMAT, "%s: key '%s' appears twice",
				                   f->label,
				                   gg_quote(q, m->keys[i], strlen(m->keys[i])));
	}
	if (!st && m->has_align &&
	    (m->align == 0 || (m->align & (m->align - 1)) || m->align > GG_MAX_ALIGN))
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: general.alignment %u is not a power of two up to %u",
		                   f->label, (unsigned)m->align, (unsigned)GG_MAX_ALIGN);
	return st;
}

/* The dtype of ggml type id for tensor qn; refused by name when not read. */
static dit_status gg_dtype(const dit_st_file *f, uint32_t type, const char *qn, dit_dtype *dt,
                           dit_error *err)
{
	switch (type) {
	case 0: *dt = DIT_DTYPE_F32; return DIT_OK;
	case 1: *dt = DIT_DTYPE_F16; return DIT_OK;
	case 8: *dt = DIT_DTYPE_Q8_0; return DIT_OK;
	case 30: *dt = DIT_DTYPE_BF16; return DIT_OK;
	default: break;
	}
	const char *nm = dit_gguf_type_name(type);
	if (nm)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: tensor '%s' is %s; ditstar reads F32, F16, BF16, Q8_0",
		                     f->label, qn, nm);
	return dit_error_set(err, DIT_EFORMAT,
	                     "%s: tensor '%s' has ggml type %u, which is none; ditstar reads "
	                     "F32, F16, BF16, Q8_0",
	                     f->label, qn, (unsigned)type);
}

/* One tensor info into t: name, dimensions (reversed into torch's order), type, sizes
 * with overflow checks, offset (checked once the data section is known). */
static dit_status gg_read_info(gg_rd *r, dit_st_file *f, uint64_t i, dit_st_tensor *t,
                               dit_error *err)
{
	char q[GG_QBUF], what[64];
	snprintf(what, sizeof what, "the info of tensor %llu", (unsigned long long)i);
	size_t nl = 0;
	dit_status st = gg_string(r, DIT_GGUF_MAX_NAME, &t->name, &nl, what, err);
	if (st)
		return st;
	const char *qn = gg_quote(q, t->name, nl);
	if (nl == 0 || memchr(t->name, 0, nl))
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: tensor %llu's name is empty or holds a NUL byte ('%s')",
		                     f->label, (unsigned long long)i, qn);
	uint32_t nd = 0, type = 0;
	if ((st = gg_u32(r, &nd, what, err)))
		return st;
	if (nd < 1 || nd > DIT_MAX_DIMS)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: %u dimensions, 1 to %d are read (tensor '%s')", f->label,
		                     (unsigned)nd, DIT_MAX_DIMS, qn);
	t->ndim = (int)nd;
	int64_t numel = 1;
	for (uint32_t k = 0; k < nd; k++) {
		uint64_t d = 0;
		if ((st = gg_u64(r, &d, what, err)))
			return st;
		if (d > (uint64_t)INT64_MAX || (d > 0 && (uint64_t)numel > (uint64_t)INT64_MAX / d))
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: the dimensions overflow the element count "
			                     "(tensor '%s')",
			                     f->label, qn);
		t->shape[nd - 1 - k] = (int64_t)d;
		numel *= (int64_t)d;
	}
	if ((st = gg_u32(r, &type, what, err)) || (st = gg_dtype(f, type, qn, &t->dtype, err)) ||
	    (st = gg_u64(r, &t->offset, what, err)))
		return st;
	t->numel = numel;
	t->scale = 1.0f;
	size_t be, bb;
	dit_dtype_block(t->dtype, &be, &bb);
	int64_t row = t->shape[nd - 1];
	if (row % (int64_t)be)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: tensor '%s' is %s with rows of %lld elements, not whole "
		                     "blocks of %zu",
		                     f->label, qn, dit_dtype_name(t->dtype), (long long)row, be);
	uint64_t blocks = (uint64_t)numel / be;
	if (blocks > (uint64_t)INT64_MAX / bb)
		return dit_error_set(err, DIT_EFORMAT, "%s: the byte size overflows (tensor '%s')",
		                     f->label, qn);
	t->nbytes = blocks * bb;
	return DIT_OK;
}

static int gg_cmp_name(const void *a, const void *b)
{
	return strcmp(((const dit_st_tensor *)a)->name, ((const dit_st_tensor *)b)->name);
}

static int gg_cmp_off(const void *a, const void *b)
{
	const dit_st_tensor *x = *(const dit_st_tensor *const *)a;
	const dit_st_tensor *y = *(const dit_st_tensor *const *)b;
	return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : 0;
}

/* Offsets aligned, data in the data section, no overlap, unique names; sorted by name. */
static dit_status gg_check_layout(dit_st_file *f, uint32_t align, dit_error *err)
{
	char q1[GG_QBUF], q2[GG_QBUF];
	for (size_t i = 0; i < f->ntensors; i++) {
		const dit_st_tensor *t = &f->tensors[i];
		const char *qn = gg_quote(q1, t->name, strlen(t->name));
		if (t->offset % align)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: tensor data at offset %llu is not aligned to %u "
			                     "(tensor '%s')",
			                     f->label, (unsigned long long)t->offset,
			                     (unsigned)align, qn);
		if (t->offset > f->data_size || t->nbytes > f->data_size - t->offset)
			return dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: file is truncated: the tensor's data ends past the "
			    "%llu bytes of the data section (tensor '%s')",
			    f->label, (unsigned long long)f->data_size, qn);
	}
	const dit_st_tensor **by = f->ntensors ? malloc(f->ntensors * sizeof *by) : NULL;
	if (f->ntensors && !by)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
	for (size_t i = 0; i < f->ntensors; i++)
		by[i] = &f->tensors[i];
	if (f->ntensors > 1)
		qsort(by, f->ntensors, sizeof *by, gg_cmp_off);
	dit_status st = DIT_OK;
	const dit_st_tensor *prev = NULL;
	for (size_t i = 0; i < f->ntensors && !st; i++) {
		if (by[i]->nbytes == 0)
			continue;
		if (prev && by[i]->offset < prev->offset + prev->nbytes)
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: data overlaps that of tensor '%s' (tensor '%s')",
			                   f->label, gg_quote(q2, prev->name, strlen(prev->name)),
			                   gg_quote(q1, by[i]->name, strlen(by[i]->name)));
		prev = by[i];
	}
	free(by);
	if (!st && f->ntensors > 1)
		qsort(f->tensors, f->ntensors, sizeof *f->tensors, gg_cmp_name);
	for (size_t i = 1; i < f->ntensors && !st; i++)
		if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0)
			st = dit_error_set(
			    err, DIT_EFORMAT, "%s: tensor named twice (tensor '%s')", f->label,
			    gg_quote(q1, f->tensors[i].name, strlen(f->tensors[i].name)));
	return st;
}

/* The header, metadata and tensor infos of the image behind r; fills f. */
static dit_status gg_parse(gg_rd *r, dit_st_file *f, dit_error *err)
{
	uint8_t magic[4];
	uint32_t version = 0;
	uint64_t nt = 0, nkv = 0;
	dit_status st = gg_read(r, magic, 4, "the header", err);
	if (!st && memcmp(magic, "GGUF", 4) != 0)
		return dit_error_set(err, DIT_EFORMAT, "%s: not a GGUF file (no 'GGUF' magic)",
		                     f->label);
	if (!st)
		st = gg_u32(r, &version, "the header", err);
	if (st)
		return st;
	uint32_t sw = (version >> 24) | ((version >> 8) & 0xff00u) | ((version << 8) & 0xff0000u) |
	              (version << 24);
	if (version != 2 && version != 3)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     sw >= 1 && sw <= 3
		                         ? "%s: a big-endian GGUF file (version %u byte-swapped): "
		                           "only little-endian files are read"
		                         : "%s: GGUF version %u: versions 2 and 3 are read",
		                     f->label, (unsigned)(sw >= 1 && sw <= 3 ? sw : version));
	if ((st = gg_u64(r, &nt, "the header", err)) || (st = gg_u64(r, &nkv, "the header", err)))
		return st;
	/* a tensor info takes at least 8 + 1 + 4 + 8 + 4 + 8 bytes, an entry 8 + 1 + 4 + 1 */
	if (nt > DIT_ST_MAX_TENSORS || nkv > DIT_GGUF_MAX_KV)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: %llu tensors and %llu metadata entries declared (%zu and "
		                     "%llu at most)",
		                     f->label, (unsigned long long)nt, (unsigned long long)nkv,
		                     DIT_ST_MAX_TENSORS, (unsigned long long)DIT_GGUF_MAX_KV);
	if (nt * 33 + nkv * 14 > gg_left(r))
		return dit_error_set(
		    err, DIT_EFORMAT,
		    "%s: file is truncated: %llu tensors and %llu metadata entries "
		    "declared, the %llu bytes left cannot hold them",
		    f->label, (unsigned long long)nt, (unsigned long long)nkv,
		    (unsigned long long)gg_left(r));
	gg_meta m = {GG_ALIGN, 0, NULL, 0};
	st = gg_read_meta(r, f, nkv, &m, err);
	for (size_t i = 0; i < m.nkeys; i++)
		free(m.keys[i]);
	free(m.keys);
	if (st)
		return st;
	if (nt && !(f->tensors = calloc((size_t)nt, sizeof *f->tensors)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
	for (uint64_t i = 0; i < nt && !st; i++) {
		st = gg_read_info(r, f, i, &f->tensors[i], err);
		f->ntensors = (size_t)i + (f->tensors[i].name ? 1 : 0);
	}
	if (st)
		return st;
	uint64_t start = r->pos + (m.align - r->pos % m.align) % m.align;
	f->data_pos = start < r->size ? start : r->size;
	f->data_size = r->size - f->data_pos;
	return gg_check_layout(f, m.align, err);
}

dit_status dit_gguf_open(dit_st_file **out, const char *path, dit_error *err)
{
	if (!out || !path)
		return dit_error_set(err, DIT_EINVAL, "dit_gguf_open: NULL argument");
	*out = NULL;
	dit_st_file *f = dit_st_file_new(path);
	if (!f)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	uint64_t size = 0;
	dit_status st = dit_input_open(path, f->label, &f->fd, &size, err);
	gg_rd r = {f->label, f->fd, NULL, size, 0, NULL, 0, 0, 0};
	if (!st) {
		f->fd_owned = 1;
		if (!(r.win = malloc(GG_WINDOW)))
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
	}
	if (!st)
		st = gg_parse(&r, f, err);
	free(r.win);
	if (st) {
		dit_st_close(f);
		return st;
	}
	*out = f;
	return DIT_OK;
}

dit_status dit_gguf_open_fd(dit_st_file **out, const char *name, int fd, uint64_t offset,
                            uint64_t size, dit_error *err)
{
	if (!out || !name || fd < 0)
		return dit_error_set(err, DIT_EINVAL, "dit_gguf_open_fd: bad argument");
	*out = NULL;
	dit_st_file *f = dit_st_file_new(name);
	if (!f)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	f->fd = fd;
	f->base = offset;
	gg_rd r = {f->label, fd, NULL, size, 0, malloc(GG_WINDOW), 0, 0, offset};
	dit_status st = r.win ? gg_parse(&r, f, err)
	                      : dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
	free(r.win);
	if (st) {
		dit_st_close(f);
		return st;
	}
	*out = f;
	return DIT_OK;
}

dit_status dit_gguf_open_mem(dit_st_file **out, const char *name, const void *data, size_t size,
                             dit_error *err)
{
	if (!out || !name || (!data && size > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_gguf_open_mem: NULL argument");
	*out = NULL;
	dit_st_file *f = dit_st_file_new(name);
	if (!f)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	static const uint8_t none[1];
	gg_rd r = {f->label, -1, data ? data : none, size, 0, NULL, 0, 0, 0};
	dit_status st = gg_parse(&r, f, err);
	if (st) {
		dit_st_close(f);
		return st;
	}
	f->data = r.mem + f->data_pos;
	*out = f;
	return DIT_OK;
}

int dit_gguf_is(const dit_st_file *f)
{
	const char *fmt = dit_st_metadata(f, "format");
	return fmt && strcmp(fmt, "gguf") == 0;
}
