/* Tensor reads of the safetensors reader: the bytes of a tensor come from the image in
 * memory or, for a file, by pread (so a file that shrinks while it is read is an
 * error, never a SIGBUS), and are converted to fp32 or bf16. */
#define _POSIX_C_SOURCE 200809L

#include "dit_st_priv.h"

#include "dit_bf16.h"
#include "dit_input.h"
#include "dit_wdt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bytes read from a file per step when the tensor is converted on the way. */
#define ST_TILE_BYTES ((size_t)256 << 10)

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ST_LITTLE_ENDIAN 1
#else
#define ST_LITTLE_ENDIAN 0
#endif

static float st_bits_f32(uint32_t bits)
{
	float f;
	memcpy(&f, &bits, sizeof f);
	return f;
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
/* Q8_0 blocks: an fp16 scale d, then 32 int8 q; the values q x d (exact in fp32). */
static void st_q8_0_to_f32(const uint8_t *src, size_t n, float *dst)
{
	for (size_t b = 0; b < n / 32; b++) {
		const uint8_t *blk = src + 34 * b;
		float d = dit_f16_to_f32(st_le16(blk));
		for (size_t j = 0; j < 32; j++)
			dst[32 * b + j] = (float)(int8_t)blk[2 + j] * d;
	}
}

/* Converts elements [i0, i0 + n) of src (t's dtype) to fp32; -1 for an unknown dtype.
 * A block type (Q8_0) takes whole blocks. */
static int convert_range(const uint8_t *src, const dit_st_tensor *t, size_t i0, size_t n,
                         float *dst)
{
	switch (t->dtype) {
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
			dst[i] = dit_f16_to_f32(st_le16(src + 2 * (i0 + i)));
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
	case DIT_DTYPE_F8_E4M3:
		for (size_t i = 0; i < n; i++)
			dst[i] = dit_e4m3_to_f32(src[i0 + i]) * t->scale;
		break;
	case DIT_DTYPE_U8:
		for (size_t i = 0; i < n; i++)
			dst[i] = (float)src[i0 + i];
		break;
	case DIT_DTYPE_BOOL:
		for (size_t i = 0; i < n; i++)
			dst[i] = src[i0 + i] ? 1.0f : 0.0f;
		break;
	case DIT_DTYPE_I8:
		for (size_t i = 0; i < n; i++)
			dst[i] = (float)(int8_t)src[i0 + i];
		break;
	case DIT_DTYPE_I16:
	case DIT_DTYPE_U16:
		for (size_t i = 0; i < n; i++) {
			uint16_t v = st_le16(src + 2 * (i0 + i));
			dst[i] = t->dtype == DIT_DTYPE_I16 ? (float)(int16_t)v : (float)v;
		}
		break;
	case DIT_DTYPE_U32:
		for (size_t i = 0; i < n; i++)
			dst[i] = (float)st_le32(src + 4 * (i0 + i));
		break;
	case DIT_DTYPE_U64:
		for (size_t i = 0; i < n; i++)
			dst[i] = (float)st_le64(src + 8 * (i0 + i));
		break;
	case DIT_DTYPE_F8_E5M2: /* the upper byte of a binary16 */
		for (size_t i = 0; i < n; i++)
			dst[i] = dit_f16_to_f32((uint16_t)(src[i0 + i] << 8)) * t->scale;
		break;
	case DIT_DTYPE_Q8_0:
		if (i0 % 32 != 0 || n % 32 != 0)
			return -1;
		st_q8_0_to_f32(src + i0 / 32 * 34, n, dst);
		break;
	default: return -1;
	}
	return 0;
}

/* The arguments of a tensor read: the tensor is the file's, its data in bounds. */
static dit_status check_read(const dit_st_file *f, const dit_st_tensor *t, const void *dst,
                             const char *fn, dit_error *err)
{
	char q[ST_QUOTE_BUF];
	if (!f || !t)
		return dit_error_set(err, DIT_EINVAL, "%s: NULL argument", fn);
	if (t < f->tensors || t >= f->tensors + f->ntensors)
		return dit_error_set(err, DIT_EINVAL, "%s: tensor does not belong to this file",
		                     f->label);
	if (t->numel > 0 && !dst)
		return dit_error_set(err, DIT_EINVAL, "%s: NULL destination (tensor '%s')",
		                     f->label, st_quote(q, sizeof q, t->name, strlen(t->name)));
	if (t->offset > f->data_size || t->nbytes > f->data_size - t->offset)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: tensor data out of bounds (tensor '%s')", f->label,
		                     st_quote(q, sizeof q, t->name, strlen(t->name)));
	return DIT_OK;
}

/* Copies len bytes from byte off of t's data into buf, by pread for a file. A short
 * read means the file shrank after it was opened (and validated). */
static dit_status st_fetch(const dit_st_file *f, const dit_st_tensor *t, uint64_t off, void *buf,
                           size_t len, dit_error *err)
{
	if (len == 0)
		return DIT_OK;
	if (f->fd < 0) {
		memcpy(buf, f->data + t->offset + off, len);
		return DIT_OK;
	}
	uint64_t at = f->data_pos + t->offset + off; /* from the start of the image */
	int64_t got = dit_input_pread(f->fd, buf, len, f->base + at);
	char q[ST_QUOTE_BUF];
	if (got < 0)
		return dit_error_set(err, DIT_EIO, "%s: read failed at byte %llu: %s (tensor '%s')",
		                     f->label, (unsigned long long)at, strerror(errno),
		                     st_quote(q, sizeof q, t->name, strlen(t->name)));
	if ((size_t)got < len)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: file is truncated: it now ends at byte %llu, inside the "
		                     "tensor's data (it shrank after it was opened) (tensor '%s')",
		                     f->label, (unsigned long long)(at + (uint64_t)got),
		                     st_quote(q, sizeof q, t->name, strlen(t->name)));
	return DIT_OK;
}

/* Elements [i0, i0 + n) of t as bytes (*src): in place for an image in memory, else
 * read into tmp. */
static dit_status st_raw(const dit_st_file *f, const dit_st_tensor *t, size_t i0, size_t n,
                         uint8_t *tmp, const uint8_t **src, dit_error *err)
{
	size_t be, bb;
	dit_dtype_block(t->dtype, &be, &bb);
	size_t at = i0 / be * bb, len = (n + be - 1) / be * bb;
	*src = f->fd < 0 ? f->data + t->offset + at : tmp;
	return f->fd < 0 ? DIT_OK : st_fetch(f, t, (uint64_t)at, tmp, len, err);
}

/* Elements converted per step: all of them in memory, a tile's worth (whole blocks)
 * from a file. */
static size_t st_step(const dit_st_file *f, const dit_st_tensor *t, size_t n)
{
	size_t be, bb;
	dit_dtype_block(t->dtype, &be, &bb);
	size_t per = ST_TILE_BYTES / bb * be;
	return f->fd < 0 || n < per ? (n ? n : 1) : per;
}

static int st_known(const dit_st_tensor *t)
{
	size_t be, bb;
	return dit_dtype_block(t->dtype, &be, &bb);
}

/* Bytes of the raw buffer for per elements. */
static size_t st_tmp_bytes(const dit_st_tensor *t, size_t per)
{
	size_t be, bb;
	dit_dtype_block(t->dtype, &be, &bb);
	return (per + be - 1) / be * bb;
}

static dit_status st_unsupported(const dit_st_file *f, const dit_st_tensor *t, dit_error *err)
{
	char q[ST_QUOTE_BUF];
	return dit_error_set(err, DIT_EUNSUPPORTED, "%s: tensor '%s' is %s, not a dtype of weights",
	                     f->label, st_quote(q, sizeof q, t->name, strlen(t->name)),
	                     dit_dtype_name(t->dtype));
}

dit_status dit_st_read_f32(const dit_st_file *f, const dit_st_tensor *t, float *dst, dit_error *err)
{
	dit_status st = check_read(f, t, dst, "dit_st_read_f32", err);
	if (st)
		return st;
	size_t n = (size_t)t->numel;
	if (!st_known(t))
		return st_unsupported(f, t, err);
	if (f->fd >= 0 && t->dtype == DIT_DTYPE_F32 && ST_LITTLE_ENDIAN)
		return st_fetch(f, t, 0, dst, (size_t)t->nbytes, err);
	size_t per = st_step(f, t, n);
	uint8_t *tmp = f->fd >= 0 ? malloc(st_tmp_bytes(t, per)) : NULL;
	if (f->fd >= 0 && !tmp)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
	for (size_t i0 = 0; i0 < n && st == DIT_OK; i0 += per) {
		size_t k = n - i0 < per ? n - i0 : per;
		const uint8_t *src;
		st = st_raw(f, t, i0, k, tmp, &src, err);
		if (st == DIT_OK && convert_range(src, t, 0, k, dst + i0) != 0)
			st = st_unsupported(f, t, err);
	}
	free(tmp);
	return st;
}

dit_status dit_st_read_bf16(const dit_st_file *f, const dit_st_tensor *t, uint16_t *dst,
                            dit_error *err)
{
	dit_status st = check_read(f, t, dst, "dit_st_read_bf16", err);
	if (st)
		return st;
	size_t n = (size_t)t->numel;
	if (!st_known(t))
		return st_unsupported(f, t, err);
	if (t->dtype == DIT_DTYPE_BF16 && f->fd >= 0) {
		st = st_fetch(f, t, 0, dst, (size_t)t->nbytes, err);
		for (size_t i = 0; st == DIT_OK && !ST_LITTLE_ENDIAN && i < n; i++)
			dst[i] = st_le16((const uint8_t *)&dst[i]);
		return st;
	}
	if (t->dtype == DIT_DTYPE_BF16) {
		const uint8_t *src = f->data + t->offset;
		for (size_t i = 0; i < n; i++)
			dst[i] = st_le16(src + 2 * i);
		return DIT_OK;
	}
	/* through fp32, a tile at a time */
	size_t per = st_step(f, t, n);
	uint8_t *tmp = f->fd >= 0 ? malloc(st_tmp_bytes(t, per)) : NULL;
	if (f->fd >= 0 && !tmp)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", f->label);
	float tile[1024];
	for (size_t i0 = 0; i0 < n && st == DIT_OK; i0 += per) {
		size_t k = n - i0 < per ? n - i0 : per;
		const uint8_t *src;
		st = st_raw(f, t, i0, k, tmp, &src, err);
		for (size_t j = 0; j < k && st == DIT_OK; j += 1024) {
			size_t kk = k - j < 1024 ? k - j : 1024;
			if (convert_range(src, t, j, kk, tile) != 0)
				st = st_unsupported(f, t, err);
			for (size_t i = 0; st == DIT_OK && i < kk; i++)
				dst[i0 + j + i] = dit_bf16_from_f32(tile[i]);
		}
	}
	free(tmp);
	return st;
}

dit_status dit_st_read_raw(const dit_st_file *f, const dit_st_tensor *t, void *dst, dit_error *err)
{
	dit_status st = check_read(f, t, dst, "dit_st_read_raw", err);
	if (st)
		return st;
	if (!st_known(t))
		return st_unsupported(f, t, err);
	if (f->fd >= 0)
		st = st_fetch(f, t, 0, dst, (size_t)t->nbytes, err);
	else
		memcpy(dst, f->data + t->offset, (size_t)t->nbytes);
	/* two-byte dtypes in host order (Q8_0 blocks stay as stored, little-endian) */
	size_t es = dit_dtype_size(t->dtype);
	for (size_t i = 0; st == DIT_OK && !ST_LITTLE_ENDIAN && es == 2 && i < (size_t)t->numel;
	     i++) {
		uint16_t *h = (uint16_t *)dst + i;
		*h = st_le16((const uint8_t *)h);
	}
	return st;
}
