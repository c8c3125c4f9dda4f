/* A checkpoint that is one weights file: a .safetensors file whose header carries the
 * model's config (LTX-2's releases: __metadata__ "config" = {"transformer": {...},
 * "vae": ...}), or one without (ComfyUI's single files, scaled fp8 included) or a GGUF
 * file (dit_gguf.h), whose config is a config.json beside the file or, with neither,
 * read by a family from the tensor shapes (dit_release.c). */
#define _POSIX_C_SOURCE 200809L
#include "dit_ck_priv.h"

#include "dit_gguf.h"
#include "dit_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

/* Caps on the header's config: what json-c parses. */
#define CK_FILE_MAX_CONFIG ((size_t)1 << 20)

static int ck_ends(const char *path, const char *suffix)
{
	size_t n = strlen(path), k = strlen(suffix);
	return n > k && strcmp(path + n - k, suffix) == 0;
}

int dit_ck_is_file(const char *path)
{
	return ck_ends(path, ".safetensors") || ck_ends(path, ".gguf");
}

/* Without a config in the header: config.json in the file's folder when it is there
 * (a regular file), else the config is missing and config_path names the file. */
static dit_status ck_config_beside(dit_checkpoint *ck, dit_error *err)
{
	const char *slash = strrchr(ck->dir, '/');
	char *folder = slash ? strndup(ck->dir, (size_t)(slash - ck->dir + 1)) : strdup("");
	char *beside = folder ? dit_io_join(*folder ? folder : ".", "config.json") : NULL;
	free(folder);
	if (!beside)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	struct stat sb;
	if (stat(beside, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
		ck->config_path = beside;
		return DIT_OK;
	}
	free(beside);
	ck->config_missing = 1;
	if (!(ck->config_path = strdup(ck->dir)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	return DIT_OK;
}

dit_status dit_ck_open_file(dit_checkpoint *ck, dit_error *err)
{
	dit_st_file *f = NULL;
	dit_status st = ck_ends(ck->dir, ".gguf") ? dit_gguf_open(&f, ck->dir, err)
	                                          : dit_st_open(&f, ck->dir, err);
	if (st)
		return st;
	if (!(ck->files = malloc(sizeof *ck->files))) {
		dit_st_close(f);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	}
	ck->files[0] = f;
	ck->nfiles = 1;
	ck->one_file = 1;
	const char *text = dit_gguf_is(f) ? NULL : dit_st_metadata(f, "config");
	if (!text)
		return ck_config_beside(ck, err);
	size_t len = strlen(text);
	if (len > CK_FILE_MAX_CONFIG)
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: the header's 'config' is %zu bytes (%zu at most)",
		                     ck->dir, len, CK_FILE_MAX_CONFIG);
	/* as strict as config.json: one object, UTF-8, no member twice */
	char label[4200];
	snprintf(label, sizeof label, "%s: the header's 'config'", ck->dir);
	struct json_object *root = NULL, *tr = NULL;
	st = dit_io_parse_json_object(label, text, len, &root, err);
	if (st)
		return st;
	if (!json_object_object_get_ex(root, "transformer", &tr) || !tr ||
	    !json_object_is_type(tr, json_type_object)) {
		json_object_put(root);
		return dit_error_set(err, DIT_EFORMAT,
		                     "%s: the header's 'config' has no object 'transformer'",
		                     ck->dir);
	}
	const char *js = json_object_to_json_string_ext(tr, JSON_C_TO_STRING_PLAIN);
	ck->config_text = js ? strdup(js) : NULL;
	json_object_put(root);
	size_t pn = strlen(ck->dir) + 40;
	ck->config_path = malloc(pn);
	if (!ck->config_text || !ck->config_path)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	snprintf(ck->config_path, pn, "%s (header config.transformer)", ck->dir);
	ck->config_len = strlen(ck->config_text);
	return DIT_OK;
}
