/* Reading files that come from outside (see dit_input.h). */
#define _POSIX_C_SOURCE 200809L

#include "dit_input.h"
#include "dit_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

dit_status dit_input_open(const char *path, const char *label, int *fd, uint64_t *size,
                          dit_error *err)
{
	*fd = -1;
	*size = 0;
	char *own = label ? NULL : dit_input_label(path);
	const char *lb = label ? label : own ? own : "?";
	dit_status st = DIT_OK;
	/* O_NONBLOCK: opening a FIFO without a writer (or some devices) would wait */
	int f = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat sb;
	if (f < 0) {
		int e = errno;
		st = dit_error_set(err, e == ENOENT ? DIT_ENOTFOUND : DIT_EIO,
		                   "%s: cannot open: %s", lb, strerror(e));
	} else if (fstat(f, &sb) != 0) {
		st = dit_error_set(err, DIT_EIO, "%s: cannot stat: %s", lb, strerror(errno));
	} else if (!S_ISREG(sb.st_mode)) {
		st = dit_error_set(err, DIT_EIO, "%s: is %s, not a regular file", lb,
		                   dit_io_kind(sb.st_mode));
	} else if (sb.st_size < 0) {
		st = dit_error_set(err, DIT_EIO, "%s: negative file size", lb);
	} else {
		int fl = fcntl(f, F_GETFL);
		if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) != 0)
			st = dit_error_set(err, DIT_EIO, "%s: cannot clear O_NONBLOCK: %s", lb,
			                   strerror(errno));
	}
	if (st != DIT_OK) {
		if (f >= 0)
			close(f);
	} else {
		*fd = f;
		*size = (uint64_t)sb.st_size;
	}
	free(own);
	return st;
}

int64_t dit_input_pread(int fd, void *buf, size_t len, uint64_t off)
{
	/* one call moves at most 1 GiB: some systems refuse or split larger reads */
	const size_t step = (size_t)1 << 30;
	uint8_t *p = buf;
	size_t got = 0;
	while (got < len) {
		size_t k = len - got < step ? len - got : step;
		ssize_t r = pread(fd, p + got, k, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (int64_t)got;
}

char *dit_input_label(const char *s)
{
	size_t n = strlen(s);
	size_t cap = 4 * n + 8;
	char *buf = malloc(cap);
	if (buf)
		dit_error_quote(buf, cap, s, n, n);
	return buf;
}

dit_status dit_input_json_check(const char *label, const char *text, size_t len,
                                const dit_input_json_caps *caps, dit_error *err)
{
	enum { DEPTH = 64 };
	/* in_array[d]: whether the container at depth d is an array (deeper: counted
	 * as one, which only over-counts) */
	unsigned char in_array[DEPTH + 1] = {0};
	size_t count[DEPTH + 1] = {0}; /* members of the object open at each depth */
	size_t depth = 0, members = 0, objects = 0, values = 1;
	const char *what = caps->what ? caps->what : "members";
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (c == '"') {
			for (i++; i < len && text[i] != '"'; i++)
				if (text[i] == '\\')
					i++;
			continue;
		}
		if (c == '{' || c == '[') {
			depth++;
			if (depth <= DEPTH) {
				in_array[depth] = c == '[';
				count[depth] = 0;
			}
			if (c == '{' && ++objects > caps->objects && caps->objects)
				return dit_error_set(err, DIT_EFORMAT,
				                     "%s: more than %zu JSON objects (the limit)",
				                     label, caps->objects);
		} else if ((c == '}' || c == ']') && depth > 0) {
			depth--;
		} else if (c == ':' || (c == ',' && (depth > DEPTH || in_array[depth]))) {
			if (++values > caps->values && caps->values)
				return dit_error_set(err, DIT_EFORMAT,
				                     "%s: more than %zu JSON values (the limit)",
				                     label, caps->values);
			if (c == ':' && depth == 1 && ++members > caps->members && caps->members)
				return dit_error_set(err, DIT_EFORMAT,
				                     "%s: more than %zu %s (the limit)", label,
				                     caps->members, what);
			if (c == ':' && depth > 1 && depth <= DEPTH &&
			    ++count[depth] > caps->nested && caps->nested)
				return dit_error_set(
				    err, DIT_EFORMAT,
				    "%s: an object below the top level has more than "
				    "%zu members (the limit)",
				    label, caps->nested);
		}
	}
	return DIT_OK;
}
