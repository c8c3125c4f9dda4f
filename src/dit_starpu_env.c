/* StarPU's environment and files, checked before StarPU reads them (see
 * dit_starpu_env.h). */
#define _POSIX_C_SOURCE 200809L
#include "dit_starpu_env.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <starpu.h>

#include "dit_names.h"

/* How many times a model that fails to load is read again (0.2 s, then 0.4 s apart). */
#define DIT_MODEL_CHECK_TRIES 3

/* Numeric variables StarPU parses with atoi-like calls and asserts on. */
static const struct {
	const char *name;
	int64_t lo, hi;
	const char *what;
} numeric[] = {
    {"STARPU_NCPU", 0, 4096, "CPU workers"},
    {"STARPU_NCPUS", 0, 4096, "CPU workers"},
    {"STARPU_NCUDA", 0, 64, "CUDA workers"},
    {"STARPU_NOPENCL", 0, 64, "OpenCL workers"},
    {"STARPU_LIMIT_CUDA_MEM", 0, INT64_MAX / (1 << 20), "MiB"},
    {"STARPU_LIMIT_OPENCL_MEM", 0, INT64_MAX / (1 << 20), "MiB"},
    {"STARPU_LIMIT_CPU_MEM", 0, INT64_MAX / (1 << 20), "MiB"},
    {"STARPU_CALIBRATE", 0, 2, "0, 1 or 2"},
    {"STARPU_SILENT", 0, 1, "0 or 1"},
    {"STARPU_WATCHDOG_TIMEOUT", 0, INT64_MAX, "microseconds"},
};

dit_status dit_starpu_env_check(dit_error *err)
{
	for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++) {
		const char *v = getenv(numeric[i].name);
		int64_t x;
		if (!v || !*v || dit_parse_i64(v, numeric[i].lo, numeric[i].hi, &x) == 0)
			continue;
		char shown[40];
		snprintf(shown, sizeof shown, "%.32s%s", v, strlen(v) > 32 ? "..." : "");
		for (char *c = shown; *c; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
				*c = '?';
		return dit_error_set(err, DIT_EINVAL,
		                     "%s='%s': must be an integer from %lld to %lld (%s)",
		                     numeric[i].name, shown, (long long)numeric[i].lo,
		                     (long long)numeric[i].hi, numeric[i].what);
	}
	const char *home = getenv("STARPU_HOME");
	struct stat sb;
	if (home && *home && stat(home, &sb) == 0 && !S_ISDIR(sb.st_mode))
		return dit_error_set(err, DIT_EINVAL,
		                     "STARPU_HOME=%s is not a directory (StarPU keeps its "
		                     "calibration in STARPU_HOME/.starpu)",
		                     home);
	if (home && *home && stat(home, &sb) != 0 && errno != ENOENT)
		return dit_error_set(err, DIT_EINVAL, "STARPU_HOME=%s: %s", home, strerror(errno));
	return DIT_OK;
}

/* The child's report: one line per step, "D<folder>", then "F<file>" before loading a
 * model file and "K" once it loaded; the parent learns which file StarPU died on. */
static void say(int fd, char kind, const char *text)
{
	char line[PATH_MAX + 4];
	int n = snprintf(line, sizeof line, "%c%s\n", kind, text ? text : "");
	if (n < 0 || (size_t)n >= sizeof line || write(fd, line, (size_t)n) != n)
		_exit(3);
}

/* Child: finds the folder of the codelets' models from the path StarPU gives a known
 * symbol ("<dir>/dit_linear.<host>") and loads every "dit_*.<host>" file in it. */
static void load_all(int fd)
{
	int devnull = open("/dev/null", O_WRONLY);
	if (devnull >= 0) { /* StarPU's assertion text: the parent says it in one line */
		dup2(devnull, 2);
		close(devnull);
	}
	starpu_perfmodel_initialize();
	char path[PATH_MAX];
	starpu_perfmodel_get_model_path("dit_linear", path, sizeof path);
	char *slash = strrchr(path, '/');
	if (!slash || strncmp(slash + 1, "dit_linear", 10) != 0)
		_exit(0);
	char suffix[256];
	snprintf(suffix, sizeof suffix, "%s", slash + 1 + 10); /* ".<host>" */
	*slash = '\0';
	say(fd, 'D', path);
	DIR *d = opendir(path);
	if (!d)
		_exit(0); /* nothing calibrated yet */
	size_t sl = strlen(suffix);
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, "dit_", 4) != 0 || l <= sl ||
		    strcmp(e->d_name + l - sl, suffix) != 0)
			continue;
		char file[2 * PATH_MAX];
		snprintf(file, sizeof file, "%s/%s", path, e->d_name);
		say(fd, 'F', e->d_name);
		struct starpu_perfmodel m;
		memset(&m, 0, sizeof m);
		if (starpu_perfmodel_load_file(file, &m) == 0)
			starpu_perfmodel_unload_model(&m);
		else
			_exit(4);
		say(fd, 'K', NULL);
	}
	closedir(d);
	_exit(0);
}

#ifdef DIT_SIMGRID
/* ditstar-sim: the platform file of the host simulated is there. */
static dit_status sim_platform_check(dit_error *err)
{
	/* StarPU's calls need the simulation's context, which a forked child has not: the
	 * models are those a ditstar run calibrated and checked. What the simulation
	 * cannot start without is the platform file of the host simulated. */
	char host[256] = "", dir[PATH_MAX];
	const char *h = getenv("STARPU_HOSTNAME"), *pm = getenv("STARPU_PERF_MODEL_DIR");
	if (h && *h)
		snprintf(host, sizeof host, "%s", h);
	else if (gethostname(host, sizeof host - 1) != 0)
		snprintf(host, sizeof host, "localhost");
	const char *home = getenv("STARPU_HOME");
	if (pm && *pm)
		snprintf(dir, sizeof dir, "%s/bus", pm);
	else
		snprintf(dir, sizeof dir, "%s/.starpu/sampling/bus",
		         home && *home    ? home
		         : getenv("HOME") ? getenv("HOME")
		                          : ".");
	char file[PATH_MAX + 300];
	snprintf(file, sizeof file, "%s/%s.platform.v4.xml", dir, host);
	if (access(file, R_OK) != 0)
		return dit_error_set(err, DIT_ENOTFOUND,
		                     "%s: no platform of host '%s' to simulate: run ditstar (or "
		                     "ditstar calibrate) on that machine first, or set "
		                     "STARPU_HOSTNAME to a host calibrated there",
		                     file, host);
	return DIT_OK;
}
#endif

/* One check in a forked child: 0 when every model loaded (or the check could not run),
 * else 1 with the folder and the file StarPU failed on in dir and file. */
static int models_check_once(char *dir, size_t dlen, char *file, size_t flen)
{
	int fds[2];
	if (pipe(fds) != 0)
		return 0;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		load_all(fds[1]);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return 0;
	}
	/* the report, at most a few KiB */
	char buf[16384];
	size_t len = 0;
	for (ssize_t r;
	     len < sizeof buf - 1 && (r = read(fds[0], buf + len, sizeof buf - 1 - len));) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	/* the last file announced and not loaded */
	const char *d = "", *f = NULL;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == 'D')
			d = line + 1;
		else if (line[0] == 'F')
			f = line + 1;
		else if (line[0] == 'K')
			f = NULL;
	}
	if (!f)
		return 0; /* it failed elsewhere: let StarPU itself say so */
	snprintf(dir, dlen, "%s", d);
	snprintf(file, flen, "%s", f);
	return 1;
}

dit_status dit_starpu_models_check(dit_error *err)
{
#ifdef DIT_SIMGRID
	return sim_platform_check(err);
#endif
	/* Another StarPU process sharing STARPU_HOME may be saving that model: StarPU 1.4
	 * releases the file's lock before fclose writes its last buffer, so a reader can
	 * see it cut short for a moment. A model damaged for good fails every try. */
	char dir[PATH_MAX], file[NAME_MAX + 1];
	for (int attempt = 0;; attempt++) {
		if (!models_check_once(dir, sizeof dir, file, sizeof file))
			return DIT_OK;
		if (attempt == DIT_MODEL_CHECK_TRIES - 1)
			break;
		struct timespec ts = {0, 200000000L * (attempt + 1)};
		nanosleep(&ts, NULL);
	}
	return dit_error_set(err, DIT_ERUNTIME,
	                     "%s/%s: corrupt StarPU performance model (StarPU would abort "
	                     "reading it); remove it to recalibrate: rm '%s/%s'",
	                     dir, file, dir, file);
}
