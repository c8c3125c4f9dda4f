/* Checkpoint directories (or archives of one): config.json plus one safetensors file or
 * an index of shards. */
#define _POSIX_C_SOURCE 200809L

#include "dit_checkpoint.h"
#include "dit_archive.h"
#include "dit_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#define CK_CONFIG    "config.json"
#define CK_INDEX     "diffusion_pytorch_model.safetensors.index.json"
#define CK_PREFERRED "diffusion_pytorch_model.safetensors"
#define CK_SUFFIX    ".safetensors"
/* An index lists names and shard files only; anything larger is not an index. */
#define CK_MAX_INDEX ((size_t)64 << 20)
/* The same cap for config.json read from an archive; a shard may reach 1 TiB. */
#define CK_MAX_JSON  ((uint64_t)64 << 20)
#define CK_MAX_SHARD DIT_ARCHIVE_MAX_MEMBER
#define CK_QUOTE_MAX 120

/* s for an error message: one line, long names cut (see dit_error_quote). */
static const char *ck_quote(char *buf, size_t cap, const char *s)
{
	return dit_error_quote(buf, cap, s, strlen(s), CK_QUOTE_MAX);
}

/* 1 when path names an existing regular file, 0 when nothing is there, -1 (errno
 * set) on any other outcome. */
static int ck_is_file(const char *path)
{
	struct stat sb;
	if (stat(path, &sb) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISREG(sb.st_mode)) {
		errno = EISDIR;
		return -1;
	}
	return 1;
}

static int ck_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Archive members to load: every file at the top or one folder down (config.json and the
 * index up to 64 MiB, anything else, shards included, up to 1 TiB). */
static uint64_t ck_want(const char *name, void *ud)
{
	(void)ud;
	const char *slash = strchr(name, '/');
	if (slash && strchr(slash + 1, '/'))
		return 0;
	const char *base = slash ? slash + 1 : name;
	if (strcmp(base, CK_CONFIG) == 0 || strcmp(base, CK_INDEX) == 0)
		return CK_MAX_JSON;
	return CK_MAX_SHARD;
}

/* The archive member holding the checkpoint's file name; NULL when absent. */
static const dit_archive_member *ck_member(const dit_checkpoint *ck, const char *name)
{
	char *full = dit_io_join(ck->archive_root, name);
	if (!full)
		return NULL;
	const dit_archive_member *m = dit_archive_find(ck->archive, full);
	free(full);
	return m && m->data ? m : NULL;
}

/* How messages name the checkpoint's file name: dir/name, or archive:member. */
static char *ck_label(const dit_checkpoint *ck, const char *name)
{
	if (!ck->archive)
		return dit_io_join(ck->dir, name);
	char *full = dit_io_join(ck->archive_root, name);
	if (!full)
		return NULL;
	size_t a = strlen(ck->dir), b = strlen(full);
	char *p = malloc(a + b + 2);
	if (p) {
		memcpy(p, ck->dir, a);
		p[a] = ':';
		memcpy(p + a + 1, full, b + 1);
	}
	free(full);
	return p;
}

/* Parses len bytes at buf as strict JSON holding one object (dit_io_parse_json_object);
 * label names it in messages. */
static dit_status ck_parse_json(const char *label, const uint8_t *buf, size_t len,
                                struct json_object **out, dit_error *err)
{
	return dit_io_parse_json_object(label, (const char *)buf, len, out, err);
}

/* Opens dir/name (or that archive member) and appends it to ck->files. */
static dit_status ck_add_file(dit_checkpoint *ck, const char *name, dit_error *err)
{
	char *p = ck_label(ck, name);
	if (!p)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	dit_st_file *f = NULL;
	dit_status st;
	if (ck->archive) {
		const dit_archive_member *m = ck_member(ck, name);
		if (m)
			st = dit_st_open_mem(&f, p, m->data, (size_t)m->size, err);
		else
			st = dit_error_set(err, DIT_ENOTFOUND, "%s: missing", p);
	} else {
		st = dit_st_open(&f, p, err);
	}
	free(p);
	if (st != DIT_OK)
		return st;
	dit_st_file **nf = realloc(ck->files, (ck->nfiles + 1) * sizeof *nf);
	if (!nf) {
		dit_st_close(f);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	}
	ck->files = nf;
	ck->files[ck->nfiles++] = f;
	return DIT_OK;
}

/* A shard named by the index must be a plain file name inside the directory. */
static int ck_plain_name(const char *s)
{
	return s[0] != '\0' && strchr(s, '/') == NULL && strstr(s, "..") == NULL &&
	       strcmp(s, ".") != 0;
}

void dit_checkpoint_index_free(dit_checkpoint_index *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->nshards; i++)
		free(idx->shards[i]);
	for (size_t i = 0; i < idx->ntensors; i++)
		free(idx->tensors[i]);
	free(idx->shards);
	free(idx->tensors);
	free(idx->shard_of);
	memset(idx, 0, sizeof *idx);
}

dit_status dit_checkpoint_parse_index(const char *name, const char *text, size_t len,
                                      dit_checkpoint_index *out, dit_error *err)
{
	if (!out)
		return dit_error_set(err, DIT_EINVAL, "dit_checkpoint_parse_index: NULL argument");
	memset(out, 0, sizeof *out);
	if (!name || (!text && len > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_checkpoint_parse_index: NULL argument");
	if (len > CK_MAX_INDEX)
		return dit_error_set(err, DIT_EFORMAT, "%s: file is implausibly large (%zu bytes)",
		                     name, len);
	char q1[CK_QUOTE_MAX * 4 + 8], q2[CK_QUOTE_MAX * 4 + 8];
	struct json_object *root = NULL, *map = NULL;
	const char **shards = NULL;
	size_t nshards = 0;
	dit_status st = ck_parse_json(name, (const uint8_t *)(text ? text : ""), len, &root, err);
	if (st != DIT_OK)
		return st;

	if (!json_object_object_get_ex(root, "weight_map", &map)) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: key 'weight_map' missing", name);
		goto out;
	}
	if (!json_object_is_type(map, json_type_object)) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: 'weight_map' is not an object", name);
		goto out;
	}
	size_t n = (size_t)json_object_object_length(map);
	if (n == 0) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: 'weight_map' is empty", name);
		goto out;
	}
	shards = malloc(n * sizeof *shards);
	out->tensors = calloc(n, sizeof *out->tensors);
	out->shard_of = calloc(n, sizeof *out->shard_of);
	if (!shards || !out->tensors || !out->shard_of) {
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", name);
		goto out;
	}
	json_object_object_foreach(map, tname, val)
	{
		if (!json_object_is_type(val, json_type_string)) {
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: weight_map value is not a file name (tensor '%s')",
			                   name, ck_quote(q1, sizeof q1, tname));
			goto out;
		}
		const char *s = json_object_get_string(val);
		if ((size_t)json_object_get_string_len(val) != strlen(s) || !ck_plain_name(s)) {
			st = dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: shard '%s' is not a plain file name in the checkpoint "
			    "directory (tensor '%s')",
			    name, ck_quote(q2, sizeof q2, s), ck_quote(q1, sizeof q1, tname));
			goto out;
		}
		shards[nshards++] = s;
	}
	qsort(shards, nshards, sizeof *shards, ck_cmp_str);
	size_t u = 0;
	for (size_t i = 0; i < nshards; i++) {
		if (u == 0 || strcmp(shards[u - 1], shards[i]) != 0)
			shards[u++] = shards[i];
	}
	nshards = u;
	if (!(out->shards = calloc(nshards, sizeof *out->shards))) {
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", name);
		goto out;
	}
	for (; out->nshards < nshards; out->nshards++) {
		if (!(out->shards[out->nshards] = strdup(shards[out->nshards]))) {
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", name);
			goto out;
		}
	}
	json_object_object_foreach(map, tn, tv)
	{
		const char *s = json_object_get_string(tv);
		/* every value is in shards: checked and added above */
		const char **hit = bsearch(&s, shards, nshards, sizeof *shards, ck_cmp_str);
		if (!hit) {
			st = dit_error_set(err, DIT_EFORMAT, "%s: weight_map changed while read",
			                   name);
			goto out;
		}
		if (!(out->tensors[out->ntensors] = strdup(tn))) {
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", name);
			goto out;
		}
		out->shard_of[out->ntensors++] = (size_t)(hit - shards);
	}
out:
	free(shards);
	json_object_put(root);
	if (st != DIT_OK)
		dit_checkpoint_index_free(out);
	return st;
}

/* Opens the shards the index names (ck->files[i] is idx.shards[i]) and checks that each
 * holds the tensors the index places in it. */
static dit_status ck_open_index(dit_checkpoint *ck, const char *index, dit_error *err)
{
	char q1[CK_QUOTE_MAX * 4 + 8], q2[CK_QUOTE_MAX * 4 + 8];
	dit_checkpoint_index idx;
	memset(&idx, 0, sizeof idx);
	dit_status st;
	if (ck->archive) {
		const dit_archive_member *m = ck_member(ck, CK_INDEX);
		st = dit_checkpoint_parse_index(index, (const char *)m->data, (size_t)m->size, &idx,
		                                err);
	} else {
		char *text = NULL;
		size_t len = 0;
		st = dit_io_read_text(index, CK_MAX_INDEX, &text, &len, err);
		if (st == DIT_OK)
			st = dit_checkpoint_parse_index(index, text, len, &idx, err);
		free(text);
	}
	if (st != DIT_OK)
		return st;

	for (size_t i = 0; i < idx.nshards; i++) {
		st = ck_add_file(ck, idx.shards[i], err);
		if (st == DIT_ENOTFOUND) {
			const char *first = "";
			for (size_t k = 0; k < idx.ntensors; k++) {
				if (idx.shard_of[k] == i) {
					first = idx.tensors[k];
					break;
				}
			}
			st = dit_error_set(err, DIT_ENOTFOUND,
			                   "%s: weight_map names shard '%s', which is missing "
			                   "(tensor '%s')",
			                   index, ck_quote(q2, sizeof q2, idx.shards[i]),
			                   ck_quote(q1, sizeof q1, first));
		}
		if (st != DIT_OK)
			goto out;
	}
	for (size_t k = 0; k < idx.ntensors; k++) {
		if (!dit_st_find(ck->files[idx.shard_of[k]], idx.tensors[k])) {
			st = dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: weight_map places the tensor in shard '%s', which does "
			    "not hold it (tensor '%s')",
			    index, ck_quote(q2, sizeof q2, idx.shards[idx.shard_of[k]]),
			    ck_quote(q1, sizeof q1, idx.tensors[k]));
			goto out;
		}
	}
out:
	dit_checkpoint_index_free(&idx);
	return st;
}

/* Appends a copy of name to *names (n entries, cap slots). */
static int ck_push_name(char ***names, size_t *n, size_t *cap, const char *name)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		char **nn = realloc(*names, ncap * sizeof *nn);
		if (!nn)
			return -1;
		*names = nn;
		*cap = ncap;
	}
	if (!((*names)[*n] = strdup(name)))
		return -1;
	(*n)++;
	return 0;
}

static int ck_has_suffix(const char *name)
{
	size_t len = strlen(name), sl = strlen(CK_SUFFIX);
	return len > sl && strcmp(name + len - sl, CK_SUFFIX) == 0;
}

/* The *.safetensors regular files of the directory, or of the checkpoint folder of the
 * archive. */
static dit_status ck_list_shards(dit_checkpoint *ck, char ***names, size_t *n, dit_error *err)
{
	size_t cap = 0;
	if (ck->archive) {
		size_t rl = strlen(ck->archive_root);
		for (size_t i = 0; i < ck->archive->nmembers; i++) {
			const char *nm = ck->archive->members[i].name;
			if (rl > 0) {
				if (strncmp(nm, ck->archive_root, rl) != 0 || nm[rl] != '/')
					continue;
				nm += rl + 1;
			}
			if (strchr(nm, '/') || !ck_has_suffix(nm))
				continue;
			if (ck_push_name(names, n, &cap, nm) != 0)
				return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
		}
		return DIT_OK;
	}
	DIR *d = opendir(ck->dir);
	if (!d) {
		int e = errno;
		return dit_error_set(err, e == ENOENT ? DIT_ENOTFOUND : DIT_EIO,
		                     "%s: cannot list directory: %s", ck->dir, strerror(e));
	}
	dit_status st = DIT_OK;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!ck_has_suffix(de->d_name))
			continue;
		char *p = dit_io_join(ck->dir, de->d_name);
		if (!p) {
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
			break;
		}
		int isf = ck_is_file(p);
		free(p);
		if (isf != 1)
			continue;
		if (ck_push_name(names, n, &cap, de->d_name) != 0) {
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
			break;
		}
	}
	closedir(d);
	return st;
}

/* Without an index: the one *.safetensors file, or diffusion_pytorch_model.safetensors
 * when there are several. */
static dit_status ck_open_single(dit_checkpoint *ck, dit_error *err)
{
	char **names = NULL;
	size_t n = 0;
	dit_status st = ck_list_shards(ck, &names, &n, err);

	if (st == DIT_OK) {
		const char *pick = NULL;
		if (n > 1)
			qsort(names, n, sizeof *names, ck_cmp_str);
		for (size_t i = 0; i < n; i++) {
			if (strcmp(names[i], CK_PREFERRED) == 0)
				pick = names[i];
		}
		if (n == 0) {
			st =
			    dit_error_set(err, DIT_ENOTFOUND, "%s: no *.safetensors file", ck->dir);
		} else if (n == 1) {
			pick = names[0];
		} else if (!pick) {
			char q1[CK_QUOTE_MAX * 4 + 8], q2[CK_QUOTE_MAX * 4 + 8];
			st = dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: %zu *.safetensors files ('%s', '%s', ...) but no %s "
			    "and no %s",
			    ck->dir, n, ck_quote(q1, sizeof q1, names[0]),
			    ck_quote(q2, sizeof q2, names[1]), CK_PREFERRED, CK_INDEX);
		}
		if (st == DIT_OK)
			st = ck_add_file(ck, pick, err);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return st;
}

/* The same name in two shards would make lookups ambiguous. */
static dit_status ck_check_unique(const dit_checkpoint *ck, dit_error *err)
{
	char q[CK_QUOTE_MAX * 4 + 8];
	for (size_t i = 1; i < ck->nfiles; i++) {
		const dit_st_file *f = ck->files[i];
		for (size_t t = 0; t < f->ntensors; t++) {
			for (size_t j = 0; j < i; j++) {
				if (dit_st_find(ck->files[j], f->tensors[t].name))
					return dit_error_set(
					    err, DIT_EFORMAT,
					    "%s: tensor also present in %s (tensor '%s')", f->path,
					    ck->files[j]->path,
					    ck_quote(q, sizeof q, f->tensors[t].name));
			}
		}
	}
	return DIT_OK;
}

/* The archive's checkpoint folder: where config.json is, at the top or one folder down. */
static dit_status ck_find_root(dit_checkpoint *ck, dit_error *err)
{
	const dit_archive *ar = ck->archive;
	const char *found = NULL;
	size_t flen = 0;
	for (size_t i = 0; i < ar->nmembers; i++) {
		const char *nm = ar->members[i].name;
		const char *slash = strchr(nm, '/');
		const char *base = slash ? slash + 1 : nm;
		if ((slash && strchr(base, '/')) || strcmp(base, CK_CONFIG) != 0)
			continue;
		if (found) {
			char q1[CK_QUOTE_MAX * 4 + 8], q2[CK_QUOTE_MAX * 4 + 8];
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s: members '%s' and '%s' are two config.json (an "
			                     "archive holds one checkpoint)",
			                     ck->dir, ck_quote(q1, sizeof q1, found),
			                     ck_quote(q2, sizeof q2, nm));
		}
		found = nm;
		flen = slash ? (size_t)(slash - nm) : 0;
	}
	if (!found)
		return dit_error_set(err, DIT_ENOTFOUND,
		                     "%s: member config.json missing (a checkpoint archive needs "
		                     "config.json at its top or in one top-level folder)",
		                     ck->dir);
	if (!(ck->archive_root = strndup(found, flen)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	return DIT_OK;
}

/* Reads the archive at ck->dir; sets the config and, when present, the index label. */
static dit_status ck_open_archive(dit_checkpoint *ck, char **index, dit_error *err)
{
	dit_status st = dit_archive_open(&ck->archive, ck->dir, ck_want, NULL, err);
	if (st == DIT_OK)
		st = ck_find_root(ck, err);
	if (st != DIT_OK)
		return st;
	const dit_archive_member *m = ck_member(ck, CK_CONFIG);
	if (!(ck->config_path = ck_label(ck, CK_CONFIG)) ||
	    !(ck->config_text = malloc((size_t)m->size + 1)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	memcpy(ck->config_text, m->data, (size_t)m->size);
	ck->config_text[m->size] = '\0';
	ck->config_len = (size_t)m->size;
	if (ck_member(ck, CK_INDEX) && !(*index = ck_label(ck, CK_INDEX)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	return DIT_OK;
}

/* Checks config.json in the directory ck->dir; sets the index path when present. */
static dit_status ck_open_dir(dit_checkpoint *ck, char **index, dit_error *err)
{
	if (!(ck->config_path = dit_io_join(ck->dir, CK_CONFIG)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	int isf = ck_is_file(ck->config_path);
	if (isf == 0)
		return dit_error_set(err, DIT_ENOTFOUND,
		                     "%s: missing (a checkpoint needs config.json)",
		                     ck->config_path);
	if (isf < 0)
		return dit_error_set(err, DIT_EIO, "%s: not a readable file: %s", ck->config_path,
		                     strerror(errno));
	char *p = dit_io_join(ck->dir, CK_INDEX);
	if (!p)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	isf = ck_is_file(p);
	if (isf < 0) {
		dit_status st =
		    dit_error_set(err, DIT_EIO, "%s: not a readable file: %s", p, strerror(errno));
		free(p);
		return st;
	}
	if (isf)
		*index = p;
	else
		free(p);
	return DIT_OK;
}

dit_status dit_checkpoint_open(dit_checkpoint **out, const char *dir, dit_error *err)
{
	if (!out || !dir || !*dir)
		return dit_error_set(err, DIT_EINVAL, "dit_checkpoint_open: NULL argument");
	*out = NULL;

	struct stat sb;
	if (stat(dir, &sb) != 0) {
		int e = errno;
		return dit_error_set(err, e == ENOENT ? DIT_ENOTFOUND : DIT_EIO, "%s: %s", dir,
		                     strerror(e));
	}
	if (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode))
		return dit_error_set(err, DIT_EINVAL, "%s: not a directory or an archive", dir);

	dit_checkpoint *ck = calloc(1, sizeof *ck);
	if (!ck || !(ck->dir = strdup(dir))) {
		free(ck);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
	}

	char *index = NULL;
	dit_status st =
	    S_ISDIR(sb.st_mode) ? ck_open_dir(ck, &index, err) : ck_open_archive(ck, &index, err);
	if (st == DIT_OK)
		st = index ? ck_open_index(ck, index, err) : ck_open_single(ck, err);
	if (st == DIT_OK)
		st = ck_check_unique(ck, err);
	free(index);
	if (st != DIT_OK) {
		dit_checkpoint_close(ck);
		return st;
	}
	*out = ck;
	return DIT_OK;
}

void dit_checkpoint_close(dit_checkpoint *ck)
{
	if (!ck)
		return;
	/* the shards of an archive point into it: close them first */
	for (size_t i = 0; i < ck->nfiles; i++)
		dit_st_close(ck->files[i]);
	free(ck->files);
	dit_archive_close(ck->archive);
	free(ck->archive_root);
	free(ck->config_text);
	free(ck->config_path);
	free(ck->dir);
	free(ck);
}

dit_status dit_checkpoint_load_config(const dit_checkpoint *ck, dit_hparams *cfg, dit_error *err)
{
	if (!ck || !cfg)
		return dit_error_set(err, DIT_EINVAL, "dit_checkpoint_load_config: NULL argument");
	if (ck->config_text)
		return dit_config_parse_text(cfg, ck->config_path, ck->config_text, ck->config_len,
		                             err);
	return dit_config_load(cfg, ck->config_path, err);
}

const dit_st_tensor *dit_checkpoint_find(const dit_checkpoint *ck, const char *name,
                                         const dit_st_file **file)
{
	if (file)
		*file = NULL;
	if (!ck || !name)
		return NULL;
	for (size_t i = 0; i < ck->nfiles; i++) {
		const dit_st_tensor *t = dit_st_find(ck->files[i], name);
		if (t) {
			if (file)
				*file = ck->files[i];
			return t;
		}
	}
	return NULL;
}
