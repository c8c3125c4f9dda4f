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

/* A name a store makes: chunk_NNNN.bin, its manifest, records, marker, lock files, or a
 * temporary file of its writes or StarPU's. */
static int store_name(const char *name)
{
	static const char *const fixed[] = {"manifest.json", "records.json", "ditstar-store",
	                                    "build.lock", "use.lock"};
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

/* Whether dir (or its first pool's folder) has a manifest: a store written whole. */
static int has_manifest(const char *dir)
{
	char *m = dit_io_join(dir, "manifest.json");
	struct stat sb;
	int yes = m && stat(m, &sb) == 0;
	free(m);
	DIR *d = yes ? NULL : opendir(dir);
	for (struct dirent *e; d && !yes && (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		char *sub = dit_io_join(dir, e->d_name),
		     *ms = sub ? dit_io_join(sub, "manifest.json") : NULL;
		yes = ms && stat(ms, &sb) == 0;
		free(ms);
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

/* Whether name after its stem "<hash>-c" is what ditstar names a store: digits, then
 * nothing or "-" and a dtype's letters and digits ("-bf16"); *dtype the part after the
 * digits. */
static int store_dir_tail(const char *t, const char **dtype)
{
	if (!isdigit((unsigned char)*t))
		return 0;
	while (isdigit((unsigned char)*t))
		t++;
	*dtype = t;
	if (!*t)
		return 1;
	if (*t++ != '-' || !*t)
		return 0;
	while (isalnum((unsigned char)*t))
		t++;
	return !*t;
}

int dit_store_reap_siblings(const char *dir, size_t *bytes)
{
	*bytes = 0;
	char *copy = strdup(dir);
	char *slash = copy ? strrchr(copy, '/') : NULL;
	const char *mark = slash ? strstr(slash + 1, "-c") : NULL;
	if (!mark) {
		free(copy);
		return 0;
	}
	*slash = 0;
	const char *base = slash + 1;
	size_t stem = (size_t)(mark - base) + 2; /* "<hash>-c" */
	const char *mine = "", *theirs;
	store_dir_tail(base + stem, &mine);
	int n = 0;
	DIR *d = opendir(copy);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		if (strncmp(e->d_name, base, stem) != 0 || !strcmp(e->d_name, base) ||
		    !store_dir_tail(e->d_name + stem, &theirs))
			continue;
		char *sib = dit_io_join(copy, e->d_name);
		struct stat sb;
		if (sib && lstat(sib, &sb) == 0 && S_ISDIR(sb.st_mode))
			n += reap_one(sib, !strcmp(mine, theirs), bytes);
		free(sib);
	}
	if (d)
		closedir(d);
	free(copy);
	return n;
}
