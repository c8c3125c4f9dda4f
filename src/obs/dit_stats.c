#define _POSIX_C_SOURCE 200809L
#include "config.h"

#include "dit_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>

#include "dit_progress.h"
#include "dit_runtime.h"

int64_t dit_stats_bus_sample(dit_stats *s)
{
	int64_t moved = 0;
	s->nbus = starpu_bus_get_count();
	if (s->nbus > DIT_STATS_MAX_BUSES)
		s->nbus = DIT_STATS_MAX_BUSES;
	for (int b = 0; b < s->nbus; b++) {
		struct starpu_profiling_bus_info info;
		if (starpu_bus_get_profiling_info(b, &info) != 0)
			continue;
		s->bus_bytes[b] += info.transferred_bytes;
		s->bus_transfers[b] += info.transfer_count;
		moved += info.transferred_bytes;
	}
	return moved;
}

dit_status dit_stats_init(dit_stats *s, const char *command, int nsteps, int progress,
                          dit_error *err)
{
	memset(s, 0, sizeof *s);
	s->started = (long long)time(NULL);
	s->compute_node = -1;
	s->command = command;
	s->nsteps = nsteps;
	s->progress = progress;
	s->step_end = calloc((size_t)(nsteps > 0 ? nsteps : 1), sizeof *s->step_end);
	s->step_bytes = calloc((size_t)(nsteps > 0 ? nsteps : 1), sizeof *s->step_bytes);
	if (!s->step_end || !s->step_bytes)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	pthread_mutex_init(&s->lock, NULL);
	return DIT_OK;
}

void dit_stats_free(dit_stats *s)
{
	free(s->step_end);
	free(s->step_bytes);
	s->step_bytes = NULL;
	pthread_mutex_destroy(&s->lock);
	s->step_end = NULL;
}

void dit_stats_start(dit_stats *s)
{
	starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
	pthread_mutex_lock(&s->lock);
	dit_stats_bus_sample(s); /* transfers before the run (calibration) do not count */
	memset(s->bus_bytes, 0, sizeof s->bus_bytes);
	memset(s->bus_transfers, 0, sizeof s->bus_transfers);
	pthread_mutex_unlock(&s->lock);
	s->nnodes = (int)starpu_memory_nodes_get_count();
	if (s->nnodes > DIT_STATS_MAX_NODES)
		s->nnodes = DIT_STATS_MAX_NODES;
	dit_stats_sample(s);
}

static double ts_seconds(const struct timespec *t)
{
	return (double)t->tv_sec + 1e-9 * (double)t->tv_nsec;
}

void dit_stats_on_xfer(void *arg)
{
	dit_stats *s = arg;
	struct starpu_task *t = starpu_task_get_current();
	if (!t)
		return;
	size_t size = starpu_data_get_size(STARPU_TASK_GET_HANDLE(t, 0));
	pthread_mutex_lock(&s->lock);
	s->xfer_count++;
	s->xfer_bytes += (int64_t)size;
	if (t->profiling_info)
		s->xfer_stall += ts_seconds(&t->profiling_info->acquire_data_end_time) -
		                 ts_seconds(&t->profiling_info->acquire_data_start_time);
	pthread_mutex_unlock(&s->lock);
	dit_stats_sample(s); /* inside a step: a chunk has just arrived */
}

void dit_stats_sample(dit_stats *s)
{
	pthread_mutex_lock(&s->lock);
	s->nnodes = (int)starpu_memory_nodes_get_count(); /* disk nodes come later */
	if (s->nnodes > DIT_STATS_MAX_NODES)
		s->nnodes = DIT_STATS_MAX_NODES;
	for (int n = 0; n < s->nnodes; n++) {
		ssize_t used = starpu_memory_get_used((unsigned)n);
		if (used > 0 && (size_t)used > s->peak_used[n])
			s->peak_used[n] = (size_t)used;
	}
	pthread_mutex_unlock(&s->lock);
}

void dit_stats_on_step(void *arg, int step)
{
	dit_stats *s = arg;
	double now = dit_runtime_now();
	dit_stats_sample(s);
	pthread_mutex_lock(&s->lock);
	s->step_end[step] = now;
	s->step_bytes[step] = dit_stats_bus_sample(s);
	if (++s->steps_done == 1 && s->disk_read_bytes) {
		s->disk_first_bytes = __atomic_load_n(s->disk_read_bytes, __ATOMIC_RELAXED);
		s->disk_first_ns = __atomic_load_n(s->disk_read_ns, __ATOMIC_RELAXED);
		s->disk_first_cpu_ns = __atomic_load_n(s->disk_read_cpu_ns, __ATOMIC_RELAXED);
	}
	double prev = s->t_submit;
	for (int i = step - 1; i >= 0; i--) /* the step before that ran in this run */
		if (s->step_end[i] > prev) {
			prev = s->step_end[i];
			break;
		}
	dit_progress_step(stderr, (dit_progress_mode)s->progress, step, s->nsteps, s->steps_done,
	                  now - prev, now - s->t_submit);
	pthread_mutex_unlock(&s->lock);
}

int dit_stats_disk_steady(const dit_stats *s, unsigned long long *bytes, unsigned long long *ns,
                          unsigned long long *cpu_ns)
{
	if (!s->disk_read_bytes || !s->disk_first_bytes)
		return 0;
	*bytes = *s->disk_read_bytes - s->disk_first_bytes;
	*ns = *s->disk_read_ns - s->disk_first_ns;
	*cpu_ns = *s->disk_read_cpu_ns - s->disk_first_cpu_ns;
	return *bytes > 0 && *ns > 0;
}
