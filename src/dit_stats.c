#define _POSIX_C_SOURCE 200809L
#include "dit_stats.h"
#include "dit_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <starpu.h>

#include "dit_runtime.h"

dit_status dit_stats_init(dit_stats *s, const char *command, int nsteps, int progress,
                          dit_error *err)
{
	memset(s, 0, sizeof *s);
	s->command = command;
	s->nsteps = nsteps;
	s->progress = progress;
	s->step_end = calloc((size_t)(nsteps > 0 ? nsteps : 1), sizeof *s->step_end);
	if (!s->step_end)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	pthread_mutex_init(&s->lock, NULL);
	return DIT_OK;
}

void dit_stats_free(dit_stats *s)
{
	free(s->step_end);
	pthread_mutex_destroy(&s->lock);
	s->step_end = NULL;
}

void dit_stats_start(dit_stats *s)
{
	starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
	s->nnodes = (int)starpu_memory_nodes_get_count();
	if (s->nnodes > DIT_STATS_MAX_NODES)
		s->nnodes = DIT_STATS_MAX_NODES;
	dit_stats_sample(s);
}

void dit_stats_sample(dit_stats *s)
{
	pthread_mutex_lock(&s->lock);
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
	s->steps_done++;
	if (s->progress) {
		double prev = step > 0 ? s->step_end[step - 1] : s->t_submit;
		int width = 30, filled = (int)((long)width * s->steps_done / s->nsteps);
		char bar[64];
		for (int i = 0; i < width; i++)
			bar[i] = i < filled ? '#' : '.';
		bar[width] = '\0';
		fprintf(stderr, "\r[%s] step %d/%d  %.2f s/step", bar, s->steps_done, s->nsteps,
		        now - prev);
		if (s->steps_done == s->nsteps)
			fputc('\n', stderr);
		fflush(stderr);
	}
	pthread_mutex_unlock(&s->lock);
}

static const char *node_kind(unsigned node)
{
	switch (starpu_node_get_kind(node)) {
	case STARPU_CPU_RAM: return "ram";
	case STARPU_CUDA_RAM: return "cuda";
	case STARPU_OPENCL_RAM: return "opencl";
	case STARPU_DISK_RAM: return "disk";
	default: return "other";
	}
}

static json_object *links_json(void)
{
	json_object *arr = json_object_new_array();
	int nbus = starpu_bus_get_count();
	for (int b = 0; b < nbus; b++) {
		struct starpu_profiling_bus_info info;
		if (starpu_bus_get_profiling_info(b, &info) != 0)
			continue;
		char src[64], dst[64];
		starpu_memory_node_get_name((unsigned)starpu_bus_get_src(b), src, sizeof src);
		starpu_memory_node_get_name((unsigned)starpu_bus_get_dst(b), dst, sizeof dst);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "src", json_object_new_string(src));
		json_object_object_add(o, "dst", json_object_new_string(dst));
		json_object_object_add(o, "bytes", json_object_new_int64(info.transferred_bytes));
		json_object_object_add(o, "transfers", json_object_new_int(info.transfer_count));
		json_object_array_add(arr, o);
	}
	return arr;
}

dit_status dit_stats_write_json(const dit_stats *s, const dit_graph *g, const char *path,
                                dit_error *err)
{
	json_object *root = json_object_new_object();
	json_object_object_add(root, "command", json_object_new_string(s->command));
	json_object_object_add(
	    root, "scheduler",
	    json_object_new_string(starpu_sched_get_sched_policy()
	                               ? starpu_sched_get_sched_policy()->policy_name
	                               : "?"));
	json_object_object_add(root, "cpu_workers",
	                       json_object_new_int((int)starpu_cpu_worker_get_count()));
	json_object_object_add(root, "total_seconds",
	                       json_object_new_double(s->t_done - s->t_submit));
	json_object_object_add(root, "submit_seconds",
	                       json_object_new_double(s->t_submitted - s->t_submit));
	json_object *steps = json_object_new_array();
	for (int i = 0; i < s->nsteps; i++) {
		double prev = i > 0 ? s->step_end[i - 1] : s->t_submit;
		json_object_array_add(steps, json_object_new_double(s->step_end[i] - prev));
	}
	json_object_object_add(root, "step_seconds", steps);
	json_object_object_add(root, "gemm_flops", json_object_new_double(g->flops));

	json_object *nodes = json_object_new_array();
	for (int n = 0; n < s->nnodes; n++) {
		char name[64];
		starpu_memory_node_get_name((unsigned)n, name, sizeof name);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "node", json_object_new_int(n));
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "kind", json_object_new_string(node_kind((unsigned)n)));
		/* StarPU counts the data it allocates (activations); the weight slabs are
		 * registered from host memory, so they are added for the RAM node. */
		size_t weights = 0;
		if (n == STARPU_MAIN_RAM)
			weights =
			    dit_model_block_bytes(g->model) * (size_t)g->model->cfg.num_layers +
			    dit_model_global_bytes(g->model);
		json_object_object_add(o, "peak_bytes",
		                       json_object_new_int64((int64_t)(s->peak_used[n] + weights)));
		json_object_object_add(o, "starpu_peak_bytes",
		                       json_object_new_int64((int64_t)s->peak_used[n]));
		json_object_object_add(o, "weight_bytes", json_object_new_int64((int64_t)weights));
		json_object_array_add(nodes, o);
	}
	json_object_object_add(root, "memory_nodes", nodes);
	json_object_object_add(root, "links", links_json());

	json_object *tasks = json_object_new_object();
	for (int i = 0; i < g->counts.n; i++)
		json_object_object_add(tasks, g->counts.name[i],
		                       json_object_new_int64(g->counts.count[i]));
	json_object_object_add(root, "tasks", tasks);
	json_object *w = json_object_new_object();
	json_object_object_add(w, "block_bytes",
	                       json_object_new_int64((int64_t)dit_model_block_bytes(g->model)));
	json_object_object_add(w, "global_bytes",
	                       json_object_new_int64((int64_t)dit_model_global_bytes(g->model)));
	json_object_object_add(w, "blocks", json_object_new_int64(g->model->cfg.num_layers));
	json_object_object_add(w, "activation_bytes",
	                       json_object_new_int64((int64_t)g->activation_bytes));
	json_object_object_add(root, "weights", w);
	json_object_object_add(root, "tokens", json_object_new_int64(g->grid.tokens));

	const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY);
	if (!text) {
		json_object_put(root);
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	}
	dit_io_atomic f;
	dit_status st = dit_io_atomic_open(&f, path, err);
	if (st == DIT_OK)
		st = dit_io_atomic_write(&f, text, strlen(text), err);
	if (st == DIT_OK)
		st = dit_io_atomic_write(&f, "\n", 1, err);
	if (st == DIT_OK)
		st = dit_io_atomic_commit(&f, err);
	json_object_put(root);
	return st;
}
