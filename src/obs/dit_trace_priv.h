/* The trace files as ditstar reads them (src/obs/dit_trace_read.c) to write trace.json
 * (src/obs/dit_trace_json.c): the tasks of tasks.rec, the workers, memory nodes and
 * transfers of paje.trace. Private to the trace files. */
#ifndef DIT_TRACE_PRIV_H
#define DIT_TRACE_PRIV_H

#include <stddef.h>
#include <stdio.h>

#include "dit_error.h"

#define JSON_NAME  "trace.json"
#define TASKS_NAME "tasks.rec"
#define PAJE_NAME  "paje.trace"

/* Worker ids and memory node numbers beyond this are taken for garbage. */
#define MAX_ID 4096

typedef struct tr_task {
	double start, end; /* ms from the start of the trace */
	int worker;
	long long job; /* -1: unknown */
	char *name, *model, *footprint;
	char *handles;   /* the data it used, as tasks.rec lists them (NULL: unknown) */
	int step;        /* its iteration (-1: none) */
	double gflop;    /* < 0: unknown */
	long long *deps; /* DependsOn: the jobs it waited for (NULL: none listed) */
	int ndeps;
} tr_task;

typedef struct tr_xfer {
	double start, end; /* ms; end is NAN until the end of the link is seen */
	int src, dst;      /* memory nodes */
	unsigned long long bytes;
	const char *kind;
	char *key, *data, *handle;
} tr_xfer;

/* A sample of the memory StarPU has allocated on a memory node (paje.trace's "use"
 * variable of the node's memory manager, "Used (MB)": MiB). */
typedef struct tr_mem {
	double t; /* ms */
	int node;
	double mib;
} tr_mem;

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
	tr_mem *mem; /* in the file's order */
	size_t nmem, cap_mem;
	size_t skipped; /* records that did not parse */
	/* key of a link -> index in xfers of its latest start (open addressing) */
	size_t *keys;
	size_t cap_keys, nkeys;
	tr_worker *workers;
	int nworkers;
	char **nodes; /* memory node names */
	int nnodes;
} tr_trace;

/* Reads tasks.rec and paje.trace into t (zeroed): the tasks, the transfers whose both
 * ends were seen, the memory used per node, the workers and the names of the memory
 * nodes. Errors name the file. */
dit_status dit_trace_parse(tr_trace *t, const char *tasks_path, const char *paje_path,
                           dit_error *err);
void dit_trace_parsed_free(tr_trace *t);

/* Reads the executed tasks of tasks.rec into t (src/obs/dit_trace_rec.c); the rest of t
 * is left alone. DIT_ENOTFOUND naming the file when it is absent. */
dit_status dit_trace_read_tasks(tr_trace *t, const char *path, dit_error *err);

/* A trace file opened for reading as every input is (dit_input_open: without
 * blocking, regular files only, named in messages). */
dit_status dit_trace_open(const char *path, FILE **f, dit_error *err);

/* The next line of f into *line (*cap bytes, grown; NUL-terminated, newline kept):
 * its length, -1 at the end of the file, -2 for a line over DIT_TRACE_MAX_LINE bytes or
 * a NUL byte (a trace's lines are short text: anything else is not a trace, and is
 * never held whole nor read to its end). */
#define DIT_TRACE_MAX_LINE ((size_t)1 << 20)
long dit_trace_getline(FILE *f, char **line, size_t *cap);

/* Shared by the readers: grows *p (cap elements of elem bytes) to hold n + 1 (0, or -1
 * out of memory); a number that is all of s (0 or -1); s without its trailing blanks. */
int dit_trace_grow(void **p, size_t *cap, size_t n, size_t elem);
int dit_trace_parse_double(const char *s, double *out);
int dit_trace_parse_ll(const char *s, long long *out);
void dit_trace_chomp(char *s);

#endif
