/* StarPU's environment and files, checked before StarPU reads them (see
 * dit_starpu_env.h). */
#define _GNU_SOURCE /* pipe2 */
#include "dit_starpu_env.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dit_names.h"
#include "dit_starpu_home.h"
#include "dit_starpu_vars.h"

extern char **environ;

/* How many times a model that fails to load is read again (0.2 s, then 0.4 s apart). */
#define DIT_MODEL_CHECK_TRIES 3
/* The check's time limit: parsing a few dozen small files takes milliseconds. */
#define DIT_MODEL_CHECK_LIMIT_S 120.0

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

/* Lists of ids StarPU binds its workers to ("0 2 4-7"; a range only for CPUs). */
static const struct {
	const char *name;
	int ranges;
} id_lists[] = {
    {"STARPU_WORKERS_CPUID", 1},
    {"STARPU_WORKERS_COREID", 1},
    {"STARPU_WORKERS_CUDAID", 0},
    {"STARPU_WORKERS_OPENCLID", 0},
};

/* v as shown in a message: at most 32 bytes, control and non-ASCII bytes as '?'. */
static void shown_value(char *shown, size_t len, const char *v)
{
	snprintf(shown, len, "%.32s%s", v, strlen(v) > 32 ? "..." : "");
	for (char *c = shown; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
}

/* Digits at *p: their value (saturated), *p past them; -1 when none. */
static long digits(const char **p)
{
	long x = -1;
	for (; **p >= '0' && **p <= '9'; (*p)++)
		x = x < 0 ? **p - '0'
		          : (x > LONG_MAX / 10 - 10 ? LONG_MAX / 10 : x * 10 + **p - '0');
	return x;
}

/* Whether v is one or more ids (ranges "a-b", "a-" with ranges) apart by spaces or
 * commas, as StarPU reads them. */
static int id_list_ok(const char *v, int ranges)
{
	int n = 0;
	for (const char *p = v; *p;) {
		if (*p == ' ' || *p == ',') {
			p++;
			continue;
		}
		long a = digits(&p);
		if (a < 0 || a > INT_MAX)
			return 0;
		if (*p == '-') {
			if (!ranges)
				return 0;
			p++;
			long b = digits(&p);
			if (b > INT_MAX || (b >= 0 && b < a))
				return 0;
		}
		if (*p && *p != ' ' && *p != ',')
			return 0;
		n++;
	}
	return n > 0;
}

/* Whether v is what StarPU's reader of kind k takes without aborting: an integer
 * (strtol over all of it, >= 0, an int), or a finite float (strtof over all of it). */
static int number_ok(const char *v, dit_starpu_var_kind k)
{
	char *end;
	errno = 0;
	if (k == DIT_SPV_FLOAT) {
		float f = strtof(v, &end);
		return *v && !*end && errno == 0 && isfinite(f);
	}
	long x = strtol(v, &end, 10);
	return *v && !*end && errno == 0 && x >= 0 && x <= INT_MAX;
}

/* The variables of StarPU's own list (dit_starpu_vars.c) and the id lists. */
static dit_status starpu_vars_check(dit_error *err)
{
	char shown[40];
	for (int i = 0; i < dit_starpu_nvars; i++) {
		const char *v = getenv(dit_starpu_vars[i].name);
		if (!v || !*v || number_ok(v, dit_starpu_vars[i].kind))
			continue;
		shown_value(shown, sizeof shown, v);
		return dit_error_set(err, DIT_EINVAL, "%s='%s': must be %s (StarPU aborts on it)",
		                     dit_starpu_vars[i].name, shown,
		                     dit_starpu_vars[i].kind == DIT_SPV_FLOAT
		                         ? "a number"
		                         : "an integer from 0 to 2147483647");
	}
	for (size_t i = 0; i < sizeof id_lists / sizeof id_lists[0]; i++) {
		const char *v = getenv(id_lists[i].name);
		if (!v || !*v || id_list_ok(v, id_lists[i].ranges))
			continue;
		shown_value(shown, sizeof shown, v);
		return dit_error_set(
		    err, DIT_EINVAL, "%s='%s': must be ids from 0 apart by spaces%s",
		    id_lists[i].name, shown, id_lists[i].ranges ? " (ranges as 4-7)" : "");
	}
	return DIT_OK;
}

dit_status dit_starpu_env_check(dit_error *err)
{
	for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++) {
		const char *v = getenv(numeric[i].name);
		int64_t x;
		if (!v || !*v || dit_parse_i64(v, numeric[i].lo, numeric[i].hi, &x) == 0)
			continue;
		char shown[40];
		shown_value(shown, sizeof shown, v);
		return dit_error_set(err, DIT_EINVAL,
		                     "%s='%s': must be an integer from %lld to %lld (%s)",
		                     numeric[i].name, shown, (long long)numeric[i].lo,
		                     (long long)numeric[i].hi, numeric[i].what);
	}
	dit_status vst = starpu_vars_check(err);
	if (vst)
		return vst;
	const char *home = getenv("STARPU_HOME");
	struct stat sb;
	if (home && *home && stat(home, &sb) == 0 && !S_ISDIR(sb.st_mode))
		return dit_error_set(err, DIT_EINVAL,
		                     "STARPU_HOME=%s is not a directory (StarPU keeps its "
		                     "calibration in STARPU_HOME/.starpu)",
		                     home);
	if (home && *home && stat(home, &sb) != 0 && errno != ENOENT)
		return dit_error_set(err, DIT_EINVAL, "STARPU_HOME=%s: %s", home, strerror(errno));
	return dit_starpu_home_check(err);
}

#ifdef DIT_SIMGRID
/* ditstar-sim: the platform file of the host simulated is there. */
static dit_status sim_platform_check(dit_error *err)
{
	/* The models are those a ditstar run calibrated and checked (the helper is a
	 * plain StarPU program). What the simulation cannot start without is the platform
	 * file of the host simulated. */
	char host[256], dir[PATH_MAX + 32];
	if (dit_starpu_host(host, sizeof host) != 0)
		snprintf(host, sizeof host, "localhost");
	dit_starpu_bus_dir(dir, sizeof dir);
	char file[PATH_MAX + 332];
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

#ifndef DIT_SIMGRID
/* Whether dir holds an executable helper; its path in buf. */
static int helper_in(char *buf, size_t len, const char *dir)
{
	snprintf(buf, len, "%s/" DIT_MODELS_CHECK, dir);
	return access(buf, X_OK) == 0;
}

/* The helper's path: $DITSTAR_LIBEXECDIR, else beside the running program (the build
 * tree; ".libs/" of a libtool wrapper: its parent), else the installed libexec folder.
 * 0 when none is there. */
static int helper_path(char *buf, size_t len)
{
	const char *env = getenv("DITSTAR_LIBEXECDIR");
	if (env && *env)
		return helper_in(buf, len, env);
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	char *slash = NULL;
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
	}
	if (slash) {
		*slash = '\0';
		if (helper_in(buf, len, self))
			return 1;
		slash = strrchr(self, '/');
		if (slash && strcmp(slash, "/.libs") == 0) {
			*slash = '\0';
			if (helper_in(buf, len, self))
				return 1;
		}
	}
#ifdef DIT_PKGLIBEXECDIR
	return helper_in(buf, len, DIT_PKGLIBEXECDIR);
#else
	return 0;
#endif
}

/* Starts helper with standard output on out_fd, standard input and error on /dev/null,
 * no signal blocked and every signal at its default. 0 or an errno. */
static int spawn_helper(const char *helper, int out_fd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int rc = posix_spawn_file_actions_init(&fa);
	if (rc)
		return rc;
	if ((rc = posix_spawnattr_init(&at)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	if (!(rc = posix_spawn_file_actions_adddup2(&fa, out_fd, 1)) &&
	    !(rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) &&
	    !(rc = posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0)) &&
	    !(rc = posix_spawnattr_setsigmask(&at, &none)) &&
	    !(rc = posix_spawnattr_setsigdefault(&at, &all)) &&
	    !(rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))) {
		char *argv[] = {(char *)helper, NULL};
		rc = posix_spawn(pid, helper, &fa, &at, argv, environ);
	}
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Reads fd to its end into buf (at most len - 1 bytes kept, NUL-terminated) until
 * deadline; 0 at the end of the stream, -1 past the deadline. */
static int read_until(int fd, char *buf, size_t len, double deadline)
{
	size_t got = 0;
	char sink[4096];
	for (;;) {
		double left = deadline - now_s();
		if (left <= 0)
			return -1;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, (int)(left * 1000) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return 0;
		if (r == 0)
			continue;
		char *dst = got < len - 1 ? buf + got : sink;
		size_t room = got < len - 1 ? len - 1 - got : sizeof sink;
		ssize_t n = read(fd, dst, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (dst != sink)
			got += (size_t)n;
	}
	buf[got] = '\0';
	return 0;
}

/* Reaps pid, waiting until deadline; past it, kills and reaps it. */
static void reap(pid_t pid, double deadline)
{
	int status;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return; /* ECHILD: SIGCHLD ignored by the program, reaped already */
		if (r == 0 && now_s() >= deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return;
		}
		struct timespec ts = {0, 2000000L};
		nanosleep(&ts, NULL);
	}
}

/* One check by the helper: 0 when every model parsed (or StarPU failed elsewhere: it
 * says so itself when it starts), 1 with the folder and the file StarPU failed on in
 * dir and file, -1 with err set when the helper cannot start or runs past limit_s. */
static int models_check_once(const char *helper, double limit_s, char *dir, size_t dlen, char *file,
                             size_t flen, dit_error *err)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0) {
		dit_error_set(err, DIT_ERUNTIME, "checking the performance models: pipe: %s",
		              strerror(errno));
		return -1;
	}
	pid_t pid;
	int rc = spawn_helper(helper, fds[1], &pid);
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		dit_error_set(err, DIT_ERUNTIME, "%s: cannot start it: %s", helper, strerror(rc));
		return -1;
	}
	double deadline = now_s() + limit_s;
	char buf[16384];
	int late = read_until(fds[0], buf, sizeof buf, deadline);
	close(fds[0]);
	reap(pid, late ? 0 : deadline);
	if (late) {
		dit_error_set(err, DIT_ERUNTIME,
		              "%s: checking StarPU's performance models took over %g s (is "
		              "STARPU_HOME on a file system that does not answer?); stopped",
		              helper, limit_s);
		return -1;
	}
	/* the last file announced and not parsed */
	const char *d = "", *f = NULL;
	int done = 0;
	for (char *save, *line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == 'D')
			d = line + 1;
		else if (line[0] == 'F')
			f = line + 1;
		else if (line[0] == 'K')
			f = NULL;
		else if (line[0] == 'E')
			done = 1;
	}
	if (done || !f)
		return 0;
	snprintf(dir, dlen, "%s", d);
	snprintf(file, flen, "%s", f);
	return 1;
}

dit_status dit_starpu_models_check_with(const char *helper, double limit_s, dit_error *err)
{
	char found[PATH_MAX + 64];
	if (!helper) {
		if (!helper_path(found, sizeof found))
			return DIT_OK; /* not installed: StarPU reads the models itself */
		helper = found;
	}
	/* Another StarPU process sharing STARPU_HOME may be saving that model: StarPU 1.4
	 * releases the file's lock before fclose writes its last buffer, so a reader can
	 * see it cut short for a moment. A model damaged for good fails every try. */
	char dir[PATH_MAX], file[NAME_MAX + 1];
	for (int attempt = 0;; attempt++) {
		int r = models_check_once(helper, limit_s, dir, sizeof dir, file, sizeof file, err);
		if (r < 0)
			return err ? err->code : DIT_ERUNTIME;
		if (r == 0)
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

#endif /* !DIT_SIMGRID */

dit_status dit_starpu_models_check(dit_error *err)
{
#ifdef DIT_SIMGRID
	return sim_platform_check(err);
#else
	return dit_starpu_models_check_with(NULL, DIT_MODEL_CHECK_LIMIT_S, err);
#endif
}
