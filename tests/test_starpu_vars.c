/* Every variable StarPU reads as a number (src/runtime/dit_starpu_vars.c, from
 * StarPU's own sources) and the lists of worker ids, set to what StarPU aborts on
 * ("abc", "-1", "1e99", "0x", "3 x", an id list "-1"), are refused by
 * dit_starpu_env_check before StarPU starts, the one-line message naming the variable;
 * values StarPU takes are accepted. No StarPU call: TAP. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_starpu_env.h"
#include "dit_starpu_vars.h"

static int n, failed;

static void check(int ok, const char *what, const char *name, const char *value)
{
	n++;
	failed += !ok;
	printf("%s %d - %s=%s %s\n", ok ? "ok" : "not ok", n, name, value, what);
}

/* name=value: refused (bad) naming the variable on one line, or accepted. */
static void try_value(const char *name, const char *value, int bad)
{
	setenv(name, value, 1);
	dit_error err;
	memset(&err, 0, sizeof err);
	dit_status st = dit_starpu_env_check(&err);
	unsetenv(name);
	if (bad)
		check(st != DIT_OK && strncmp(err.msg, name, strlen(name)) == 0 &&
		          !strchr(err.msg, '\n'),
		      "refused, named", name, value);
	else
		check(st == DIT_OK, "accepted", name, value);
}

int main(void)
{
	/* every case of the table, and a few of each kind beyond it */
	int ints = 0, floats = 0;
	for (int i = 0; i < dit_starpu_nvars; i++) {
		if (dit_starpu_vars[i].kind == DIT_SPV_INT)
			ints++;
		else
			floats++;
	}
	check(ints >= 100 && floats >= 20, "StarPU's own list is there", "table", "");
	for (int i = 0; i < dit_starpu_nvars; i++) {
		const char *v = dit_starpu_vars[i].name;
		try_value(v, "abc", 1);
		if (dit_starpu_vars[i].kind == DIT_SPV_INT) {
			try_value(v, "-1", 1);
			try_value(v, "3 x", 1);
			try_value(v, "99999999999", 1);
		} else {
			try_value(v, "1e99", 1);
			try_value(v, "nan", 1);
		}
	}
	/* values StarPU takes: of each kind, on a variable ditstar has no range for */
	try_value("STARPU_SCHED_ALPHA", "0.5", 0);
	try_value("STARPU_SCHED_BETA", "2", 0);
	try_value("STARPU_BACKOFF_MAX", "8", 0);
	try_value("STARPU_DISABLE_KERNELS", "0", 0);
	/* lists of worker ids */
	const char *bad[] = {"-1", "a", "1 b", "4-2", "0,,x"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		try_value("STARPU_WORKERS_CPUID", bad[i], 1);
	try_value("STARPU_WORKERS_CUDAID", "0-1", 1);
	const char *good[] = {"0", "0 1 2", "0,2", "4-7", "1 3-", "0 1 ,2"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		try_value("STARPU_WORKERS_CPUID", good[i], 0);
	try_value("STARPU_WORKERS_CUDAID", "0 1", 0);
	printf("1..%d\n", n);
	return failed ? 1 : 0;
}
