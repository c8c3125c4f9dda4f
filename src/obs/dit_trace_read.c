/* Reading a trace folder: tasks.rec (StarPU's task records) and paje.trace (its
 * containers and links: the workers, memory nodes and transfers), see
 * dit_trace_priv.h. */
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

void dit_trace_parsed_free(tr_trace *t)
{
	for (size_t i = 0; i < t->ntasks; i++) {
		free(t->tasks[i].name);
		free(t->tasks[i].model);
		free(t->tasks[i].footprint);
		free(t->tasks[i].handles);
		free(t->tasks[i].deps);
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
	free(t->mem);
	free(t->keys);
	for (int i = 0; i < t->nworkers; i++)
		free(t->workers[i].name);
	free(t->workers);
	for (int i = 0; i < t->nnodes; i++)
		free(t->nodes[i]);
	free(t->nodes);
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

/* ------------------------------------------------------------------ paje.trace */

enum { EV_OTHER, EV_CREATE, EV_START_LINK, EV_END_LINK, EV_SET_VAR };
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
		               : strcmp(tok[1], "PajeSetVariable") == 0   ? EV_SET_VAR
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

/* A container created: StarPU's memory nodes, their memory managers, threads and
 * workers (other types are skipped). -1: out of memory. */
static int paje_create(tr_trace *t, const char *const *f)
{
	if (!f[F_ALIAS] || !f[F_TYPE] || !f[F_CONTAINER] || !f[F_NAME])
		return 0;
	/* StarPU's container types: memory node, its memory manager, thread, worker */
	static const char *const types[] = {"Mn", "Mm", "T", "W"};
	int type = -1;
	for (int i = 0; i < 4; i++)
		if (strcmp(f[F_TYPE], types[i]) == 0)
			type = i;
	if (type < 0)
		return 0;
	if (dit_trace_grow((void **)&t->conts, &t->cap_conts, t->nconts, sizeof *t->conts) != 0)
		return -1;
	tr_container *c = &t->conts[t->nconts];
	c->type = type;
	c->alias = strdup(f[F_ALIAS]);
	c->parent = strdup(f[F_CONTAINER]);
	c->name = strdup(f[F_NAME]);
	t->nconts++;
	return c->alias && c->parent && c->name ? 0 : -1;
}

/* A variable set: a memory manager's "use", the MiB allocated on its node (other
 * variables are skipped). -1: out of memory. */
static int paje_set_var(tr_trace *t, const char *const *f)
{
	double time, mib;
	if (!f[F_TIME] || !f[F_TYPE] || !f[F_CONTAINER] || !f[F_VALUE] ||
	    strcmp(f[F_TYPE], "use") != 0 || dit_trace_parse_double(f[F_TIME], &time) ||
	    dit_trace_parse_double(f[F_VALUE], &mib) || !(mib >= 0) || !isfinite(mib))
		return 0;
	int node = memnode_of(t, f[F_CONTAINER]);
	if (node < 0)
		return 0;
	if (dit_trace_grow((void **)&t->mem, &t->cap_mem, t->nmem, sizeof *t->mem) != 0)
		return -1;
	t->mem[t->nmem++] = (tr_mem){time, node, mib};
	return 0;
}

/* A link started at time: a transfer leaving a memory node, found again by its key
 * when it ends. -1: out of memory. */
static int paje_start_link(tr_trace *t, const char *const *f, double time)
{
	if (!f[F_START_CONTAINER] || !f[F_TYPE])
		return 0;
	int src = memnode_of(t, f[F_START_CONTAINER]);
	long long bytes;
	if (src < 0 || !f[F_VALUE] || dit_trace_parse_ll(f[F_VALUE], &bytes) != 0 || bytes < 0)
		return 0;
	if (dit_trace_grow((void **)&t->xfers, &t->cap_xfers, t->nxfers, sizeof *t->xfers) != 0)
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

/* A link ended at time: the transfer of its key, still open and started before,
 * arrives at a memory node. */
static void paje_end_link(tr_trace *t, const char *const *f, double time)
{
	if (!f[F_END_CONTAINER] || !t->cap_keys)
		return;
	int dst = memnode_of(t, f[F_END_CONTAINER]);
	size_t s = key_slot(t, f[F_KEY]);
	if (dst < 0 || !t->keys[s])
		return;
	tr_xfer *x = &t->xfers[t->keys[s] - 1];
	if (!isnan(x->end) || time < x->start)
		return;
	x->end = time;
	x->dst = dst;
}

/* One event line. -1: out of memory. */
static int paje_event(tr_trace *t, const paje_def *d, char *line)
{
	char *tok[PAJE_MAX_TOKENS];
	int n = tokenize(line, tok, PAJE_MAX_TOKENS);
	const char *f[F_COUNT];
	for (int i = 0; i < F_COUNT; i++)
		f[i] = d->pos[i] >= 0 && d->pos[i] < n ? tok[d->pos[i]] : NULL;
	if (d->kind == EV_CREATE)
		return paje_create(t, f);
	if (d->kind == EV_SET_VAR)
		return paje_set_var(t, f);
	double time;
	if (!f[F_TIME] || !f[F_KEY] || dit_trace_parse_double(f[F_TIME], &time) != 0)
		return 0;
	if (d->kind == EV_START_LINK)
		return paje_start_link(t, f, time);
	if (d->kind == EV_END_LINK)
		paje_end_link(t, f, time);
	return 0;
}

static dit_status read_paje(tr_trace *t, const char *path, dit_error *err)
{
	FILE *f = NULL;
	dit_status ost = dit_trace_open(path, &f, err);
	if (ost)
		return ost;
	paje_state *ps = calloc(1, sizeof *ps);
	char *line = NULL;
	size_t cap = 0;
	dit_status st = DIT_OK;
	if (!ps)
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	long n = 0;
	while (st == DIT_OK && (n = dit_trace_getline(f, &line, &cap)) >= 0) {
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
	if (st == DIT_OK && n == -2)
		st = dit_error_set(err, DIT_EFORMAT, "%s: a NUL byte or a line over %zu bytes: not a trace", path,
		                   DIT_TRACE_MAX_LINE);
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

dit_status dit_trace_parse(tr_trace *t, const char *tasks_path, const char *paje_path,
                           dit_error *err)
{
	dit_status st = dit_trace_read_tasks(t, tasks_path, err);
	if (!st)
		st = read_paje(t, paje_path, err);
	if (st)
		return st;

	/* keep the transfers whose both ends were seen */
	size_t m = 0;
	for (size_t i = 0; i < t->nxfers; i++) {
		if (!isnan(t->xfers[i].end) && t->xfers[i].dst >= 0) {
			t->xfers[m++] = t->xfers[i];
		} else {
			free(t->xfers[i].key);
			free(t->xfers[i].data);
			free(t->xfers[i].handle);
		}
	}
	t->nxfers = m;
	free(t->keys);
	t->keys = NULL;
	t->cap_keys = t->nkeys = 0;

	if (resolve_workers(t) != 0 || name_nodes(t) != 0) {
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", paje_path);
	}
	return DIT_OK;
}
