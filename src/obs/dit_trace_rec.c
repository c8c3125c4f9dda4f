/* Reading tasks.rec, StarPU's task records (starpu_fxt_tool's), into the tasks of a
 * tr_trace; and the small parsing helpers the trace readers share (dit_trace_priv.h). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dit_input.h"
#include "dit_trace_priv.h"

dit_status dit_trace_open(const char *path, FILE **f, dit_error *err)
{
	int fd;
	uint64_t size;
	dit_status st = dit_input_open(path, NULL, &fd, &size, err);
	if (st)
		return st;
	if (!(*f = fdopen(fd, "r"))) {
		close(fd);
		return dit_error_set(err, DIT_EIO, "%s: cannot read: %s", path, strerror(errno));
	}
	return DIT_OK;
}

long dit_trace_getline(FILE *f, char **line, size_t *cap)
{
	size_t n = 0;
	for (int c; (c = getc_unlocked(f)) != EOF;) {
		if (c == 0)
			return -2; /* binary: no trace holds a NUL byte */
		if (n + 2 > *cap) {
			if (*cap >= DIT_TRACE_MAX_LINE)
				return -2;
			size_t grown = *cap ? *cap * 2 : 256;
			char *p = realloc(*line, grown);
			if (!p)
				return -2;
			*line = p;
			*cap = grown;
		}
		(*line)[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (!n)
		return -1;
	(*line)[n] = 0;
	return (long)n;
}

int dit_trace_grow(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 64;
	void *q = realloc(*p, c * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

/* Parses all of s as a number; 0 on success. */
int dit_trace_parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno == ERANGE || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

int dit_trace_parse_ll(const char *s, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || errno == ERANGE)
		return -1;
	*out = v;
	return 0;
}

void dit_trace_chomp(char *s)
{
	size_t n = strlen(s);
	while (n > 0 &&
	       (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

/* ------------------------------------------------------------------ tasks.rec */

enum {
	K_NAME,
	K_MODEL,
	K_JOB,
	K_WORKER,
	K_START,
	K_END,
	K_FOOTPRINT,
	K_GFLOP,
	K_ITER,
	K_HANDLES,
	K_DEPENDS,
	K_COUNT
};
static const char *const rec_keys[K_COUNT] = {"Name",      "Model",   "JobId",     "WorkerId",
                                              "StartTime", "EndTime", "Footprint", "GFlop",
                                              "Iteration", "Handles", "DependsOn"};

typedef struct tr_rec {
	unsigned seen; /* bit per key */
	int bad;
	char *name, *model, *footprint, *handles;
	long long *deps; /* DependsOn: the jobs it waited for */
	int ndeps;
	long long job, worker, step;
	double start, end, gflop;
} tr_rec;

static void rec_reset(tr_rec *r)
{
	free(r->name);
	free(r->model);
	free(r->footprint);
	free(r->handles);
	free(r->deps);
	memset(r, 0, sizeof *r);
	r->job = -1;
	r->step = -1;
	r->gflop = -1;
}

/* Ends the current record: an executed task becomes a tr_task. -1: out of memory. */
static int rec_flush(tr_trace *t, tr_rec *r)
{
	const unsigned exec = 1u << K_WORKER | 1u << K_START | 1u << K_END;
	if (!(r->seen & exec)) {
		rec_reset(r); /* a task that did not run (or not a task) */
		return 0;
	}
	if ((r->seen & exec) != exec || r->bad || r->worker < 0 || r->worker >= MAX_ID ||
	    r->end < r->start) {
		t->skipped++;
		rec_reset(r);
		return 0;
	}
	if (dit_trace_grow((void **)&t->tasks, &t->cap_tasks, t->ntasks, sizeof *t->tasks) != 0)
		return -1;
	tr_task *k = &t->tasks[t->ntasks++];
	k->start = r->start;
	k->end = r->end;
	k->worker = (int)r->worker;
	k->job = r->job;
	k->gflop = r->gflop;
	k->name = r->name;
	k->model = r->model;
	k->footprint = r->footprint;
	k->handles = r->handles;
	k->step = (int)r->step;
	k->deps = r->deps;
	k->ndeps = r->ndeps;
	r->deps = NULL;
	r->name = r->model = r->footprint = r->handles = NULL;
	rec_reset(r);
	return 0;
}

static int rec_line(tr_trace *t, tr_rec *r, char *line)
{
	dit_trace_chomp(line);
	if (!*line)
		return rec_flush(t, r);
	char *colon = strchr(line, ':');
	if (!colon)
		return 0;
	*colon = '\0';
	char *v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	int k;
	for (k = 0; k < K_COUNT; k++)
		if (strcmp(line, rec_keys[k]) == 0)
			break;
	if (k == K_COUNT)
		return 0;
	/* A key seen twice starts a new record: StarPU omits the blank line after some
	 * records. */
	if (r->seen & 1u << k) {
		if (rec_flush(t, r) != 0)
			return -1;
	}
	r->seen |= 1u << k;
	char **str = NULL;
	switch (k) {
	case K_NAME: str = &r->name; break;
	case K_MODEL: str = &r->model; break;
	case K_FOOTPRINT: str = &r->footprint; break;
	case K_HANDLES: str = &r->handles; break;
	case K_ITER: /* "step" or "step block": the step */
		r->step = strtoll(v, NULL, 10);
		if (r->step < 0 || r->step > (1 << 30))
			r->step = -1;
		break;
	case K_JOB:
		if (dit_trace_parse_ll(v, &r->job) != 0)
			r->job = -1; /* only shown, never needed */
		break;
	case K_DEPENDS: /* job ids separated by spaces */
		free(r->deps);
		r->deps = NULL;
		r->ndeps = 0;
		for (char *p = v, *e;; p = e) {
			long long d = strtoll(p, &e, 10);
			if (e == p)
				break;
			long long *n = realloc(r->deps, (size_t)(r->ndeps + 1) * sizeof *n);
			if (!n)
				return -1;
			r->deps = n;
			r->deps[r->ndeps++] = d;
		}
		break;
	case K_WORKER: r->bad |= dit_trace_parse_ll(v, &r->worker) != 0; break;
	case K_START: r->bad |= dit_trace_parse_double(v, &r->start) != 0; break;
	case K_END: r->bad |= dit_trace_parse_double(v, &r->end) != 0; break;
	case K_GFLOP:
		if (dit_trace_parse_double(v, &r->gflop) != 0 || r->gflop < 0)
			r->gflop = -1;
		break;
	}
	if (str) {
		free(*str);
		*str = strdup(v);
		if (!*str)
			return -1;
	}
	return 0;
}

dit_status dit_trace_read_tasks(tr_trace *t, const char *path, dit_error *err)
{
	FILE *f = NULL;
	dit_status ost = dit_trace_open(path, &f, err);
	if (ost)
		return ost;
	tr_rec r = {0};
	rec_reset(&r);
	char *line = NULL;
	size_t cap = 0;
	dit_status st = DIT_OK;
	long n;
	while ((n = dit_trace_getline(f, &line, &cap)) >= 0) {
		if (rec_line(t, &r, line) != 0) {
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
			break;
		}
	}
	if (st == DIT_OK && n == -2)
		st = dit_error_set(err, DIT_EFORMAT, "%s: a NUL byte or a line over %zu bytes: not a trace", path,
		                   DIT_TRACE_MAX_LINE);
	if (st == DIT_OK && ferror(f))
		st = dit_error_set(err, DIT_EIO, "%s: read failed", path);
	if (st == DIT_OK && rec_flush(t, &r) != 0)
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	rec_reset(&r);
	free(line);
	fclose(f);
	return st;
}
