/* The files of a run, checked together before the run (see dit_outputs.h). */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE   700 /* realpath */

#include "dit_outputs.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dit_io.h"
#include "dit_weights.h"

/* A checkpoint's index file, next to config.json, by either name (as dit_checkpoint.c
 * names them). */
static const char *const out_index[] = {"diffusion_pytorch_model.safetensors.index.json",
                                        "model.safetensors.index.json"};
#define OUT_NINDEX (sizeof out_index / sizeof out_index[0])

/* Who a path is: a file by device and inode, or for an output not yet there its
 * resolved directory and name (NULL when even the directory cannot be resolved). */
typedef struct out_id {
	int exists;
	dev_t dev;
	ino_t ino;
	char *where;
} out_id;

/* The folder of a file path ("." for a bare name), malloc'd. */
static char *out_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/* "realpath(dirname)/basename" of path, malloc'd; NULL when it cannot be resolved. */
static char *out_resolve(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = out_dirname(path);
	const char *base = slash ? slash + 1 : path;
	char *real = dir ? realpath(dir, NULL) : NULL;
	char *r = real && *base ? dit_io_join(real, base) : NULL;
	free(dir);
	free(real);
	return r;
}

/* An error already in err, recoded as a usage error (an option's path is at fault). */
static dit_status out_usage(dit_error *err)
{
	if (err)
		err->code = DIT_EUSAGE;
	return DIT_EUSAGE;
}

static int out_same(const out_id *a, const out_id *b)
{
	if (a->exists && b->exists)
		return a->dev == b->dev && a->ino == b->ino;
	return !a->exists && !b->exists && a->where && b->where && strcmp(a->where, b->where) == 0;
}

dit_status dit_outputs_check(const dit_path_use *in, size_t nin, const dit_path_use *out,
                             size_t nout, dit_error *err)
{
	out_id *oid = calloc(nout + 1, sizeof *oid);
	if (!oid)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	dit_status st = DIT_OK;
	for (size_t i = 0; i < nout && !st; i++) {
		struct stat sb;
		if (!out[i].path)
			continue;
		if (dit_io_is_stdout(out[i].path)) { /* standard output: one output at most */
			for (size_t j = 0; j < i && !st; j++)
				if (dit_io_is_stdout(out[j].path))
					st = dit_error_set(err, DIT_EUSAGE,
					                   "%s -: standard output is also the %s; "
					                   "give each output its own file",
					                   out[i].what, out[j].what);
			continue;
		}
		st = dit_io_check_target(out[i].what, out[i].path, err);
		if (st) {
			st = out_usage(err); /* the option names what cannot be replaced */
			break;
		}
		if (lstat(out[i].path, &sb) == 0) {
			oid[i] = (out_id){.exists = 1, .dev = sb.st_dev, .ino = sb.st_ino};
		} else if (errno == ENOENT && !(oid[i].where = out_resolve(out[i].path))) {
			continue; /* its directory cannot be resolved: creating it will report */
		}
		for (size_t j = 0; j < nin && !st && oid[i].exists; j++) {
			if (!in[j].path || in[j].path == out[i].may_be ||
			    stat(in[j].path, &sb) != 0)
				continue;
			if (sb.st_dev == oid[i].dev && sb.st_ino == oid[i].ino)
				st =
				    dit_error_set(err, DIT_EUSAGE,
				                  "%s %s: is the %s %s, an input; refusing to "
				                  "overwrite it",
				                  out[i].what, out[i].path, in[j].what, in[j].path);
		}
		for (size_t j = 0; j < i && !st; j++)
			if (out[j].path && out_same(&oid[i], &oid[j]))
				st = dit_error_set(err, DIT_EUSAGE,
				                   "%s %s: is also the %s %s; give each output its "
				                   "own file",
				                   out[i].what, out[i].path, out[j].what,
				                   out[j].path);
	}
	for (size_t i = 0; i < nout; i++)
		free(oid[i].where);
	free(oid);
	return st;
}

dit_status dit_outputs_check_run(const dit_weights *w, const dit_path_use *in, size_t nin,
                                 const dit_path_use *out, size_t nout, dit_error *err)
{
	size_t n = nin;
	for (int e = 0; e < w->nexperts; e++)
		if (w->expert[e] && w->expert[e]->ck)
			n += 1 + OUT_NINDEX + w->expert[e]->ck->nfiles;
	dit_path_use *all = calloc(n + 1, sizeof *all);
	char **owned = calloc((size_t)w->nexperts * OUT_NINDEX + 1, sizeof *owned);
	if (!all || !owned) {
		free(all);
		free(owned);
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	}
	memcpy(all, in, nin * sizeof *in);
	size_t k = nin;
	for (int e = 0; e < w->nexperts; e++) {
		const dit_checkpoint *ck = w->expert[e] ? w->expert[e]->ck : NULL;
		if (!ck)
			continue;
		if (ck->archive) {
			all[k++] = (dit_path_use){.what = "checkpoint archive", .path = ck->dir};
			continue;
		}
		/* config.json and the index names even when missing: inputs that are not
		 * there are passed over */
		all[k++] = (dit_path_use){.what = "checkpoint file", .path = ck->config_path};
		for (size_t i = 0; i < OUT_NINDEX; i++) {
			char *p = dit_io_join(ck->dir, out_index[i]);
			owned[(size_t)e * OUT_NINDEX + i] = p;
			all[k++] = (dit_path_use){.what = "checkpoint file", .path = p};
		}
		for (size_t i = 0; i < ck->nfiles; i++)
			all[k++] =
			    (dit_path_use){.what = "checkpoint file", .path = ck->files[i]->path};
	}
	dit_status st = dit_outputs_check(all, k, out, nout, err);
	for (size_t i = 0; i < (size_t)w->nexperts * OUT_NINDEX; i++)
		free(owned[i]);
	free(owned);
	free(all);
	return st;
}

dit_status dit_outputs_outside(const dit_path_use *out, size_t nout, const char *what,
                               const char *dir, dit_error *err)
{
	char *real = dir ? realpath(dir, NULL) : NULL;
	dit_status st = DIT_OK;
	for (size_t i = 0; real && i < nout && !st; i++) {
		int named = out[i].path && !dit_io_is_stdout(out[i].path);
		char *where = named ? out_resolve(out[i].path) : NULL;
		char *slash = where ? strrchr(where, '/') : NULL;
		if (slash) {
			*slash = '\0';
			if (strcmp(*where ? where : "/", real) == 0)
				st = dit_error_set(
				    err, DIT_EUSAGE,
				    "%s %s: is inside the %s folder %s, which the run "
				    "fills; write it elsewhere",
				    out[i].what, out[i].path, what, dir);
		}
		free(where);
	}
	free(real);
	return st;
}

/* Whether a new file can be made in dir: one is created there and removed. 0, or the
 * errno of the failure. */
static int out_try_create(const char *dir)
{
	char *tmp = dit_io_join(dir, ".ditstar-probe.XXXXXX");
	if (!tmp)
		return ENOMEM;
	int fd = mkstemp(tmp), e = fd < 0 ? errno : 0;
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	free(tmp);
	return e;
}

dit_status dit_outputs_probe(const dit_path_use *out, size_t nout, dit_error *err)
{
	for (size_t i = 0; i < nout; i++) {
		if (!out[i].path || dit_io_is_stdout(out[i].path))
			continue;
		if (!*out[i].path)
			return dit_error_set(err, DIT_EUSAGE, "%s: an empty path", out[i].what);
		if (dit_io_check_target(out[i].what, out[i].path, err))
			return out_usage(err);
		char *dir = out_dirname(out[i].path);
		if (!dir)
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		struct stat sb;
		int e = stat(dir, &sb) != 0 ? errno : !S_ISDIR(sb.st_mode) ? ENOTDIR : 0;
		if (!e)
			e = out_try_create(dir);
		dit_status st = DIT_OK;
		if (e)
			st = dit_error_set(err, DIT_EUSAGE, "%s %s: cannot write in %s: %s",
			                   out[i].what, out[i].path, dir, strerror(e));
		free(dir);
		if (st)
			return st;
	}
	return DIT_OK;
}

dit_status dit_outputs_check_dir(const char *what, const char *path, dit_error *err)
{
	struct stat sb;
	if (!path || lstat(path, &sb) != 0)
		return DIT_OK; /* absent: made when written */
	if (S_ISLNK(sb.st_mode) && stat(path, &sb) != 0)
		return dit_error_set(err, DIT_EUSAGE,
		                     "%s %s: a dangling symbolic link, not a folder", what, path);
	if (!S_ISDIR(sb.st_mode))
		return dit_error_set(err, DIT_EUSAGE, "%s %s: is %s, not a folder", what, path,
		                     S_ISREG(sb.st_mode) ? "a file" : dit_io_kind(sb.st_mode));
	return DIT_OK;
}

dit_status dit_outputs_probe_dir(const char *what, const char *path, dit_error *err)
{
	if (dit_io_is_stdout(path))
		return dit_error_set(err, DIT_EUSAGE,
		                     "%s -: a folder of files, not standard output", what);
	if (!path)
		return DIT_OK;
	if (!*path)
		return dit_error_set(err, DIT_EUSAGE, "%s: an empty path", what);
	/* the folder, or the nearest folder above it that exists: the run makes the rest */
	char *dir = strdup(path);
	if (!dir)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	struct stat sb;
	int e;
	for (;;) {
		if (stat(dir, &sb) == 0) {
			e = S_ISDIR(sb.st_mode) ? out_try_create(dir) : ENOTDIR;
			break;
		}
		if (errno != ENOENT) {
			e = errno;
			break;
		}
		char *up = out_dirname(dir);
		int top = !up || strcmp(up, dir) == 0;
		free(dir);
		dir = up;
		if (top) {
			e = up ? ENOENT : ENOMEM;
			break;
		}
	}
	dit_status st = DIT_OK;
	if (e)
		st = dit_error_set(err, DIT_EUSAGE, "%s %s: cannot write in %s: %s", what, path,
		                   dir ? dir : path, strerror(e));
	free(dir);
	return st;
}
