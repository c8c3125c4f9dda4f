/* The performance-model check (dit_starpu_models_check) runs in a process started
 * fresh, never a fork of this threaded one: here three other threads hold the
 * allocator's, stdio's and a mutex's locks in tight loops (under ASan, its allocator's
 * mutex, which hung a forked child for good), SIGINT and SIGTERM are blocked as
 * ditstar's command blocks them, and the check runs again and again. It must answer
 * every time: models that parse are fine, a model cut short is named, a helper that
 * does not answer is stopped at the limit and reported in one line, a helper that
 * cannot start is reported, no helper found skips the check; the helper runs with no
 * signal blocked. Prints TAP.
 *
 * usage: test_models_check HELPER GOOD_HOME BAD_HOME CUT_MODEL SCRATCH */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dit_starpu_env.h"

static int n, failed;
static atomic_int stop;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

static void check(int ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++n, what);
	failed += !ok;
}

static void *allocating(void *arg)
{
	(void)arg;
	unsigned long k = 0;
	while (!atomic_load(&stop)) {
		void *p[16];
		for (int i = 0; i < 16; i++)
			p[i] = malloc(64 + (k++ % 4096));
		for (int i = 0; i < 16; i++)
			free(p[i]);
	}
	return NULL;
}

static void *printing(void *arg)
{
	FILE *f = arg;
	while (!atomic_load(&stop)) {
		flockfile(f);
		fprintf(f, "a line written while the check runs\n");
		funlockfile(f);
	}
	return NULL;
}

static void *locking(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_mutex_lock(&held);
		for (volatile int i = 0; i < 1000; i++)
			;
		pthread_mutex_unlock(&held);
	}
	return NULL;
}

static int contains(const char *s, const char *part)
{
	return s && strstr(s, part) != NULL;
}

/* writes an executable shell script at path */
static int script(const char *path, const char *body)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "#!/bin/sh\n%s\n", body);
	if (fclose(f) != 0)
		return -1;
	return chmod(path, 0755);
}

/* the helper run again and again on good and bad models while the threads hold locks */
static void repeated(const char *helper, const char *good, const char *bad, const char *cut)
{
	dit_error err;
	int good_ok = 1, bad_ok = 1;
	setenv("STARPU_HOME", good, 1);
	for (int i = 0; i < 40 && good_ok; i++) {
		dit_error_clear(&err);
		if (dit_starpu_models_check_with(helper, 60, &err) != DIT_OK) {
			printf("# round %d: %s\n", i, err.msg);
			good_ok = 0;
		}
	}
	check(good_ok, "40 checks of models that parse, other threads holding locks: all fine");
	setenv("STARPU_HOME", bad, 1);
	for (int i = 0; i < 4 && bad_ok; i++) {
		dit_error_clear(&err);
		if (dit_starpu_models_check_with(helper, 60, &err) != DIT_ERUNTIME ||
		    !contains(err.msg, cut) ||
		    !contains(err.msg, "corrupt StarPU performance model")) {
			printf("# round %d: '%s'\n", i, err.msg);
			bad_ok = 0;
		}
	}
	check(bad_ok, "4 checks of a model cut short: each names the file");
}

/* a helper that never answers: stopped at the limit, one line, nothing left running */
static void hanging(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/hangs", dir);
	if (script(path, "echo Dsomewhere\nexec sleep 600") != 0) {
		check(0, "a helper that does not answer (cannot write the script)");
		return;
	}
	dit_error err;
	dit_error_clear(&err);
	dit_status st = dit_starpu_models_check_with(path, 1.0, &err);
	int one_line = strchr(err.msg, '\n') == NULL;
	int status;
	pid_t left = waitpid(-1, &status, WNOHANG);
	check(st == DIT_ERUNTIME && contains(err.msg, path) && contains(err.msg, "took over 1 s") &&
	          one_line && left < 0 && errno == ECHILD,
	      "a helper that does not answer: stopped after the limit, one line, reaped");
	if (st != DIT_ERUNTIME || left >= 0)
		printf("# status %d, waitpid %d: '%s'\n", st, (int)left, err.msg);
}

/* the helper's signal mask: none blocked, though this thread blocks SIGINT and SIGTERM */
static void signals(const char *dir)
{
	char path[4096], out[4200], body[8400];
	snprintf(path, sizeof path, "%s/sigs", dir);
	snprintf(out, sizeof out, "%s/sigs.out", dir);
	snprintf(body, sizeof body,
	         "echo E\nexec sed -n 's/^SigBlk:[[:space:]]*//p' /proc/self/status >'%s'", out);
	dit_error err;
	dit_error_clear(&err);
	char mask[64] = "";
	FILE *f = NULL;
	if (script(path, body) == 0 && dit_starpu_models_check_with(path, 60, &err) == DIT_OK &&
	    (f = fopen(out, "r")) != NULL && fgets(mask, sizeof mask, f))
		mask[strcspn(mask, "\n")] = '\0';
	if (f)
		fclose(f);
	check(strspn(mask, "0") == strlen(mask) && *mask,
	      "the helper starts with no signal blocked (SIGINT, SIGTERM blocked here)");
	if (strspn(mask, "0") != strlen(mask) || !*mask)
		printf("# SigBlk '%s': %s\n", mask, err.msg);
}

static void missing(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/none/ditstar-models-check", dir);
	dit_error err;
	dit_error_clear(&err);
	check(dit_starpu_models_check_with(path, 60, &err) == DIT_ERUNTIME &&
	          contains(err.msg, "cannot start it"),
	      "a helper that cannot start: an error naming it");
	setenv("DITSTAR_LIBEXECDIR", dir, 1); /* holds no ditstar-models-check */
	dit_error_clear(&err);
	check(dit_starpu_models_check(&err) == DIT_OK, "no helper found: the check is skipped");
	unsetenv("DITSTAR_LIBEXECDIR");
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s HELPER GOOD_HOME BAD_HOME CUT_MODEL SCRATCH\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("1..6\n");
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	FILE *sink = fopen("/dev/null", "w");
	pthread_t th[3];
	if (!sink || pthread_create(&th[0], NULL, allocating, NULL) ||
	    pthread_create(&th[1], NULL, printing, sink) ||
	    pthread_create(&th[2], NULL, locking, NULL)) {
		printf("Bail out! cannot start the threads\n");
		return 1;
	}
	repeated(argv[1], argv[2], argv[3], argv[4]);
	hanging(argv[5]);
	signals(argv[5]);
	missing(argv[5]);
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	fclose(sink);
	return failed ? 1 : 0;
}
