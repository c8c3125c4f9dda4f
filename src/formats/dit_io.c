/* File I/O shared by the loaders and writers. */
#define _POSIX_C_SOURCE 200809L

#include "dit_io.h"
#include "dit_input.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

/* Largest single write; some systems refuse or split larger ones. */
#define DIT_IO_CHUNK ((size_t)1 << 30)
#define DIT_IO_TMP   ".tmp.XXXXXX"

FILE *dit_io_fopen_cache(const char *path, size_t max_bytes)
{
	int fd;
	uint64_t size;
	dit_error err;
	if (dit_input_open(path, NULL, &fd, &size, &err) != DIT_OK)
		return NULL; /* absent, or not a regular file: as if not there */
	FILE *f = size <= max_bytes ? fdopen(fd, "r") : NULL;
	if (!f)
		close(fd);
	return f;
}

dit_status dit_io_read_text(const char *path, size_t max_bytes, char **text, size_t *len,
                            dit_error *err)
{
	*text = NULL;
	*len = 0;
	int fd;
	uint64_t fsize;
	dit_status st = dit_input_open(path, NULL, &fd, &fsize, err);
	if (st != DIT_OK)
		return st;
	if (fsize > (uint64_t)max_bytes) {
		close(fd);
		char *lb = dit_input_label(path);
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: file is implausibly large (%llu bytes, at most %zu)",
		                   lb ? lb : path, (unsigned long long)fsize, max_bytes);
		free(lb);
		return st;
	}
	size_t size = (size_t)fsize;
	char *buf = malloc(size + 1);
	if (!buf) {
		close(fd);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	}
	size_t got = 0;
	while (got < size) {
		ssize_t r = read(fd, buf + got, size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			free(buf);
			return dit_error_set(err, DIT_EIO, "%s: read failed: %s", path,
			                     strerror(e));
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	*text = buf;
	*len = got;
	return DIT_OK;
}

dit_status dit_io_read_json_object(const char *path, size_t max_bytes, struct json_object **out,
                                   dit_error *err)
{
	*out = NULL;
	/* the tokener takes an int length */
	if (max_bytes > (size_t)INT_MAX - 1)
		max_bytes = (size_t)INT_MAX - 1;
	char *buf;
	size_t got;
	dit_status st = dit_io_read_text(path, max_bytes, &buf, &got, err);
	if (st)
		return st;
	st = dit_io_parse_json_object(path, buf, got, out, err);
	free(buf);
	return st;
}

int dit_io_write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	while (len > 0) {
		size_t chunk = len > DIT_IO_CHUNK ? DIT_IO_CHUNK : len;
		ssize_t r = write(fd, p, chunk);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) {
			errno = EIO;
			return -1;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/* Makes a rename in the directory holding path durable; best effort, as some file
 * systems cannot sync a directory. */
static void dit_io_sync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	free(dir);
}

/* Closes (unless already closed), removes the temporary file and releases the handle;
 * keeps errno. */
static void dit_io_release(dit_io_atomic *a, int close_fd)
{
	int e = errno;
	if (close_fd && a->fd >= 0)
		close(a->fd);
	if (a->tmp) {
		unlink(a->tmp);
		free(a->tmp);
	}
	a->fd = -1;
	a->tmp = NULL;
	errno = e;
}

/* Reports "<path>: <what>: <errno text>" and releases the handle. */
static dit_status dit_io_fail(dit_io_atomic *a, int close_fd, const char *what, dit_error *err)
{
	int e = errno;
	dit_io_release(a, close_fd);
	return dit_error_set(err, DIT_EIO, "%s: %s: %s", a->stream ? "standard output" : a->path,
	                     what, strerror(e));
}

const char *dit_io_kind(mode_t m)
{
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

int dit_io_is_stdout(const char *path)
{
	return path && strcmp(path, "-") == 0;
}

dit_status dit_io_check_target(const char *label, const char *path, dit_error *err)
{
	struct stat sb;
	if (dit_io_is_stdout(path) || lstat(path, &sb) != 0 || S_ISREG(sb.st_mode))
		return DIT_OK;
	return dit_error_set(err, DIT_EINVAL,
	                     "%s%s%s: is %s, not a regular file; refusing to replace it",
	                     label ? label : "", label ? " " : "", path, dit_io_kind(sb.st_mode));
}

dit_status dit_io_atomic_open(dit_io_atomic *a, const char *path, dit_error *err)
{
	a->path = path;
	a->fd = -1;
	a->tmp = NULL;
	a->stream = dit_io_is_stdout(path);
	if (a->stream) { /* after what the process printed there */
		fflush(stdout);
		if ((a->fd = dup(STDOUT_FILENO)) < 0)
			return dit_error_set(err, DIT_EIO, "standard output: %s", strerror(errno));
		return DIT_OK;
	}
	dit_status st = dit_io_check_target(NULL, path, err);
	if (st)
		return st;
	size_t plen = strlen(path);
	a->tmp = malloc(plen + sizeof DIT_IO_TMP);
	if (!a->tmp)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	memcpy(a->tmp, path, plen);
	memcpy(a->tmp + plen, DIT_IO_TMP, sizeof DIT_IO_TMP);
	a->fd = mkstemp(a->tmp);
	if (a->fd < 0) {
		int e = errno;
		free(a->tmp);
		a->tmp = NULL;
		return dit_error_set(err, DIT_EIO, "%s: cannot create temporary file: %s", path,
		                     strerror(e));
	}
	if (fchmod(a->fd, 0644) != 0)
		return dit_io_fail(a, 1, "cannot set permissions", err);
	return DIT_OK;
}

dit_status dit_io_atomic_write(dit_io_atomic *a, const void *buf, size_t len, dit_error *err)
{
	if (a->fd < 0)
		return dit_error_set(err, DIT_EIO, "%s: write failed: temporary file released",
		                     a->path);
	if (dit_io_write_all(a->fd, buf, len) != 0)
		return dit_io_fail(a, 1, "write failed", err);
	return DIT_OK;
}

dit_status dit_io_atomic_commit(dit_io_atomic *a, dit_error *err)
{
	if (a->fd < 0)
		return dit_error_set(err, DIT_EIO, "%s: commit failed: temporary file released",
		                     a->path);
	if (a->stream) { /* a pipe or a terminal: nothing to sync or rename */
		int fd = a->fd;
		a->fd = -1;
		if (close(fd) != 0)
			return dit_error_set(err, DIT_EIO, "standard output: %s", strerror(errno));
		return DIT_OK;
	}
	/* The file stays open until it has its final name: a process stopped at once finds
	 * its temporary files among its open ones (src/cli/dit_cli_tmp.h). Once synced, a
	 * failing close loses nothing. */
	if (fsync(a->fd) != 0)
		return dit_io_fail(a, 1, "fsync failed", err);
	dit_status st = dit_io_check_target(NULL, a->path, err);
	if (st) {
		dit_io_release(a, 1);
		return st;
	}
	if (rename(a->tmp, a->path) != 0)
		return dit_io_fail(a, 1, "cannot rename temporary file into place", err);
	close(a->fd);
	a->fd = -1;
	free(a->tmp);
	a->tmp = NULL;
	dit_io_sync_parent(a->path);
	return DIT_OK;
}

void dit_io_atomic_abort(dit_io_atomic *a)
{
	dit_io_release(a, 1);
}

dit_status dit_io_move_into(const char *from, const char *to, dit_error *err)
{
	struct stat sb;
	if (lstat(from, &sb) != 0 || !S_ISREG(sb.st_mode))
		return dit_error_set(err, DIT_EIO, "%s: not a regular file; not moved to %s", from,
		                     to);
	dit_status st = dit_io_check_target(NULL, to, err);
	if (st)
		return st;
	if (rename(from, to) != 0)
		return dit_error_set(err, DIT_EIO, "%s: cannot rename into place: %s", to,
		                     strerror(errno));
	return DIT_OK;
}

dit_status dit_io_write_file_atomic(const char *path, const void *buf, size_t len, dit_error *err)
{
	dit_io_atomic a;
	dit_status st = dit_io_atomic_open(&a, path, err);
	if (st)
		return st;
	st = dit_io_atomic_write(&a, buf, len, err);
	if (st)
		return st;
	return dit_io_atomic_commit(&a, err);
}

dit_status dit_io_mkdir_p(const char *path, dit_error *err)
{
	char buf[4096];
	if (!*path)
		return dit_error_set(err, DIT_EINVAL, "empty directory name");
	if (strlen(path) >= sizeof buf)
		return dit_error_set(err, DIT_EINVAL, "%s: path too long", path);
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1;; p++) {
		if (*p && *p != '/')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return dit_error_set(err, DIT_EIO, "%s: cannot create directory (%s)", buf,
			                     strerror(errno));
		*p = c;
		if (!c)
			break;
	}
	return DIT_OK;
}

char *dit_io_join(const char *dir, const char *name)
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

/* A member name, decoded (it may hold any byte but NUL). */
typedef struct json_name {
	char *s;
	size_t len;
} json_name;

/* The member names of one object being scanned. */
typedef struct json_names {
	json_name *name;
	size_t n, cap;
} json_names;

static int json_name_cmp(const void *a, const void *b)
{
	const json_name *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Sorts the names of a closed object and rejects the first repeated one; frees them. */
static dit_status json_names_close(json_names *o, const char *label, dit_status st, dit_error *err)
{
	if (!st && o->n > 1) {
		qsort(o->name, o->n, sizeof *o->name, json_name_cmp);
		for (size_t k = 1; k < o->n && !st; k++) {
			if (json_name_cmp(&o->name[k - 1], &o->name[k]) == 0) {
				char q[512];
				st = dit_error_set(err, DIT_EFORMAT,
				                   "%s: member '%s' appears twice in one object",
				                   label,
				                   dit_error_quote(q, sizeof q, o->name[k].s,
				                                   o->name[k].len, 120));
			}
		}
	}
	for (size_t k = 0; k < o->n; k++)
		free(o->name[k].s);
	free(o->name);
	return st;
}

/* The member name quoted at text[0..n) (its quotes included), decoded with tok and
 * added to o's names; a name holding a NUL byte is an error. */
static dit_status json_names_add(json_names *o, json_tokener *tok, const char *label,
                                 const char *text, size_t n, dit_error *err)
{
	json_tokener_reset(tok);
	struct json_object *js = json_tokener_parse_ex(tok, text, (int)n);
	const char *nm = js ? json_object_get_string(js) : "";
	size_t nl = js ? (size_t)json_object_get_string_len(js) : 0;
	char q[512];
	dit_status st = DIT_OK;
	if (memchr(nm, '\0', nl))
		st = dit_error_set(err, DIT_EFORMAT, "%s: member name holds a NUL byte ('%s')",
		                   label, dit_error_quote(q, sizeof q, nm, nl, 120));
	if (!st && o->n == o->cap) {
		size_t ncap = o->cap ? 2 * o->cap : 16;
		json_name *nn = realloc(o->name, ncap * sizeof *nn);
		if (!nn)
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", label);
		else {
			o->name = nn;
			o->cap = ncap;
		}
	}
	if (!st) {
		json_name *e = &o->name[o->n];
		if (!(e->s = malloc(nl + 1)))
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", label);
		else {
			memcpy(e->s, nm, nl + 1);
			e->len = nl;
			o->n++;
		}
	}
	json_object_put(js);
	return st;
}

/* Rejects an object holding the same member name twice, at any depth (json-c keeps
 * the last one silently, which would let a file say two things at once), and member
 * names holding a NUL byte. text has already parsed as JSON, so the scan only tracks
 * strings and nesting; each object's names are sorted when it closes (n log n, so a
 * hostile file with millions of members costs no more than parsing it). */
static dit_status json_unique_names(const char *label, const char *text, size_t len, dit_error *err)
{
	enum { MAX_DEPTH = 64 };
	json_names stack[MAX_DEPTH];
	int is_obj[MAX_DEPTH], want_name[MAX_DEPTH];
	int depth = 0;
	dit_status st = DIT_OK;
	json_tokener *tok = json_tokener_new();
	if (!tok)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", label);
	for (size_t i = 0; i < len && !st; i++) {
		char c = text[i];
		if (c == '{' || c == '[') {
			if (depth == MAX_DEPTH) {
				st = dit_error_set(err, DIT_EFORMAT, "%s: JSON nested too deeply",
				                   label);
				break;
			}
			stack[depth] = (json_names){0};
			is_obj[depth] = c == '{';
			want_name[depth] = c == '{';
			depth++;
		} else if ((c == '}' || c == ']') && depth > 0) {
			depth--;
			st = json_names_close(&stack[depth], label, st, err);
		} else if (c == ',' && depth > 0 && is_obj[depth - 1]) {
			want_name[depth - 1] = 1;
		} else if (c == '\'') {
			/* json-c takes single-quoted strings even in strict mode; JSON does not */
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: not strict JSON (single-quoted string)", label);
		} else if (c == '"') {
			size_t b = i++;
			while (i < len && text[i] != '"')
				i += text[i] == '\\' ? 2 : 1;
			if (i >= len) {
				st = dit_error_set(err, DIT_EFORMAT, "%s: unterminated string",
				                   label);
				break;
			}
			if (depth == 0 || !is_obj[depth - 1] || !want_name[depth - 1])
				continue;
			want_name[depth - 1] = 0;
			st =
			    json_names_add(&stack[depth - 1], tok, label, text + b, i + 1 - b, err);
		}
	}
	while (depth > 0) {
		depth--;
		json_names_close(&stack[depth], label, DIT_EFORMAT, err);
	}
	json_tokener_free(tok);
	return st;
}

dit_status dit_io_parse_json_object(const char *label, const char *text, size_t len,
                                    struct json_object **out, dit_error *err)
{
	*out = NULL;
	if (len > (size_t)INT_MAX - 1)
		return dit_error_set(err, DIT_EFORMAT, "%s: file is implausibly large (%zu bytes)",
		                     label, len);
	json_tokener *tok = json_tokener_new();
	if (!tok)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", label);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	struct json_object *root = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	dit_status st = DIT_OK;
	if (!root || jerr != json_tokener_success) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: not valid JSON: %s", label,
		                   jerr == json_tokener_continue ? "unexpected end of data"
		                                                 : json_tokener_error_desc(jerr));
	} else if (!json_object_is_type(root, json_type_object)) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: JSON is not an object", label);
	} else {
		for (size_t i = end; i < len; i++) {
			if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' &&
			    text[i] != '\r') {
				st = dit_error_set(err, DIT_EFORMAT,
				                   "%s: trailing bytes after the JSON object",
				                   label);
				break;
			}
		}
	}
	if (!st)
		st = json_unique_names(label, text, end, err);
	if (st != DIT_OK) {
		json_object_put(root);
		return st;
	}
	*out = root;
	return DIT_OK;
}
