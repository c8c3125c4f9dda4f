/* The runtime's watchdog: with tasks pending and none finishing for longer than the
 * limit, the on_hang callback runs (the command reports a hang and exits); a run whose
 * tasks keep finishing never triggers it. */
#include <stdio.h>
#include <time.h>

#include <starpu.h>

#include "dit_runtime.h"

static void slow_cpu(void *buffers[], void *arg)
{
	(void)buffers;
	const double *seconds = arg;
	struct timespec ts = {(time_t)*seconds, (long)((*seconds - (time_t)*seconds) * 1e9)};
	nanosleep(&ts, NULL);
}

static struct starpu_codelet slow_cl = {.cpu_funcs = {slow_cpu}, .nbuffers = 0, .name = "slow"};

static void on_hang(void *arg, double idle_s)
{
	double *seen = arg;
	if (*seen == 0)
		*seen = idle_s;
}

/* Runs ntasks tasks of the given length under a watchdog of limit seconds; returns
 * the idle time the watchdog reported (0: none). */
static double run(int ntasks, double task_s, double limit)
{
	double seen = 0;
	dit_runtime_opts o;
	dit_runtime_opts_default(&o);
	o.ncpus = 1;
	o.watchdog_s = limit;
	o.on_hang = on_hang;
	o.on_hang_arg = &seen;
	dit_runtime *rt;
	dit_error err;
	if (dit_runtime_init(&rt, &o, &err)) {
		printf("# %s\n", err.msg);
		return -1;
	}
	for (int i = 0; i < ntasks; i++)
		starpu_task_insert(&slow_cl, STARPU_CL_ARGS_NFREE, &task_s, sizeof task_s, 0);
	starpu_task_wait_for_all();
	dit_runtime_shutdown(rt);
	return seen;
}

int main(void)
{
	printf("1..2\n");
	double hung = run(1, 1.5, 0.5);
	printf("%s 1 - a task stuck for 1.5 s trips a 0.5 s watchdog (reported %.2f s idle)\n",
	       hung >= 0.5 ? "ok" : "not ok", hung);
	double busy = run(20, 0.05, 0.5);
	printf("%s 2 - tasks finishing every 50 ms never trip it (reported %.2f s)\n",
	       busy == 0 ? "ok" : "not ok", busy);
	return hung >= 0.5 && busy == 0 ? 0 : 1;
}
