/* `ditstar trace summarize`: see dit_trace_summary.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "dit_io.h"
#include "dit_trace_priv.h"
#include "dit_trace_summary.h"

#define MAX_WORKERS 256
#define MAX_LINKS   32
#define MAX_STEPS   4096

typedef struct task {
	long long job;
	int worker, step;
	double start, end; /* seconds */
	long long *deps;
	int ndeps;
	double cp; /* longest chain ending here (seconds), < 0: not yet */
} task;

typedef struct span {
	double a, b;
} span;

typedef struct summary {
	task *t;
	size_t n, cap;
	span *xf; /* transfers */
	size_t nxf, capxf;
	char link[MAX_LINKS][96];
	double link_bytes[MAX_LINKS], link_s[MAX_LINKS];
	int nlinks;
	char wname[MAX_WORKERS][64];
} summary;

static int cmp_job(const void *a, const void *b)
{
	long long x = ((const task *)a)->job, y = ((const task *)b)->job;
	return (x > y) - (x < y);
}

static int cmp_span(const void *a, const void *b)
{
	double x = ((const span *)a)->a, y = ((const span *)b)->a;
	return (x > y) - (x < y);
}

static void free_summary(summary *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->t[i].deps);
	free(s->t);
	free(s->xf);
}

/* The tasks, transfers and workers of the folder, as the project's trace readers give
 * them (dit_trace_priv.h: tasks.rec and paje.trace), in seconds. */
static dit_status read_trace(summary *s, const char *dir, dit_error *err)
{
	char *tp = dit_io_join(dir, TASKS_NAME), *pp = dit_io_join(dir, PAJE_NAME);
	tr_trace t;
	memset(&t, 0, sizeof t);
	dit_status st = !tp || !pp ? dit_error_set(err, DIT_ENOMEM, "out of memory")
	                           : dit_trace_parse(&t, tp, pp, err);
	if (!st && !t.ntasks)
		st = dit_error_set(err, DIT_EFORMAT, "%s: no executed task in it", tp);
	if (!st && !(s->t = calloc(t.ntasks, sizeof *s->t)))
		st = dit_error_set(err, DIT_ENOMEM, "out of memory");
	for (size_t i = 0; !st && i < t.ntasks; i++) {
		tr_task *k = &t.tasks[i];
		if (k->worker >= MAX_WORKERS) {
			st = dit_error_set(err, DIT_EFORMAT, "%s: worker %d out of range", tp,
			                   k->worker);
			break;
		}
		s->t[s->n++] = (task){.job = k->job,
		                      .worker = k->worker,
		                      .step = k->step,
		                      .start = k->start * 1e-3,
		                      .end = k->end * 1e-3,
		                      .deps = k->deps,
		                      .ndeps = k->ndeps,
		                      .cp = -1};
		k->deps = NULL; /* the summary's now */
	}
	if (!st && t.nxfers && !(s->xf = malloc(t.nxfers * sizeof *s->xf)))
		st = dit_error_set(err, DIT_ENOMEM, "out of memory");
	for (size_t i = 0; !st && i < t.nxfers; i++) {
		const tr_xfer *x = &t.xfers[i];
		s->xf[s->nxf++] = (span){x->start * 1e-3, x->end * 1e-3};
		char link[96];
		snprintf(link, sizeof link, "%s -> %s", t.nodes[x->src], t.nodes[x->dst]);
		int l = 0;
		while (l < s->nlinks && strcmp(s->link[l], link) != 0)
			l++;
		if (l == s->nlinks && l < MAX_LINKS)
			snprintf(s->link[s->nlinks++], sizeof s->link[0], "%s", link);
		if (l < MAX_LINKS) {
			s->link_bytes[l] += (double)x->bytes;
			s->link_s[l] += (x->end - x->start) * 1e-3;
		}
	}
	for (int w = 0; !st && w < t.nworkers && w < MAX_WORKERS; w++)
		if (t.workers[w].name)
			snprintf(s->wname[w], sizeof s->wname[0], "%s", t.workers[w].name);
	if (!st)
		qsort(s->t, s->n, sizeof *s->t, cmp_job);
	dit_trace_parsed_free(&t);
	free(tp);
	free(pp);
	return st;
}

/* Merges spans (sorted by start) in place into disjoint ones; returns their count. */
static size_t merge(span *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_span);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && v[i].a <= v[k - 1].b) {
			if (v[i].b > v[k - 1].b)
				v[k - 1].b = v[i].b;
		} else {
			v[k++] = v[i];
		}
	}
	return k;
}

/* Seconds of [a, b] covered by the disjoint sorted spans u[0..n). */
static double covered(const span *u, size_t n, double a, double b)
{
	double c = 0;
	for (size_t i = 0; i < n && u[i].a < b; i++) {
		double lo = u[i].a > a ? u[i].a : a, hi = u[i].b < b ? u[i].b : b;
		if (hi > lo)
			c += hi - lo;
	}
	return c;
}

static const task *find(const summary *s, long long job)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (s->t[m].job < job)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < s->n && s->t[lo].job == job ? &s->t[lo] : NULL;
}

/* The longest chain of dependent tasks, by relaxation over the job order (a task
 * depends on earlier-submitted ones; passes repeat until nothing changes). */
static double critical_path(summary *s)
{
	for (size_t i = 0; i < s->n; i++)
		s->t[i].cp = s->t[i].end - s->t[i].start;
	double best = 0;
	for (int pass = 0, changed = 1; changed && pass < 64; pass++) {
		changed = 0;
		for (size_t i = 0; i < s->n; i++) {
			task *t = &s->t[i];
			double dur = t->end - t->start, m = 0;
			for (int d = 0; d < t->ndeps; d++) {
				const task *p = find(s, t->deps[d]);
				if (p && p != t && p->cp > m)
					m = p->cp;
			}
			if (m + dur > t->cp + 1e-12) {
				t->cp = m + dur;
				changed = 1;
			}
		}
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->t[i].cp > best)
			best = s->t[i].cp;
	return best;
}

static json_object *jd(double v)
{
	return json_object_new_double(v);
}

/* Per worker (nw of them): its name, and its seconds busy, in all and over the
 * makespan make. */
static json_object *workers_json(const summary *s, int nw, double make)
{
	double busy[MAX_WORKERS] = {0};
	for (size_t i = 0; i < s->n; i++)
		busy[s->t[i].worker] += s->t[i].end - s->t[i].start;
	json_object *workers = json_object_new_array();
	for (int w = 0; w < nw; w++) {
		json_object *o = json_object_new_object();
		char nm[64];
		snprintf(nm, sizeof nm, "%s", s->wname[w][0] ? s->wname[w] : "worker");
		if (!s->wname[w][0])
			snprintf(nm, sizeof nm, "worker %d", w);
		json_object_object_add(o, "name", json_object_new_string(nm));
		json_object_object_add(o, "busy_seconds", jd(busy[w]));
		json_object_object_add(o, "busy_fraction", jd(make > 0 ? busy[w] / make : 0));
		json_object_array_add(workers, o);
	}
	return workers;
}

/* Per step: its window, from the end of the step before (the first: the run's first
 * task) to the end of its last task (the steps' windows cut the makespan in order,
 * where a step's own first task may run long before: the look-ahead submits the next
 * step's tables early), and each worker's busy share of that window (every task's
 * time inside it, whatever its step). */
static json_object *steps_json(const summary *s, int nsteps, int nw, double t0)
{
	double *end = calloc((size_t)nsteps + 1, sizeof *end);
	double *busy = calloc((size_t)(nw ? nw : 1), sizeof *busy);
	json_object *steps = NULL;
	if (!end || !busy)
		goto out;
	steps = json_object_new_array();
	for (int k = 0; k < nsteps; k++)
		end[k] = -1e300;
	for (size_t i = 0; i < s->n; i++) {
		const task *t = &s->t[i];
		if (t->step >= 0 && t->step < nsteps && t->end > end[t->step])
			end[t->step] = t->end;
	}
	double from = t0;
	for (int k = 0; k < nsteps; k++) {
		if (end[k] < from)
			continue;
		double to = end[k], d = to - from;
		for (int w = 0; w < nw; w++)
			busy[w] = 0;
		for (size_t i = 0; i < s->n; i++) {
			const task *t = &s->t[i];
			double a = t->start > from ? t->start : from, b = t->end < to ? t->end : to;
			if (b > a && t->worker >= 0 && t->worker < nw)
				busy[t->worker] += b - a;
		}
		json_object *o = json_object_new_object(), *wb = json_object_new_array();
		json_object_object_add(o, "step", json_object_new_int(k));
		json_object_object_add(o, "span_seconds", jd(d));
		for (int w = 0; w < nw; w++)
			json_object_array_add(wb, jd(d > 0 ? busy[w] / d : 0));
		json_object_object_add(o, "busy_fraction", wb);
		json_object_array_add(steps, o);
		from = to;
	}
out:
	free(end);
	free(busy);
	return steps;
}

/* The transfers against the moments a task runs: their seconds, the share of them a
 * task covers, the seconds no task covers; then the bytes and seconds of each link.
 * NULL: out of memory. */
static json_object *transfers_json(const summary *s)
{
	span *cu = malloc((s->n ? s->n : 1) * sizeof *cu);
	span *xu = malloc((s->nxf ? s->nxf : 1) * sizeof *xu);
	if (!cu || !xu) {
		free(cu);
		free(xu);
		return NULL;
	}
	for (size_t i = 0; i < s->n; i++)
		cu[i] = (span){s->t[i].start, s->t[i].end};
	size_t ncu = merge(cu, s->n);
	double xsum = 0, hidden = 0;
	for (size_t i = 0; i < s->nxf; i++) {
		xsum += s->xf[i].b - s->xf[i].a;
		hidden += covered(cu, ncu, s->xf[i].a, s->xf[i].b);
		xu[i] = s->xf[i];
	}
	size_t nxu = merge(xu, s->nxf);
	double exposed = 0;
	for (size_t i = 0; i < nxu; i++)
		exposed += (xu[i].b - xu[i].a) - covered(cu, ncu, xu[i].a, xu[i].b);
	free(cu);
	free(xu);
	json_object *xo = json_object_new_object(), *links = json_object_new_array();
	json_object_object_add(xo, "count", json_object_new_int64((int64_t)s->nxf));
	json_object_object_add(xo, "seconds", jd(xsum));
	json_object_object_add(xo, "hidden_fraction", jd(xsum > 0 ? hidden / xsum : 1.0));
	json_object_object_add(xo, "exposed_seconds", jd(exposed));
	for (int l = 0; l < s->nlinks; l++) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "link", json_object_new_string(s->link[l]));
		json_object_object_add(o, "bytes",
		                       json_object_new_int64((int64_t)s->link_bytes[l]));
		json_object_object_add(o, "seconds", jd(s->link_s[l]));
		json_object_array_add(links, o);
	}
	json_object_object_add(xo, "links", links);
	return xo;
}

/* The summary as JSON: the tasks and makespan, the workers, the steps, the transfers
 * and the critical path. NULL (err set): out of memory. */
static json_object *build(summary *s, dit_error *err)
{
	double t0 = s->t[0].start, t1 = s->t[0].end;
	int nw = 0, nsteps = 0;
	for (size_t i = 0; i < s->n; i++) {
		const task *t = &s->t[i];
		t0 = t->start < t0 ? t->start : t0;
		t1 = t->end > t1 ? t->end : t1;
		nw = t->worker + 1 > nw ? t->worker + 1 : nw;
		if (t->step >= 0 && t->step < MAX_STEPS && t->step + 1 > nsteps)
			nsteps = t->step + 1;
	}
	double make = t1 - t0;
	json_object *root = json_object_new_object();
	json_object_object_add(root, "tasks", json_object_new_int64((int64_t)s->n));
	json_object_object_add(root, "makespan_seconds", jd(make));
	json_object_object_add(root, "workers", workers_json(s, nw, make));
	json_object *steps = steps_json(s, nsteps, nw, t0);
	json_object *xo = steps ? transfers_json(s) : NULL;
	if (!xo) {
		json_object_put(root);
		json_object_put(steps);
		dit_error_set(err, DIT_ENOMEM, "out of memory");
		return NULL;
	}
	json_object_object_add(root, "steps", steps);
	json_object_object_add(root, "transfers", xo);
	double cp = critical_path(s);
	json_object_object_add(root, "critical_path_seconds", jd(cp));
	json_object_object_add(root, "makespan_over_critical_path", jd(cp > 0 ? make / cp : 0));
	/* the work bound: every task's seconds spread over the workers (no schedule beats
	 * it, nor the critical path: the larger is the bound) */
	double work = 0;
	for (size_t i = 0; i < s->n; i++)
		work += s->t[i].end - s->t[i].start;
	double wb = nw > 0 ? work / nw : 0;
	json_object_object_add(root, "work_bound_seconds", jd(wb));
	json_object_object_add(root, "makespan_over_work_bound", jd(wb > 0 ? make / wb : 0));
	return root;
}

#define G(o, k) json_object_object_get(o, k)
#define D(o, k) json_object_get_double(G(o, k))

static void print_text(FILE *out, json_object *j)
{
	fprintf(out,
	        "%lld tasks, makespan %.4f s; critical path %.4f s (makespan %.2fx it); work "
	        "bound %.4f s (%.2fx)\n",
	        (long long)json_object_get_int64(G(j, "tasks")), D(j, "makespan_seconds"),
	        D(j, "critical_path_seconds"), D(j, "makespan_over_critical_path"),
	        D(j, "work_bound_seconds"), D(j, "makespan_over_work_bound"));
	json_object *w = G(j, "workers");
	for (size_t i = 0; i < json_object_array_length(w); i++) {
		json_object *o = json_object_array_get_idx(w, i);
		fprintf(out, "  %-12s busy %.4f s (%.1f%%), idle %.1f%%\n",
		        json_object_get_string(G(o, "name")), D(o, "busy_seconds"),
		        100 * D(o, "busy_fraction"), 100 * (1 - D(o, "busy_fraction")));
	}
	json_object *st = G(j, "steps");
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *o = json_object_array_get_idx(st, i), *b = G(o, "busy_fraction");
		fprintf(out, "  step %d: %.4f s, busy", json_object_get_int(G(o, "step")),
		        D(o, "span_seconds"));
		for (size_t k = 0; k < json_object_array_length(b); k++)
			fprintf(out, " %.0f%%",
			        100 * json_object_get_double(json_object_array_get_idx(b, k)));
		fputc('\n', out);
	}
	json_object *x = G(j, "transfers"), *l = G(x, "links");
	fprintf(out, "transfers: %lld, %.4f s, %.1f%% hidden under compute, %.4f s exposed\n",
	        (long long)json_object_get_int64(G(x, "count")), D(x, "seconds"),
	        100 * D(x, "hidden_fraction"), D(x, "exposed_seconds"));
	for (size_t i = 0; i < json_object_array_length(l); i++) {
		json_object *o = json_object_array_get_idx(l, i);
		fprintf(out, "  %s: %.1f MiB in %.4f s\n", json_object_get_string(G(o, "link")),
		        (double)json_object_get_int64(G(o, "bytes")) / (1 << 20), D(o, "seconds"));
	}
}

dit_status dit_trace_summary_json(const char *dir, struct json_object **out, dit_error *err)
{
	*out = NULL;
	summary *s = calloc(1, sizeof *s);
	if (!s)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	dit_status st = read_trace(s, dir, err);
	if (!st && !(*out = build(s, err)))
		st = err ? err->code : DIT_ENOMEM;
	free_summary(s);
	free(s);
	return st;
}

dit_status dit_stats_add_trace(const char *stats_path, const char *dir, dit_error *err)
{
	json_object *sum = NULL, *stats = NULL;
	dit_status st = dit_trace_summary_json(dir, &sum, err);
	if (st)
		return st;
	if (!(stats = json_object_from_file(stats_path))) {
		json_object_put(sum);
		return dit_error_set(err, DIT_EFORMAT, "%s: cannot read it back", stats_path);
	}
	/* the trace's measure of hidden transfer time replaces the bus model's estimate */
	json_object *x = json_object_object_get(stats, "transfers"),
	            *tx = json_object_object_get(sum, "transfers");
	if (x && tx) {
		json_object_object_add(
		    x, "hidden_fraction",
		    json_object_get(json_object_object_get(tx, "hidden_fraction")));
		json_object_object_add(x, "hidden_fraction_from", json_object_new_string("trace"));
	}
	json_object_object_add(stats, "trace", sum);
	const char *text = json_object_to_json_string_ext(
	    stats, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	st = text ? dit_io_write_file_atomic(stats_path, text, strlen(text), err)
	          : dit_error_set(err, DIT_ENOMEM, "%s: out of memory", stats_path);
	json_object_put(stats);
	return st;
}

dit_status dit_trace_summarize(const char *dir, int json, FILE *out, dit_error *err)
{
	json_object *j = NULL;
	dit_status st = dit_trace_summary_json(dir, &j, err);
	if (st)
		return st;
	if (json)
		fprintf(out, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY));
	else
		print_text(out, j);
	json_object_put(j);
	return DIT_OK;
}
