/* Other stores of the same checkpoint in ditstar's cache, removed (see
 * dit_store_reap_siblings in dit_store.h). */
#define _DEFAULT_SOURCE /* flock */
#include "dit_store.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dit_io.h"

/* A name a store makes: blocks.bin (or an older layout's chunk_NNNN.bin), its manifest,
 * records, marker, lock files, or a temporary file of its writes or StarPU's. */
static int store_name(const char *name)
{
	static const char *const fixed[] = {DIT_STORE_BLOCKS, "manifest.json", "inplace.json",
	                                    "records.json",   "ditstar-store", "build.lock",
	                                    "use.lock"};
	for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
		if (!strcmp(name, fixed[i]))
			return 1;
	long long k;
	char tail[8];
	size_t n = strlen(name);
	return (sscanf(name, "chunk_%lld.%7s", &k, tail) == 2 && !strcmp(tail, "bin")) ||
	       (n > 11 && memcmp(name + n - 11, ".tmp.", 5) == 0) ||
	       (n == 13 && memcmp(name, "STARPU_", 7) == 0);
}

/* Removes the store names in dir and, depth > 0, in its sub-folders (the pools of a
 * two-expert store), then the folders left empty; adds the bytes removed to *bytes. */
static void remove_store_files(const char *dir, int depth, size_t *bytes)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *path = dit_io_join(dir, e->d_name);
		struct stat sb;
		if (path && lstat(path, &sb) == 0) {
			if (S_ISREG(sb.st_mode) && store_name(e->d_name) && unlink(path) == 0)
				*bytes += (size_t)sb.st_size;
			else if (S_ISDIR(sb.st_mode) && depth > 0)
				remove_store_files(path, depth - 1, bytes);
		}
		free(path);
	}
	closedir(d);
	rmdir(dir); /* fails, leaving it, if anything not the store's is there */
}

/* Opens dir's lock file name and takes it exclusively without waiting: the descriptor
 * (to close), -1 when absent, -2 when another run holds it. */
static int take_lock(const char *dir, const char *name)
{
	char *path = dit_io_join(dir, name);
	int fd = path ? open(path, O_RDWR | O_CLOEXEC) : -1;
	free(path);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd);
		return -2;
	}
	return fd;
}

/* Whether dir holds a store's manifest or the checksums of blocks read in place. */
static int manifest_in(const char *dir)
{
	char *m = dit_io_join(dir, "manifest.json"), *i = dit_io_join(dir, "inplace.json");
	struct stat sb;
	int yes = (m && stat(m, &sb) == 0) || (i && stat(i, &sb) == 0);
	free(m);
	free(i);
	return yes;
}

/* Whether dir (or its first pool's folder) has a manifest: a store written whole. */
static int has_manifest(const char *dir)
{
	int yes = manifest_in(dir);
	struct stat sb;
	DIR *d = yes ? NULL : opendir(dir);
	for (struct dirent *e; d && !yes && (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		char *sub = dit_io_join(dir, e->d_name);
		yes = sub && stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode) && manifest_in(sub);
		free(sub);
	}
	if (d)
		closedir(d);
	return yes;
}

/* Removes the store sib (a marked folder) unless a run holds one of its locks; a whole
 * one only when whole (its weights of this dtype: another dtype's store is kept). */
static int reap_one(const char *sib, int whole, size_t *bytes)
{
	char *marker = dit_io_join(sib, "ditstar-store");
	struct stat sb;
	int ours = marker && lstat(marker, &sb) == 0 && S_ISREG(sb.st_mode);
	free(marker);
	if (!ours || (!whole && has_manifest(sib)))
		return 0;
	int build = take_lock(sib, "build.lock");
	int use = build == -2 ? -2 : take_lock(sib, "use.lock");
	int free_ = build != -2 && use != -2;
	if (free_)
		remove_store_files(sib, 1, bytes);
	if (build >= 0)
		close(build);
	if (use >= 0)
		close(use);
	return free_;
}

/* Whether t is a dtype tag as a store's name ends with ("bf16", "f8_e4m3+f32"). */
static int dtype_tag(const char *t)
{
	if (!*t)
		return 0;
	for (; *t; t++)
		if (!isalnum((unsigned char)*t) && *t != '_' && *t != '+')
			return 0;
	return 1;
}

#define HASH_LEN 16 /* "%016llx" of the checkpoint's path */

/* What kind of store's name name is, for a checkpoint hash of HASH_LEN characters:
 * 2 this version's ("<hash>[-<dtype>]"), 1 an older version's per chunk size
 * ("<hash>-c<digits>[-<dtype>]"), 0 none; *dtype its dtype tag ("": fp32). */
static int store_dir_kind(const char *name, const char *hash, const char **dtype)
{
	if (strncmp(name, hash, HASH_LEN) != 0)
		return 0;
	const char *t = name + HASH_LEN;
	*dtype = t;
	if (!*t)
		return 2;
	if (*t++ != '-')
		return 0;
	if (*t == 'c' && isdigit((unsigned char)t[1])) {
		for (t++; isdigit((unsigned char)*t); t++)
			;
		*dtype = t;
		if (!*t)
			return 1;
		*dtype = t + 1;
		return *t == '-' && dtype_tag(t + 1) ? 1 : 0;
	}
	*dtype = t;
	return dtype_tag(t) ? 2 : 0;
}

int dit_store_reap_siblings(const char *dir, size_t *bytes)
{
	*bytes = 0;
	char *copy = strdup(dir);
	char *slash = copy ? strrchr(copy, '/') : NULL;
	const char *mine = "", *theirs;
	if (!slash || strlen(slash + 1) < HASH_LEN ||
	    store_dir_kind(slash + 1, slash + 1, &mine) != 2) {
		free(copy);
		return 0;
	}
	*slash = 0;
	const char *base = slash + 1;
	int n = 0;
	DIR *d = opendir(copy);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		int kind = store_dir_kind(e->d_name, base, &theirs);
		if (!kind || !strcmp(e->d_name, base))
			continue;
		char *sib = dit_io_join(copy, e->d_name);
		struct stat sb;
		/* an older version's store of this dtype goes whole; any other only when
		 * cut short */
		if (sib && lstat(sib, &sb) == 0 && S_ISDIR(sb.st_mode))
			n += reap_one(sib, kind == 1 && !strcmp(mine, theirs), bytes);
		free(sib);
	}
	if (d)
		closedir(d);
	free(copy);
	return n;
}
