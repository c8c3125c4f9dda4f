/* StarPU's calibration folder and bus files, checked before StarPU reads them (see
 * dit_starpu_home.h). */
#define _GNU_SOURCE /* gethostname */
#include "dit_starpu_home.h"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define BUS_FILE_MAX (16u << 20) /* bytes: StarPU's are a few KiB */
#define HOME_ROOM    (1u << 20)  /* bytes free StarPU needs to save its calibration */
#define BUS_TRIES    3           /* reads of a bus file that does not parse */

/* The folders StarPU keeps its calibration in, outermost first: n of them in dirs. */
#define HOME_PATH (PATH_MAX + 32)
typedef struct home_dirs {
	char dirs[5][HOME_PATH];
	int n;
	char bus[HOME_PATH];
} home_dirs;

static void home_folders(home_dirs *h)
{
	const char *pm = getenv("STARPU_PERF_MODEL_DIR"), *home = getenv("STARPU_HOME");
	h->n = 0;
	if (pm && *pm) {
		snprintf(h->dirs[h->n++], PATH_MAX, "%s", pm);
	} else {
		const char *base = home && *home ? home : getenv("HOME");
		if (!base || !*base)
			base = ".";
		snprintf(h->dirs[h->n++], PATH_MAX, "%s/.starpu", base);
		snprintf(h->dirs[h->n++], PATH_MAX, "%s/.starpu/sampling", base);
	}
	char s[PATH_MAX];
	snprintf(s, sizeof s, "%s", h->dirs[h->n - 1]);
	snprintf(h->bus, HOME_PATH, "%s/bus", s);
	snprintf(h->dirs[h->n++], HOME_PATH, "%s/bus", s);
	snprintf(h->dirs[h->n++], HOME_PATH, "%s/codelets", s);
}

/* The nearest folder above path that exists, into above (HOME_PATH bytes): 0 when none
 * does (a relative path whose first part is missing). */
static int nearest_existing(const char *path, char *above)
{
	snprintf(above, HOME_PATH, "%s", path);
	for (;;) {
		char *slash = strrchr(above, '/');
		if (!slash)
			return 0;
		*slash = 0;
		if (slash == above)
			snprintf(above, HOME_PATH, "/");
		struct stat sb;
		if (stat(above, &sb) == 0)
			return S_ISDIR(sb.st_mode);
		if (!strcmp(above, "/"))
			return 0;
	}
}

/* The folders: each a folder or absent; the deepest existing one (or, none existing, the
 * folder StarPU would make them in) writable, with room. */
static dit_status folders_check(const home_dirs *h, dit_error *err)
{
	const char *deepest = NULL;
	for (int i = 0; i < h->n; i++) {
		struct stat sb;
		if (stat(h->dirs[i], &sb) != 0) {
			if (errno == ENOENT)
				continue;
			return dit_error_set(err, DIT_EIO,
			                     "%s: %s (StarPU keeps its calibration there)",
			                     h->dirs[i], strerror(errno));
		}
		if (!S_ISDIR(sb.st_mode))
			return dit_error_set(
			    err, DIT_EINVAL,
			    "%s is not a folder (StarPU keeps its calibration there): "
			    "remove it, or set STARPU_HOME to another folder",
			    h->dirs[i]);
		if (i != h->n - 1 || !deepest) /* bus/ and codelets/ are siblings */
			deepest = h->dirs[i];
	}
	char above[HOME_PATH];
	if (!deepest) { /* StarPU makes them: under the nearest folder that exists */
		if (!nearest_existing(h->dirs[0], above))
			return DIT_OK;
		deepest = above;
	}
	if (access(deepest, W_OK | X_OK) != 0)
		return dit_error_set(err, DIT_EINVAL,
		                     "%s: %s (StarPU saves its calibration there): set STARPU_HOME "
		                     "to a folder of yours",
		                     deepest, strerror(errno));
	struct statvfs vs;
	if (statvfs(deepest, &vs) == 0 && (unsigned long long)vs.f_bavail * vs.f_frsize < HOME_ROOM)
		return dit_error_set(err, DIT_EIO,
		                     "%s: no room left (StarPU saves its calibration there): free "
		                     "some, or set STARPU_HOME to another folder",
		                     deepest);
	return DIT_OK;
}

/* Reads path whole into a NUL-terminated buffer (*text, free it; NULL when the file is
 * absent): a regular file of at most BUS_FILE_MAX bytes, opened without blocking. */
static dit_status read_bus_file(const char *path, char **text, dit_error *err)
{
	*text = NULL;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT
		           ? DIT_OK
		           : dit_error_set(err, DIT_EIO, "%s: %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > (off_t)BUS_FILE_MAX) {
		close(fd);
		return dit_error_set(
		    err, DIT_EINVAL,
		    "%s: not a regular file of StarPU's bus calibration: remove it "
		    "(StarPU measures the bus again)",
		    path);
	}
	char *buf = malloc((size_t)sb.st_size + 1);
	size_t got = 0;
	for (ssize_t r = 1; buf && got < (size_t)sb.st_size && r > 0;) {
		r = read(fd, buf + got, (size_t)sb.st_size - got);
		got += r > 0 ? (size_t)r : 0;
	}
	close(fd);
	if (!buf)
		return dit_error_set(err, DIT_ENOMEM, "out of memory reading %s", path);
	buf[got] = 0;
	*text = buf;
	return DIT_OK;
}

/* Whether token [p, e) is a number of kind: 'u' an unsigned integer, 'f' a float (nan
 * and inf included, as StarPU writes them). */
static int token_ok(const char *p, const char *e, char kind)
{
	if (p == e)
		return 0;
	char tok[64];
	size_t n = (size_t)(e - p);
	if (n >= sizeof tok)
		return 0;
	memcpy(tok, p, n);
	tok[n] = 0;
	char *end;
	if (kind == 'u') {
		for (size_t i = 0; i < n; i++)
			if (tok[i] < '0' || tok[i] > '9')
				return 0;
		return 1;
	}
	strtod(tok, &end);
	return *end == 0;
}

/* Checks the lines of a bus file of the given type; 0, or the 1-based line that is
 * not as StarPU writes it. config: "N # what" lines; affinity: a "# GPU\tNUMA0\t..."
 * header, then lines of 1 + NUMA-count unsigned integers; latency, bandwidth: rows
 * of floats, each as long as the first. */
static int bus_lines_ok(char *text, const char *type)
{
	int line = 0, want = -1, numbers = 0, header = 0;
	for (char *l = text, *next; l && *l; l = next) {
		next = strchr(l, '\n');
		if (next)
			*next++ = 0;
		line++;
		if (*l == '#') {
			if (!strcmp(type, "affinity") && !header) {
				header = 1;
				want = 1;
				for (const char *q = l; (q = strstr(q, "NUMA")) != NULL; q += 4)
					want++;
			}
			continue;
		}
		if (!*l && !next)
			break;
		int count = 0;
		const char *p = l;
		char kind = !strcmp(type, "latency") || !strcmp(type, "bandwidth") ? 'f' : 'u';
		while (*p) {
			while (*p == ' ' || *p == '\t')
				p++;
			if (!*p || (*p == '#' && !strcmp(type, "config")))
				break;
			const char *e = p;
			while (*e && *e != ' ' && *e != '\t')
				e++;
			if (!token_ok(p, e, kind))
				return line;
			count++;
			p = e;
		}
		if (!strcmp(type, "config")) {
			if (count != 1)
				return line;
		} else if (!strcmp(type, "affinity")) {
			if (!header || count != want)
				return line;
		} else if (count > 0) {
			if (want < 0)
				want = count;
			else if (count != want)
				return line;
		}
		numbers += count > 0;
	}
	if (!strcmp(type, "config") && numbers == 0)
		return line + 1; /* cut before its first value */
	if (!strcmp(type, "affinity") && !header)
		return line + 1;
	return 0;
}

/* The bus files of this host under h->bus. */
int dit_starpu_host(char *host, size_t len)
{
	const char *forced = getenv("STARPU_HOSTNAME");
	if (forced && *forced) {
		snprintf(host, len, "%s", forced);
		return 0;
	}
	memset(host, 0, len);
	if (gethostname(host, len - 1) != 0)
		return -1;
	char *dot = strchr(host, '.');
	if (dot)
		*dot = 0;
	return 0;
}

void dit_starpu_bus_dir(char *buf, size_t len)
{
	home_dirs h;
	home_folders(&h);
	snprintf(buf, len, "%s", h.bus);
}

int dit_starpu_bus_opencl_nodes(void)
{
	home_dirs h;
	home_folders(&h);
	char host[256], path[HOME_PATH + 300], line[256];
	if (dit_starpu_host(host, sizeof host) != 0)
		return -1;
	snprintf(path, sizeof path, "%s/%s.config", h.bus, host);
	FILE *f = fopen(path, "r");
	int n = -1;
	while (f && n < 0 && fgets(line, sizeof line, f)) {
		char *end;
		long v = strtol(line, &end, 10);
		if (end != line && strstr(end, "Number of OpenCL nodes") && v >= 0 && v < 4096)
			n = (int)v;
	}
	if (f)
		fclose(f);
	return n;
}

void dit_runtime_paths(FILE *out)
{
	home_dirs h;
	home_folders(&h);
	char host[256] = "?";
	dit_starpu_host(host, sizeof host);
	fprintf(out,
	        "StarPU tools   %s (starpu_fxt_tool, starpu_tasks_rec_complete, "
	        "starpu_perfmodel_display, starpu_perfmodel_plot, ...)\n",
	        DIT_STARPU_BINDIR);
	fprintf(out, "StarPU models  %s (the performance models, per codelet and host %s)\n",
	        h.dirs[h.n - 1], host);
	fprintf(out, "StarPU bus     %s (%s.config, .bandwidth, .latency, .affinity)\n", h.bus,
	        host);
}

static dit_status bus_check(const home_dirs *h, dit_error *err)
{
	char host[256];
	if (dit_starpu_host(host, sizeof host) != 0)
		return DIT_OK;
#ifdef DIT_SIMGRID
	/* a simulation reads no affinity */
	static const char *const types[] = {"config", "latency", "bandwidth"};
#else
	static const char *const types[] = {"config", "affinity", "latency", "bandwidth"};
#endif
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		char path[HOME_PATH + 300], *text;
		snprintf(path, sizeof path, "%s/%s.%s", h->bus, host, types[i]);
		/* another StarPU process measuring the bus may be writing the file: StarPU
		 * releases its lock before the last buffer reaches it, so a file cut short
		 * is read again (0.2 s, then 0.4 s later) before it is called corrupt */
		int bad = 0;
		for (int attempt = 0; attempt < BUS_TRIES; attempt++) {
			if (attempt) {
				struct timespec ts = {0, 200000000L * attempt};
				nanosleep(&ts, NULL);
			}
			dit_status st = read_bus_file(path, &text, err);
			if (st)
				return st;
			if (!text)
				break; /* not measured yet */
			bad = bus_lines_ok(text, types[i]);
			free(text);
			if (!bad)
				break;
		}
		if (bad)
			return dit_error_set(
			    err, DIT_EINVAL,
			    "%s: corrupt StarPU bus calibration (line %d): rm '%s/%s'.* "
			    "and StarPU measures the bus again",
			    path, bad, h->bus, host);
	}
	return DIT_OK;
}

dit_status dit_starpu_home_check(dit_error *err)
{
	home_dirs h;
	home_folders(&h);
	dit_status st = folders_check(&h, err);
	return st ? st : bus_check(&h, err);
}
