/* Whose folder the chunk store is in: ditstar writes and cleans only a folder it made
 * (its marker file in it) or one that was empty, never a folder of the user's; and
 * which of its files are the store's data and temporary files. */
#include "dit_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dit_io.h"

#define MARKER      "ditstar-store"
#define MARKER_TEXT "ditstar chunk store, format 1: ditstar writes and removes the files here\n"

/* Whether dir holds any entry besides "." and ".." (-1: it cannot be read). */
static int has_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	int any = 0;
	while (!any && (e = readdir(d)) != NULL)
		any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return any;
}

/* Whether dir's marker is there (a regular file of that name: its text may still be
 * being written by a run that marked the folder a moment ago). */
static int marked(const char *dir)
{
	char *path = dit_io_join(dir, MARKER);
	struct stat sb;
	int ok = path && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode);
	free(path);
	return ok;
}

/* Marks dir, the marker made with O_EXCL before anything else is written there, so
 * that a run starting beside this one sees the folder either empty or marked; one that
 * marked it first is as good. */
static dit_status mark(const char *dir, dit_error *err)
{
	char *path = dit_io_join(dir, MARKER);
	if (!path)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	dit_status st = DIT_OK;
	if (fd < 0 && errno != EEXIST)
		st =
		    dit_error_set(err, DIT_EIO, "%s: cannot create it (%s)", path, strerror(errno));
	if (fd >= 0) {
		int bad = dit_io_write_all(fd, MARKER_TEXT, strlen(MARKER_TEXT)) != 0;
		bad |= close(fd) != 0;
		if (bad)
			st = dit_error_set(err, DIT_EIO, "%s: cannot write it (%s)", path,
			                   strerror(errno));
	}
	free(path);
	return st;
}

dit_status dit_store_own(const char *dir, int adopt, dit_error *err)
{
	struct stat sb;
	if (stat(dir, &sb) != 0) { /* a new folder: ours */
		dit_status st = dit_io_mkdir_p(dir, err);
		return st ? st : mark(dir, err);
	}
	if (!S_ISDIR(sb.st_mode))
		return dit_error_set(err, DIT_EUSAGE, "--offload-dir %s: not a folder", dir);
	if (marked(dir))
		return DIT_OK;
	int any = has_entries(dir);
	if (any < 0)
		return dit_error_set(err, DIT_EIO, "--offload-dir %s: cannot read it (%s)", dir,
		                     strerror(errno));
	if (any && !adopt)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--offload-dir %s: a folder ditstar did not make (it holds "
		                     "files and no '%s' marker); give a new or empty folder",
		                     dir, MARKER);
	return mark(dir, err);
}

/* A temporary file of an atomic write ("NAME.tmp.XXXXXX") or StarPU's ("STARPU_XXXXXX"). */
static int is_temp(const char *name)
{
	size_t n = strlen(name);
	return (n > 11 && memcmp(name + n - 11, ".tmp.", 5) == 0) ||
	       (n == 13 && memcmp(name, "STARPU_", 7) == 0);
}

void dit_store_clean_temps(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *path = dit_io_join(dir, e->d_name);
		struct stat sb;
		if (path && lstat(path, &sb) == 0) {
			if (S_ISREG(sb.st_mode) && is_temp(e->d_name))
				unlink(path);
			else if (S_ISDIR(sb.st_mode) && depth > 0)
				dit_store_clean_temps(path, depth - 1);
		}
		free(path);
	}
	closedir(d);
}

/* Whether name is one of the store's data files: its blocks file, or a chunk file of
 * the older per-chunk layout ("chunk_0003.bin"). */
static int data_name(const char *name)
{
	long long k;
	int end = 0;
	return !strcmp(name, DIT_STORE_BLOCKS) ||
	       (sscanf(name, "chunk_%4lld.bin%n", &k, &end) == 1 && end == (int)strlen(name) &&
	        strlen(name) >= 14 && k >= 0);
}

/* The bytes of dir's data files, each removed when remove. */
static size_t old_files(const char *dir, int remove)
{
	DIR *d = opendir(dir);
	size_t sum = 0;
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		if (!data_name(e->d_name))
			continue;
		char *path = dit_io_join(dir, e->d_name);
		struct stat sb;
		if (path && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
			sum += (size_t)sb.st_size;
			if (remove)
				unlink(path);
		}
		free(path);
	}
	if (d)
		closedir(d);
	return sum;
}

size_t dit_store_old_bytes(const char *dir)
{
	return old_files(dir, 0);
}

void dit_store_remove_old(const char *dir)
{
	old_files(dir, 1);
}
