/* Temporary files of atomic writes in flight, found by the descriptors this process
 * holds (see dit_cli_tmp.h). */
#include "dit_cli_tmp.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "<anything>.tmp.XXXXXX", X alphanumeric (what mkstemp fills in). */
static int is_atomic_tmp(const char *p)
{
	size_t n = strlen(p);
	if (n < 12 || memcmp(p + n - 11, ".tmp.", 5) != 0)
		return 0;
	for (size_t i = n - 6; i < n; i++)
		if (!isalnum((unsigned char)p[i]))
			return 0;
	return 1;
}

int dit_cli_tmp_remove_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 0;
	int removed = 0, self = dirfd(d);
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == self)
			continue;
		char link[300], path[PATH_MAX];
		snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(link, path, sizeof path - 1);
		if (n <= 0)
			continue;
		path[n] = 0; /* a file removed since reads "... (deleted)": left alone */
		if (path[0] == '/' && is_atomic_tmp(path) && unlink(path) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
