/* safetensors reader: opening and validating a file or an image in memory (the header
 * parsed in dit_st_header.c, tensor reads in dit_st_read.c, the writer in
 * dit_st_writer.c). */
#define _POSIX_C_SOURCE 200809L

#include "dit_st_priv.h"

#include "dit_input.h"
#include "dit_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

size_t dit_dtype_size(dit_dtype dt)
{
	switch (dt) {
	case DIT_DTYPE_F32: return 4;
	case DIT_DTYPE_F16: return 2;
	case DIT_DTYPE_BF16: return 2;
	case DIT_DTYPE_F64: return 8;
	case DIT_DTYPE_I64: return 8;
	case DIT_DTYPE_I32: return 4;
	case DIT_DTYPE_F8_E4M3: return 1;
	case DIT_DTYPE_F8_E5M2: return 1;
	case DIT_DTYPE_U8:
	case DIT_DTYPE_BOOL:
	case DIT_DTYPE_I8: return 1;
	case DIT_DTYPE_I16:
	case DIT_DTYPE_U16: return 2;
	case DIT_DTYPE_U32: return 4;
	case DIT_DTYPE_U64: return 8;
	case DIT_DTYPE_Q8_0:
	case DIT_DTYPE_COUNT: break;
	}
	return 0;
}

int dit_dtype_is_weight(dit_dtype dt)
{
	return dt <= DIT_DTYPE_Q8_0;
}

int dit_dtype_block(dit_dtype dt, size_t *elems, size_t *bytes)
{
	size_t es = dit_dtype_size(dt);
	*elems = es ? 1 : dt == DIT_DTYPE_Q8_0 ? 32 : 0;
	*bytes = es ? es : dt == DIT_DTYPE_Q8_0 ? 34 : 0;
	return *elems > 0;
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
	case DIT_DTYPE_F8_E4M3: return "F8_E4M3";
	case DIT_DTYPE_F8_E5M2: return "F8_E5M2";
	case DIT_DTYPE_Q8_0: return "Q8_0";
	case DIT_DTYPE_U8: return "U8";
	case DIT_DTYPE_BOOL: return "BOOL";
	case DIT_DTYPE_I8: return "I8";
	case DIT_DTYPE_I16: return "I16";
	case DIT_DTYPE_U16: return "U16";
	case DIT_DTYPE_U32: return "U32";
	case DIT_DTYPE_U64: return "U64";
	case DIT_DTYPE_COUNT: break;
	}
	return "?";
}

const char *dit_st_metadata(const dit_st_file *f, const char *key)
{
	for (size_t i = 0; f && i < f->nmeta; i++)
		if (strcmp(f->meta[2 * i], key) == 0)
			return f->meta[2 * i + 1];
	return NULL;
}

/* Reads len bytes at offset off of the image of f (f->fd >= 0); a short read is a file
 * that ends early, named with what. */
static dit_status st_pread(const dit_st_file *f, void *buf, size_t len, uint64_t off,
                           const char *what, dit_error *err)
{
	int64_t got = dit_input_pread(f->fd, buf, len, f->base + off);
	if (got < 0)
		return dit_error_set(err, DIT_EIO, "%s: read failed: %s", f->label,
		                     strerror(errno));
	if ((size_t)got < len)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: file is truncated: it ends at byte %llu, inside the %s",
		                     f->label, (unsigned long long)(off + (uint64_t)got), what);
	return DIT_OK;
}

/* Validates the image of size bytes, in memory at mem or (mem NULL) read from f->fd,
 * and fills f from it. The header length is checked against the cap before the header
 * is read, and the header against the entry caps before it is parsed. */
static dit_status st_parse_image(dit_st_file *f, const uint8_t *mem, uint64_t size, dit_error *err)
{
	const char *path = f->label;
	if (size < 8)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: file is truncated: %llu bytes, too short for the 8-byte "
		                     "header length",
		                     path, (unsigned long long)size);
	uint8_t lenb[8];
	dit_status st = DIT_OK;
	if (mem)
		memcpy(lenb, mem, 8);
	else if ((st = st_pread(f, lenb, 8, 0, "header length", err)) != DIT_OK)
		return st;
	uint64_t hlen = st_le64(lenb);
	uint64_t avail = size - 8;
	if (hlen < 2)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: header length %llu is below the 2-byte minimum ({})",
		                     path, (unsigned long long)hlen);
	if (hlen > DIT_ST_MAX_HEADER)
		return dit_error_set(
		    err, DIT_EFORMAT, "%s: header length %llu exceeds the %llu-byte limit", path,
		    (unsigned long long)hlen, (unsigned long long)DIT_ST_MAX_HEADER);
	if (hlen > avail)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: file is truncated: header length %llu but only %llu "
		                     "bytes follow",
		                     path, (unsigned long long)hlen, (unsigned long long)avail);
	char *buf = NULL;
	const char *hdr = (const char *)mem + 8;
	if (!mem) {
		if (!(buf = malloc((size_t)hlen)))
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory for the header",
			                     path);
		st = st_pread(f, buf, (size_t)hlen, 8, "header", err);
		hdr = buf;
	}
	f->data = mem ? mem + 8 + hlen : NULL;
	f->data_pos = 8 + hlen;
	f->data_size = avail - hlen;
	if (st == DIT_OK)
		st = dit_st_header_parse(f, hdr, (size_t)hlen, err);
	free(buf);
	return st;
}

dit_st_file *dit_st_file_new(const char *name)
{
	dit_st_file *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->fd = -1;
	if (!(f->path = strdup(name)) || !(f->label = dit_input_label(name))) {
		free(f->path);
		free(f);
		return NULL;
	}
	return f;
}

dit_status dit_st_open_mem(dit_st_file **out, const char *name, const void *data, size_t size,
                           dit_error *err)
{
	if (!out || !name || (!data && size > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_st_open_mem: NULL argument");
	*out = NULL;
	dit_st_file *f = dit_st_file_new(name);
	if (!f)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	static const uint8_t none[8];
	dit_status st = st_parse_image(f, data ? data : none, size, err);
	if (st != DIT_OK) {
		dit_st_close(f);
		return st;
	}
	*out = f;
	return DIT_OK;
}

dit_status dit_st_open_fd(dit_st_file **out, const char *name, int fd, uint64_t offset,
                          uint64_t size, dit_error *err)
{
	if (!out || !name || fd < 0)
		return dit_error_set(err, DIT_EINVAL, "dit_st_open_fd: bad argument");
	*out = NULL;
	dit_st_file *f = dit_st_file_new(name);
	if (!f)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	f->fd = fd;
	f->base = offset;
	dit_status st = st_parse_image(f, NULL, size, err);
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
	dit_st_file *f = dit_st_file_new(path);
	if (!f)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	uint64_t size = 0;
	dit_status st = dit_input_open(path, f->label, &f->fd, &size, err);
	if (st == DIT_OK) {
		f->fd_owned = 1;
		st = st_parse_image(f, NULL, size, err);
	}
	if (st != DIT_OK) {
		dit_st_close(f);
		return st;
	}
	*out = f;
	return DIT_OK;
}

void dit_st_close(dit_st_file *f)
{
	if (!f)
		return;
	if (f->fd_owned && f->fd >= 0)
		close(f->fd);
	for (size_t i = 0; i < f->ntensors; i++)
		free(f->tensors[i].name);
	free(f->tensors);
	for (size_t i = 0; f->meta && i < 2 * f->nmeta; i++)
		free(f->meta[i]);
	free(f->meta);
	free(f->path);
	free(f->label);
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
