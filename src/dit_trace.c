/* Traces. Before the run, StarPU is asked (through its environment variables) to record
 * an FxT trace into the trace directory. After shutdown, StarPU's own converter
 * (starpu_fxt_generate_trace, the code behind starpu_fxt_tool) turns the raw file into
 * paje.trace and the .rec files in the same directory, and this file builds trace.json
 * from them: tasks come from tasks.rec, workers, memory nodes and transfers from the
 * containers and links of paje.trace (StarPU writes intra-node transfers nowhere else;
 * comms.rec only holds MPI messages). */
#define _POSIX_C_SOURCE 200809L

#include "dit_trace.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <starpu.h>

#include "dit_io.h"
#include "dit_trace_sort.h"

/* StarPU names the raw file <STARPU_FXT_SUFFIX>_<id>, and ditstar runs one StarPU
 * instance (id 0). */
#define RAW_SUFFIX "prof_file"
#define RAW_NAME   "prof_file_0"
/* StarPU keeps the raw file's path in a 1024-byte buffer. */
#define TRACE_DIR_MAX 900

#define JSON_NAME  "trace.json"
#define TASKS_NAME "tasks.rec"
#define PAJE_NAME  "paje.trace"

/* Process ids of the two groups of rows in trace.json. */
#define PID_WORKERS 1
#define PID_LINKS   2
/* Worker ids and memory node numbers beyond this are taken for garbage. */
#define MAX_ID 4096

#ifdef STARPU_USE_FXT
/* The converter's output paths in its options, and how many. */
#define TRACE_NPATHS 12
static void trace_paths(struct starpu_fxt_options *o, char **paths[TRACE_NPATHS])
{
	char **p[TRACE_NPATHS] = {
	    &o->out_paje_path,      &o->dag_path,          &o->tasks_path,    &o->comms_path,
	    &o->number_events_path, &o->data_path,         &o->papi_path,     &o->anim_path,
	    &o->states_path,        &o->distrib_time_path, &o->activity_path, &o->sched_tasks_path};
	memcpy(paths, p, sizeof p);
}

/* Every file a trace writes into dir (the converter's default names, trace.json and
 * the raw file) must be absent or a regular file: a planted link is never followed. */
static dit_status trace_check_names(const char *dir, dit_error *err)
{
	struct starpu_fxt_options *o = calloc(1, sizeof *o);
	if (!o)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
	starpu_fxt_options_init(o);
	char **paths[TRACE_NPATHS];
	trace_paths(o, paths);
	const char *more[2] = {JSON_NAME, RAW_NAME};
	dit_status st = DIT_OK;
	for (size_t i = 0; i < TRACE_NPATHS + 2 && !st; i++) {
		const char *name = i < TRACE_NPATHS ? *paths[i] : more[i - TRACE_NPATHS];
		if (!name)
			continue;
		char *p = dit_io_join(dir, name);
		st = p ? dit_io_check_target("--trace", p, err)
		       : dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
		free(p);
	}
	starpu_fxt_options_shutdown(o);
	free(o);
	return st;
}

/* Removes the conversion directory tmp and whatever it still holds (plain names). */
static void trace_remove_tmp(const char *tmp)
{
	DIR *d = opendir(tmp);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *p = dit_io_join(tmp, e->d_name);
		if (p)
			unlink(p);
		free(p);
	}
	if (d)
		closedir(d);
	rmdir(tmp);
}
#endif

dit_status dit_trace_begin(const char *dir, dit_env_var env[DIT_TRACE_ENV], dit_error *err)
{
	if (!dir || !*dir)
		return dit_error_set(err, DIT_EINVAL, "--trace needs a directory");
#ifndef STARPU_USE_FXT
	return dit_error_set(err, DIT_EUNSUPPORTED,
	                     "%s: cannot record a trace: StarPU was built without FxT", dir);
#else
	if (strlen(dir) > TRACE_DIR_MAX)
		return dit_error_set(err, DIT_EINVAL, "%.64s...: trace directory path too long",
		                     dir);
	dit_status st = dit_io_mkdir_p(dir, err);
	if (st)
		return st;
	struct stat sb;
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return dit_error_set(err, DIT_EIO, "%s: not a directory", dir);
	if (access(dir, W_OK | X_OK) != 0)
		return dit_error_set(err, DIT_EIO, "%s: trace directory is not writable: %s", dir,
		                     strerror(errno));
	if ((st = trace_check_names(dir, err)) != DIT_OK)
		return st;

	/* A raw file left by an earlier run would pass for this run's. */
	char *raw = dit_io_join(dir, RAW_NAME);
	if (!raw)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
	if (unlink(raw) != 0 && errno != ENOENT) {
		dit_status st =
		    dit_error_set(err, DIT_EIO, "%s: cannot remove: %s", raw, strerror(errno));
		free(raw);
		return st;
	}
	free(raw);

	/* The conversion runs in dit_trace_end, not at shutdown. The runtime sets these
	 * for the run only (over any value the environment has: the trace is the run's). */
	static const char *const names[DIT_TRACE_ENV] = {
	    "STARPU_FXT_TRACE", "STARPU_FXT_PREFIX", "STARPU_FXT_SUFFIX", "STARPU_GENERATE_TRACE"};
	const char *values[DIT_TRACE_ENV] = {"1", dir, RAW_SUFFIX, "0"};
	for (int i = 0; i < DIT_TRACE_ENV; i++) {
		env[i].name = names[i];
		env[i].text = values[i];
		env[i].force = 1;
	}
	return DIT_OK;
#endif
}

dit_status dit_trace_end(const char *dir, dit_error *err)
{
#ifndef STARPU_USE_FXT
	return dit_error_set(err, DIT_EUNSUPPORTED,
	                     "%s: cannot record a trace: StarPU was built without FxT", dir);
#else
	dit_status st = DIT_OK;
	char *tmp = NULL;
	char *raw = dit_io_join(dir, RAW_NAME);
	struct starpu_fxt_options *o = calloc(1, sizeof *o);
	if (!raw || !o) {
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
		goto out;
	}
	struct stat sb;
	if (stat(raw, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0) {
		st = dit_error_set(err, DIT_ERUNTIME, "%s: StarPU recorded no trace", raw);
		goto out;
	}

	/* The converter opens its outputs with fopen, which follows links: it writes into a
	 * fresh private directory (StarPU's own option, o->dir, would cut the joined paths
	 * at 256 bytes), and each file is then moved into dir like any other output. */
	tmp = dit_io_join(dir, ".convert.XXXXXX");
	if (!tmp || !mkdtemp(tmp)) {
		st = tmp ? dit_error_set(err, DIT_EIO, "%s: cannot create a directory: %s", dir,
		                         strerror(errno))
		         : dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
		free(tmp);
		tmp = NULL;
		goto out;
	}
	starpu_fxt_options_init(o);
	char **paths[TRACE_NPATHS];
	char *names[TRACE_NPATHS] = {NULL};
	trace_paths(o, paths);
	for (size_t i = 0; i < TRACE_NPATHS && !st; i++) {
		if (!*paths[i])
			continue;
		char *p = dit_io_join(tmp, *paths[i]);
		if (!p)
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
		names[i] = *paths[i];
		*paths[i] = p;
	}
	if (!st) {
		o->ninputfiles = 1;
		o->filenames[0] = raw;
		starpu_fxt_generate_trace(o);
		/* StarPU's merge of its threads' events is not always in time order */
		if (o->out_paje_path)
			st = dit_trace_sort_paje(o->out_paje_path, err);
	}
	for (size_t i = 0; i < TRACE_NPATHS; i++) {
		struct stat fs;
		char *to = names[i] && !st ? dit_io_join(dir, names[i]) : NULL;
		if (names[i] && !st && !to)
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
		if (to && lstat(*paths[i], &fs) == 0)
			st = dit_io_move_into(*paths[i], to, err);
		free(to);
		free(names[i]);
	}
	starpu_fxt_options_shutdown(o);
	if (st)
		goto out;

	st = dit_trace_write_json(dir, err);
out:
	if (tmp)
		trace_remove_tmp(tmp);
	free(tmp);
	free(o);
	free(raw);
	return st;
#endif
}

/* ------------------------------------------------------------------ the parsed trace */

typedef struct tr_task {
	double start, end; /* ms from the start of the trace */
	int worker;
	long long job; /* -1: unknown */
	char *name, *model, *footprint;
	double gflop; /* < 0: unknown */
} tr_task;

typedef struct tr_xfer {
	double start, end; /* ms; end is NAN until the end of the link is seen */
	int src, dst;      /* memory nodes */
	unsigned long long bytes;
	const char *kind;
	char *key, *data, *handle;
} tr_xfer;

enum { CT_MEMNODE, CT_MEMMANAGER, CT_THREAD, CT_WORKER };

typedef struct tr_container {
	int type;
	char *alias, *parent, *name;
} tr_container;

typedef struct tr_worker {
	char *name; /* "CPU 0"; NULL: no such worker */
	int node;   /* memory node, -1: unknown */
	char kind[32];
	char devid[32];
} tr_worker;

typedef struct tr_trace {
	tr_task *tasks;
	size_t ntasks, cap_tasks;
	tr_xfer *xfers;
	size_t nxfers, cap_xfers;
	tr_container *conts;
	size_t nconts, cap_conts;
	size_t skipped; /* records that did not parse */
	/* key of a link -> index in xfers of its latest start (open addressing) */
	size_t *keys;
	size_t cap_keys, nkeys;
	tr_worker *workers;
	int nworkers;
	char **nodes; /* memory node names */
	int nnodes;
} tr_trace;

static int grow(void **p, size_t *cap, size_t n, size_t elem)
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

static void trace_free(tr_trace *t)
{
	for (size_t i = 0; i < t->ntasks; i++) {
		free(t->tasks[i].name);
		free(t->tasks[i].model);
		free(t->tasks[i].footprint);
	}
	free(t->tasks);
	for (size_t i = 0; i < t->nxfers; i++) {
		free(t->xfers[i].key);
		free(t->xfers[i].data);
		free(t->xfers[i].handle);
	}
	free(t->xfers);
	for (size_t i = 0; i < t->nconts; i++) {
		free(t->conts[i].alias);
		free(t->conts[i].parent);
		free(t->conts[i].name);
	}
	free(t->conts);
	free(t->keys);
	for (int i = 0; i < t->nworkers; i++)
		free(t->workers[i].name);
	free(t->workers);
	for (int i = 0; i < t->nnodes; i++)
		free(t->nodes[i]);
	free(t->nodes);
}

/* Parses all of s as a number; 0 on success. */
static int parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno == ERANGE || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

static int parse_ll(const char *s, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || errno == ERANGE)
		return -1;
	*out = v;
	return 0;
}

/* The number that ends s ("mm12" -> 12), or -1. */
static int trailing_int(const char *s)
{
	size_t n = strlen(s), i = n;
	while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
		i--;
	if (i == n || n - i > 6)
		return -1;
	return atoi(s + i);
}

static void chomp(char *s)
{
	size_t n = strlen(s);
	while (n > 0 &&
	       (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

/* ------------------------------------------------------------------ tasks.rec */

enum { K_NAME, K_MODEL, K_JOB, K_WORKER, K_START, K_END, K_FOOTPRINT, K_GFLOP, K_COUNT };
static const char *const rec_keys[K_COUNT] = {"Name",      "Model",   "JobId",     "WorkerId",
                                              "StartTime", "EndTime", "Footprint", "GFlop"};

typedef struct tr_rec {
	unsigned seen; /* bit per key */
	int bad;
	char *name, *model, *footprint;
	long long job, worker;
	double start, end, gflop;
} tr_rec;

static void rec_reset(tr_rec *r)
{
	free(r->name);
	free(r->model);
	free(r->footprint);
	memset(r, 0, sizeof *r);
	r->job = -1;
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
	if (grow((void **)&t->tasks, &t->cap_tasks, t->ntasks, sizeof *t->tasks) != 0)
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
	r->name = r->model = r->footprint = NULL;
	rec_reset(r);
	return 0;
}

static int rec_line(tr_trace *t, tr_rec *r, char *line)
{
	chomp(line);
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
	case K_JOB:
		if (parse_ll(v, &r->job) != 0)
			r->job = -1; /* only shown, never needed */
		break;
	case K_WORKER: r->bad |= parse_ll(v, &r->worker) != 0; break;
	case K_START: r->bad |= parse_double(v, &r->start) != 0; break;
	case K_END: r->bad |= parse_double(v, &r->end) != 0; break;
	case K_GFLOP:
		if (parse_double(v, &r->gflop) != 0 || r->gflop < 0)
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

static dit_status read_tasks(tr_trace *t, const char *path, dit_error *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return dit_error_set(err, errno == ENOENT ? DIT_ENOTFOUND : DIT_EIO,
		                     "%s: cannot open: %s", path, strerror(errno));
	tr_rec r = {0};
	rec_reset(&r);
	char *line = NULL;
	size_t cap = 0;
	dit_status st = DIT_OK;
	while (getline(&line, &cap, f) >= 0) {
		if (rec_line(t, &r, line) != 0) {
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
			break;
		}
	}
	if (st == DIT_OK && ferror(f))
		st = dit_error_set(err, DIT_EIO, "%s: read failed", path);
	if (st == DIT_OK && rec_flush(t, &r) != 0)
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	rec_reset(&r);
	free(line);
	fclose(f);
	return st;
}

/* ------------------------------------------------------------------ paje.trace */

enum { EV_OTHER, EV_CREATE, EV_START_LINK, EV_END_LINK };
enum {
	F_TIME,
	F_ALIAS,
	F_TYPE,
	F_CONTAINER,
	F_NAME,
	F_VALUE,
	F_START_CONTAINER,
	F_END_CONTAINER,
	F_KEY,
	F_HANDLE,
	F_HNAME,
	F_COUNT
};
static const char *const paje_fields[F_COUNT] = {"Time", "Alias",  "Type",           "Container",
                                                 "Name", "Value",  "StartContainer", "EndContainer",
                                                 "Key",  "Handle", "HName"};

#define PAJE_MAX_DEFS   256
#define PAJE_MAX_TOKENS 32

typedef struct paje_def {
	long id;
	int kind;
	int nfields;
	int pos[F_COUNT]; /* token index of each field, -1: absent */
} paje_def;

typedef struct paje_state {
	paje_def defs[PAJE_MAX_DEFS];
	int ndefs;
	paje_def cur;
	int in_def;
} paje_state;

/* Splits line in place at blanks; a double-quoted token may hold blanks. */
static int tokenize(char *s, char **tok, int max)
{
	int n = 0;
	while (n < max) {
		while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
			s++;
		if (!*s)
			break;
		if (*s == '"') {
			tok[n++] = ++s;
			while (*s && *s != '"')
				s++;
		} else {
			tok[n++] = s;
			while (*s && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
				s++;
		}
		if (!*s)
			break;
		*s++ = '\0';
	}
	return n;
}

static const paje_def *paje_find(const paje_state *ps, long id)
{
	for (int i = 0; i < ps->ndefs; i++)
		if (ps->defs[i].id == id)
			return &ps->defs[i];
	return NULL;
}

static void paje_header(paje_state *ps, char *line)
{
	char *tok[PAJE_MAX_TOKENS];
	int n = tokenize(line, tok, PAJE_MAX_TOKENS);
	if (n >= 3 && strcmp(tok[0], "%EventDef") == 0) {
		memset(&ps->cur, 0, sizeof ps->cur);
		for (int f = 0; f < F_COUNT; f++)
			ps->cur.pos[f] = -1;
		char *end;
		ps->cur.id = strtol(tok[2], &end, 10);
		ps->in_def = end != tok[2] && !*end;
		ps->cur.kind = strcmp(tok[1], "PajeCreateContainer") == 0 ? EV_CREATE
		               : strcmp(tok[1], "PajeStartLink") == 0     ? EV_START_LINK
		               : strcmp(tok[1], "PajeEndLink") == 0       ? EV_END_LINK
		                                                          : EV_OTHER;
	} else if (n >= 1 && strcmp(tok[0], "%EndEventDef") == 0) {
		if (ps->in_def) {
			paje_def *d = (paje_def *)paje_find(ps, ps->cur.id);
			if (!d && ps->ndefs < PAJE_MAX_DEFS)
				d = &ps->defs[ps->ndefs++];
			if (d)
				*d = ps->cur;
		}
		ps->in_def = 0;
	} else if (n >= 2 && strcmp(tok[0], "%") == 0 && ps->in_def) {
		ps->cur.nfields++;
		for (int f = 0; f < F_COUNT; f++)
			if (strcmp(tok[1], paje_fields[f]) == 0 && ps->cur.pos[f] < 0)
				ps->cur.pos[f] = ps->cur.nfields;
	}
}

static const tr_container *find_container(const tr_trace *t, int type, const char *alias)
{
	for (size_t i = t->nconts; i-- > 0;)
		if (t->conts[i].type == type && strcmp(t->conts[i].alias, alias) == 0)
			return &t->conts[i];
	return NULL;
}

static int memnode_of(const tr_trace *t, const char *mm_alias)
{
	const tr_container *c = find_container(t, CT_MEMMANAGER, mm_alias);
	int node = c ? trailing_int(c->alias) : -1;
	return node < MAX_ID ? node : -1;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Slot of key in t->keys (holding index + 1, 0 when empty). */
static size_t key_slot(const tr_trace *t, const char *key)
{
	size_t mask = t->cap_keys - 1, i = (size_t)hash_str(key) & mask;
	while (t->keys[i] && strcmp(t->xfers[t->keys[i] - 1].key, key) != 0)
		i = (i + 1) & mask;
	return i;
}

static int key_put(tr_trace *t, size_t idx)
{
	if (2 * (t->nkeys + 1) > t->cap_keys) {
		size_t old = t->cap_keys, *ok = t->keys;
		t->cap_keys = old ? 2 * old : 1024;
		t->keys = calloc(t->cap_keys, sizeof *t->keys);
		if (!t->keys) {
			t->keys = ok;
			t->cap_keys = old;
			return -1;
		}
		for (size_t i = 0; i < old; i++)
			if (ok[i])
				t->keys[key_slot(t, t->xfers[ok[i] - 1].key)] = ok[i];
		free(ok);
	}
	size_t s = key_slot(t, t->xfers[idx].key);
	if (!t->keys[s])
		t->nkeys++;
	t->keys[s] = idx + 1;
	return 0;
}

static const char *link_kind(const char *type)
{
	if (strcmp(type, "F") == 0)
		return "fetch";
	if (strcmp(type, "TF") == 0)
		return "task prefetch";
	if (strcmp(type, "PF") == 0)
		return "prefetch";
	if (strcmp(type, "IF") == 0)
		return "idle fetch";
	return "transfer";
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/* One event line. -1: out of memory. */
static int paje_event(tr_trace *t, const paje_def *d, char *line)
{
	char *tok[PAJE_MAX_TOKENS];
	int n = tokenize(line, tok, PAJE_MAX_TOKENS);
	const char *f[F_COUNT];
	for (int i = 0; i < F_COUNT; i++)
		f[i] = d->pos[i] >= 0 && d->pos[i] < n ? tok[d->pos[i]] : NULL;
	double time;

	if (d->kind == EV_CREATE) {
		if (!f[F_ALIAS] || !f[F_TYPE] || !f[F_CONTAINER] || !f[F_NAME])
			return 0;
		/* StarPU's container types: memory node, its memory manager, thread,
		 * worker */
		static const char *const types[] = {"Mn", "Mm", "T", "W"};
		int type = -1;
		for (int i = 0; i < 4; i++)
			if (strcmp(f[F_TYPE], types[i]) == 0)
				type = i;
		if (type < 0)
			return 0;
		if (grow((void **)&t->conts, &t->cap_conts, t->nconts, sizeof *t->conts) != 0)
			return -1;
		tr_container *c = &t->conts[t->nconts];
		c->type = type;
		c->alias = strdup(f[F_ALIAS]);
		c->parent = strdup(f[F_CONTAINER]);
		c->name = strdup(f[F_NAME]);
		t->nconts++;
		return c->alias && c->parent && c->name ? 0 : -1;
	}
	if (!f[F_TIME] || !f[F_KEY] || parse_double(f[F_TIME], &time) != 0)
		return 0;
	if (d->kind == EV_START_LINK) {
		if (!f[F_START_CONTAINER] || !f[F_TYPE])
			return 0;
		int src = memnode_of(t, f[F_START_CONTAINER]);
		long long bytes;
		if (src < 0 || !f[F_VALUE] || parse_ll(f[F_VALUE], &bytes) != 0 || bytes < 0)
			return 0;
		if (grow((void **)&t->xfers, &t->cap_xfers, t->nxfers, sizeof *t->xfers) != 0)
			return -1;
		tr_xfer *x = &t->xfers[t->nxfers];
		memset(x, 0, sizeof *x);
		x->start = time;
		x->end = NAN;
		x->src = src;
		x->dst = -1;
		x->bytes = (unsigned long long)bytes;
		x->kind = link_kind(f[F_TYPE]);
		x->key = strdup(f[F_KEY]);
		x->data = dup_or_null(f[F_HNAME]);
		x->handle = dup_or_null(f[F_HANDLE]);
		t->nxfers++;
		if (!x->key || (f[F_HNAME] && *f[F_HNAME] && !x->data) ||
		    (f[F_HANDLE] && *f[F_HANDLE] && !x->handle))
			return -1;
		return key_put(t, t->nxfers - 1);
	}
	if (d->kind == EV_END_LINK) {
		if (!f[F_END_CONTAINER] || !t->cap_keys)
			return 0;
		int dst = memnode_of(t, f[F_END_CONTAINER]);
		size_t s = key_slot(t, f[F_KEY]);
		if (dst < 0 || !t->keys[s])
			return 0;
		tr_xfer *x = &t->xfers[t->keys[s] - 1];
		if (!isnan(x->end) || time < x->start)
			return 0;
		x->end = time;
		x->dst = dst;
	}
	return 0;
}

static dit_status read_paje(tr_trace *t, const char *path, dit_error *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return dit_error_set(err, errno == ENOENT ? DIT_ENOTFOUND : DIT_EIO,
		                     "%s: cannot open: %s", path, strerror(errno));
	paje_state *ps = calloc(1, sizeof *ps);
	char *line = NULL;
	size_t cap = 0;
	dit_status st = DIT_OK;
	if (!ps)
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	while (st == DIT_OK && getline(&line, &cap, f) >= 0) {
		char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '%') {
			paje_header(ps, s);
			continue;
		}
		char *end;
		long id = strtol(s, &end, 10);
		if (end == s)
			continue;
		const paje_def *d = paje_find(ps, id);
		if (!d || d->kind == EV_OTHER)
			continue;
		if (paje_event(t, d, s) != 0)
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	}
	if (st == DIT_OK && ferror(f))
		st = dit_error_set(err, DIT_EIO, "%s: read failed", path);
	free(ps);
	free(line);
	fclose(f);
	return st;
}

/* ------------------------------------------------------------------ workers and nodes */

static int add_worker_slot(tr_trace *t, int id)
{
	if (id < t->nworkers)
		return 0;
	tr_worker *w = realloc(t->workers, (size_t)(id + 1) * sizeof *w);
	if (!w)
		return -1;
	for (int i = t->nworkers; i <= id; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].node = -1;
	}
	t->workers = w;
	t->nworkers = id + 1;
	return 0;
}

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* Workers from their containers: the name StarPU gives the container is the kind and
 * the device number ("CPU0", "OpenCL0", "CUDA0_1" for a stream), its parent the thread,
 * whose parent is the memory node. */
static int resolve_workers(tr_trace *t)
{
	for (size_t i = 0; i < t->nconts; i++) {
		const tr_container *c = &t->conts[i];
		int id = trailing_int(c->alias);
		if (c->type != CT_WORKER || id < 0 || id >= MAX_ID)
			continue;
		if (add_worker_slot(t, id) != 0)
			return -1;
		tr_worker *w = &t->workers[id];
		size_t k = strcspn(c->name, "0123456789");
		snprintf(w->kind, sizeof w->kind, "%.*s", (int)k, c->name);
		snprintf(w->devid, sizeof w->devid, "%.*s", (int)strcspn(c->name + k, "_."),
		         c->name + k);
		free(w->name);
		w->name = k > 0 && c->name[k] ? str_printf("%s %s", w->kind, c->name + k)
		                              : strdup(c->name);
		if (!w->name)
			return -1;
		const tr_container *th = find_container(t, CT_THREAD, c->parent);
		const tr_container *mn = th ? find_container(t, CT_MEMNODE, th->parent) : NULL;
		w->node = mn ? trailing_int(mn->alias) : -1;
		if (w->node >= MAX_ID)
			w->node = -1;
	}
	/* tasks on a worker the Paje trace does not know still get a row */
	for (size_t i = 0; i < t->ntasks; i++) {
		int id = t->tasks[i].worker;
		if (add_worker_slot(t, id) != 0)
			return -1;
		if (!t->workers[id].name && !(t->workers[id].name = str_printf("worker %d", id)))
			return -1;
	}
	return 0;
}

/* Memory node names as StarPU gives them ("NUMA 0", "OpenCL 0", "Disk 0"). The trace
 * does not record a node's kind, so it is inferred: a node with a device worker is that
 * device's; main memory nodes come first (StarPU numbers them before the devices'); a
 * node without workers after every device node is a disk (StarPU adds disks last, and
 * calls each "Disk 0"). */
static int name_nodes(tr_trace *t)
{
	int n = 0;
	for (size_t i = 0; i < t->nconts; i++)
		if (t->conts[i].type == CT_MEMNODE || t->conts[i].type == CT_MEMMANAGER) {
			int node = trailing_int(t->conts[i].alias);
			if (node < MAX_ID && node + 1 > n)
				n = node + 1;
		}
	for (size_t i = 0; i < t->nxfers; i++) {
		if (t->xfers[i].src + 1 > n)
			n = t->xfers[i].src + 1;
		if (t->xfers[i].dst + 1 > n)
			n = t->xfers[i].dst + 1;
	}
	for (int i = 0; i < t->nworkers; i++)
		if (t->workers[i].node + 1 > n)
			n = t->workers[i].node + 1;
	t->nodes = calloc((size_t)n + 1, sizeof *t->nodes);
	if (!t->nodes)
		return -1;
	t->nnodes = n;
	int last_worker_node = -1;
	for (int i = 0; i < t->nworkers; i++)
		if (t->workers[i].name && t->workers[i].node > last_worker_node)
			last_worker_node = t->workers[i].node;
	for (int node = 0; node < n; node++) {
		const tr_worker *dev = NULL;
		int cpus = 0;
		for (int i = 0; i < t->nworkers; i++) {
			const tr_worker *w = &t->workers[i];
			if (!w->name || w->node != node)
				continue;
			if (strcmp(w->kind, "CPU") == 0)
				cpus++;
			else if (!dev)
				dev = w;
		}
		if (dev)
			t->nodes[node] = str_printf("%s %s", dev->kind, dev->devid);
		else if (cpus || node == 0 || node < last_worker_node)
			t->nodes[node] = str_printf("NUMA %d", node);
		else
			t->nodes[node] = strdup("Disk 0");
		if (!t->nodes[node])
			return -1;
	}
	return 0;
}

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

/* The codelet of a task: StarPU records the performance model's symbol, and every
 * ditstar codelet's model is dit_<codelet name>. */
static const char *codelet_of(const char *model)
{
	return strncmp(model, "dit_", 4) == 0 && model[4] ? model + 4 : model;
}

/* Transfers on a link that overlap in time go to separate rows ("lanes", the link's
 * name then " (2)", " (3)": Perfetto draws no overlapping slices on one row). row_of[i]:
 * transfer i's row; rows[2 r], rows[2 r + 1]: row r's link and lane. */
static void write_json(json_out *o, tr_trace *t, const int *row_of, int nrows, const int *rows,
                       const int *link_pairs)
{
	out_lit(o, "{\"traceEvents\":[\n");
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
	write_counters(o, t);
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

dit_status dit_trace_write_json(const char *dir, dit_error *err)
{
	tr_trace t;
	memset(&t, 0, sizeof t);
	char *tasks_path = dit_io_join(dir, TASKS_NAME);
	char *paje_path = dit_io_join(dir, PAJE_NAME);
	char *json_path = dit_io_join(dir, JSON_NAME);
	int *link_of = NULL, *pairs = NULL, nlinks = 0, *row_of = NULL, *rows = NULL, nrows = 0;
	double *lane_end = NULL;
	json_out *o = NULL;
	dit_status st = DIT_OK;
	if (!tasks_path || !paje_path || !json_path) {
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
		goto out;
	}
	if ((st = read_tasks(&t, tasks_path, err)) != DIT_OK ||
	    (st = read_paje(&t, paje_path, err)) != DIT_OK)
		goto out;

	/* keep the transfers whose both ends were seen */
	size_t m = 0;
	for (size_t i = 0; i < t.nxfers; i++) {
		if (!isnan(t.xfers[i].end) && t.xfers[i].dst >= 0) {
			t.xfers[m++] = t.xfers[i];
		} else {
			free(t.xfers[i].key);
			free(t.xfers[i].data);
			free(t.xfers[i].handle);
		}
	}
	t.nxfers = m;
	free(t.keys);
	t.keys = NULL;
	t.cap_keys = t.nkeys = 0;

	if (resolve_workers(&t) != 0 || name_nodes(&t) != 0) {
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", json_path);
		goto out;
	}
	if (t.ntasks)
		qsort(t.tasks, t.ntasks, sizeof *t.tasks, cmp_task);
	if (t.nxfers)
		qsort(t.xfers, t.nxfers, sizeof *t.xfers, cmp_xfer);

	/* one row per (source, destination) pair, in node order */
	link_of = malloc((t.nxfers + 1) * sizeof *link_of);
	pairs = malloc(2 * (t.nxfers + 1) * sizeof *pairs);
	if (!link_of || !pairs) {
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", json_path);
		goto out;
	}
	for (size_t i = 0; i < t.nxfers; i++) {
		int l = 0;
		while (l < nlinks &&
		       (pairs[2 * l] != t.xfers[i].src || pairs[2 * l + 1] != t.xfers[i].dst))
			l++;
		if (l == nlinks) {
			/* insert in (source, destination) order */
			while (l > 0 && (pairs[2 * (l - 1)] > t.xfers[i].src ||
			                 (pairs[2 * (l - 1)] == t.xfers[i].src &&
			                  pairs[2 * (l - 1) + 1] > t.xfers[i].dst))) {
				pairs[2 * l] = pairs[2 * (l - 1)];
				pairs[2 * l + 1] = pairs[2 * (l - 1) + 1];
				l--;
			}
			pairs[2 * l] = t.xfers[i].src;
			pairs[2 * l + 1] = t.xfers[i].dst;
			nlinks++;
			for (size_t j = 0; j < i; j++)
				if (link_of[j] >= l)
					link_of[j]++;
		}
		link_of[i] = l;
	}

	/* lanes: each transfer on the first lane of its link free at its start (the
	 * transfers are in start order); the rows are the links' lanes in link order */
	size_t nx = t.nxfers + 1;
	row_of = malloc(nx * sizeof *row_of);
	rows = malloc(2 * nx * sizeof *rows);
	lane_end = malloc(nx * sizeof *lane_end);
	int *lane_link = malloc(nx * sizeof *lane_link), *lane_num = malloc(nx * sizeof *lane_num),
	    *nlanes = calloc((size_t)nlinks + 1, sizeof *nlanes);
	if (!row_of || !rows || !lane_end || !lane_link || !lane_num || !nlanes) {
		free(lane_link);
		free(lane_num);
		free(nlanes);
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", json_path);
		goto out;
	}
	int nq = 0; /* lanes of every link, in the order they open */
	for (size_t i = 0; i < t.nxfers; i++) {
		int q = 0;
		while (q < nq && !(lane_link[q] == link_of[i] && lane_end[q] <= t.xfers[i].start))
			q++;
		if (q == nq) {
			lane_link[nq] = link_of[i];
			lane_num[nq++] = nlanes[link_of[i]]++;
		}
		lane_end[q] = t.xfers[i].end;
		row_of[i] = lane_num[q];
	}
	for (int l = 0; l < nlinks; l++) { /* nlanes[l] becomes the link's first row */
		int n = nlanes[l];
		nlanes[l] = nrows;
		for (int lane = 0; lane < n; lane++, nrows++) {
			rows[2 * nrows] = l;
			rows[2 * nrows + 1] = lane;
		}
	}
	for (size_t i = 0; i < t.nxfers; i++)
		row_of[i] += nlanes[link_of[i]];
	free(lane_link);
	free(lane_num);
	free(nlanes);

	o = malloc(sizeof *o);
	if (!o) {
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", json_path);
		goto out;
	}
	o->n = 0;
	o->err = err;
	o->st = dit_io_atomic_open(&o->a, json_path, err);
	if (o->st != DIT_OK) {
		st = o->st;
		goto out;
	}
	write_json(o, &t, row_of, nrows, rows, pairs);
	if (o->st == DIT_OK)
		st = dit_io_atomic_commit(&o->a, err);
	else
		st = o->st;
	dit_io_atomic_abort(&o->a);
out:
	free(o);
	free(link_of);
	free(pairs);
	free(row_of);
	free(rows);
	free(lane_end);
	trace_free(&t);
	free(tasks_path);
	free(paje_path);
	free(json_path);
	return st;
}
