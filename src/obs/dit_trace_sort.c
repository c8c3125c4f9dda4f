/* paje.trace in time order: StarPU merges its threads' FxT buffers into the Paje file
 * almost, not always, in time order (a scheduler counter event tens of microseconds
 * late), which Paje readers (pj_dump, ViTE, StarVZ) refuse. The definitions (events
 * without a Time field) keep their order and go first; the timed events follow, sorted
 * stably by time. A file already in order is left as it is. */
#include "dit_trace_sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_io.h"

#define SORT_MAX_DEFS 256

typedef struct sort_line {
	const char *p;
	size_t n;
	double t;
	size_t seq;
} sort_line;

static int cmp_line(const void *a, const void *b)
{
	const sort_line *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The time of a body line whose event has Time as field tpos (0: the first after the
 * id); -1 when the line has fewer fields. */
static double line_time(const char *p, const char *end, int tpos)
{
	int f = -1; /* the id is field -1 */
	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p == end)
			break;
		if (f == tpos)
			return strtod(p, NULL);
		while (p < end && *p != ' ' && *p != '\t')
			p++;
		f++;
	}
	return -1.0;
}

dit_status dit_trace_sort_paje(const char *path, dit_error *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return DIT_OK; /* nothing converted */
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = len > 0 ? malloc((size_t)len + 1) : NULL;
	size_t got = buf ? fread(buf, 1, (size_t)len, f) : 0;
	fclose(f);
	if (len <= 0 || !buf || got != (size_t)len) {
		free(buf);
		return len <= 0 ? DIT_OK : dit_error_set(err, DIT_EIO, "%s: cannot read it", path);
	}
	buf[len] = 0;
	/* the Time field's position of every event id (-1: none, -2: not defined) */
	int tpos[SORT_MAX_DEFS];
	for (int i = 0; i < SORT_MAX_DEFS; i++)
		tpos[i] = -2;
	size_t nlines = 0;
	for (long i = 0; i < len; i++)
		nlines += buf[i] == '\n';
	sort_line *defs = malloc((nlines + 1) * sizeof *defs),
	          *timed = malloc((nlines + 1) * sizeof *timed);
	if (!defs || !timed) {
		free(buf);
		free(defs);
		free(timed);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	}
	size_t nd = 0, nt = 0, head = 0;
	int cur = -1, field = 0, sorted = 1;
	double last = -1e300;
	for (char *p = buf, *end = buf + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *e = nl ? nl + 1 : end;
		if (*p == '%') { /* the header: %EventDef NAME ID, its fields, %EndEventDef */
			char name[64];
			int id;
			if (sscanf(p, "%%EventDef %63s %d", name, &id) == 2 && id >= 0 &&
			    id < SORT_MAX_DEFS) {
				cur = id;
				field = 0;
				tpos[cur] = -1;
			} else if (strncmp(p, "%EndEventDef", 12) == 0) {
				cur = -1;
			} else if (cur >= 0) {
				char fname[64];
				if (sscanf(p, "%% %63s", fname) == 1 && strcmp(fname, "Time") == 0)
					tpos[cur] = field;
				field++;
			}
			head = (size_t)(e - buf);
		} else if (e - p > 1) {
			int id = atoi(p);
			int tp = id >= 0 && id < SORT_MAX_DEFS ? tpos[id] : -1;
			sort_line l = {p, (size_t)(e - p), 0.0, nt};
			if (tp >= 0) {
				l.t = line_time(p, e, tp);
				sorted &= l.t >= last;
				last = l.t > last ? l.t : last;
				timed[nt++] = l;
			} else {
				defs[nd++] = l;
			}
		}
		p = e;
	}
	dit_status st = DIT_OK;
	if (!sorted) {
		qsort(timed, nt, sizeof *timed, cmp_line);
		dit_io_atomic a;
		st = dit_io_atomic_open(&a, path, err);
		if (!st)
			st = dit_io_atomic_write(&a, buf, head, err);
		for (size_t i = 0; i < nd && !st; i++)
			st = dit_io_atomic_write(&a, defs[i].p, defs[i].n, err);
		for (size_t i = 0; i < nt && !st; i++)
			st = dit_io_atomic_write(&a, timed[i].p, timed[i].n, err);
		if (!st)
			st = dit_io_atomic_commit(&a, err);
		dit_io_atomic_abort(&a);
	}
	free(buf);
	free(defs);
	free(timed);
	return st;
}
