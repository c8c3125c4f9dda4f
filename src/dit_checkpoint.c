/* Checkpoint directories: config.json plus one safetensors file or an index of shards. */
#define _POSIX_C_SOURCE 200809L

#include "dit_checkpoint.h"
#include "dit_io.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#define CK_CONFIG    "config.json"
#define CK_INDEX     "diffusion_pytorch_model.safetensors.index.json"
#define CK_PREFERRED "diffusion_pytorch_model.safetensors"
#define CK_SUFFIX    ".safetensors"
/* An index lists names and shard files only; anything larger is not an index. */
#define CK_MAX_INDEX ((size_t)64 << 20)
#define CK_QUOTE_MAX 120

/* s for an error message: one line, long names cut (see dit_error_quote). */
static const char *ck_quote(char *buf, size_t cap, const char *s)
{
	return dit_error_quote(buf, cap, s, strlen(s), CK_QUOTE_MAX);
}

static char *ck_join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	int slash = a > 0 && dir[a - 1] != '/';
	char *p = malloc(a + (size_t)slash + b + 1);
	if (!p)
		return NULL;
	memcpy(p, dir, a);
	if (slash)
		p[a] = '/';
	memcpy(p + a + (size_t)slash, name, b + 1);
	return p;
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

/* Opens dir/name and appends it to ck->files. */
static dit_status ck_add_file(dit_checkpoint *ck, const char *name, dit_error *err)
{
	char *p = ck_join(ck->dir, name);
	if (!p)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	dit_st_file *f = NULL;
	dit_status st = dit_st_open(&f, p, err);
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

static dit_status ck_open_index(dit_checkpoint *ck, const char *index, dit_error *err)
{
	char q1[CK_QUOTE_MAX * 4 + 8], q2[CK_QUOTE_MAX * 4 + 8];
	struct json_object *root = NULL, *map = NULL;
	const char **shards = NULL;
	size_t nshards = 0;
	dit_status st = dit_io_read_json_object(index, CK_MAX_INDEX, &root, err);
	if (st != DIT_OK)
		return st;

	if (!json_object_object_get_ex(root, "weight_map", &map)) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: key 'weight_map' missing", index);
		goto out;
	}
	if (!json_object_is_type(map, json_type_object)) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: 'weight_map' is not an object", index);
		goto out;
	}
	size_t n = (size_t)json_object_object_length(map);
	if (n == 0) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: 'weight_map' is empty", index);
		goto out;
	}
	shards = malloc(n * sizeof *shards);
	if (!shards) {
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", index);
		goto out;
	}
	json_object_object_foreach(map, name, val)
	{
		if (!json_object_is_type(val, json_type_string)) {
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: weight_map value is not a file name (tensor '%s')",
			                   index, ck_quote(q1, sizeof q1, name));
			goto out;
		}
		const char *s = json_object_get_string(val);
		if ((size_t)json_object_get_string_len(val) != strlen(s) || !ck_plain_name(s)) {
			st = dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: shard '%s' is not a plain file name in the checkpoint "
			    "directory (tensor '%s')",
			    index, ck_quote(q2, sizeof q2, s), ck_quote(q1, sizeof q1, name));
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

	/* ck->files[i] is shard shards[i] */
	for (size_t i = 0; i < nshards; i++) {
		st = ck_add_file(ck, shards[i], err);
		if (st == DIT_ENOTFOUND) {
			const char *first = "";
			json_object_object_foreach(map, nm, v)
			{
				if (strcmp(json_object_get_string(v), shards[i]) == 0) {
					first = nm;
					break;
				}
			}
			st = dit_error_set(err, DIT_ENOTFOUND,
			                   "%s: weight_map names shard '%s', which is missing "
			                   "(tensor '%s')",
			                   index, ck_quote(q2, sizeof q2, shards[i]),
			                   ck_quote(q1, sizeof q1, first));
		}
		if (st != DIT_OK)
			goto out;
	}

	json_object_object_foreach(map, tname, tval)
	{
		const char *s = json_object_get_string(tval);
		const char **hit = bsearch(&s, shards, nshards, sizeof *shards, ck_cmp_str);
		size_t k = (size_t)(hit - shards);
		if (!dit_st_find(ck->files[k], tname)) {
			st = dit_error_set(
			    err, DIT_EFORMAT,
			    "%s: weight_map places the tensor in shard '%s', which does "
			    "not hold it (tensor '%s')",
			    index, ck_quote(q2, sizeof q2, s), ck_quote(q1, sizeof q1, tname));
			goto out;
		}
	}
out:
	free(shards);
	json_object_put(root);
	return st;
}

/* Without an index: the one *.safetensors file, or diffusion_pytorch_model.safetensors
 * when there are several. */
static dit_status ck_open_single(dit_checkpoint *ck, dit_error *err)
{
	DIR *d = opendir(ck->dir);
	if (!d) {
		int e = errno;
		return dit_error_set(err, e == ENOENT ? DIT_ENOTFOUND : DIT_EIO,
		                     "%s: cannot list directory: %s", ck->dir, strerror(e));
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	dit_status st = DIT_OK;
	const size_t sl = strlen(CK_SUFFIX);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len <= sl || strcmp(de->d_name + len - sl, CK_SUFFIX) != 0)
			continue;
		char *p = ck_join(ck->dir, de->d_name);
		if (!p) {
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
			break;
		}
		int isf = ck_is_file(p);
		free(p);
		if (isf != 1)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			char **nn = realloc(names, ncap * sizeof *nn);
			if (!nn) {
				st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
				break;
			}
			names = nn;
			cap = ncap;
		}
		if (!(names[n] = strdup(de->d_name))) {
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
			break;
		}
		n++;
	}
	closedir(d);

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
	if (!S_ISDIR(sb.st_mode))
		return dit_error_set(err, DIT_EINVAL, "%s: not a directory", dir);

	dit_checkpoint *ck = calloc(1, sizeof *ck);
	if (!ck || !(ck->dir = strdup(dir)) || !(ck->config_path = ck_join(dir, CK_CONFIG))) {
		if (ck)
			free(ck->dir);
		free(ck);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
	}

	dit_status st = DIT_OK;
	char *index = NULL;
	int isf = ck_is_file(ck->config_path);
	if (isf == 0) {
		st = dit_error_set(err, DIT_ENOTFOUND,
		                   "%s: missing (a checkpoint needs config.json)", ck->config_path);
		goto fail;
	}
	if (isf < 0) {
		st = dit_error_set(err, DIT_EIO, "%s: not a readable file: %s", ck->config_path,
		                   strerror(errno));
		goto fail;
	}

	index = ck_join(dir, CK_INDEX);
	if (!index) {
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
		goto fail;
	}
	isf = ck_is_file(index);
	if (isf < 0) {
		st = dit_error_set(err, DIT_EIO, "%s: not a readable file: %s", index,
		                   strerror(errno));
		goto fail;
	}
	st = isf ? ck_open_index(ck, index, err) : ck_open_single(ck, err);
	if (st == DIT_OK)
		st = ck_check_unique(ck, err);
	if (st != DIT_OK)
		goto fail;
	free(index);
	*out = ck;
	return DIT_OK;
fail:
	free(index);
	dit_checkpoint_close(ck);
	return st;
}

void dit_checkpoint_close(dit_checkpoint *ck)
{
	if (!ck)
		return;
	for (size_t i = 0; i < ck->nfiles; i++)
		dit_st_close(ck->files[i]);
	free(ck->files);
	free(ck->config_path);
	free(ck->dir);
	free(ck);
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
