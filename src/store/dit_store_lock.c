/* The locks a run holds on a chunk store (see dit_store.h): build.lock serializes the
 * preparations, use.lock is shared by the runs reading the store and exclusive while
 * one writes it. */
#define _GNU_SOURCE
#include "dit_store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "dit_io.h"

void dit_store_lock_init(dit_store_lock *lk)
{
	memset(lk, 0, sizeof *lk);
	lk->build = lk->use = -1;
}

void dit_store_unlock(dit_store_lock *lk)
{
	if (lk->build >= 0)
		close(lk->build); /* closing the descriptor releases its lock */
	if (lk->use >= 0)
		close(lk->use);
	free(lk->dir);
	dit_store_lock_init(lk);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* flock(fd, op), waiting for another run as lk says; what: "preparing", "using". */
static dit_status lock_wait(dit_store_lock *lk, int fd, int op, const char *what, dit_error *err)
{
	double t0 = now_s();
	long pause_ms = 10;
	for (;;) {
		if (flock(fd, op | LOCK_NB) == 0)
			return DIT_OK;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return dit_error_set(err, DIT_EIO, "%s: cannot lock the chunk store (%s)",
			                     lk->dir, strerror(errno));
		if (lk->wait_s >= 0 && now_s() - t0 >= lk->wait_s)
			return dit_error_set(err, DIT_EIO,
			                     "%s: another run is %s this chunk store; gave up "
			                     "after %g s (DITSTAR_STORE_WAIT)",
			                     lk->dir, what, lk->wait_s);
		if (!lk->told) {
			fprintf(stderr,
			        "ditstar: waiting for the chunk store %s, which another run "
			        "is %s it\n",
			        lk->dir, what);
			fflush(stderr);
			lk->told = 1;
		}
		struct timespec ts = {0, pause_ms * 1000000L};
		nanosleep(&ts, NULL);
		if (pause_ms < 200)
			pause_ms *= 2;
	}
}

static int open_lock(const char *dir, const char *name)
{
	char *path = dit_io_join(dir, name);
	int fd = path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;
	free(path);
	return fd;
}

dit_status dit_store_lock_begin(dit_store_lock *lk, const char *dir, int adopt, double wait_s,
                                dit_error *err)
{
	dit_store_lock_init(lk);
	lk->wait_s = wait_s;
	dit_status st = dit_store_own(dir, adopt, err);
	if (st)
		return st;
	lk->dir = strdup(dir);
	if (!lk->dir)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	lk->build = open_lock(dir, "build.lock");
	lk->use = lk->build >= 0 ? open_lock(dir, "use.lock") : -1;
	if (lk->use < 0)
		st = dit_error_set(err, DIT_EIO,
		                   "%s/%s: cannot create the chunk store's lock file (%s)", dir,
		                   lk->build < 0 ? "build.lock" : "use.lock", strerror(errno));
	if (!st)
		st = lock_wait(lk, lk->build, LOCK_EX, "preparing", err);
	/* the use lock changes hands only under the build lock: readers never block us */
	if (!st && flock(lk->use, LOCK_EX | LOCK_NB) == 0) {
		lk->use_excl = 1;
		dit_store_clean_temps(dir, 2);
	} else if (!st) {
		st = lock_wait(lk, lk->use, LOCK_SH, "using", err);
	}
	if (st)
		dit_store_unlock(lk);
	return st;
}

/* The use lock exclusively: waits for the runs using the store to end. */
dit_status dit_store_lock_exclusive(dit_store_lock *lk, dit_error *err)
{
	if (lk->use_excl)
		return DIT_OK;
	flock(lk->use, LOCK_UN);
	dit_status st = lock_wait(lk, lk->use, LOCK_EX, "using", err);
	if (st)
		return st;
	lk->use_excl = 1;
	dit_store_clean_temps(lk->dir, 2);
	return DIT_OK;
}

dit_status dit_store_lock_end_prepare(dit_store_lock *lk, dit_error *err)
{
	/* not atomic, but only a reader can take the use lock meanwhile */
	if (lk->use_excl && flock(lk->use, LOCK_SH) != 0)
		return dit_error_set(err, DIT_EIO, "%s: cannot lock the chunk store (%s)", lk->dir,
		                     strerror(errno));
	lk->use_excl = 0;
	close(lk->build);
	lk->build = -1;
	return DIT_OK;
}
