/* trace.json from the parsed trace (dit_trace_priv.h): Chrome trace events for
 * Perfetto, one row per worker, the transfers on non-overlapping lanes of their links,
 * counter tracks of the links. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_io.h"
#include "dit_trace.h"
#include "dit_trace_priv.h"

/* Process ids of the two groups of rows in trace.json. */
#define PID_WORKERS 1
#define PID_LINKS   2
#define PID_MEMORY  3

/* ------------------------------------------------------------------ JSON output */

typedef struct json_out {
	dit_io_atomic a;
	dit_status st;
	dit_error *err;
	size_t n;
	char buf[1 << 16];
} json_out;

static void out_flush(json_out *o)
{
	if (o->st == DIT_OK && o->n)
		o->st = dit_io_atomic_write(&o->a, o->buf, o->n, o->err);
	o->n = 0;
}

static void out_put(json_out *o, const char *s, size_t len)
{
	while (len) {
		if (o->n == sizeof o->buf)
			out_flush(o);
		size_t k = sizeof o->buf - o->n;
		if (k > len)
			k = len;
		memcpy(o->buf + o->n, s, k);
		o->n += k;
		s += k;
		len -= k;
	}
}

static void out_lit(json_out *o, const char *s)
{
	out_put(o, s, strlen(s));
}

static void out_fmt(json_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_fmt(json_out *o, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (k > 0)
		out_put(o, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* Length of the valid UTF-8 sequence at p (2 to 4 bytes), or 0. */
static size_t utf8_len(const unsigned char *p)
{
	size_t n;
	uint32_t cp;
	if ((p[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* s as a JSON string; bytes that are not UTF-8 become U+FFFD. */
static void out_str(json_out *o, const char *s)
{
	out_lit(o, "\"");
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		if (*p == '"' || *p == '\\') {
			char e[2] = {'\\', (char)*p++};
			out_put(o, e, 2);
		} else if (*p < 0x20 || *p == 0x7f) {
			out_fmt(o, "\\u%04x", *p++);
		} else if (*p < 0x80) {
			out_put(o, (const char *)p++, 1);
		} else {
			size_t n = utf8_len(p);
			if (n) {
				out_put(o, (const char *)p, n);
				p += n;
			} else {
				out_lit(o, "\\ufffd");
				p++;
			}
		}
	}
	out_lit(o, "\"");
}

static void out_meta(json_out *o, int pid, int tid, const char *what, const char *name, int sort)
{
	out_fmt(o,
	        ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_name\",\"args\":{\"name\":",
	        pid, tid, what);
	out_str(o, name);
	out_fmt(o,
	        "}},\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_sort_index\","
	        "\"args\":{\"sort_index\":%d}}",
	        pid, tid, what, sort);
}

static int cmp_task(const void *a, const void *b)
{
	const tr_task *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->job > y->job) - (x->job < y->job);
}

static int cmp_xfer(const void *a, const void *b)
{
	const tr_xfer *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/* A transfer's start or end, for the counter tracks. */
typedef struct xfer_edge {
	double t; /* ms */
	int node; /* its destination */
	int d;    /* +1 start, -1 end */
	unsigned long long bytes;
} xfer_edge;

static int cmp_edge(const void *a, const void *b)
{
	const xfer_edge *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->d - y->d; /* ends first at a tie */
}

/* Counter tracks of the links process: per destination node the transfers in flight
 * and the MiB that arrived so far, one point at each transfer's start and end. */
static void write_counters(json_out *o, const tr_trace *t)
{
	if (!t->nxfers || t->nnodes > 64)
		return;
	xfer_edge *e = malloc(2 * t->nxfers * sizeof *e);
	if (!e)
		return;
	size_t n = 0;
	for (size_t i = 0; i < t->nxfers; i++) {
		const tr_xfer *x = &t->xfers[i];
		if (x->dst < 0 || x->dst >= t->nnodes || !(x->end >= x->start))
			continue;
		e[n++] = (xfer_edge){x->start, x->dst, +1, 0};
		e[n++] = (xfer_edge){x->end, x->dst, -1, x->bytes};
	}
	qsort(e, n, sizeof *e, cmp_edge);
	int inflight[64] = {0};
	unsigned long long arrived[64] = {0};
	for (size_t i = 0; i < n && o->st == DIT_OK; i++) {
		int d = e[i].node;
		inflight[d] += e[i].d;
		arrived[d] += e[i].bytes;
		out_fmt(o, ",\n{\"ph\":\"C\",\"pid\":%d,\"ts\":%.3f,\"name\":", PID_LINKS,
		        e[i].t * 1e3);
		char name[160];
		snprintf(name, sizeof name, "transfers in flight to %s", t->nodes[d]);
		out_str(o, name);
		out_fmt(o, ",\"args\":{\"transfers\":%d}}", inflight[d]);
		if (e[i].d < 0) {
			out_fmt(o, ",\n{\"ph\":\"C\",\"pid\":%d,\"ts\":%.3f,\"name\":", PID_LINKS,
			        e[i].t * 1e3);
			snprintf(name, sizeof name, "MiB arrived at %s", t->nodes[d]);
			out_str(o, name);
			out_fmt(o, ",\"args\":{\"MiB\":%.3f}}", (double)arrived[d] / (1 << 20));
		}
	}
	free(e);
}

/* The memory process: per memory node the MiB StarPU has allocated there (its memory
 * manager's "use" variable), one point per sample of paje.trace. */
static void write_memory(json_out *o, const tr_trace *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nmem; i++)
		n += t->mem[i].node < t->nnodes;
	if (!n)
		return;
	out_fmt(o,
	        ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\","
	        "\"args\":{\"name\":\"memory\"}}",
	        PID_MEMORY);
	out_fmt(o,
	        ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\","
	        "\"args\":{\"sort_index\":2}}",
	        PID_MEMORY);
	for (size_t i = 0; i < t->nmem && o->st == DIT_OK; i++) {
		const tr_mem *m = &t->mem[i];
		if (m->node >= t->nnodes)
			continue;
		char name[160];
		snprintf(name, sizeof name, "MiB used on %s", t->nodes[m->node]);
		out_fmt(o, ",\n{\"ph\":\"C\",\"pid\":%d,\"ts\":%.3f,\"name\":", PID_MEMORY,
		        m->t * 1e3);
		out_str(o, name);
		out_fmt(o, ",\"args\":{\"MiB\":%.6f}}", m->mib);
	}
}

/* Whether the space-separated list has the word w. */
static int has_word(const char *list, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = list; n && (p = strstr(p, w)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

/* Flow events from each transfer to the first task that used its data on a worker of
 * the destination node after it arrived (tasks are in start order; at most 4096 tasks
 * looked at per transfer), and a global instant event at each step's first task. */
static void write_flows(json_out *o, const tr_trace *t, const int *row_of)
{
	long id = 0;
	for (size_t i = 0; i < t->nxfers && o->st == DIT_OK; i++) {
		const tr_xfer *x = &t->xfers[i];
		if (!x->handle)
			continue;
		size_t lo = 0, hi = t->ntasks;
		while (lo < hi) { /* the first task starting at or after the arrival */
			size_t m = (lo + hi) / 2;
			if (t->tasks[m].start < x->end)
				lo = m + 1;
			else
				hi = m;
		}
		for (size_t k = lo; k < t->ntasks && k < lo + 4096; k++) {
			const tr_task *u = &t->tasks[k];
			if (!u->handles || u->worker < 0 || u->worker >= t->nworkers ||
			    t->workers[u->worker].node != x->dst ||
			    !has_word(u->handles, x->handle))
				continue;
			double end_us = x->end * 1e3, at = end_us - 0.001;
			if (at < x->start * 1e3)
				at = x->start * 1e3;
			out_fmt(
			    o,
			    ",\n{\"ph\":\"s\",\"cat\":\"flow\",\"id\":%ld,\"pid\":%d,\"tid\":%d,"
			    "\"ts\":%.3f,\"name\":\"arrival\"}",
			    id, PID_LINKS, row_of[i] + 1, at);
			out_fmt(
			    o,
			    ",\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"id\":%ld,\"pid\":%d,"
			    "\"tid\":%d,\"ts\":%.3f,\"name\":\"arrival\"}",
			    id, PID_WORKERS, u->worker + 1, u->start * 1e3);
			id++;
			break;
		}
	}
	int last = -1;
	for (size_t k = 0; k < t->ntasks && o->st == DIT_OK; k++) {
		const tr_task *u = &t->tasks[k];
		if (u->step <= last)
			continue;
		last = u->step; /* steps begin in order */
		out_fmt(o,
		        ",\n{\"ph\":\"i\",\"s\":\"g\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,"
		        "\"name\":\"step %d\"}",
		        PID_WORKERS, u->start * 1e3, u->step);
	}
}

/* The codelet of a task: StarPU records the performance model's symbol, and every
 * ditstar codelet's model is dit_<codelet name>. */
static const char *codelet_of(const char *model)
{
	return strncmp(model, "dit_", 4) == 0 && model[4] ? model + 4 : model;
}

/* The metadata rows: the workers' process and a row per worker, then (with transfers)
 * the links' process and a row per lane (rows[2 r], rows[2 r + 1]: row r's link and
 * lane; link_pairs[2 l], [2 l + 1]: link l's nodes). */
static void write_rows(json_out *o, const tr_trace *t, int nrows, const int *rows,
                       const int *link_pairs)
{
	out_fmt(o,
	        "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\","
	        "\"args\":{\"name\":\"workers\"}}",
	        PID_WORKERS);
	out_fmt(o,
	        ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\","
	        "\"args\":{\"sort_index\":0}}",
	        PID_WORKERS);
	for (int i = 0; i < t->nworkers; i++)
		if (t->workers[i].name)
			out_meta(o, PID_WORKERS, i + 1, "thread", t->workers[i].name, i);
	if (nrows) {
		out_fmt(o,
		        ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\","
		        "\"args\":{\"name\":\"links\"}}",
		        PID_LINKS);
		out_fmt(o,
		        ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\","
		        "\"args\":{\"sort_index\":1}}",
		        PID_LINKS);
	}
	for (int r = 0; r < nrows; r++) {
		int l = rows[2 * r], s = link_pairs[2 * l], d = link_pairs[2 * l + 1];
		char name[256];
		if (rows[2 * r + 1])
			snprintf(name, sizeof name, "%s -> %s (%d)", t->nodes[s], t->nodes[d],
			         rows[2 * r + 1] + 1);
		else
			snprintf(name, sizeof name, "%s -> %s", t->nodes[s], t->nodes[d]);
		out_meta(o, PID_LINKS, r + 1, "thread", name, r);
	}
}

/* A slice per task on its worker's row. */
static void write_tasks(json_out *o, const tr_trace *t)
{
	for (size_t i = 0; i < t->ntasks && o->st == DIT_OK; i++) {
		const tr_task *k = &t->tasks[i];
		const char *model = k->model ? k->model : "";
		const char *name = k->name ? k->name : k->model ? k->model : "task";
		out_fmt(o,
		        ",\n{\"ph\":\"X\",\"cat\":\"task\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
		        "\"dur\":%.3f,\"name\":",
		        PID_WORKERS, k->worker + 1, k->start * 1e3, (k->end - k->start) * 1e3);
		out_str(o, name);
		out_lit(o, ",\"args\":{\"codelet\":");
		out_str(o, codelet_of(model));
		out_lit(o, ",\"model\":");
		out_str(o, model);
		if (k->job >= 0)
			out_fmt(o, ",\"job\":%lld", k->job);
		if (k->footprint) {
			out_lit(o, ",\"footprint\":");
			out_str(o, k->footprint);
		}
		if (k->gflop >= 0)
			out_fmt(o, ",\"gflop\":%.9g", k->gflop);
		out_lit(o, "}}");
	}
}

/* A slice per transfer on its row (row_of), named by its data. */
static void write_xfers(json_out *o, const tr_trace *t, const int *row_of, const int *rows,
                        const int *link_pairs)
{
	for (size_t i = 0; i < t->nxfers && o->st == DIT_OK; i++) {
		const tr_xfer *x = &t->xfers[i];
		out_fmt(o,
		        ",\n{\"ph\":\"X\",\"cat\":\"transfer\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,"
		        "\"dur\":%.3f,\"name\":",
		        PID_LINKS, row_of[i] + 1, x->start * 1e3, (x->end - x->start) * 1e3);
		out_str(o, x->data ? x->data : "transfer");
		int l = rows[2 * row_of[i]];
		char link[256];
		snprintf(link, sizeof link, "%s -> %s", t->nodes[link_pairs[2 * l]],
		         t->nodes[link_pairs[2 * l + 1]]);
		out_fmt(o, ",\"args\":{\"bytes\":%llu,\"kind\":\"%s\",\"link\":", x->bytes,
		        x->kind);
		out_str(o, link);
		if (x->data) {
			out_lit(o, ",\"data\":");
			out_str(o, x->data);
		}
		if (x->handle) {
			out_lit(o, ",\"handle\":");
			out_str(o, x->handle);
		}
		out_lit(o, "}}");
	}
}

/* Transfers on a link that overlap in time go to separate rows ("lanes", the link's
 * name then " (2)", " (3)": Perfetto draws no overlapping slices on one row). row_of[i]:
 * transfer i's row; rows[2 r], rows[2 r + 1]: row r's link and lane. */
static void write_json(json_out *o, tr_trace *t, const int *row_of, int nrows, const int *rows,
                       const int *link_pairs)
{
	out_lit(o, "{\"traceEvents\":[\n");
	write_rows(o, t, nrows, rows, link_pairs);
	write_tasks(o, t);
	write_xfers(o, t, row_of, rows, link_pairs);
	write_counters(o, t);
	write_memory(o, t);
	write_flows(o, t, row_of);
	out_lit(o, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"source\":\"StarPU FxT\","
	           "\"memory_nodes\":[");
	for (int i = 0; i < t->nnodes; i++) {
		if (i)
			out_lit(o, ",");
		out_str(o, t->nodes[i]);
	}
	out_fmt(o, "],\"tasks\":%zu,\"transfers\":%zu,\"skipped_records\":%zu}}\n", t->ntasks,
	        t->nxfers, t->skipped);
	out_flush(o);
}

/* The rows of the transfers: their links and the links' lanes. */
typedef struct xfer_rows {
	int *link_of; /* [transfer] its link */
	int *pairs;   /* [2 l], [2 l + 1]: link l's source and destination nodes */
	int nlinks;
	int *row_of; /* [transfer] its row */
	int *rows;   /* [2 r], [2 r + 1]: row r's link and lane */
	int nrows;
} xfer_rows;

/* One link per (source, destination) pair of the transfers, in node order. */
static void links_assign(const tr_trace *t, xfer_rows *xr)
{
	int *pairs = xr->pairs, *link_of = xr->link_of;
	for (size_t i = 0; i < t->nxfers; i++) {
		int l = 0;
		while (l < xr->nlinks &&
		       (pairs[2 * l] != t->xfers[i].src || pairs[2 * l + 1] != t->xfers[i].dst))
			l++;
		if (l == xr->nlinks) {
			/* insert in (source, destination) order */
			while (l > 0 && (pairs[2 * (l - 1)] > t->xfers[i].src ||
			                 (pairs[2 * (l - 1)] == t->xfers[i].src &&
			                  pairs[2 * (l - 1) + 1] > t->xfers[i].dst))) {
				pairs[2 * l] = pairs[2 * (l - 1)];
				pairs[2 * l + 1] = pairs[2 * (l - 1) + 1];
				l--;
			}
			pairs[2 * l] = t->xfers[i].src;
			pairs[2 * l + 1] = t->xfers[i].dst;
			xr->nlinks++;
			for (size_t j = 0; j < i; j++)
				if (link_of[j] >= l)
					link_of[j]++;
		}
		link_of[i] = l;
	}
}

/* Lanes: each transfer on the first lane of its link free at its start (the transfers
 * are in start order); the rows are the links' lanes in link order. -1: out of
 * memory. */
static int lanes_assign(const tr_trace *t, xfer_rows *xr)
{
	size_t nx = t->nxfers + 1;
	xr->row_of = malloc(nx * sizeof *xr->row_of);
	xr->rows = malloc(2 * nx * sizeof *xr->rows);
	double *lane_end = malloc(nx * sizeof *lane_end);
	int *lane_link = malloc(nx * sizeof *lane_link), *lane_num = malloc(nx * sizeof *lane_num),
	    *nlanes = calloc((size_t)xr->nlinks + 1, sizeof *nlanes);
	int rc = xr->row_of && xr->rows && lane_end && lane_link && lane_num && nlanes ? 0 : -1;
	int nq = 0; /* lanes of every link, in the order they open */
	for (size_t i = 0; rc == 0 && i < t->nxfers; i++) {
		int q = 0;
		while (q < nq &&
		       !(lane_link[q] == xr->link_of[i] && lane_end[q] <= t->xfers[i].start))
			q++;
		if (q == nq) {
			lane_link[nq] = xr->link_of[i];
			lane_num[nq++] = nlanes[xr->link_of[i]]++;
		}
		lane_end[q] = t->xfers[i].end;
		xr->row_of[i] = lane_num[q];
	}
	for (int l = 0; rc == 0 && l < xr->nlinks; l++) { /* nlanes[l]: the link's first row */
		int n = nlanes[l];
		nlanes[l] = xr->nrows;
		for (int lane = 0; lane < n; lane++, xr->nrows++) {
			xr->rows[2 * xr->nrows] = l;
			xr->rows[2 * xr->nrows + 1] = lane;
		}
	}
	for (size_t i = 0; rc == 0 && i < t->nxfers; i++)
		xr->row_of[i] += nlanes[xr->link_of[i]];
	free(lane_end);
	free(lane_link);
	free(lane_num);
	free(nlanes);
	return rc;
}

/* trace.json written atomically at path from t and its transfers' rows. */
static dit_status json_file_write(const char *path, tr_trace *t, const xfer_rows *xr,
                                  dit_error *err)
{
	json_out *o = malloc(sizeof *o);
	if (!o)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	o->n = 0;
	o->err = err;
	o->st = dit_io_atomic_open(&o->a, path, err);
	dit_status st = o->st;
	if (st == DIT_OK) {
		write_json(o, t, xr->row_of, xr->nrows, xr->rows, xr->pairs);
		st = o->st == DIT_OK ? dit_io_atomic_commit(&o->a, err) : o->st;
		dit_io_atomic_abort(&o->a);
	}
	free(o);
	return st;
}

dit_status dit_trace_write_json(const char *dir, dit_error *err)
{
	tr_trace t;
	memset(&t, 0, sizeof t);
	char *tasks_path = dit_io_join(dir, TASKS_NAME);
	char *paje_path = dit_io_join(dir, PAJE_NAME);
	char *json_path = dit_io_join(dir, JSON_NAME);
	xfer_rows xr = {0};
	dit_status st = DIT_OK;
	if (!tasks_path || !paje_path || !json_path)
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
	else
		st = dit_trace_parse(&t, tasks_path, paje_path, err);
	if (st == DIT_OK) {
		if (t.ntasks)
			qsort(t.tasks, t.ntasks, sizeof *t.tasks, cmp_task);
		if (t.nxfers)
			qsort(t.xfers, t.nxfers, sizeof *t.xfers, cmp_xfer);
		xr.link_of = malloc((t.nxfers + 1) * sizeof *xr.link_of);
		xr.pairs = malloc(2 * (t.nxfers + 1) * sizeof *xr.pairs);
		if (!xr.link_of || !xr.pairs)
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", json_path);
	}
	if (st == DIT_OK) {
		links_assign(&t, &xr);
		if (lanes_assign(&t, &xr) != 0)
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", json_path);
	}
	if (st == DIT_OK)
		st = json_file_write(json_path, &t, &xr, err);
	free(xr.link_of);
	free(xr.pairs);
	free(xr.row_of);
	free(xr.rows);
	dit_trace_parsed_free(&t);
	free(tasks_path);
	free(paje_path);
	free(json_path);
	return st;
}
