/* Archives read in place with libarchive (see dit_archive.h). */
#define _POSIX_C_SOURCE 200809L

#include "dit_archive_priv.h"

#include "dit_input.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Normalises raw into *out (malloc'd): "./" and empty components dropped. Returns NULL,
 * or why the name is refused. An empty result is "" (the archive root). */
static const char *ar_normalise(const char *raw, char **out)
{
	*out = NULL;
	if (raw[0] == '/')
		return "is an absolute path";
	size_t n = strlen(raw);
	char *s = malloc(n + 1);
	if (!s)
		return "cannot be stored: out of memory";
	size_t o = 0;
	const char *p = raw;
	while (*p) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			free(s);
			return "has a '..' component";
		}
		if (len > 0 && !(len == 1 && p[0] == '.')) {
			if (o > 0)
				s[o++] = '/';
			memcpy(s + o, p, len);
			o += len;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	s[o] = '\0';
	*out = s;
	return NULL;
}

static const char *ar_kind(struct archive_entry *e)
{
	if (archive_entry_hardlink(e))
		return "a hard link";
	switch (archive_entry_filetype(e)) {
	case AE_IFLNK: return "a symbolic link";
	case AE_IFCHR: return "a character device";
	case AE_IFBLK: return "a block device";
	case AE_IFIFO: return "a fifo";
	case AE_IFSOCK: return "a socket";
	default: return "not a regular file";
	}
}

static int ar_cmp_member(const void *a, const void *b)
{
	return strcmp(((const dit_archive_member *)a)->name, ((const dit_archive_member *)b)->name);
}

/* Whether libarchive decodes the current zip member as stored or deflated: its format
 * name for the member is "ZIP v.v (METHOD)". Other methods are refused: libarchive's
 * LZMA, XZ and BZip2 decoders allocate the dictionary a 100-byte header declares
 * (GBs) before any data is read. method receives the name (for the message). */
static int ar_zip_method_ok(struct archive *a, char *method, size_t len)
{
	const char *f = archive_format_name(a);
	const char *open = f ? strchr(f, '(') : NULL, *close = open ? strchr(open, ')') : NULL;
	snprintf(method, len, "%.*s", close ? (int)(close - open - 1) : 7,
	         close ? open + 1 : "unknown");
	return strcmp(method, "uncompressed") == 0 || strcmp(method, "deflation") == 0;
}

/* Checks the current entry e and returns its normalised name in *name (NULL for a
 * directory, which is skipped). last receives the quoted raw name. */
static dit_status ar_entry(dit_archive *ar, struct archive_entry *e, char *last, size_t lcap,
                           char **name, dit_error *err)
{
	*name = NULL;
	const char *raw = archive_entry_pathname(e);
	if (!raw)
		raw = archive_entry_pathname_utf8(e);
	if (!raw)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member after '%s' has a name that cannot be read",
		                     ar->label, last);
	ar_quote(last, lcap, raw);
	const char *why = ar_normalise(raw, name);
	if (why)
		return dit_error_set(err, DIT_EFORMAT, "%s: member '%s' %s", ar->label, last, why);
	if (archive_entry_filetype(e) == AE_IFDIR && !archive_entry_hardlink(e)) {
		free(*name);
		*name = NULL;
		return DIT_OK;
	}
	if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e))
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s' is %s (only regular files and directories "
		                     "are accepted)",
		                     ar->label, last, ar_kind(e));
	if ((*name)[0] == '\0')
		return dit_error_set(err, DIT_EFORMAT, "%s: member '%s' has an empty name",
		                     ar->label, last);
	if (archive_entry_sparse_count(e) > 0)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s' is a sparse file (not supported)", ar->label,
		                     last);
	return DIT_OK;
}

/* The next entry's header into *e: NULL at the end of an archive read in full. A
 * header libarchive cannot read, an end before every member of the table (a later
 * reading) and more entries than the limit are errors. */
static dit_status ar_next(dit_archive *ar, struct archive *a, int pass, int first, const char *last,
                          size_t *entries, struct archive_entry **e, dit_error *err)
{
	char m[AR_QBUF];
	int r = archive_read_next_header(a, e);
	if (r == ARCHIVE_EOF) {
		*e = NULL;
		if (pass)
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: archive changed while read (members missing)",
			                     ar->label);
		return DIT_OK;
	}
	if (r < ARCHIVE_WARN) {
		*e = NULL;
		if (first)
			return dit_error_set(err, DIT_EFORMAT, "%s: not a tar or zip archive: %s",
			                     ar->label, ar_libmsg(m, sizeof m, a));
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: truncated or corrupt after member '%s': %s", ar->label,
		                     last, ar_libmsg(m, sizeof m, a));
	}
	if (++*entries > ar->max_entries)
		return dit_error_set(err, DIT_EFORMAT, "%s: more than %zu entries (the limit)",
		                     ar->label, ar->max_entries);
	return DIT_OK;
}

/* What the first entry tells of the archive: a zip or a tar, compressed (read as a
 * stream) or not (its members read in place). */
static void ar_format_note(dit_archive *ar, struct archive *a)
{
	ar->zip = (archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_ZIP;
	ar->stream = archive_filter_code(a, 0) != ARCHIVE_FILTER_NONE;
	ar->in_place = !ar->stream && !ar->zip &&
	               (archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_TAR;
}

/* A later reading's entry: found in the table as it was, and loaded when want selects
 * it and it is not loaded yet (*todo counts those left); else read through when the
 * archive is a stream, for the ratio check. */
static dit_status ar_member_reread(dit_archive *ar, struct archive *a, const char *name,
                                   const char *last, int64_t declared, uint64_t limit, size_t *todo,
                                   dit_error *err)
{
	dit_archive_member *mb = (dit_archive_member *)dit_archive_find(ar, name);
	if (!mb || (declared >= 0 && (uint64_t)declared != mb->size))
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: archive changed while read (member '%s')", ar->label,
		                     last);
	if (mb->data || limit == 0) {
		if (!ar->stream)
			return DIT_OK;
		uint8_t *none;
		uint64_t got;
		return dit_archive_data_read(ar, a, name, declared, DIT_ARCHIVE_MAX_MEMBER, 0,
		                             &none, &got, err);
	}
	dit_status st = dit_archive_member_load(ar, a, mb, declared, limit, err);
	(*todo)--;
	return st;
}

/* Whether the first reading takes the entry: its declared size within the limits (the
 * archive's and want's), a zip member stored or deflated. */
static dit_status ar_member_admit(dit_archive *ar, struct archive *a, const char *last,
                                  int64_t declared, uint64_t limit, dit_error *err)
{
	if (declared >= 0 && (uint64_t)declared > DIT_ARCHIVE_MAX_MEMBER)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s' declares %lld bytes, more than the limit "
		                     "of %llu",
		                     ar->label, last, (long long)declared,
		                     (unsigned long long)DIT_ARCHIVE_MAX_MEMBER);
	if (declared >= 0 && limit > 0 && (uint64_t)declared > limit)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: member '%s' declares %lld bytes, more than the limit "
		                     "of %llu",
		                     ar->label, last, (long long)declared,
		                     (unsigned long long)limit);
	char method[64];
	if (ar->zip && !ar_zip_method_ok(a, method, sizeof method))
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: member '%s' uses zip compression '%s' (only stored and "
		                     "deflate members are accepted)",
		                     ar->label, last, method);
	return DIT_OK;
}

/* The first reading's entry, admitted, appended to the table (taking *name; *cap the
 * table's room): located in place, loaded when want selects it, or counted. */
static dit_status ar_member_add(dit_archive *ar, struct archive *a, char **name, const char *last,
                                int64_t declared, uint64_t limit, size_t *cap, dit_error *err)
{
	dit_status st = ar_member_admit(ar, a, last, declared, limit, err);
	if (st != DIT_OK)
		return st;
	if (ar->nmembers == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		dit_archive_member *nm = realloc(ar->members, ncap * sizeof *nm);
		if (!nm)
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ar->label);
		ar->members = nm;
		*cap = ncap;
	}
	dit_archive_member *mb = &ar->members[ar->nmembers++];
	memset(mb, 0, sizeof *mb);
	mb->name = *name;
	*name = NULL;
	mb->size = declared >= 0 ? (uint64_t)declared : 0;
	if (ar->in_place) {
		st = dit_archive_member_locate(ar, a, mb, declared, err);
		if (st == DIT_OK && limit > 0)
			st = dit_archive_member_copy(ar, mb, limit, err);
	} else if (limit > 0) {
		st = dit_archive_member_load(ar, a, mb, declared, limit, err);
	} else if (ar->stream || declared < 0) {
		/* counted (and the ratio checked); a zip member is skipped unread */
		uint8_t *none;
		uint64_t got = 0;
		st = dit_archive_data_read(ar, a, mb->name, declared, DIT_ARCHIVE_MAX_MEMBER, 0,
		                           &none, &got, err);
		mb->size = got;
	}
	return st;
}

/* The table sorted by name; a name twice is an error. */
static dit_status ar_members_sort(dit_archive *ar, dit_error *err)
{
	char m[AR_QBUF];
	if (ar->nmembers > 1)
		qsort(ar->members, ar->nmembers, sizeof *ar->members, ar_cmp_member);
	for (size_t i = 1; i < ar->nmembers; i++) {
		if (strcmp(ar->members[i - 1].name, ar->members[i].name) == 0)
			return dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: member '%s' appears more than once (after removing "
			    "'./' and '//')",
			    ar->label, ar_quote(m, sizeof m, ar->members[i].name));
	}
	return DIT_OK;
}

/* One reading of the archive. The first (pass 0) builds the member table, checks every
 * entry and loads what want selects; a later one (pass 1) loads the members want
 * selects that are not loaded yet, finding each in the table, and stops after the
 * last of them. */
static dit_status ar_read(dit_archive *ar, int pass, dit_archive_want_fn want, void *ud,
                          dit_error *err)
{
	size_t todo = 0;
	if (pass) {
		for (size_t i = 0; i < ar->nmembers; i++)
			todo += !ar->members[i].data && want(ar->members[i].name, ud) > 0;
		if (todo == 0)
			return DIT_OK;
	}
	dit_archive_client cl = {.buf = NULL};
	struct archive *a;
	dit_status st = dit_archive_reader_begin(ar, &cl, &a, err);
	if (st != DIT_OK)
		return st;
	size_t cap = pass ? ar->nmembers : 0;
	char *name = NULL;
	char last[AR_QBUF] = "";
	size_t entries = 0;
	for (int first = 1; st == DIT_OK && (!pass || todo > 0); first = 0) {
		free(name);
		name = NULL;
		struct archive_entry *e;
		st = ar_next(ar, a, pass, first, last, &entries, &e, err);
		if (st != DIT_OK || !e)
			break;
		if (first && !pass)
			ar_format_note(ar, a);
		if ((st = ar_entry(ar, e, last, sizeof last, &name, err)) != DIT_OK || !name)
			continue;
		if ((st = dit_archive_ratio_check(ar, a, last, err)) != DIT_OK)
			break;
		int64_t declared = archive_entry_size_is_set(e) ? archive_entry_size(e) : -1;
		uint64_t limit = want ? want(name, ud) : 0;
		if (pass)
			st = ar_member_reread(ar, a, name, last, declared, limit, &todo, err);
		else
			st = ar_member_add(ar, a, &name, last, declared, limit, &cap, err);
	}
	free(name);
	dit_archive_reader_end(a, &cl);
	if (st != DIT_OK || pass)
		return st;
	return ar_members_sort(ar, err);
}

/* A new archive labelled path, read from the file (data NULL) or data[0..size). */
static dit_status ar_open(dit_archive **out, const char *path, const void *data, size_t size,
                          size_t max_entries, dit_archive_want_fn want, void *ud, dit_error *err)
{
	*out = NULL;
	dit_archive *ar = calloc(1, sizeof *ar);
	if (!ar || !(ar->path = strdup(path)) || !(ar->label = dit_input_label(path))) {
		if (ar)
			free(ar->path);
		free(ar);
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	}
	ar->fd = -1;
	ar->max_entries = max_entries ? max_entries : DIT_ARCHIVE_MAX_ENTRIES;
	dit_status st = DIT_OK;
	if (data) {
		ar->image = data;
		ar->size = size;
	} else {
		st = dit_input_open(path, ar->label, &ar->fd, &ar->size, err);
		if (st == DIT_OK && ar->size == 0)
			st = dit_error_set(err, DIT_EFORMAT, "%s: empty file, not an archive",
			                   ar->label);
	}
	if (st == DIT_OK)
		st = ar_read(ar, 0, want, ud, err);
	if (st != DIT_OK) {
		dit_archive_close(ar);
		return st;
	}
	*out = ar;
	return DIT_OK;
}

dit_status dit_archive_open(dit_archive **out, const char *path, dit_archive_want_fn want, void *ud,
                            dit_error *err)
{
	if (!out || !path)
		return dit_error_set(err, DIT_EINVAL, "dit_archive_open: NULL argument");
	return ar_open(out, path, NULL, 0, 0, want, ud, err);
}

dit_status dit_archive_open_mem(dit_archive **out, const char *name, const void *data, size_t size,
                                size_t max_entries, dit_archive_want_fn want, void *ud,
                                dit_error *err)
{
	if (!out || !name || (!data && size > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_archive_open_mem: NULL argument");
	*out = NULL;
	if (size == 0)
		return dit_error_set(err, DIT_EFORMAT, "%s: empty, not an archive", name);
	return ar_open(out, name, data, size, max_entries, want, ud, err);
}

dit_status dit_archive_load(dit_archive *a, dit_archive_want_fn want, void *ud, dit_error *err)
{
	if (!a || !want)
		return dit_error_set(err, DIT_EINVAL, "dit_archive_load: NULL argument");
	if (a->in_place) {
		for (size_t i = 0; a->image && i < a->nmembers; i++)
			if (!a->members[i].data && want(a->members[i].name, ud) > 0)
				a->members[i].data =
				    (const uint8_t *)a->image + a->members[i].offset;
		return DIT_OK;
	}
	return ar_read(a, 1, want, ud, err);
}

void dit_archive_close(dit_archive *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nmembers; i++) {
		free(a->members[i].name);
		free(a->members[i].owned);
	}
	free(a->members);
	if (a->fd >= 0)
		close(a->fd);
	free(a->label);
	free(a->path);
	free(a);
}

const dit_archive_member *dit_archive_find(const dit_archive *a, const char *name)
{
	if (!a || !name || a->nmembers == 0)
		return NULL;
	dit_archive_member key = {.name = (char *)name};
	return bsearch(&key, a->members, a->nmembers, sizeof *a->members, ar_cmp_member);
}
