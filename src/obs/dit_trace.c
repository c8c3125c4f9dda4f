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
#include <sys/statvfs.h>
#include <unistd.h>

#include <starpu.h>

#include "dit_io.h"
#include "dit_trace_priv.h"
#include "dit_trace_sort.h"

/* StarPU names the raw file <STARPU_FXT_SUFFIX>_<id>, and ditstar runs one StarPU
 * instance (id 0). */
#define RAW_SUFFIX "prof_file"
#define RAW_NAME   "prof_file_0"
/* StarPU keeps the raw file's path in a 1024-byte buffer. */
#define TRACE_DIR_MAX 900

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
		return dit_error_set(err, DIT_EUSAGE, "--trace needs a directory");
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

#ifdef STARPU_USE_FXT
/* A fresh private directory in dir (*tmp) for the converter's outputs: it opens them
 * with fopen, which follows links, so it writes there (StarPU's own option, o->dir,
 * would cut the joined paths at 256 bytes) and each file is then moved into dir like
 * any other output. */
static dit_status convert_dir(const char *dir, char **tmp, dit_error *err)
{
	*tmp = dit_io_join(dir, ".convert.XXXXXX");
	if (*tmp && mkdtemp(*tmp))
		return DIT_OK;
	dit_status st = *tmp ? dit_error_set(err, DIT_EIO, "%s: cannot create a directory: %s", dir,
	                                     strerror(errno))
	                     : dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
	free(*tmp);
	*tmp = NULL;
	return st;
}

/* StarPU's converter run on raw with what StarVZ reads, its outputs in tmp (paths: the
 * options' output paths, now under tmp; names: their plain names), then paje.trace put
 * in time order. */
static dit_status convert_raw(struct starpu_fxt_options *o, const char *dir, const char *tmp,
                              char *raw, char **paths[TRACE_NPATHS], char *names[TRACE_NPATHS],
                              dit_error *err)
{
	dit_status st = DIT_OK;
	starpu_fxt_options_init(o);
	/* what StarVZ reads (starpu_fxt_tool -memory-states -label-deps): the handles'
	 * states on each memory node, and the dependencies' labels */
	o->memory_states = 1;
	o->label_deps = 1;
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
	return st;
}

/* StarPU's converter writes with stdio and checks no write: on a full file system its
 * files come out empty or cut. A file system left with less than TRACE_ROOM after it is
 * taken as one that was full while it wrote. */
#define TRACE_ROOM (64u << 10)
static dit_status converted_whole(const char *tmp, dit_error *err)
{
	struct statvfs vs;
	if (statvfs(tmp, &vs) != 0)
		return DIT_OK;
	unsigned long long room =
	    (unsigned long long)(geteuid() == 0 ? vs.f_bfree : vs.f_bavail) * vs.f_frsize;
	if (room >= TRACE_ROOM)
		return DIT_OK;
	return dit_error_set(err, DIT_EIO, "no room left on its file system (%s)",
	                     strerror(ENOSPC));
}

/* A conversion that failed (st, err saying why, maybe naming the private folder): said
 * of the trace folder, whose converted files stay an earlier run's (none is moved). */
static dit_status trace_kept(const char *dir, dit_status st, dit_error *err)
{
	char why[DIT_ERROR_MSG_MAX];
	snprintf(why, sizeof why, "%s", err->msg);
	const char *tail = strstr(why, ": ");
	if (strstr(why, "/.convert.") && tail) /* "DIR/.convert.X/NAME: what": the what */
		memmove(why, tail + 2, strlen(tail + 2) + 1);
	return dit_error_set(err, st,
	                     "%s: trace not written (%s); trace files there are an earlier run's",
	                     dir, why);
}

/* Each file the converter wrote moved into dir under its plain name, unless the
 * conversion failed (st); the names freed. */
static dit_status outputs_move(const char *dir, char **paths[TRACE_NPATHS],
                               char *names[TRACE_NPATHS], dit_status st, dit_error *err)
{
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
	return st;
}
#endif

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
	struct stat sb;
	if (!raw || !o)
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", dir);
	else if (stat(raw, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size == 0)
		st = dit_error_set(err, DIT_ERUNTIME, "%s: StarPU recorded no trace", raw);
	if (!st)
		st = convert_dir(dir, &tmp, err);
	if (!st) {
		char **paths[TRACE_NPATHS];
		char *names[TRACE_NPATHS] = {NULL};
		st = convert_raw(o, dir, tmp, raw, paths, names, err);
		if (!st)
			st = converted_whole(tmp, err);
		if (st)
			st = trace_kept(dir, st, err);
		st = outputs_move(dir, paths, names, st, err);
		starpu_fxt_options_shutdown(o);
	}
	if (!st)
		st = dit_trace_write_json(dir, err);
	if (tmp)
		trace_remove_tmp(tmp);
	free(tmp);
	free(o);
	free(raw);
	return st;
#endif
}

void dit_trace_pause(void)
{
#ifdef STARPU_USE_FXT
	starpu_fxt_stop_profiling();
#endif
}

void dit_trace_resume(void)
{
#ifdef STARPU_USE_FXT
	starpu_fxt_start_profiling();
#endif
}

dit_status dit_trace_steps_parse(const char *spec, int nsteps, int window[2], dit_error *err)
{
	char *end = NULL;
	errno = 0;
	long a = strtol(spec, &end, 10), b = a;
	if (end != spec && *end == ':' && !errno) {
		const char *rest = end + 1;
		b = strtol(rest, &end, 10);
		if (end == rest)
			b = -1;
	}
	if (errno || end == spec || *end || a < 1 || b < a || b > nsteps)
		return dit_error_set(
		    err, DIT_EUSAGE,
		    "--trace-steps %s: needs A:B or A, the steps from 1 with A <= B "
		    "<= %d (the run's steps)",
		    spec, nsteps);
	window[0] = (int)a - 1;
	window[1] = (int)b - 1;
	return DIT_OK;
}
