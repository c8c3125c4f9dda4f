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

/* The lines of a Paje file: the untimed events (definitions) and the timed ones, each
 * in file order, after a header of head bytes. */
typedef struct paje_lines {
	sort_line *defs, *timed;
	size_t nd, nt;
	size_t head;
	int sorted; /* the timed events are in time order already */
} paje_lines;

/* The whole file at path into *buf (NUL-terminated), *len its bytes. A file that
 * cannot be opened or is empty: DIT_OK with *buf NULL (nothing converted). */
static dit_status file_read(const char *path, char **buf, long *len, dit_error *err)
{
	*buf = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return DIT_OK;
	fseek(f, 0, SEEK_END);
	*len = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = *len > 0 ? malloc((size_t)*len + 1) : NULL;
	size_t got = b ? fread(b, 1, (size_t)*len, f) : 0;
	fclose(f);
	if (*len <= 0 || !b || got != (size_t)*len) {
		free(b);
		return *len <= 0 ? DIT_OK : dit_error_set(err, DIT_EIO, "%s: cannot read it", path);
	}
	b[*len] = 0;
	*buf = b;
	return DIT_OK;
}

/* One header line: %EventDef NAME ID opens an event's definition, its field lines
 * follow (tpos[ID]: the position of its Time field, -1 none), %EndEventDef closes it;
 * *cur the event being defined (-1: none), *field its fields so far. */
static void header_line(const char *p, int tpos[SORT_MAX_DEFS], int *cur, int *field)
{
	char name[64];
	int id;
	if (sscanf(p, "%%EventDef %63s %d", name, &id) == 2 && id >= 0 && id < SORT_MAX_DEFS) {
		*cur = id;
		*field = 0;
		tpos[*cur] = -1;
	} else if (strncmp(p, "%EndEventDef", 12) == 0) {
		*cur = -1;
	} else if (*cur >= 0) {
		char fname[64];
		if (sscanf(p, "%% %63s", fname) == 1 && strcmp(fname, "Time") == 0)
			tpos[*cur] = *field;
		(*field)++;
	}
}

/* The lines of buf (len bytes) into pl, whose arrays hold a line each. */
static void lines_split(char *buf, long len, paje_lines *pl)
{
	/* the Time field's position of every event id (-1: none, -2: not defined) */
	int tpos[SORT_MAX_DEFS];
	for (int i = 0; i < SORT_MAX_DEFS; i++)
		tpos[i] = -2;
	int cur = -1, field = 0;
	double last = -1e300;
	pl->sorted = 1;
	for (char *p = buf, *end = buf + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *e = nl ? nl + 1 : end;
		if (*p == '%') { /* the header: %EventDef NAME ID, its fields, %EndEventDef */
			header_line(p, tpos, &cur, &field);
			pl->head = (size_t)(e - buf);
		} else if (e - p > 1) {
			int id = atoi(p);
			int tp = id >= 0 && id < SORT_MAX_DEFS ? tpos[id] : -1;
			sort_line l = {p, (size_t)(e - p), 0.0, pl->nt};
			if (tp >= 0) {
				l.t = line_time(p, e, tp);
				pl->sorted &= l.t >= last;
				last = l.t > last ? l.t : last;
				pl->timed[pl->nt++] = l;
			} else {
				pl->defs[pl->nd++] = l;
			}
		}
		p = e;
	}
}

/* path rewritten atomically: the header of buf, the definitions, the timed events
 * sorted stably by time. */
static dit_status lines_write(const char *path, const char *buf, paje_lines *pl, dit_error *err)
{
	qsort(pl->timed, pl->nt, sizeof *pl->timed, cmp_line);
	dit_io_atomic a;
	dit_status st = dit_io_atomic_open(&a, path, err);
	if (!st)
		st = dit_io_atomic_write(&a, buf, pl->head, err);
	for (size_t i = 0; i < pl->nd && !st; i++)
		st = dit_io_atomic_write(&a, pl->defs[i].p, pl->defs[i].n, err);
	for (size_t i = 0; i < pl->nt && !st; i++)
		st = dit_io_atomic_write(&a, pl->timed[i].p, pl->timed[i].n, err);
	if (!st)
		st = dit_io_atomic_commit(&a, err);
	dit_io_atomic_abort(&a);
	return st;
}

dit_status dit_trace_sort_paje(const char *path, dit_error *err)
{
	char *buf;
	long len = 0;
	dit_status st = file_read(path, &buf, &len, err);
	if (st != DIT_OK || !buf)
		return st;
	size_t nlines = 0;
	for (long i = 0; i < len; i++)
		nlines += buf[i] == '\n';
	paje_lines pl = {.defs = malloc((nlines + 1) * sizeof *pl.defs),
	                 .timed = malloc((nlines + 1) * sizeof *pl.timed)};
	if (!pl.defs || !pl.timed)
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	if (!st) {
		lines_split(buf, len, &pl);
		if (!pl.sorted)
			st = lines_write(path, buf, &pl, err);
	}
	free(buf);
	free(pl.defs);
	free(pl.timed);
	return st;
}
