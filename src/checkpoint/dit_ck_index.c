/* The shard index of a checkpoint (diffusion_pytorch_model.safetensors.index.json or
 * model.safetensors.index.json): parsed strictly, within caps checked before parsing
 * (see dit_checkpoint.h). */
#define _POSIX_C_SOURCE 200809L

#include "dit_checkpoint.h"
#include "dit_input.h"
#include "dit_io.h"

#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define CK_QUOTE_MAX 120
#define CK_QBUF      (CK_QUOTE_MAX * 4 + 8) /* one quoted name */

/* s for an error message: one line, long names cut (see dit_error_quote). */
static const char *ck_quote(char *buf, size_t cap, const char *s)
{
	return dit_error_quote(buf, cap, s, strlen(s), CK_QUOTE_MAX);
}

static int ck_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
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

/* The index's text, checked against the caps before json-c parses it, as one JSON
 * object. */
static dit_status ck_index_json(const char *name, const char *text, size_t len,
                                struct json_object **root, dit_error *err)
{
	/* weight_map's entries are the values at depth 2: bounded through all values */
	const dit_input_json_caps caps = {.members = 64,
	                                  .nested = DIT_CHECKPOINT_MAX_INDEX_ENTRIES,
	                                  .objects = 64,
	                                  .values = DIT_CHECKPOINT_MAX_INDEX_ENTRIES + 1024,
	                                  .what = "top-level members"};
	dit_status st = dit_input_json_check(name, text ? text : "", len, &caps, err);
	if (st == DIT_OK)
		st = dit_io_parse_json_object(name, text ? text : "", len, root, err);
	return st;
}

/* The index's "weight_map": an object of *n > 0 members. */
static dit_status ck_weight_map(const char *name, struct json_object *root,
                                struct json_object **map, size_t *n, dit_error *err)
{
	if (!json_object_object_get_ex(root, "weight_map", map))
		return dit_error_set(err, DIT_EFORMAT, "%s: key 'weight_map' missing", name);
	if (!json_object_is_type(*map, json_type_object))
		return dit_error_set(err, DIT_EFORMAT, "%s: 'weight_map' is not an object", name);
	*n = (size_t)json_object_object_length(*map);
	if (*n == 0)
		return dit_error_set(err, DIT_EFORMAT, "%s: 'weight_map' is empty", name);
	return DIT_OK;
}

/* The shards weight_map names, each value checked a plain file name, into shards
 * (room for every member): sorted, each once. */
static dit_status ck_shard_names(const char *name, struct json_object *map, const char **shards,
                                 size_t *nshards, dit_error *err)
{
	char q1[CK_QBUF], q2[CK_QBUF];
	size_t n = 0;
	json_object_object_foreach(map, tname, val)
	{
		if (!json_object_is_type(val, json_type_string))
			return dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: weight_map value is not a file name (tensor '%s')", name,
			    ck_quote(q1, sizeof q1, tname));
		const char *s = json_object_get_string(val);
		if ((size_t)json_object_get_string_len(val) != strlen(s) || !ck_plain_name(s))
			return dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: shard '%s' is not a plain file name in the checkpoint "
			    "directory (tensor '%s')",
			    name, ck_quote(q2, sizeof q2, s), ck_quote(q1, sizeof q1, tname));
		shards[n++] = s;
	}
	qsort(shards, n, sizeof *shards, ck_cmp_str);
	size_t u = 0;
	for (size_t i = 0; i < n; i++) {
		if (u == 0 || strcmp(shards[u - 1], shards[i]) != 0)
			shards[u++] = shards[i];
	}
	*nshards = u;
	return DIT_OK;
}

/* out's shards: copies of the nshards names. */
static dit_status ck_shards_copy(const char *name, const char **shards, size_t nshards,
                                 dit_checkpoint_index *out, dit_error *err)
{
	if (!(out->shards = calloc(nshards, sizeof *out->shards)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", name);
	for (; out->nshards < nshards; out->nshards++) {
		if (!(out->shards[out->nshards] = strdup(shards[out->nshards])))
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", name);
	}
	return DIT_OK;
}

/* out's tensors, in weight_map's order, each with the index of its shard. */
static dit_status ck_tensors_fill(const char *name, struct json_object *map, const char **shards,
                                  size_t nshards, dit_checkpoint_index *out, dit_error *err)
{
	json_object_object_foreach(map, tn, tv)
	{
		const char *s = json_object_get_string(tv);
		/* every value is in shards: checked and added above */
		const char **hit = bsearch(&s, shards, nshards, sizeof *shards, ck_cmp_str);
		if (!hit)
			return dit_error_set(err, DIT_EFORMAT, "%s: weight_map changed while read",
			                     name);
		if (!(out->tensors[out->ntensors] = strdup(tn)))
			return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", name);
		out->shard_of[out->ntensors++] = (size_t)(hit - shards);
	}
	return DIT_OK;
}

dit_status dit_checkpoint_parse_index(const char *name, const char *text, size_t len,
                                      dit_checkpoint_index *out, dit_error *err)
{
	if (!out)
		return dit_error_set(err, DIT_EINVAL, "dit_checkpoint_parse_index: NULL argument");
	memset(out, 0, sizeof *out);
	if (!name || (!text && len > 0))
		return dit_error_set(err, DIT_EINVAL, "dit_checkpoint_parse_index: NULL argument");
	if (len > DIT_CHECKPOINT_MAX_INDEX)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: file is implausibly large (%zu bytes, at most %zu)", name,
		                     len, DIT_CHECKPOINT_MAX_INDEX);
	struct json_object *root = NULL, *map = NULL;
	dit_status st = ck_index_json(name, text, len, &root, err);
	if (st != DIT_OK)
		return st;
	const char **shards = NULL;
	size_t n = 0, nshards = 0;
	st = ck_weight_map(name, root, &map, &n, err);
	if (st == DIT_OK) {
		shards = malloc(n * sizeof *shards);
		out->tensors = calloc(n, sizeof *out->tensors);
		out->shard_of = calloc(n, sizeof *out->shard_of);
		if (!shards || !out->tensors || !out->shard_of)
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", name);
	}
	if (st == DIT_OK)
		st = ck_shard_names(name, map, shards, &nshards, err);
	if (st == DIT_OK)
		st = ck_shards_copy(name, shards, nshards, out, err);
	if (st == DIT_OK)
		st = ck_tensors_fill(name, map, shards, nshards, out, err);
	free(shards);
	json_object_put(root);
	if (st != DIT_OK)
		dit_checkpoint_index_free(out);
	return st;
}
