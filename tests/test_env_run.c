/* The library leaves the process environment as it found it: the memory limits the
 * planner chose and the trace settings are set for one run only, a value the user set
 * wins and stays, and two runs in one process (the library is installed, dit_generate
 * is public) do not inherit each other's limits. Prints TAP. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_run.h"

static int n, failed;

static void check(int ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++n, what);
	failed += !ok;
}

static int run(const char *cache, const char *trace, dit_offload_mode mode)
{
	dit_generate_opts o;
	dit_generate_opts_default(&o);
	o.model_name = "tiny-test";
	o.cache_dir = cache;
	o.steps = 1;
	o.quiet = 1;
	o.trace_dir = trace;
	o.offload.mode = mode;
	dit_error err;
	dit_error_clear(&err);
	if (dit_generate(&o, &err) != DIT_OK) {
		printf("# %s\n", err.msg);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_env_run SCRATCH_DIR\n");
		return 2;
	}
	char trace[4096];
	snprintf(trace, sizeof trace, "%s/trace", argv[1]);
	printf("1..6\n");
	unsetenv("STARPU_LIMIT_CPU_MEM");
	unsetenv("STARPU_FXT_TRACE");
	check(run(argv[1], NULL, DIT_OFFLOAD_DISK) == 0,
	      "a disk-mode run (the planner limits host RAM)");
	check(getenv("STARPU_LIMIT_CPU_MEM") == NULL, "its host limit does not outlive the run");
	int traced = run(argv[1], trace, DIT_OFFLOAD_NONE);
	check(traced == 0 && getenv("STARPU_FXT_TRACE") == NULL &&
	          getenv("STARPU_FXT_PREFIX") == NULL,
	      "a traced run, then no trace variable left");
	setenv("STARPU_LIMIT_CPU_MEM", "4096", 1);
	check(run(argv[1], NULL, DIT_OFFLOAD_DISK) == 0, "a disk-mode run under the user's limit");
	const char *v = getenv("STARPU_LIMIT_CPU_MEM");
	check(v && strcmp(v, "4096") == 0, "the user's limit is kept");
	unsetenv("STARPU_LIMIT_CPU_MEM");
	check(run(argv[1], NULL, DIT_OFFLOAD_NONE) == 0 && getenv("STARPU_LIMIT_CPU_MEM") == NULL,
	      "a resident run after them: no limit inherited");
	return failed ? 1 : 0;
}
