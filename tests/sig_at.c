/* A signal at a chosen moment, for tests/test_signals.sh: preloaded (LD_PRELOAD) into
 * ditstar, it sends the process a signal the first time the process opens, or syncs, a
 * file whose path matches a pattern, so that a test can stop a run in the middle of a
 * given stage (loading a checkpoint, writing the chunk store, saving an output) without
 * relying on timing.
 *
 *   DIT_SIG_AT=CALL:SIGNAL:PATTERN   CALL open (open, open64, openat, openat64) or fsync;
 *                                    SIGNAL INT or TERM; PATTERN an fnmatch(3) pattern
 *   DIT_SIG_AT_MARK=FILE             created when the signal is sent (the test checks the
 *                                    stage was reached)
 *
 * After sending it, the call waits up to two seconds (time for the process to act on
 * the signal: a stop at once ends it here, in the middle of the stage), then goes on. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fired; /* once per process: a test hook, not library state */

static void maybe_fire(const char *call, const char *path)
{
	const char *spec = getenv("DIT_SIG_AT");
	if (fired || !spec || !path)
		return;
	const char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c2 || (size_t)(c1 - spec) != strlen(call) || strncmp(spec, call, strlen(call)) != 0 ||
	    fnmatch(c2 + 1, path, 0) != 0)
		return;
	fired = 1;
	const char *mark = getenv("DIT_SIG_AT_MARK");
	if (mark) {
		int fd = ((int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open"))(
		    mark, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			ssize_t r = write(fd, path, strlen(path));
			(void)r;
			close(fd);
		}
	}
	kill(getpid(), strncmp(c1 + 1, "INT:", 4) == 0 ? SIGINT : SIGTERM);
	struct timespec ts = {0, 10 * 1000 * 1000};
	for (int i = 0; i < 200; i++)
		nanosleep(&ts, NULL);
}

/* The mode argument an open passes with O_CREAT or O_TMPFILE (else 0). */
static mode_t mode_of(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}
#define TAKE_MODE(flags, mode)                                                                     \
	va_list ap;                                                                                \
	va_start(ap, flags);                                                                       \
	mode_t mode = mode_of(flags, ap);                                                          \
	va_end(ap)

/* The real open (sym) of path, an *at one when at, after the hook. */
static int open_via(const char *sym, int at, int dir, const char *path, int flags, mode_t mode)
{
	maybe_fire("open", path);
	void *real = dlsym(RTLD_NEXT, sym);
	return at ? ((int (*)(int, const char *, int, ...))real)(dir, path, flags, mode)
	          : ((int (*)(const char *, int, ...))real)(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	TAKE_MODE(flags, mode);
	return open_via("open", 0, 0, path, flags, mode);
}
int open64(const char *path, int flags, ...)
{
	TAKE_MODE(flags, mode);
	return open_via("open64", 0, 0, path, flags, mode);
}
int openat(int dir, const char *path, int flags, ...)
{
	TAKE_MODE(flags, mode);
	return open_via("openat", 1, dir, path, flags, mode);
}
int openat64(int dir, const char *path, int flags, ...)
{
	TAKE_MODE(flags, mode);
	return open_via("openat64", 1, dir, path, flags, mode);
}

int fsync(int fd)
{
	char link[64], path[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path - 1);
	if (n > 0) {
		path[n] = 0;
		maybe_fire("fsync", path);
	}
	return ((int (*)(int))dlsym(RTLD_NEXT, "fsync"))(fd);
}
