/* A two-expert model as two one-file checkpoints (see dit_ck_pair.h): the folder of the
 * pair, or "HIGH,LOW". */
#define _POSIX_C_SOURCE 200809L
#include "dit_ck_pair.h"

#include "dit_ck_priv.h"
#include "dit_io.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PAIR_QUOTE_MAX 120
#define PAIR_QBUF      (PAIR_QUOTE_MAX * 4 + 8)

static const char *pair_quote(char *buf, const char *s)
{
	return dit_error_quote(buf, PAIR_QBUF, s, strlen(s), PAIR_QUOTE_MAX);
}

/* Whether the lower-case name says word ("high") joined to "noise" by '_', '-' or
 * nothing. */
static int pair_says(const char *lower, const char *word)
{
	static const char *const joins[] = {"_", "-", ""};
	for (size_t i = 0; i < sizeof joins / sizeof joins[0]; i++) {
		char pat[24];
		snprintf(pat, sizeof pat, "%s%snoise", word, joins[i]);
		if (strstr(lower, pat))
			return 1;
	}
	return 0;
}

int dit_ck_pair_level(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	char *lower = strdup(base);
	if (!lower)
		return 0;
	for (char *p = lower; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	int level = (pair_says(lower, "high") ? 1 : 0) | (pair_says(lower, "low") ? 2 : 0);
	free(lower);
	return level;
}

static int pair_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void pair_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The regular files of dir that are one-file checkpoints (*.safetensors, *.gguf),
 * sorted. */
static dit_status pair_list(const char *dir, char ***out, size_t *n, dit_error *err)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return DIT_OK; /* the checkpoint's own opening reports it */
	size_t cap = 0;
	dit_status st = DIT_OK;
	for (struct dirent *e; !st && (e = readdir(d));) {
		if (!dit_ck_is_file(e->d_name))
			continue;
		char *p = dit_io_join(dir, e->d_name);
		struct stat sb;
		int reg = p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
		free(p);
		if (!reg)
			continue;
		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 4;
			char **nv = realloc(*out, nc * sizeof *nv);
			if (!nv) {
				st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
				break;
			}
			*out = nv;
			cap = nc;
		}
		if (!((*out)[*n] = strdup(e->d_name)))
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
		else
			(*n)++;
	}
	closedir(d);
	if (!st && *n > 1)
		qsort(*out, *n, sizeof **out, pair_cmp);
	return st;
}

/* A folder without config.json whose weight files name a noise level. */
static dit_status pair_scan(const char *dir, char *paths[2], dit_error *err)
{
	char **names = NULL;
	size_t n = 0;
	dit_status st = pair_list(dir, &names, &n, err);
	int named = 0;
	for (size_t i = 0; i < n; i++)
		named |= dit_ck_pair_level(names[i]) != 0;
	char q1[PAIR_QBUF], q2[PAIR_QBUF], q3[PAIR_QBUF];
	if (st || !named) {
		pair_free(names, n);
		return st;
	}
	int l0 = dit_ck_pair_level(names[0]), l1 = n > 1 ? dit_ck_pair_level(names[1]) : 0;
	if (n == 1 && (l0 == 1 || l0 == 2))
		st = dit_error_set(err, DIT_ENOTFOUND,
		                   "%s: no config.json, and its one weight file '%s' is the "
		                   "%s-noise expert of a two-expert model (Wan2.2 A14B): the "
		                   "%s-noise expert's file is needed beside it",
		                   dir, pair_quote(q1, names[0]), l0 == 1 ? "high" : "low",
		                   l0 == 1 ? "low" : "high");
	else if (n > 2)
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: no config.json, and %zu weight files ('%s', '%s', '%s'%s) "
		                   "named for noise levels: the folder of a two-expert model "
		                   "(Wan2.2 A14B) holds exactly two, the high-noise and the "
		                   "low-noise expert",
		                   dir, n, pair_quote(q1, names[0]), pair_quote(q2, names[1]),
		                   pair_quote(q3, names[2]), n > 3 ? ", ..." : "");
	else if (n == 1 || !((l0 == 1 && l1 == 2) || (l0 == 2 && l1 == 1)))
		st = dit_error_set(
		    err, DIT_EFORMAT,
		    "%s: no config.json, and the name%s of its weight file%s ('%s'%s%s%s) "
		    "do not tell which is the high-noise and which the low-noise "
		    "expert (one name says high_noise, the other low_noise)",
		    dir, n > 1 ? "s" : "", n > 1 ? "s" : "", pair_quote(q1, names[0]),
		    n > 1 ? ", '" : "", n > 1 ? pair_quote(q2, names[1]) : "", n > 1 ? "'" : "");
	int hi = l0 == 1 ? 0 : 1;
	for (int e = 0; !st && e < 2; e++)
		if (!(paths[e] = dit_io_join(dir, names[e == 0 ? hi : 1 - hi])))
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
	pair_free(names, n);
	return st;
}

/* "HIGH,LOW": two one-file checkpoints named, the high-noise expert first. Anything
 * else (no comma, a part that is no .safetensors or .gguf name) is no pair. */
static dit_status pair_split(const char *arg, char *paths[2], dit_error *err)
{
	const char *c = strchr(arg, ',');
	if (!c)
		return DIT_OK;
	size_t parts = 1, files = 0;
	for (const char *p = arg;; p++) {
		const char *e = strchr(p, ',');
		char *part = strndup(p, e ? (size_t)(e - p) : strlen(p));
		if (!part)
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		files += dit_ck_is_file(part) != 0;
		free(part);
		if (!e)
			break;
		parts++;
		p = e;
	}
	if (files != parts)
		return DIT_OK;
	if (parts != 2)
		return dit_error_set(err, DIT_EUSAGE,
		                     "%s: %zu files named: a two-expert model is two, the "
		                     "high-noise expert's then the low-noise one's (HIGH,LOW)",
		                     arg, parts);
	char *a = strndup(arg, (size_t)(c - arg)), *b = strdup(c + 1);
	if (!a || !b) {
		free(a);
		free(b);
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	}
	int la = dit_ck_pair_level(a), lb = dit_ck_pair_level(b);
	char q[PAIR_QBUF];
	if (la == 2 || lb == 1) {
		dit_status st = dit_error_set(
		    err, DIT_EUSAGE,
		    "%s: '%s' names the %s-noise expert, but the high-noise expert's file comes "
		    "first (HIGH,LOW)",
		    arg, pair_quote(q, la == 2 ? a : b), la == 2 ? "low" : "high");
		free(a);
		free(b);
		return st;
	}
	paths[0] = a;
	paths[1] = b;
	return DIT_OK;
}

dit_status dit_ck_pair_find(const char *model_dir, char *paths[2], dit_error *err)
{
	paths[0] = paths[1] = NULL;
	struct stat sb;
	if (stat(model_dir, &sb) != 0)
		return pair_split(model_dir, paths, err);
	if (!S_ISDIR(sb.st_mode))
		return DIT_OK;
	char *cfg = dit_io_join(model_dir, "config.json");
	if (!cfg)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", model_dir);
	int has = stat(cfg, &sb) == 0;
	free(cfg);
	return has ? DIT_OK : pair_scan(model_dir, paths, err);
}
