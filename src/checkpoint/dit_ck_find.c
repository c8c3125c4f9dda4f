/* Where a checkpoint is: the folder of an archive or a directory holding config.json
 * and the weights (an index, safetensors, PyTorch or GGUF files), found before anything
 * is read (dit_ck_priv.h). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dit_archive.h"
#include "dit_ck_priv.h"
#include "dit_input.h"
#include "dit_io.h"

/* Archive members loaded when the archive is first read: config.json and the index
 * (either name), at the top or one folder down. The shards are loaded once the index (or the
 * folder's one safetensors file) says which (ck_load_shards). */
static uint64_t ck_want_json(const char *name, void *ud)
{
	(void)ud;
	const char *slash = strchr(name, '/');
	if (slash && strchr(slash + 1, '/'))
		return 0;
	const char *base = slash ? slash + 1 : name;
	if (strcmp(base, CK_CONFIG) == 0 || strcmp(base, CK_INDEX) == 0 ||
	    strcmp(base, CK_INDEX_TF) == 0)
		return CK_MAX_JSON;
	return 0;
}

/* Whether a file name (no folder) is one of a checkpoint's weights: an index, a
 * safetensors file, a PyTorch checkpoint or a GGUF file. */
static int ck_is_weights(const char *base)
{
	return strcmp(base, CK_INDEX) == 0 || strcmp(base, CK_INDEX_TF) == 0 ||
	       dit_ck_has_suffix(base, CK_SUFFIX) || dit_ck_has_suffix(base, ".pt") ||
	       dit_ck_has_suffix(base, ".gguf");
}

/* The checkpoint folder of an archive of members at the top or one folder down whose
 * name is config.json (config 1) or weights (config 0): *found the first such member,
 * *flen the length of its folder; two folders are an error. */
static dit_status ck_find_folder(const dit_checkpoint *ck, int config, const char **found,
                                 size_t *flen, dit_error *err)
{
	const dit_archive *ar = ck->archive;
	*found = NULL;
	*flen = 0;
	for (size_t i = 0; i < ar->nmembers; i++) {
		const char *nm = ar->members[i].name;
		const char *slash = strchr(nm, '/');
		const char *base = slash ? slash + 1 : nm;
		size_t len = slash ? (size_t)(slash - nm) : 0;
		if ((slash && strchr(base, '/')) ||
		    !(config ? strcmp(base, CK_CONFIG) == 0 : ck_is_weights(base)))
			continue;
		if (*found && (config || len != *flen || strncmp(nm, *found, len) != 0)) {
			char q1[CK_QUOTE_MAX * 4 + 8], q2[CK_QUOTE_MAX * 4 + 8];
			return dit_error_set(err, DIT_EFORMAT,
			                     config
			                         ? "%s: members '%s' and '%s' are two config.json "
			                           "(an archive holds one checkpoint)"
			                         : "%s: members '%s' and '%s' are weights in two "
			                           "folders and there is no config.json (an "
			                           "archive holds one checkpoint)",
			                     ck->dir, dit_ck_quote(q1, sizeof q1, *found),
			                     dit_ck_quote(q2, sizeof q2, nm));
		}
		if (!*found) {
			*found = nm;
			*flen = len;
		}
	}
	return DIT_OK;
}

/* The error of a checkpoint without config.json that cannot do without one. */
dit_status dit_ck_config_missing(const dit_checkpoint *ck, dit_error *err)
{
	if (ck->archive)
		return dit_error_set(err, DIT_ENOTFOUND,
		                     "%s: member config.json missing (a checkpoint archive needs "
		                     "config.json at its top or in one top-level folder)",
		                     ck->dir);
	return dit_error_set(err, DIT_ENOTFOUND, "%s: missing (a checkpoint needs config.json)",
	                     ck->config_path);
}

/* The archive's checkpoint folder: where config.json is, at the top or one folder down;
 * without one, where the weight files are (ck->config_missing is then set). */
static dit_status ck_find_root(dit_checkpoint *ck, dit_error *err)
{
	const char *found;
	size_t flen;
	dit_status st = ck_find_folder(ck, 1, &found, &flen, err);
	if (st == DIT_OK && !found) {
		ck->config_missing = 1;
		st = ck_find_folder(ck, 0, &found, &flen, err);
	}
	if (st == DIT_OK && !found)
		st = dit_ck_config_missing(ck, err);
	if (st == DIT_OK && !(ck->archive_root = strndup(found, flen)))
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	return st;
}

/* A folder with both index names is ambiguous: which shards are the checkpoint? */
static dit_status ck_two_indexes(const char *where, dit_error *err)
{
	return dit_error_set(err, DIT_EFORMAT,
	                     "%s: both %s and %s are there (a checkpoint has one shard index)",
	                     where, CK_INDEX, CK_INDEX_TF);
}

/* Reads the archive at ck->dir; sets the config (unless missing) and, when present, the
 * index's name and label. */
dit_status dit_ck_open_archive(dit_checkpoint *ck, const char **iname, char **index, dit_error *err)
{
	dit_status st = dit_archive_open(&ck->archive, ck->dir, ck_want_json, NULL, err);
	if (st == DIT_OK)
		st = ck_find_root(ck, err);
	if (st != DIT_OK)
		return st;
	const dit_archive_member *m = dit_ck_member(ck, CK_CONFIG);
	char *raw = dit_ck_label(ck, CK_CONFIG);
	ck->config_path = raw ? dit_input_label(raw) : NULL; /* a label only: escaped */
	free(raw);
	if (!ck->config_path)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	if (m && !m->data)
		return dit_error_set(err, DIT_ERUNTIME, "%s: config.json not loaded", ck->dir);
	if (m && !(ck->config_text = malloc((size_t)m->size + 1)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	if (m) {
		memcpy(ck->config_text, m->data, (size_t)m->size);
		ck->config_text[m->size] = '\0';
		ck->config_len = (size_t)m->size;
	}
	const dit_archive_member *mi = dit_ck_member(ck, CK_INDEX),
	                         *mt = dit_ck_member(ck, CK_INDEX_TF);
	if (mi && mt)
		return ck_two_indexes(ck->dir, err);
	*iname = mi ? CK_INDEX : CK_INDEX_TF;
	mi = mi ? mi : mt;
	if (mi && !mi->data)
		return dit_error_set(err, DIT_ERUNTIME, "%s: index not loaded", ck->dir);
	if (mi && !(*index = dit_ck_label(ck, *iname)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	return DIT_OK;
}

/* The index name of the directory ck->dir when that file is there: *path set (DIT_OK),
 * or DIT_ENOTFOUND when it is absent, or the error of what is there instead. */
static dit_status ck_dir_index(const dit_checkpoint *ck, const char *name, char **path,
                               dit_error *err)
{
	char *p = dit_io_join(ck->dir, name);
	if (!p)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	dit_status st = dit_ck_check_file(p, err);
	if (st == DIT_OK)
		*path = p;
	else
		free(p);
	return st;
}

/* Checks config.json in the directory ck->dir (ck->config_missing when absent); sets
 * the index's name and path when present. */
dit_status dit_ck_open_dir(dit_checkpoint *ck, const char **iname, char **index, dit_error *err)
{
	if (!(ck->config_path = dit_io_join(ck->dir, CK_CONFIG)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	dit_status st = dit_ck_check_file(ck->config_path, err);
	if (st == DIT_ENOTFOUND)
		ck->config_missing = 1;
	else if (st != DIT_OK)
		return st;
	char *a = NULL, *b = NULL;
	st = ck_dir_index(ck, CK_INDEX, &a, err);
	if (st == DIT_OK || st == DIT_ENOTFOUND)
		st = ck_dir_index(ck, CK_INDEX_TF, &b, err);
	if (st == DIT_ENOTFOUND)
		st = DIT_OK;
	if (st == DIT_OK && a && b)
		st = ck_two_indexes(ck->dir, err);
	if (st == DIT_OK && (a || b)) {
		*iname = a ? CK_INDEX : CK_INDEX_TF;
		*index = a ? a : b;
		a = b = NULL;
	}
	free(a);
	free(b);
	return st;
}

/* Whether the checkpoint folder holds any *.safetensors or *.pt file (or, in an
 * archive, *.gguf: a directory's GGUF needs its config.json). */
dit_status dit_ck_has_weights(dit_checkpoint *ck, int *has, dit_error *err)
{
	static const char *const suffix[] = {CK_SUFFIX, ".pt", ".gguf"};
	*has = 0;
	for (size_t i = 0; i < (ck->archive ? 3u : 2u) && !*has; i++) {
		char **names = NULL;
		size_t n = 0;
		dit_status st = dit_ck_list(ck, suffix[i], &names, &n, err);
		dit_ck_names_free(names, n);
		if (st != DIT_OK)
			return st;
		*has = n > 0;
	}
	return DIT_OK;
}
