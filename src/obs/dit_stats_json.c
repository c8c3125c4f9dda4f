/* The --stats-json report: what the run's statistics (dit_stats.c) gathered, with
 * StarPU's view of the workers, memory nodes and links, and the graph's figures. */
#define _POSIX_C_SOURCE 200809L
#include "config.h"

#include "dit_stats.h"
#include "dit_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <json-c/json.h>
#include <starpu.h>

#include "dit_blas_env.h"
#include "dit_cpu_isa.h"
#include "dit_roofline.h"
#include "dit_hostpool.h"
#include "dit_wdt_json.h"

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

static json_object *links_json(dit_stats *s)
{
	json_object *arr = json_object_new_array();
	pthread_mutex_lock(&s->lock);
	dit_stats_bus_sample(s);
	for (int b = 0; b < s->nbus; b++) {
		char src[64], dst[64];
		starpu_memory_node_get_name((unsigned)starpu_bus_get_src(b), src, sizeof src);
		starpu_memory_node_get_name((unsigned)starpu_bus_get_dst(b), dst, sizeof dst);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "src", json_object_new_string(src));
		json_object_object_add(o, "dst", json_object_new_string(dst));
		json_object_object_add(o, "bytes", json_object_new_int64(s->bus_bytes[b]));
		json_object_object_add(o, "transfers", json_object_new_int(s->bus_transfers[b]));
		/* StarPU's calibrated bandwidth of the link, MB/s */
		json_object_object_add(
		    o, "bandwidth_MB_per_s",
		    json_object_new_double(starpu_transfer_bandwidth(
		        (unsigned)starpu_bus_get_src(b), (unsigned)starpu_bus_get_dst(b))));
		json_object_array_add(arr, o);
	}
	pthread_mutex_unlock(&s->lock);
	return arr;
}

/* The time StarPU's bus model gives the bytes moved on every link (bandwidths from
 * its calibration), in seconds. */
static double predicted_transfer_seconds(const dit_stats *s)
{
	double t = 0;
	for (int b = 0; b < s->nbus; b++) {
		double bw = starpu_transfer_bandwidth((unsigned)starpu_bus_get_src(b),
		                                      (unsigned)starpu_bus_get_dst(b)); /* MB/s */
		if (bw > 0)
			t += (double)s->bus_bytes[b] / (bw * 1e6);
	}
	return t;
}

static json_object *transfers_json(dit_stats *s)
{
	json_object *o = json_object_new_object();
	pthread_mutex_lock(&s->lock);
	dit_stats_bus_sample(s);
	pthread_mutex_unlock(&s->lock);
	s->xfer_predicted = predicted_transfer_seconds(s);
	double hidden = s->xfer_predicted > 0 ? 1.0 - s->xfer_stall / s->xfer_predicted : 1.0;
	if (hidden < 0)
		hidden = 0;
	/* what the links into the compute node moved (the weights, and the little the
	 * activations need), not what the transfer tasks asked for: a chunk StarPU still
	 * had there moves nothing */
	int64_t moved = 0;
	for (int b = 0; b < s->nbus; b++)
		if (s->compute_node >= 0 && starpu_bus_get_dst(b) == s->compute_node)
			moved += s->bus_bytes[b];
	json_object_object_add(o, "weight_fetches", json_object_new_int64(s->xfer_count));
	json_object_object_add(o, "weight_bytes", json_object_new_int64(moved));
	json_object_object_add(o, "requested_bytes", json_object_new_int64(s->xfer_bytes));
	json_object_object_add(o, "stall_seconds", json_object_new_double(s->xfer_stall));
	json_object_object_add(o, "predicted_seconds", json_object_new_double(s->xfer_predicted));
	json_object_object_add(o, "hidden_fraction", json_object_new_double(hidden));
	json_object_object_add(o, "hidden_fraction_from", json_object_new_string("bus model"));
	if (s->disk_read_bytes) { /* the chunk store's reads, checksums included */
		double b = (double)*s->disk_read_bytes, t = (double)*s->disk_read_ns * 1e-9;
		json_object_object_add(o, "disk_read_bytes", json_object_new_int64((int64_t)b));
		json_object_object_add(o, "disk_read_seconds", json_object_new_double(t));
		json_object_object_add(o, "disk_read_MB_per_s",
		                       json_object_new_double(t > 0 ? b / t / 1e6 : 0));
		json_object_object_add(o, "disk_read_cpu_seconds",
		                       json_object_new_double((double)*s->disk_read_cpu_ns * 1e-9));
		unsigned long long b1, n1, c1;
		int steady = dit_stats_disk_steady(s, &b1, &n1, &c1);
		json_object_object_add(
		    o, "disk_read_MB_per_s_after_first_step",
		    json_object_new_double(steady ? (double)b1 / (double)n1 * 1e3 : 0));
		json_object_object_add(
		    o, "disk_read_cpu_MB_per_s_after_first_step",
		    json_object_new_double(steady && c1 ? (double)b1 / (double)c1 * 1e3 : 0));
		json_object_object_add(o, "disk_reads_in_flight",
		                       json_object_new_int(s->disk_reads));
		/* the drive's plain sequential rate, read before the run by the store's
		 * check, and the steady steps' rate over it */
		double seq =
		    s->disk_seq_ns ? (double)s->disk_seq_bytes / (double)s->disk_seq_ns * 1e3 : 0;
		json_object_object_add(o, "disk_sequential_MB_per_s", json_object_new_double(seq));
		json_object_object_add(
		    o, "disk_read_over_sequential",
		    json_object_new_double(steady && seq > 0 ? (double)b1 / (double)n1 * 1e3 / seq
		                                             : 0));
	}
	return o;
}

/* Per worker: the tasks it ran and its seconds executing them since the stats
 * started (StarPU's profiling); busy_sum their sum. */
static json_object *workers_json(double *busy_sum)
{
	json_object *a = json_object_new_array();
	*busy_sum = 0;
	unsigned n = starpu_worker_get_count();
	for (unsigned w = 0; w < n; w++) {
		struct starpu_profiling_worker_info info;
		if (starpu_profiling_worker_get_info((int)w, &info) != 0)
			continue;
		char name[64];
		starpu_worker_get_name((int)w, name, sizeof name);
		double busy = starpu_timing_timespec_to_us(&info.executing_time) / 1e6;
		json_object *o = json_object_new_object();
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "tasks", json_object_new_int(info.executed_tasks));
		json_object_object_add(o, "busy_seconds", json_object_new_double(busy));
		json_object_array_add(a, o);
		*busy_sum += busy;
	}
	return a;
}

/* The row tile plan (dit_tiles.h): rows per tile and tiles of the token stream. */
static json_object *tiles_json(const dit_stats_graph *g)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "tile_tokens", json_object_new_int64(g->tile_rows));
	json_object_object_add(o, "token_tiles", json_object_new_int(g->token_tiles));
	json_object_object_add(o, "text_tiles", json_object_new_int(g->text_tiles));
	return o;
}

/* The report's head: the command, the scheduler, the run's seconds in all, submitting
 * and per step, and the GEMM flops of a step. */
static void head_add(json_object *root, const dit_stats *s, const dit_stats_graph *g)
{
	json_object_object_add(root, "schema", json_object_new_int(DIT_STATS_SCHEMA));
	json_object_object_add(root, "command", json_object_new_string(s->command));
	json_object *argv = NULL;
	if (s->argv) {
		argv = json_object_new_array();
		for (int i = 0; i < s->argc; i++)
			json_object_array_add(argv, json_object_new_string(s->argv[i]));
	}
	json_object_object_add(root, "argv", argv);
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) != 0)
		host[0] = '\0';
	json_object_object_add(root, "host", host[0] ? json_object_new_string(host) : NULL);
	char date[32] = "";
	time_t t0 = (time_t)s->started;
	struct tm tm;
	if (gmtime_r(&t0, &tm))
		strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_object_add(root, "date", json_object_new_string(date));
	json_object *video = NULL;
	if (s->video[0] > 0) {
		video = json_object_new_object();
		json_object_object_add(video, "frames", json_object_new_int64(s->video[0]));
		json_object_object_add(video, "height", json_object_new_int64(s->video[1]));
		json_object_object_add(video, "width", json_object_new_int64(s->video[2]));
	}
	json_object_object_add(root, "video", video);
	json_object_object_add(
	    root, "scheduler",
	    json_object_new_string(starpu_sched_get_sched_policy()
	                               ? starpu_sched_get_sched_policy()->policy_name
	                               : "?"));
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
}

/* What ran: the model, its steps and seed, ditstar's and StarPU's versions, the
 * workers, and whether the performance models had estimates for every task. */
static json_object *run_json(const dit_stats *s, const dit_stats_graph *g)
{
	json_object *run = json_object_new_object();
	/* what --model-dir or --model named (the model itself is the top's "model") */
	json_object_object_add(run, "model_arg",
	                       s->model_label ? json_object_new_string(s->model_label) : NULL);
	json_object_object_add(run, "family", json_object_new_string(g->family));
	json_object_object_add(run, "steps", json_object_new_int(s->nsteps));
	json_object_object_add(run, "seed",
	                       s->have_seed ? json_object_new_int64((int64_t)s->seed) : NULL);
	json_object_object_add(run, "ditstar_version", json_object_new_string(PACKAGE_VERSION));
	int maj = 0, min = 0, rel = 0;
	starpu_get_version(&maj, &min, &rel);
	char ver[32];
	snprintf(ver, sizeof ver, "%d.%d.%d", maj, min, rel);
	json_object_object_add(run, "starpu_version", json_object_new_string(ver));
	/* the kernels the CPU workers ran: the ISA path outside BLAS, OpenBLAS's core */
	json_object_object_add(run, "cpu_isa",
	                       json_object_new_string(dit_cpu_isa_name(dit_cpu_isa_active())));
	json_object_object_add(run, "blas_core", json_object_new_string(dit_blas_core_name()));
	json_object_object_add(run, "cpu_workers",
	                       json_object_new_int((int)starpu_cpu_worker_get_count()));
	json_object_object_add(run, "opencl_workers",
	                       json_object_new_int((int)starpu_opencl_worker_get_count()));
	json_object_object_add(run, "cuda_workers",
	                       json_object_new_int((int)starpu_cuda_worker_get_count()));
#ifdef DIT_SIMGRID
	/* ditstar-sim: every second here is SimGrid's, from the performance models */
	json_object_object_add(run, "simulated", json_object_new_boolean(1));
	const char *host = getenv("STARPU_HOSTNAME");
	json_object_object_add(run, "simulated_host", host ? json_object_new_string(host) : NULL);
	/* the task lengths: the calibrated models, or --sim-roofline's figures */
	const char *roof = dit_roofline_attached();
	json_object_object_add(run, "lengths_from",
	                       json_object_new_string(roof ? "roofline" : "models"));
	json_object_object_add(run, "roofline", roof ? json_object_new_string(roof) : NULL);
#else
	json_object_object_add(run, "simulated", json_object_new_boolean(0));
#endif
	return run;
}

/* Per memory node: its name and kind, and its peak use. */
static json_object *nodes_json(const dit_stats *s)
{
	json_object *nodes = json_object_new_array();
	for (int n = 0; n < s->nnodes; n++) {
		char name[64];
		starpu_memory_node_get_name((unsigned)n, name, sizeof name);
		json_object *o = json_object_new_object();
		json_object_object_add(o, "node", json_object_new_int(n));
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "kind", json_object_new_string(node_kind((unsigned)n)));
		/* StarPU counts the data it allocates (activations, copies of chunks);
		 * weights registered from host memory or from the chunk store are not in
		 * that count and are added here. */
		size_t weights = s->weight_bytes[n];
		json_object_object_add(o, "peak_bytes",
		                       json_object_new_int64((int64_t)(s->peak_used[n] + weights)));
		json_object_object_add(o, "starpu_peak_bytes",
		                       json_object_new_int64((int64_t)s->peak_used[n]));
		json_object_object_add(o, "weight_bytes", json_object_new_int64((int64_t)weights));
		json_object_array_add(nodes, o);
	}
	return nodes;
}

/* The offload settings the run took: mode, chunks, prefetch, the limits and budget,
 * the chunk store and the host buffers. */
static json_object *offload_json(const dit_stats *s)
{
	json_object *off = json_object_new_object();
	json_object_object_add(off, "mode",
	                       json_object_new_string(s->offload_mode ? s->offload_mode : "none"));
	json_object_object_add(off, "chunk_size", json_object_new_int64(s->chunk_size));
	json_object_object_add(off, "prefetch", json_object_new_int64(s->prefetch));
	json_object_object_add(off, "auto", json_object_new_boolean(s->offload_auto));
	json_object_object_add(off, "predicted_seconds_per_step",
	                       s->predicted_step > 0 ? json_object_new_double(s->predicted_step)
	                                             : NULL);
	json_object_object_add(off, "device_limit_bytes",
	                       json_object_new_int64((int64_t)s->device_limit));
	if (*s->disk_source) { /* disk mode: where the blocks were read from */
		json_object_object_add(off, "disk_source", json_object_new_string(s->disk_source));
		json_object_object_add(
		    off, "disk_source_why",
		    *s->disk_source_why ? json_object_new_string(s->disk_source_why) : NULL);
	}
	json_object_object_add(off, "device_outside_bytes",
	                       json_object_new_int64((int64_t)s->device_outside));
	json_object_object_add(off, "host_limit_bytes",
	                       json_object_new_int64((int64_t)s->host_limit));
	json_object_object_add(off, "budget_bytes", json_object_new_int64((int64_t)s->budget));
	if (s->budget_from)
		json_object_object_add(off, "budget_from", json_object_new_string(s->budget_from));
	json_object_object_add(off, "resident_bytes",
	                       json_object_new_int64((int64_t)s->resident_bytes));
	if (s->store) {
		json_object_object_add(off, "store", json_object_new_string(s->store));
		json_object_object_add(off, "store_reused",
		                       json_object_new_boolean(s->store_reused));
		json_object_object_add(off, "store_written_because",
		                       json_object_new_string(s->store_note ? s->store_note : ""));
	}
	if (s->pool) { /* chunk-sized host buffers (dit_hostpool.h) */
		json_object_object_add(off, "host_buffer_allocations",
		                       json_object_new_int64(s->pool->allocs));
		json_object_object_add(off, "host_buffers_reused",
		                       json_object_new_int64(s->pool->hits));
	}
	return off;
}

/* The tasks submitted, per codelet, then the performance models' coverage of them. */
static void tasks_add(json_object *root, const dit_stats_graph *g)
{
	json_object *tasks = json_object_new_object();
	for (int i = 0; i < g->ncodelets; i++)
		json_object_object_add(tasks, g->codelet[i], json_object_new_int64(g->count[i]));
	json_object_object_add(root, "tasks", tasks);
	json_object *pm = json_object_new_object();
	json_object_object_add(pm, "tasks", json_object_new_int64(g->model_tasks));
	json_object_object_add(pm, "uncalibrated_tasks",
	                       json_object_new_int64(g->model_uncalibrated));
	/* as the predictor takes them: estimates for all but at most 1 task in 20 */
	json_object_object_add(
	    pm, "calibrated",
	    json_object_new_boolean(g->model_tasks > 0 &&
	                            g->model_uncalibrated * 20 <= g->model_tasks));
	json_object_object_add(root, "perfmodels", pm);
}

/* The dtypes the checkpoint stores the tensors read in (every expert's). */
static json_object *stored_dtypes_json(const dit_stats *s)
{
	json_object *sd = json_object_new_object();
	for (int d = 0; d < DIT_DTYPE_COUNT; d++) {
		int64_t n = 0;
		for (int e = 0; e < s->weights->nexperts; e++)
			n += s->weights->expert[e]->stored[d];
		if (n > 0)
			json_object_object_add(sd, dit_dtype_name((dit_dtype)d),
			                       json_object_new_int64(n));
	}
	return sd;
}

/* Pool i of the model: its blocks and chunks, the chunks kept on the compute node
 * and the bytes its weight transfers moved (every expert's). */
static json_object *pool_json(const dit_stats *s, const dit_stats_graph *g, int i)
{
	const dit_model *cur = s->weights->expert[g->expert]; /* the expert computing last */
	const dit_pool *pl = &cur->pool[i];
	json_object *o = json_object_new_object();
	json_object_object_add(o, "prefix", json_object_new_string(pl->d->prefix));
	json_object_object_add(o, "kind", json_object_new_string(pl->d->kind));
	json_object_object_add(o, "blocks", json_object_new_int64(pl->nblocks));
	json_object_object_add(o, "block_bytes",
	                       json_object_new_int64((int64_t)dit_pool_block_bytes(pl)));
	char tag[48];
	dit_layout_tag(&pl->lay, pl->d->tensors, tag, sizeof tag);
	json_object_object_add(o, "block_matrices", json_object_new_string(tag));
	json_object_object_add(o, "block_bytes_by_dtype", dit_json_block_bytes_by_wdt(pl));
	json_object_object_add(o, "chunk_size", json_object_new_int64(pl->chunk_size));
	json_object_object_add(o, "chunk_bytes",
	                       json_object_new_int64((int64_t)dit_pool_chunk_bytes(pl)));
	json_object_object_add(o, "chunks", json_object_new_int64(pl->nchunks));
	int64_t moved = g->pool_moved[i], kept = g->pool_kept[i];
	json_object_object_add(o, "resident_chunks", json_object_new_int64(kept));
	json_object_object_add(o, "bytes_moved", json_object_new_int64(moved));
	/* every pass of a step shares each chunk's transfer (--pass-order chunk) */
	json_object_object_add(o, "bytes_moved_per_step",
	                       json_object_new_int64(s->nsteps > 0 ? moved / s->nsteps : moved));
	json_object_object_add(o, "bytes_moved_by_dtype", dit_json_chunk_bytes_by_wdt(pl, moved));
	json_object_object_add(o, "passes", json_object_new_int(g->npasses));
	return o;
}

/* The weights: the first pool's figures, then every pool's, and the activations. */
static json_object *weights_json(const dit_stats *s, const dit_stats_graph *g)
{
	const dit_model *cur = s->weights->expert[g->expert]; /* the expert computing last */
	const dit_pool *p0 = &cur->pool[0];
	json_object *w = json_object_new_object();
	json_object_object_add(w, "block_bytes",
	                       json_object_new_int64((int64_t)dit_pool_block_bytes(p0)));
	json_object_object_add(w, "global_bytes",
	                       json_object_new_int64((int64_t)dit_model_global_bytes(cur)));
	json_object_object_add(w, "blocks", json_object_new_int64(p0->nblocks));
	json_object_object_add(w, "chunk_bytes",
	                       json_object_new_int64((int64_t)dit_pool_chunk_bytes(p0)));
	json_object_object_add(w, "chunks", json_object_new_int64(p0->nchunks));
	char tag[48];
	dit_layout_tag(&p0->lay, p0->d->tensors, tag, sizeof tag);
	json_object_object_add(w, "block_matrices", json_object_new_string(tag));
	json_object_object_add(w, "block_bytes_by_dtype", dit_json_block_bytes_by_wdt(p0));
	json_object_object_add(w, "stored_dtypes", stored_dtypes_json(s));
	json_object *pools = json_object_new_array();
	for (int i = 0; i < cur->npools; i++)
		json_object_array_add(pools, pool_json(s, g, i));
	json_object_object_add(w, "pools", pools);
	json_object_object_add(w, "activation_bytes",
	                       json_object_new_int64((int64_t)g->activation_bytes));
	json_object_object_add(w, "passes_in_flight", json_object_new_int(g->slots));
	json_object_object_add(w, "token_chunk_rows", json_object_new_int64(g->chunk_rows));
	return w;
}

/* The model: its family and, per expert, its blocks and the steps it computed. */
static json_object *model_json(const dit_stats *s)
{
	json_object *model = json_object_new_object();
	json_object_object_add(model, "name", json_object_new_string(s->weights->desc->name));
	json_object *ex = json_object_new_array();
	for (int e = 0; e < s->weights->nexperts; e++) {
		const dit_model *m = s->weights->expert[e];
		json_object *o = json_object_new_object();
		json_object_object_add(
		    o, "name",
		    json_object_new_string(
		        s->weights->nexperts > 1 ? s->weights->desc->expert_label[e] : "model"));
		int64_t blocks = 0, chunks = 0;
		size_t bytes = dit_model_global_bytes(m);
		for (int i = 0; i < m->npools; i++) {
			blocks += m->pool[i].nblocks;
			chunks += m->pool[i].nchunks;
			bytes += dit_pool_bytes(&m->pool[i]);
		}
		json_object_object_add(o, "blocks", json_object_new_int64(blocks));
		json_object_object_add(o, "chunks", json_object_new_int64(chunks));
		json_object_object_add(o, "weight_bytes", json_object_new_int64((int64_t)bytes));
		json_object_object_add(o, "steps", json_object_new_int64(s->expert_steps[e]));
		json_object_array_add(ex, o);
	}
	json_object_object_add(model, "experts", ex);
	return model;
}

/* --priorities, and the range of the priorities the tasks were given. */
static json_object *priorities_json(const dit_stats_graph *g)
{
	json_object *pr = json_object_new_object();
	json_object_object_add(pr, "scheme", json_object_new_string(g->priorities));
	json_object_object_add(pr, "min",
	                       json_object_new_int(g->prio_lo <= g->prio_hi ? g->prio_lo : 0));
	json_object_object_add(pr, "max",
	                       json_object_new_int(g->prio_lo <= g->prio_hi ? g->prio_hi : 0));
	return pr;
}

/* root as indented JSON and a newline, written to path atomically. */
static dit_status json_file_write(json_object *root, const char *path, dit_error *err)
{
	const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
	                                                            JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory", path);
	dit_io_atomic f;
	dit_status st = dit_io_atomic_open(&f, path, err);
	if (st == DIT_OK)
		st = dit_io_atomic_write(&f, text, strlen(text), err);
	if (st == DIT_OK)
		st = dit_io_atomic_write(&f, "\n", 1, err);
	if (st == DIT_OK)
		st = dit_io_atomic_commit(&f, err);
	return st;
}

dit_status dit_stats_write_json(dit_stats *s, const dit_stats_graph *g, const char *path,
                                dit_error *err)
{
	json_object *root = json_object_new_object();
	head_add(root, s, g);
	json_object_object_add(root, "run", run_json(s, g));
	json_object_object_add(root, "memory_nodes", nodes_json(s));
	json_object_object_add(root, "links", links_json(s));
	json_object *sb = json_object_new_array();
	for (int i = 0; i < s->nsteps; i++)
		json_object_array_add(sb, json_object_new_int64(s->step_bytes[i]));
	json_object_object_add(root, "step_bytes", sb);
	json_object_object_add(root, "transfers", transfers_json(s));
	json_object_object_add(root, "offload", offload_json(s));
	tasks_add(root, g);
	json_object_object_add(root, "weights", weights_json(s, g));
	json_object_object_add(root, "model", model_json(s));
	json_object_object_add(root, "tokens", json_object_new_int64(g->tokens));
	json_object_object_add(root, "tiles", tiles_json(g));
	json_object_object_add(root, "priorities", priorities_json(g));
	json_object_object_add(root, "cuda_libraries", dit_stats_cuda_json(s->cuda_libs));
	/* concurrency: the workers' seconds executing tasks over the run's seconds (1 for
	 * a serial chain, the worker count when all compute all the time) */
	double busy, wall = s->t_done - s->t_submit;
	json_object_object_add(root, "workers", workers_json(&busy));
	json_object_object_add(root, "concurrency",
	                       json_object_new_double(wall > 0 ? busy / wall : 0));
	dit_status st = json_file_write(root, path, err);
	json_object_put(root);
	return st;
}
