/* Whose folder the chunk store is in: ditstar writes and cleans only a folder it made
 * (its marker file in it) or one that was empty, never a folder of the user's. */
#include "dit_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

/* Whether dir's marker is there and says what ditstar writes. */
static int marked(const char *dir)
{
	char *path = dit_io_join(dir, MARKER);
	char *text = NULL;
	size_t len = 0;
	int ok = path && dit_io_read_text(path, 4096, &text, &len, NULL) == DIT_OK &&
	         strncmp(text, "ditstar chunk store", 19) == 0;
	free(text);
	free(path);
	return ok;
}

static dit_status mark(const char *dir, dit_error *err)
{
	char *path = dit_io_join(dir, MARKER);
	if (!path)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	dit_status st = dit_io_write_file_atomic(path, MARKER_TEXT, strlen(MARKER_TEXT), err);
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
