/* The zip reader of torch checkpoints (see dit_zip.h): the end record, the central
 * directory and each member's local header, all checked against the image. */
#define _POSIX_C_SOURCE 200809L

#include "dit_zip.h"

#include "dit_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ZIP_EOCD_SIG    0x06054b50u
#define ZIP_EOCD64_SIG  0x06064b50u
#define ZIP_LOC64_SIG   0x07064b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_LOCAL_SIG   0x04034b50u
#define ZIP_EOCD_LEN    22
#define ZIP_LOC64_LEN   20
#define ZIP_EOCD64_LEN  56
#define ZIP_CENTRAL_LEN 46
#define ZIP_LOCAL_LEN   30
#define ZIP_MAX_COMMENT 65535
#define ZIP_QUOTE_MAX   120
#define ZIP_QBUF        (ZIP_QUOTE_MAX * 4 + 8)

static uint16_t z16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t z32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static uint64_t z64(const uint8_t *p)
{
	return (uint64_t)z32(p) | ((uint64_t)z32(p + 4) << 32);
}

static const char *zq(char *buf, const char *s)
{
	return dit_error_quote(buf, ZIP_QBUF, s, strlen(s), ZIP_QUOTE_MAX);
}

uint32_t dit_zip_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
	/* the reflected polynomial 0xEDB88320, four bits a step */
	static const uint32_t tab[16] = {0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu,
	                                 0x76dc4190u, 0x6b6b51f4u, 0x4db26158u, 0x5005713cu,
	                                 0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu,
	                                 0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu};
	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		crc = (crc >> 4) ^ tab[crc & 15u];
		crc = (crc >> 4) ^ tab[crc & 15u];
	}
	return ~crc;
}

/* len bytes at offset off of the image; a range past its end is a truncated zip
 * (what names the structure read). */
static dit_status zip_pread(const dit_zip *z, void *buf, size_t len, uint64_t off, const char *what,
                            dit_error *err)
{
	if (off > z->src.size || len > z->src.size - off)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: zip is truncated or its directory lies: the %s at byte "
		                     "%llu (%zu bytes) ends past the file's %llu bytes",
		                     z->label, what, (unsigned long long)off, len,
		                     (unsigned long long)z->src.size);
	if (z->src.fd < 0) {
		memcpy(buf, z->src.mem + off, len);
		return DIT_OK;
	}
	int64_t got = dit_input_pread(z->src.fd, buf, len, z->src.base + off);
	if (got < 0)
		return dit_error_set(err, DIT_EIO, "%s: read failed: %s", z->label,
		                     strerror(errno));
	if ((size_t)got < len)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: file is truncated: it ends at byte %llu, inside the %s",
		                     z->label, (unsigned long long)(off + (uint64_t)got), what);
	return DIT_OK;
}

/* The values of the end records: where the central directory is and how many entries
 * it holds; *end is where the end records begin (nothing of the zip may lie after). */
typedef struct zip_end {
	uint64_t entries, cd_size, cd_off, end;
} zip_end;

/* The end of central directory record: the last of the image's final
 * ZIP_EOCD_LEN + ZIP_MAX_COMMENT bytes whose signature and comment reach the end, into
 * r; *pos its byte. None is the legacy torch format or not a zip. */
static dit_status zip_eocd_read(const dit_zip *z, uint8_t r[ZIP_EOCD_LEN], uint64_t *pos,
                                dit_error *err)
{
	uint64_t size = z->src.size;
	if (size < ZIP_EOCD_LEN)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: not a zip file: %llu bytes, shorter than its end record",
		                     z->label, (unsigned long long)size);
	size_t tail =
	    (size_t)(size < ZIP_EOCD_LEN + ZIP_MAX_COMMENT ? size : ZIP_EOCD_LEN + ZIP_MAX_COMMENT);
	uint8_t *buf = malloc(tail);
	if (!buf)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", z->label);
	dit_status st = zip_pread(z, buf, tail, size - tail, "end record", err);
	size_t at = tail; /* the end record: signature, and a comment reaching the end */
	for (size_t i = tail - ZIP_EOCD_LEN + 1; st == DIT_OK && i-- > 0;) {
		if (z32(buf + i) == ZIP_EOCD_SIG && i + ZIP_EOCD_LEN + z16(buf + i + 20) == tail) {
			at = i;
			break;
		}
	}
	if (st == DIT_OK && at == tail)
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: not a zip file (no end of central directory record); "
		                   "torch's legacy format (_use_new_zipfile_serialization=False) "
		                   "is not read",
		                   z->label);
	if (st == DIT_OK)
		memcpy(r, buf + at, ZIP_EOCD_LEN);
	free(buf);
	*pos = size - tail + at;
	return st;
}

/* zip64: a locator right before the end record (at pos) points to the zip64 end
 * record, whose values replace the end record's in e. Without a locator the end record
 * must not defer to one. *disks is set when either record speaks of other disks. */
static dit_status zip64_read(const dit_zip *z, uint64_t pos, zip_end *e, int *disks, dit_error *err)
{
	uint8_t loc[ZIP_LOC64_LEN];
	dit_status st;
	if (pos >= ZIP_LOC64_LEN && (st = zip_pread(z, loc, sizeof loc, pos - ZIP_LOC64_LEN,
	                                            "zip64 locator", err)) != DIT_OK)
		return st;
	if (pos < ZIP_LOC64_LEN || z32(loc) != ZIP_LOC64_SIG) {
		if (e->entries == 0xffffu || e->cd_size == 0xffffffffu || e->cd_off == 0xffffffffu)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: the end record defers to zip64 but there is no "
			                     "zip64 locator",
			                     z->label);
		return DIT_OK;
	}
	uint64_t off = z64(loc + 8);
	if (z32(loc + 4) != 0 || z32(loc + 16) > 1)
		*disks = 1;
	if (off > pos - ZIP_LOC64_LEN || pos - ZIP_LOC64_LEN - off < ZIP_EOCD64_LEN)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: zip64 locator points to byte %llu, not before "
		                     "itself (byte %llu)",
		                     z->label, (unsigned long long)off,
		                     (unsigned long long)(pos - ZIP_LOC64_LEN));
	uint8_t r64[ZIP_EOCD64_LEN];
	if ((st = zip_pread(z, r64, sizeof r64, off, "zip64 end record", err)) != DIT_OK)
		return st;
	if (z32(r64) != ZIP_EOCD64_SIG)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: no zip64 end record at byte %llu, where its "
		                     "locator points",
		                     z->label, (unsigned long long)off);
	if (z32(r64 + 16) != 0 || z32(r64 + 20) != 0 || z64(r64 + 24) != z64(r64 + 32))
		*disks = 1;
	e->entries = z64(r64 + 32);
	e->cd_size = z64(r64 + 40);
	e->cd_off = z64(r64 + 48);
	e->end = off;
	return DIT_OK;
}

/* The end records' values checked: one disk, the limits, and a central directory that
 * ends where the end records begin and can hold its entries. */
static dit_status zip_end_check(const dit_zip *z, const zip_end *e, int disks, dit_error *err)
{
	if (disks)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: a zip split over several disks is not read", z->label);
	if (e->entries > DIT_ZIP_MAX_MEMBERS)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: zip lists %llu members, more than the limit of %zu",
		                     z->label, (unsigned long long)e->entries, DIT_ZIP_MAX_MEMBERS);
	if (e->cd_size > DIT_ZIP_MAX_CDIR)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: zip central directory of %llu bytes, more than the "
		                     "limit of %llu",
		                     z->label, (unsigned long long)e->cd_size,
		                     (unsigned long long)DIT_ZIP_MAX_CDIR);
	if (e->cd_off > e->end || e->cd_size != e->end - e->cd_off)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: zip central directory (byte %llu, %llu bytes) does not "
		                     "end where the end record begins (byte %llu)",
		                     z->label, (unsigned long long)e->cd_off,
		                     (unsigned long long)e->cd_size, (unsigned long long)e->end);
	if (e->entries * ZIP_CENTRAL_LEN > e->cd_size)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: zip central directory of %llu bytes cannot hold its %llu "
		                     "entries",
		                     z->label, (unsigned long long)e->cd_size,
		                     (unsigned long long)e->entries);
	return DIT_OK;
}

/* The end records, read and checked, into e. */
static dit_status zip_find_end(const dit_zip *z, zip_end *e, dit_error *err)
{
	uint8_t r[ZIP_EOCD_LEN] = {0};
	uint64_t pos = 0;
	dit_status st = zip_eocd_read(z, r, &pos, err);
	if (st != DIT_OK)
		return st;
	e->entries = z16(r + 10);
	e->cd_size = z32(r + 12);
	e->cd_off = z32(r + 16);
	e->end = pos;
	int disks = z16(r + 4) != 0 || z16(r + 6) != 0 || z16(r + 8) != z16(r + 10);
	if ((st = zip64_read(z, pos, e, &disks, err)) != DIT_OK)
		return st;
	return zip_end_check(z, e, disks, err);
}

/* The zip64 extra field of a central entry: the values saturated in the entry, in
 * order. -1 when a value is missing. */
static int zip_extra64(const uint8_t *x, size_t len, dit_zip_member *m, int need_size,
                       int need_csize, int need_off, int need_disk)
{
	for (size_t p = 0; p + 4 <= len;) {
		uint16_t id = z16(x + p), n = z16(x + p + 2);
		if (p + 4 + n > len)
			return -1;
		if (id == 1) {
			const uint8_t *v = x + p + 4;
			size_t k = 0;
			if (need_size && (k += 8) <= n)
				m->size = z64(v + k - 8);
			if (need_csize && (k += 8) <= n)
				m->csize = z64(v + k - 8);
			if (need_off && (k += 8) <= n)
				m->header = z64(v + k - 8);
			if (need_disk && (k += 4) <= n && z32(v + k - 4) != 0)
				return -1;
			return k <= n ? 0 : -1;
		}
		p += 4 + (size_t)n;
	}
	return need_size || need_csize || need_off || need_disk ? -1 : 0;
}

/* Parses the central directory cd (e->cd_size bytes) into z->members. */
static dit_status zip_parse_cdir(dit_zip *z, const uint8_t *cd, const zip_end *e, dit_error *err)
{
	size_t n = (size_t)e->entries, pos = 0;
	z->members = n ? calloc(n, sizeof *z->members) : NULL;
	if (n && !z->members)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory for %zu members", z->label,
		                     n);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *c = cd + pos;
		if (e->cd_size - pos < ZIP_CENTRAL_LEN || z32(c) != ZIP_CENTRAL_SIG)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: zip central directory entry %zu is malformed "
			                     "(byte %llu)",
			                     z->label, i, (unsigned long long)(e->cd_off + pos));
		size_t nl = z16(c + 28), xl = z16(c + 30), cl = z16(c + 32);
		if (e->cd_size - pos - ZIP_CENTRAL_LEN < nl + xl + cl)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: zip central directory entry %zu runs past the "
			                     "directory",
			                     z->label, i);
		dit_zip_member *m = &z->members[i];
		m->flags = z16(c + 8);
		m->method = z16(c + 10);
		m->crc = z32(c + 16);
		m->csize = z32(c + 20);
		m->size = z32(c + 24);
		m->header = z32(c + 42);
		const char *name = (const char *)c + ZIP_CENTRAL_LEN;
		if (nl == 0 || memchr(name, 0, nl))
			return dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: zip central directory entry %zu has an empty name "
			    "or one with a NUL byte",
			    z->label, i);
		if (!(m->name = strndup(name, nl)))
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", z->label);
		z->nmembers = i + 1;
		if (zip_extra64(c + ZIP_CENTRAL_LEN + nl, xl, m, m->size == 0xffffffffu,
		                m->csize == 0xffffffffu, m->header == 0xffffffffu,
		                z16(c + 34) == 0xffffu) != 0 ||
		    (z16(c + 34) != 0 && z16(c + 34) != 0xffffu)) {
			char q[ZIP_QBUF];
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: member '%s': malformed zip64 extra field or a "
			                     "start on another disk",
			                     z->label, zq(q, m->name));
		}
		pos += ZIP_CENTRAL_LEN + nl + xl + cl;
	}
	if (pos != e->cd_size)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: zip central directory holds %llu bytes after its %zu "
		                     "entries",
		                     z->label, (unsigned long long)(e->cd_size - pos), n);
	return DIT_OK;
}

/* The local header of m: where the directory says, with the same name and method;
 * sets m->data and checks that the data lie before the central directory. */
static dit_status zip_check_local(const dit_zip *z, dit_zip_member *m, uint64_t cd_off,
                                  dit_error *err)
{
	char q[ZIP_QBUF];
	uint8_t h[ZIP_LOCAL_LEN];
	size_t nl = strlen(m->name);
	dit_status st = DIT_OK;
	if (m->header > cd_off || cd_off - m->header < ZIP_LOCAL_LEN)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s': local header at byte %llu is not before the "
		                     "central directory",
		                     z->label, zq(q, m->name), (unsigned long long)m->header);
	if ((st = zip_pread(z, h, sizeof h, m->header, "local header", err)) != DIT_OK)
		return st;
	if (z32(h) != ZIP_LOCAL_SIG || z16(h + 26) != nl || z16(h + 8) != m->method)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s': no matching local header at byte %llu, "
		                     "where the central directory points",
		                     z->label, zq(q, m->name), (unsigned long long)m->header);
	char *lname = malloc(nl);
	if (!lname)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", z->label);
	st = zip_pread(z, lname, nl, m->header + ZIP_LOCAL_LEN, "local header", err);
	int same = st == DIT_OK && memcmp(lname, m->name, nl) == 0;
	free(lname);
	if (st != DIT_OK)
		return st;
	if (!same)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s': the local header at byte %llu names another "
		                     "member",
		                     z->label, zq(q, m->name), (unsigned long long)m->header);
	m->data = m->header + ZIP_LOCAL_LEN + nl + z16(h + 28);
	if (m->data > cd_off || m->csize > cd_off - m->data)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s': its %llu bytes at byte %llu run into the "
		                     "central directory (byte %llu)",
		                     z->label, zq(q, m->name), (unsigned long long)m->csize,
		                     (unsigned long long)m->data, (unsigned long long)cd_off);
	if (m->method == 0 && m->csize != m->size)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s': stored, but %llu bytes compressed and %llu "
		                     "uncompressed",
		                     z->label, zq(q, m->name), (unsigned long long)m->csize,
		                     (unsigned long long)m->size);
	return DIT_OK;
}

static int zip_cmp_header(const void *a, const void *b)
{
	const dit_zip_member *x = a, *y = b;
	return x->header < y->header ? -1 : x->header > y->header;
}

static int zip_cmp_name(const void *a, const void *b)
{
	return strcmp(((const dit_zip_member *)a)->name, ((const dit_zip_member *)b)->name);
}

/* Members in file order may not overlap: each one's data end before the next header. */
static dit_status zip_check_layout(dit_zip *z, dit_error *err)
{
	char q1[ZIP_QBUF], q2[ZIP_QBUF];
	if (z->nmembers < 2)
		return DIT_OK;
	qsort(z->members, z->nmembers, sizeof *z->members, zip_cmp_header);
	for (size_t i = 1; i < z->nmembers; i++) {
		const dit_zip_member *a = &z->members[i - 1], *b = &z->members[i];
		if (a->data + a->csize > b->header)
			return dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: members '%s' and '%s' overlap (the zip's directory "
			    "lies)",
			    z->label, zq(q1, a->name), zq(q2, b->name));
	}
	qsort(z->members, z->nmembers, sizeof *z->members, zip_cmp_name);
	for (size_t i = 1; i < z->nmembers; i++) {
		if (strcmp(z->members[i - 1].name, z->members[i].name) == 0)
			return dit_error_set(err, DIT_EFORMAT, "%s: member '%s' appears twice",
			                     z->label, zq(q1, z->members[i].name));
	}
	return DIT_OK;
}

dit_status dit_zip_open(dit_zip **out, const char *name, const dit_zip_src *src, dit_error *err)
{
	if (!out || !name || !src || (src->fd < 0 && !src->mem && src->size > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_zip_open: NULL argument");
	*out = NULL;
	dit_zip *z = calloc(1, sizeof *z);
	if (!z || !(z->label = dit_input_label(name))) {
		free(z);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", name);
	}
	z->src = *src;
	zip_end e;
	uint8_t *cd = NULL;
	dit_status st = zip_find_end(z, &e, err);
	if (st == DIT_OK && !(cd = malloc(e.cd_size ? (size_t)e.cd_size : 1)))
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", z->label);
	if (st == DIT_OK)
		st = zip_pread(z, cd, (size_t)e.cd_size, e.cd_off, "central directory", err);
	if (st == DIT_OK)
		st = zip_parse_cdir(z, cd, &e, err);
	free(cd);
	for (size_t i = 0; st == DIT_OK && i < z->nmembers; i++)
		st = zip_check_local(z, &z->members[i], e.cd_off, err);
	if (st == DIT_OK)
		st = zip_check_layout(z, err);
	if (st != DIT_OK) {
		dit_zip_close(z);
		return st;
	}
	*out = z;
	return DIT_OK;
}

void dit_zip_close(dit_zip *z)
{
	if (!z)
		return;
	for (size_t i = 0; i < z->nmembers; i++)
		free(z->members[i].name);
	free(z->members);
	free(z->label);
	free(z);
}

const dit_zip_member *dit_zip_find(const dit_zip *z, const char *name)
{
	if (!z || !name || z->nmembers == 0)
		return NULL;
	dit_zip_member key = {.name = (char *)name};
	return bsearch(&key, z->members, z->nmembers, sizeof *z->members, zip_cmp_name);
}

int dit_zip_is_stored(const dit_zip_member *m)
{
	return m && m->method == 0 && !(m->flags & 1u) && m->csize == m->size;
}

dit_status dit_zip_read(const dit_zip *z, const dit_zip_member *m, uint64_t max, uint8_t **out,
                        size_t *len, dit_error *err)
{
	char q[ZIP_QBUF];
	*out = NULL;
	*len = 0;
	if (!dit_zip_is_stored(m))
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: member '%s' is %s (method %u): only stored members are "
		                     "read, as torch.save writes them",
		                     z->label, zq(q, m->name),
		                     m->flags & 1u ? "encrypted" : "compressed",
		                     (unsigned)m->method);
	if (m->size > max)
		return dit_error_set(
		    err, DIT_EFORMAT,
		    "%s: member '%s' holds %llu bytes, more than the limit of %llu", z->label,
		    zq(q, m->name), (unsigned long long)m->size, (unsigned long long)max);
	uint8_t *buf = malloc((size_t)m->size + 1);
	if (!buf)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", z->label);
	dit_status st = zip_pread(z, buf, (size_t)m->size, m->data, "member data", err);
	if (st == DIT_OK && dit_zip_crc32(0, buf, (size_t)m->size) != m->crc)
		st = dit_error_set(err, DIT_EFORMAT, "%s: member '%s': CRC mismatch (corrupt data)",
		                   z->label, zq(q, m->name));
	if (st != DIT_OK) {
		free(buf);
		return st;
	}
	buf[m->size] = 0;
	*out = buf;
	*len = (size_t)m->size;
	return DIT_OK;
}
