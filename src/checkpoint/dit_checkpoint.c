/* Checkpoint directories (or archives of one): config.json (which may be missing) plus
 * one safetensors file, an index of shards, or a PyTorch checkpoint (its choice in
 * dit_ck_pt.c). */
#define _POSIX_C_SOURCE 200809L

#include "dit_checkpoint.h"
#include "dit_archive.h"
#include "dit_ck_priv.h"
#include "dit_gguf.h"
#include "dit_input.h"
#include "dit_io.h"
#include "dit_pt.h"

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

/* s for an error message: one line, long names cut (see dit_error_quote). */
const char *dit_ck_quote(char *buf, size_t cap, const char *s)
{
	return dit_error_quote(buf, cap, s, strlen(s), CK_QUOTE_MAX);
}

/* Whether path is a readable regular file: DIT_OK, DIT_ENOTFOUND when nothing is there
 * (no message), else the error naming the path and what it is (a FIFO, a directory,
 * ...), checked by opening it without blocking. */
dit_status dit_ck_check_file(const char *path, dit_error *err)
{
	struct stat sb;
	if (stat(path, &sb) != 0 && errno == ENOENT)
		return DIT_ENOTFOUND;
	int fd;
	uint64_t size;
	dit_status st = dit_input_open(path, NULL, &fd, &size, err);
	if (st == DIT_OK)
		close(fd);
	return st;
}

/* Whether a directory entry named *.safetensors is a candidate shard: anything but a
 * directory (a FIFO or device is then refused by name when opened). */
static int ck_is_candidate(const char *path)
{
	struct stat sb;
	return stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode);
}

static int ck_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The shards to load: member names, sorted. */
typedef struct ck_names {
	char **v;
	size_t n;
} ck_names;

static uint64_t ck_want_listed(const char *name, void *ud)
{
	const ck_names *l = ud;
	return l->n && bsearch(&name, l->v, l->n, sizeof *l->v, ck_cmp_str) ? CK_MAX_SHARD : 0;
}

dit_status dit_ck_load(dit_checkpoint *ck, char *const *names, size_t n, dit_error *err)
{
	if (!ck->archive || ck->archive->in_place || n == 0)
		return DIT_OK;
	ck_names l = {calloc(n, sizeof(char *)), 0};
	dit_status st = DIT_OK;
	if (!l.v)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	for (; l.n < n; l.n++) {
		if (!(l.v[l.n] = dit_io_join(ck->archive_root, names[l.n]))) {
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
			break;
		}
	}
	if (st == DIT_OK) {
		qsort(l.v, l.n, sizeof *l.v, ck_cmp_str);
		st = dit_archive_load(ck->archive, ck_want_listed, &l, err);
	}
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	return st;
}

/* The archive member holding the checkpoint's file name; NULL when absent. */
const dit_archive_member *dit_ck_member(const dit_checkpoint *ck, const char *name)
{
	char *full = dit_io_join(ck->archive_root, name);
	if (!full)
		return NULL;
	const dit_archive_member *m = dit_archive_find(ck->archive, full);
	free(full);
	return m;
}

int dit_ck_exists(const dit_checkpoint *ck, const char *name)
{
	if (ck->archive)
		return dit_ck_member(ck, name) != NULL;
	char *p = dit_io_join(ck->dir, name);
	struct stat sb;
	int ok = p && stat(p, &sb) == 0 && !S_ISDIR(sb.st_mode);
	free(p);
	return ok;
}

char *dit_ck_label(const dit_checkpoint *ck, const char *name)
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

dit_status dit_ck_add(dit_checkpoint *ck, const char *name, int pt, const char *load_key,
                      dit_error *err)
{
	char *p = dit_ck_label(ck, name);
	if (!p)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	dit_st_file *f = NULL;
	dit_status st;
	if (ck->archive) {
		const dit_archive_member *m = dit_ck_member(ck, name);
		const dit_archive *ar = ck->archive;
		if (m && m->data && pt == 2)
			st = dit_gguf_open_mem(&f, p, m->data, (size_t)m->size, err);
		else if (m && m->data && pt)
			st = dit_pt_open_mem(&f, p, m->data, (size_t)m->size, load_key, err);
		else if (m && m->data)
			st = dit_st_open_mem(&f, p, m->data, (size_t)m->size, err);
		else if (m && ar->in_place && ar->fd >= 0 && pt == 2)
			st = dit_gguf_open_fd(&f, p, ar->fd, m->offset, m->size, err);
		else if (m && ar->in_place && ar->fd >= 0 && pt)
			st = dit_pt_open_fd(&f, p, ar->fd, m->offset, m->size, load_key, err);
		else if (m && ar->in_place && ar->fd >= 0)
			st = dit_st_open_fd(&f, p, ar->fd, m->offset, m->size, err);
		else if (m)
			st = dit_error_set(err, DIT_ERUNTIME, "%s: member not loaded", p);
		else
			st = dit_error_set(err, DIT_ENOTFOUND, "%s: missing", p);
	} else {
		st = pt == 2 ? dit_gguf_open(&f, p, err)
		             : (pt ? dit_pt_open(&f, p, load_key, err) : dit_st_open(&f, p, err));
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

/* Opens the shards the index names (ck->files[i] is idx.shards[i]) and checks that each
 * holds the tensors the index places in it. name: the index's file name; index: its
 * path (a label in an archive). */
static dit_status ck_open_index(dit_checkpoint *ck, const char *name, const char *index,
                                dit_error *err)
{
	char q1[CK_QUOTE_MAX * 4 + 8], q2[CK_QUOTE_MAX * 4 + 8];
	dit_checkpoint_index idx;
	memset(&idx, 0, sizeof idx);
	dit_status st;
	char *label = dit_input_label(index);
	if (!label)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	if (ck->archive) {
		const dit_archive_member *m = dit_ck_member(ck, name);
		st = dit_checkpoint_parse_index(label, (const char *)m->data, (size_t)m->size, &idx,
		                                err);
	} else {
		char *text = NULL;
		size_t len = 0;
		st = dit_io_read_text(index, CK_MAX_INDEX, &text, &len, err);
		if (st == DIT_OK)
			st = dit_checkpoint_parse_index(label, text, len, &idx, err);
		free(text);
	}
	if (st == DIT_OK)
		st = dit_ck_load(ck, idx.shards, idx.nshards, err);
	if (st != DIT_OK) {
		free(label);
		return st;
	}

	for (size_t i = 0; i < idx.nshards; i++) {
		st = dit_ck_add(ck, idx.shards[i], 0, NULL, err);
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
			                   label, dit_ck_quote(q2, sizeof q2, idx.shards[i]),
			                   dit_ck_quote(q1, sizeof q1, first));
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
			    label, dit_ck_quote(q2, sizeof q2, idx.shards[idx.shard_of[k]]),
			    dit_ck_quote(q1, sizeof q1, idx.tensors[k]));
			goto out;
		}
	}
out:
	dit_checkpoint_index_free(&idx);
	free(label);
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

int dit_ck_has_suffix(const char *name, const char *suffix)
{
	size_t len = strlen(name), sl = strlen(suffix);
	return len > sl && strcmp(name + len - sl, suffix) == 0;
}

dit_status dit_ck_list(dit_checkpoint *ck, const char *suffix, char ***names, size_t *n,
                       dit_error *err)
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
			if (strchr(nm, '/') || !dit_ck_has_suffix(nm, suffix))
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
		if (!dit_ck_has_suffix(de->d_name, suffix))
			continue;
		char *p = dit_io_join(ck->dir, de->d_name);
		if (!p) {
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
			break;
		}
		int cand = ck_is_candidate(p);
		free(p);
		if (!cand)
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
 * when there are several; without any, the PyTorch checkpoint. */
static dit_status ck_open_single(dit_checkpoint *ck, const char *load_key, dit_error *err)
{
	char **names = NULL;
	size_t n = 0;
	dit_status st = dit_ck_list(ck, CK_SUFFIX, &names, &n, err);

	if (st == DIT_OK) {
		const char *pick = NULL;
		if (n > 1)
			qsort(names, n, sizeof *names, ck_cmp_str);
		for (size_t i = 0; i < n; i++) {
			if (strcmp(names[i], CK_PREFERRED) == 0)
				pick = names[i];
		}
		if (n == 0) {
			st = dit_ck_open_pt(ck, load_key, err);
		} else if (n == 1) {
			pick = names[0];
		} else if (!pick) {
			char q1[CK_QUOTE_MAX * 4 + 8], q2[CK_QUOTE_MAX * 4 + 8];
			st =
			    dit_error_set(err, DIT_EFORMAT,
			                  "%s: %zu *.safetensors files ('%s', '%s', ...) but no %s "
			                  "and no shard index (%s or %s)",
			                  ck->dir, n, dit_ck_quote(q1, sizeof q1, names[0]),
			                  dit_ck_quote(q2, sizeof q2, names[1]), CK_PREFERRED,
			                  CK_INDEX, CK_INDEX_TF);
		}
		if (st == DIT_OK && pick)
			st = dit_ck_load(ck, (char *const *)&pick, 1, err);
		if (st == DIT_OK && pick)
			st = dit_ck_add(ck, pick, 0, NULL, err);
	}
	dit_ck_names_free(names, n);
	return st;
}

void dit_ck_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
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
					    "%s: tensor also present in %s (tensor '%s')", f->label,
					    ck->files[j]->label,
					    dit_ck_quote(q, sizeof q, f->tensors[t].name));
			}
		}
	}
	return DIT_OK;
}

dit_status dit_checkpoint_open(dit_checkpoint **out, const char *dir, dit_error *err)
{
	return dit_checkpoint_open_opts(out, dir, NULL, err);
}

dit_status dit_checkpoint_open_opts(dit_checkpoint **out, const char *dir,
                                    const dit_checkpoint_opts *opts, dit_error *err)
{
	if (!out || !dir)
		return dit_error_set(err, DIT_EINVAL, "dit_checkpoint_open: NULL argument");
	if (!*dir)
		return dit_error_set(err, DIT_EUSAGE, "the checkpoint's path is empty");
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
	const char *iname = NULL;
	if (S_ISREG(sb.st_mode) && dit_ck_is_file(dir)) { /* one file (dit_ck_file.c) */
		dit_status st = dit_ck_open_file(ck, err);
		if (st != DIT_OK)
			dit_checkpoint_close(ck);
		*out = st == DIT_OK ? ck : NULL;
		return st;
	}
	dit_status st = S_ISDIR(sb.st_mode) ? dit_ck_open_dir(ck, &iname, &index, err)
	                                    : dit_ck_open_archive(ck, &iname, &index, err);
	/* without config.json and without weights this is no checkpoint */
	int has = 1;
	if (st == DIT_OK && ck->config_missing && !index)
		st = dit_ck_has_weights(ck, &has, err);
	if (st == DIT_OK && !has)
		st = dit_ck_config_missing(ck, err);
	if (st == DIT_OK)
		st = index ? ck_open_index(ck, iname, index, err)
		           : ck_open_single(ck, opts ? opts->load_key : NULL, err);
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
	free(ck->load_key);
	free(ck->config_text);
	free(ck->config_path);
	free(ck->dir);
	free(ck);
}

dit_status dit_checkpoint_load_config(const dit_checkpoint *ck, dit_hparams *cfg, dit_error *err)
{
	if (!ck || !cfg)
		return dit_error_set(err, DIT_EINVAL, "dit_checkpoint_load_config: NULL argument");
	if (ck->config_missing)
		return dit_ck_config_missing(ck, err);
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
