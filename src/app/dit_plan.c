/* `ditstar plan` and `generate --dry-run`: the offload plan of a run, decided as the run
 * would decide it, printed without reading tensor data or submitting a task. */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "dit_plan.h"
#include "dit_predict.h"
#include "dit_wdt_json.h"

#define MIB ((double)(1 << 20))

static const char *budget_name(int from)
{
	return from == DIT_BUDGET_LIMIT ? "limit" : from == DIT_BUDGET_MEMORY ? "memory" : "none";
}

static json_object *jsize(size_t n)
{
	return json_object_new_int64((int64_t)n);
}

/* The activations on the compute node by how long they live (dit_act_plan). */
static json_object *act_json(const dit_offload *off)
{
	static const char *const from[] = {"all", "limit", "option", "memory"};
	const dit_act_plan *a = &off->act;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "passes", json_object_new_int(a->npasses));
	json_object_object_add(o, "passes_in_flight", json_object_new_int(a->slots));
	json_object_object_add(o, "passes_in_flight_from",
	                       json_object_new_string(from[off->act_from % 4]));
	json_object_object_add(o, "dtype", json_object_new_string(a->act_bf16 ? "bf16" : "f32"));
	json_object_object_add(o, "token_chunk_rows", json_object_new_int64(a->chunk_rows));
	json_object_object_add(o, "token_chunk_from",
	                       json_object_new_string(from[off->chunk_from % 4]));
	json_object_object_add(o, "per_pass_io_bytes", jsize(a->io));
	json_object_object_add(o, "per_pass_forward_bytes", jsize(a->forward));
	json_object_object_add(o, "per_pass_in_flight_block_bytes", jsize(a->block));
	json_object_object_add(o, "shared_bytes", jsize(a->shared));
	json_object_object_add(o, "caller_bytes", jsize(off->act_extra));
	json_object_object_add(o, "total_bytes", jsize(off->activation_bytes));
	json_object_object_add(
	    o, "all_passes_in_flight_bytes",
	    jsize(off->activation_bytes + (size_t)(a->npasses - a->slots) * a->block));
	json_object_object_add(o, "largest_buffer",
	                       json_object_new_string(a->largest ? a->largest : ""));
	json_object_object_add(o, "largest_buffer_bytes", jsize(a->largest_bytes));
	json_object *bufs = json_object_new_array();
	for (int i = 0; i < a->nbuf; i++) {
		json_object *b = json_object_new_object();
		json_object_object_add(b, "name", json_object_new_string(a->buf[i].name));
		json_object_object_add(b, "lifetime", json_object_new_string(a->buf[i].life));
		json_object_object_add(b, "bytes", jsize(a->buf[i].bytes));
		json_object_object_add(b, "copies", json_object_new_int(a->buf[i].copies));
		json_object_array_add(bufs, b);
	}
	json_object_object_add(o, "buffers", bufs);
	return o;
}

/* The bytes a buffer of the plan's list holds in all (its copies). */
static int64_t buf_total(json_object *b)
{
	return json_object_get_int64(json_object_object_get(b, "bytes")) *
	       json_object_get_int(json_object_object_get(b, "copies"));
}

/* The five buffers holding the most, copies included. */
static void print_top_buffers(FILE *out, json_object *bufs)
{
	size_t n = bufs ? json_object_array_length(bufs) : 0;
	int taken[DIT_ACT_MAX_BUFS] = {0};
	fprintf(out, "  the most:");
	for (int k = 0; k < 5 && (size_t)k < n; k++) {
		int best = -1;
		for (size_t i = 0; i < n && i < DIT_ACT_MAX_BUFS; i++)
			if (!taken[i] &&
			    (best < 0 || buf_total(json_object_array_get_idx(bufs, i)) >
			                     buf_total(json_object_array_get_idx(bufs, best))))
				best = (int)i;
		taken[best] = 1;
		json_object *b = json_object_array_get_idx(bufs, best);
		int copies = json_object_get_int(json_object_object_get(b, "copies"));
		fprintf(out, "%s %s %.1f MiB", k ? "," : "",
		        json_object_get_string(json_object_object_get(b, "name")),
		        (double)json_object_get_int64(json_object_object_get(b, "bytes")) / MIB);
		if (copies > 1)
			fprintf(out, " x %d", copies);
		fprintf(out, " (%s)",
		        json_object_get_string(json_object_object_get(b, "lifetime")));
	}
	fprintf(out, "\n");
}

/* Per pool: its blocks and chunks, those kept resident (on the compute node, and in
 * host RAM), the bytes it streams a step. *step, *step_disk: the streamed bytes of
 * every pool a step, and those read from the store. */
static json_object *pools_json(const dit_offload *off, int npasses, size_t *step, size_t *step_disk)
{
	json_object *pools = json_object_new_array();
	for (int p = 0; p < off->npools; p++) {
		const dit_pool *m = off->pool[p];
		json_object *o = json_object_new_object();
		size_t sb = dit_fit_step_bytes(off, p, npasses, 0);
		json_object_object_add(o, "pool", json_object_new_string(m->d->prefix));
		json_object_object_add(o, "label", json_object_new_string(off->pool_label[p]));
		json_object_object_add(o, "blocks", json_object_new_int64(m->nblocks));
		json_object_object_add(o, "chunk_size", json_object_new_int64(m->chunk_size));
		json_object_object_add(o, "chunks", json_object_new_int64(m->nchunks));
		json_object_object_add(o, "chunk_bytes", jsize(dit_pool_chunk_bytes(m)));
		char tag[48];
		dit_layout_tag(&m->lay, m->d->tensors, tag, sizeof tag);
		json_object_object_add(o, "block_matrices", json_object_new_string(tag));
		json_object_object_add(o, "block_bytes_by_dtype", dit_json_block_bytes_by_wdt(m));
		json_object_object_add(o, "resident_chunks",
		                       json_object_new_int64(off->nresident[p]));
		int64_t in_ram = 0;
		for (int64_t k = 0; k < m->nchunks; k++)
			in_ram += dit_fit_in_ram(off, p, k);
		json_object_object_add(o, "ram_resident_chunks", json_object_new_int64(in_ram));
		*step_disk += dit_fit_step_bytes(off, p, npasses, 1);
		json_object_object_add(o, "bytes_per_step", jsize(sb));
		json_object_object_add(o, "bytes_per_step_by_dtype",
		                       dit_json_chunk_bytes_by_wdt(m, (int64_t)sb));
		if (off->o.mode == DIT_OFFLOAD_DISK) { /* where the disk node reads the blocks */
			json_object_object_add(
			    o, "disk_source",
			    json_object_new_string(off->inplace[p] ? "checkpoint" : "store"));
			json_object_object_add(
			    o, "disk_source_why",
			    off->inplace[p] ? NULL : json_object_new_string(off->source_why[p]));
		}
		json_object_array_add(pools, o);
		*step += sb;
	}
	return pools;
}

/* The compute node: its budget and what it holds (non-block weights, resident chunks
 * of kept bytes, streaming slots, activations, slack), StarPU's limit there. */
static json_object *compute_json(const dit_offload *off, const char *compute, size_t globals,
                                 size_t kept)
{
	int64_t slots = off->o.mode == DIT_OFFLOAD_DISK && !off->device ? off->o.disk_ram_slots
	                                                                : off->o.prefetch + 1;
	size_t slot_bytes = dit_offload_streams(off) ? dit_fit_slot_bytes(off, slots) : 0;
	json_object *node = json_object_new_object();
	json_object_object_add(node, "name", json_object_new_string(compute));
	json_object_object_add(node, "budget_bytes", jsize(off->budget));
	json_object_object_add(node, "budget_from",
	                       json_object_new_string(budget_name(off->budget_from)));
	json_object_object_add(node, "global_bytes", jsize(off->device ? globals : 0));
	json_object_object_add(node, "resident_chunk_bytes", jsize(kept));
	json_object_object_add(node, "streaming_slot_bytes", jsize(slot_bytes));
	json_object_object_add(node, "activation_bytes", jsize(off->activation_bytes));
	/* what the fit leaves for StarPU's rounding and caches */
	size_t held = (off->device ? globals : 0) + off->activation_bytes;
	json_object_object_add(node, "slack_bytes",
	                       jsize(off->fit_fixed > held ? off->fit_fixed - held : 0));
	/* the slack a limit cut to what it leaves (absent: whole) */
	if (off->slack_wanted)
		json_object_object_add(node, "slack_wanted_bytes", jsize(off->slack_wanted));
	json_object_object_add(node, "limit_bytes",
	                       jsize(off->device ? off->device_limit : off->host_limit));
	/* CUDA: the codelets' workspaces, outside StarPU (inside a --device-mem-limit) */
	json_object_object_add(node, "outside_bytes", jsize(off->device ? off->outside_bytes : 0));
	return node;
}

/* Host RAM: the non-block weights, the chunks, StarPU's limit there. */
static json_object *host_json(const dit_offload *off, size_t globals)
{
	json_object *host = json_object_new_object();
	json_object_object_add(host, "global_bytes", jsize(globals));
	json_object_object_add(
	    host, "chunk_bytes",
	    jsize(off->o.mode == DIT_OFFLOAD_DISK ? 0 : dit_offload_chunk_bytes(off)));
	json_object_object_add(host, "limit_bytes", jsize(off->host_limit));
	/* disk mode with a device: the chunks host RAM keeps */
	json_object_object_add(host, "resident_chunk_bytes", jsize(dit_fit_ram_bytes(off)));
	return host;
}

/* The links a step's streamed bytes cross (step, of which step_disk from the store);
 * the first step also brings every resident chunk (kept bytes, and on a device the
 * non-block weights) once. */
static json_object *links_json(const dit_offload *off, size_t globals, size_t kept, size_t step,
                               size_t step_disk)
{
	json_object *links = json_object_new_array();
	const char *dev = off->device == DIT_DEVICE_CUDA ? "CUDA" : "OpenCL";
	struct {
		const char *src, *dst;
		int on;
	} hop[] = {{"disk", "RAM", off->o.mode == DIT_OFFLOAD_DISK},
	           {"RAM", dev, off->device != DIT_DEVICE_NONE}};
	for (int i = 0; i < 2; i++) {
		if (!hop[i].on)
			continue;
		json_object *l = json_object_new_object();
		size_t first = kept + (i == 1 ? globals : dit_fit_ram_bytes(off));
		json_object_object_add(l, "src", json_object_new_string(hop[i].src));
		json_object_object_add(l, "dst", json_object_new_string(hop[i].dst));
		json_object_object_add(l, "bytes_per_step", jsize(i == 0 ? step_disk : step));
		json_object_object_add(l, "first_step_extra_bytes", jsize(first));
		json_object_array_add(links, l);
	}
	return links;
}

/* The plan as JSON (the text form prints the same fields). */
static json_object *plan_json(const dit_offload *off, const char *model, const char *compute,
                              int npasses, int nsteps)
{
	size_t globals = dit_offload_global_bytes(off), kept = dit_fit_resident_bytes(off);
	size_t step = 0, step_disk = 0; /* streamed bytes a step; those read from the store */
	json_object *root = json_object_new_object();
	json_object_object_add(root, "model", json_object_new_string(model));
	json_object_object_add(root, "mode",
	                       json_object_new_string(dit_offload_mode_name(off->o.mode)));
	json_object_object_add(root, "compute_node", json_object_new_string(compute));
	json_object_object_add(root, "steps", json_object_new_int(nsteps));
	json_object_object_add(root, "passes", json_object_new_int(npasses));
	json_object_object_add(root, "prefetch", json_object_new_int(off->o.prefetch));
	json_object_object_add(root, "pools", pools_json(off, npasses, &step, &step_disk));
	json_object_object_add(root, "compute", compute_json(off, compute, globals, kept));
	json_object_object_add(root, "activations", act_json(off));
	json_object_object_add(root, "host", host_json(off, globals));
	json_object_object_add(root, "links", links_json(off, globals, kept, step, step_disk));
	return root;
}

/* The time model's answer (dit_predict.h), or why there is none. */
static void add_prediction(json_object *root, const dit_prediction *p, int found)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "available", json_object_new_boolean(p->available));
	json_object_object_add(o, "profile", found ? json_object_new_string(p->profile) : NULL);
	json_object_object_add(o, "tasks", json_object_new_int64(p->tasks));
	json_object_object_add(o, "uncalibrated_tasks", json_object_new_int64(p->uncalibrated));
	if (p->available) {
		json_object_object_add(o, "seconds_per_step", json_object_new_double(p->step_s));
		json_object_object_add(o, "compute_seconds", json_object_new_double(p->compute_s));
		json_object_object_add(o, "exposed_transfer_seconds",
		                       json_object_new_double(p->exposed_s));
		json_object_object_add(o, "link_busy_seconds", json_object_new_double(p->link_s));
		if (p->disk_bps > 0)
			json_object_object_add(o, "disk_read_MB_per_s",
			                       json_object_new_double(p->disk_bps / 1e6));
		if (p->disk_cpu_bps > 0)
			json_object_object_add(o, "disk_read_cpu_MB_per_s",
			                       json_object_new_double(p->disk_cpu_bps / 1e6));
	} else {
		json_object_object_add(o, "why", json_object_new_string(p->why));
	}
	json_object_object_add(root, "calibrated", json_object_new_boolean(p->available));
	json_object_object_add(root, "predicted_seconds_per_step",
	                       p->available ? json_object_new_double(p->step_s) : NULL);
	json_object_object_add(root, "prediction", o);
}

#define G(o, k) json_object_get_int64(json_object_object_get(o, k))
#define S(o, k) json_object_get_string(json_object_object_get(o, k))

/* A line per pool: its chunks, those resident, the bytes it streams a step. */
static void print_pools(FILE *out, json_object *pools)
{
	for (size_t i = 0; i < json_object_array_length(pools); i++) {
		json_object *p = json_object_array_get_idx(pools, i);
		const char *label = S(p, "label"), *pre = S(p, "pool");
		fprintf(out,
		        "pool %.*s%s%s%s: %lld blocks in %lld chunks of %.1f MiB (%s matrices), "
		        "%lld resident, %.1f MiB streamed a step",
		        (int)strcspn(pre, "."), pre, *label ? " (" : "", label, *label ? ")" : "",
		        (long long)G(p, "blocks"), (long long)G(p, "chunks"),
		        (double)G(p, "chunk_bytes") / MIB, S(p, "block_matrices"),
		        (long long)G(p, "resident_chunks"), (double)G(p, "bytes_per_step") / MIB);
		if (G(p, "ram_resident_chunks"))
			fprintf(out, " (%lld of the streamed chunks kept in host RAM)",
			        (long long)G(p, "ram_resident_chunks"));
		const char *src = S(p, "disk_source");
		if (src && !strcmp(src, "checkpoint"))
			fprintf(out, "; read where its blocks lie in the checkpoint");
		else if (src)
			fprintf(out, "; read from the chunk store (not in place: %s)",
			        S(p, "disk_source_why"));
		fputc('\n', out);
	}
}

/* The compute node's budget and what it holds, with StarPU's limit. */
static void print_compute(FILE *out, json_object *c)
{
	int64_t budget = G(c, "budget_bytes"), limit = G(c, "limit_bytes");
	char bud[64] = "none (every chunk resident or streamed)";
	if (budget)
		snprintf(bud, sizeof bud, "%.1f MiB (%s)", (double)budget / MIB,
		         S(c, "budget_from"));
	fprintf(out, "compute node %s: budget %s\n", S(c, "name"), bud);
	int64_t sum = G(c, "global_bytes") + G(c, "resident_chunk_bytes") +
	              G(c, "streaming_slot_bytes") + G(c, "activation_bytes") + G(c, "slack_bytes");
	char cut[64] = "";
	if (G(c, "slack_wanted_bytes"))
		snprintf(cut, sizeof cut, " (what the limit leaves of %.1f)",
		         (double)G(c, "slack_wanted_bytes") / MIB);
	fprintf(out,
	        "  non-block weights %.1f MiB, resident chunks %.1f MiB, streaming slots %.1f "
	        "MiB, activations %.1f MiB, slack %.1f MiB%s: %.1f MiB",
	        (double)G(c, "global_bytes") / MIB, (double)G(c, "resident_chunk_bytes") / MIB,
	        (double)G(c, "streaming_slot_bytes") / MIB, (double)G(c, "activation_bytes") / MIB,
	        (double)G(c, "slack_bytes") / MIB, cut, (double)sum / MIB);
	if (G(c, "outside_bytes"))
		fprintf(out, "; the CUDA libraries' workspaces %.0f MiB beside StarPU",
		        (double)G(c, "outside_bytes") / MIB);
	if (limit)
		fprintf(out, " (StarPU limit %.0f MiB)\n", (double)limit / MIB);
	else
		fprintf(out, " (no StarPU limit)\n");
}

/* The activations by how long they live, the buffers holding the most, the passes in
 * flight and the token chunks. */
static void print_activations(FILE *out, json_object *a)
{
	int64_t np = G(a, "passes"), nf = G(a, "passes_in_flight");
	const char *why = S(a, "passes_in_flight_from");
	fprintf(out,
	        "  activations %.1f MiB: %lld pass%s x (inputs and stream %.1f + forward-lived "
	        "%.1f) + %lld in flight x block-lived %.1f + shared %.1f",
	        (double)G(a, "total_bytes") / MIB, (long long)np, np > 1 ? "es" : "",
	        (double)G(a, "per_pass_io_bytes") / MIB,
	        (double)G(a, "per_pass_forward_bytes") / MIB, (long long)nf,
	        (double)G(a, "per_pass_in_flight_block_bytes") / MIB,
	        (double)G(a, "shared_bytes") / MIB);
	if (G(a, "caller_bytes"))
		fprintf(out, " + the run's own %.1f", (double)G(a, "caller_bytes") / MIB);
	fprintf(out, " MiB; largest buffer '%s' %.1f MiB\n", S(a, "largest_buffer"),
	        (double)G(a, "largest_buffer_bytes") / MIB);
	print_top_buffers(out, json_object_object_get(a, "buffers"));
	if (np > 1)
		fprintf(out, "  passes in flight: %lld of %lld (%s)\n", (long long)nf,
		        (long long)np,
		        strcmp(why, "limit") == 0    ? "fewer: the memory limit holds no more"
		        : strcmp(why, "memory") == 0 ? "fewer: the device's memory holds no more"
		        : strcmp(why, "option") == 0 ? "--passes-in-flight"
		                                     : "all");
	if (strcmp(S(a, "dtype"), "bf16") == 0)
		fprintf(out, "  a block's activations in bf16 (--act-dtype), the token streams in "
		             "f32\n");
	if (G(a, "token_chunk_rows"))
		fprintf(out, "  blocks in token chunks of about %lld tokens (%s)\n",
		        (long long)G(a, "token_chunk_rows"),
		        strcmp(S(a, "token_chunk_from"), "option") == 0 ? "--token-chunk"
		        : strcmp(S(a, "token_chunk_from"), "memory") == 0
		            ? "the device's memory holds no whole block"
		            : "the memory limit holds no whole block");
}

/* Host RAM's weights, then the bytes each link carries. */
static void print_host_links(FILE *out, json_object *h, json_object *links)
{
	fprintf(out, "host RAM: non-block weights %.1f MiB, chunks %.1f MiB",
	        (double)G(h, "global_bytes") / MIB,
	        (double)(G(h, "chunk_bytes") + G(h, "resident_chunk_bytes")) / MIB);
	if (G(h, "limit_bytes"))
		fprintf(out, " (StarPU limit %.0f MiB)", (double)G(h, "limit_bytes") / MIB);
	fputc('\n', out);
	if (!json_object_array_length(links))
		fprintf(out, "links: nothing moves (the compute node holds every weight)\n");
	for (size_t i = 0; i < json_object_array_length(links); i++) {
		json_object *l = json_object_array_get_idx(links, i);
		fprintf(out, "link %s -> %s: %.1f MiB a step, and %.1f MiB once in the first\n",
		        S(l, "src"), S(l, "dst"), (double)G(l, "bytes_per_step") / MIB,
		        (double)G(l, "first_step_extra_bytes") / MIB);
	}
}

/* The predicted seconds a step, or why there are none. */
static void print_prediction(FILE *out, json_object *pr)
{
	if (json_object_get_boolean(json_object_object_get(pr, "available")))
		fprintf(
		    out,
		    "predicted s/step: %.4f (compute %.4f, exposed transfer %.4f; links busy "
		    "%.4f s a step), from StarPU's calibrated models and %s\n",
		    json_object_get_double(json_object_object_get(pr, "seconds_per_step")),
		    json_object_get_double(json_object_object_get(pr, "compute_seconds")),
		    json_object_get_double(json_object_object_get(pr, "exposed_transfer_seconds")),
		    json_object_get_double(json_object_object_get(pr, "link_busy_seconds")),
		    S(pr, "profile"));
	else
		fprintf(out, "predicted s/step: not available: %s\n", S(pr, "why"));
}

static void plan_text(FILE *out, json_object *j)
{
	fprintf(out,
	        "plan: %s, --workers %s%s, --offload %s, %lld steps of %lld passes, prefetch "
	        "%lld\n",
	        S(j, "model"), S(j, "workers"),
	        json_object_get_boolean(json_object_object_get(j, "workers_auto")) ? " (auto)" : "",
	        S(j, "mode"), (long long)G(j, "steps"), (long long)G(j, "passes"),
	        (long long)G(j, "prefetch"));
	if (json_object_object_get(j, "auto"))
		fprintf(out, "%s\n", S(j, "auto"));
	print_pools(out, json_object_object_get(j, "pools"));
	print_compute(out, json_object_object_get(j, "compute"));
	print_activations(out, json_object_object_get(j, "activations"));
	print_host_links(out, json_object_object_get(j, "host"),
	                 json_object_object_get(j, "links"));
	print_prediction(out, json_object_object_get(j, "prediction"));
}
#undef G
#undef S

dit_status dit_plan_report(dit_session *s, const dit_session_graph *sg,
                           const dit_offload_opts *offload, const char *cache_dir,
                           const dit_runtime_opts *rto, int json, FILE *out, dit_error *err)
{
	dit_status st = dit_session_plan(s, sg, offload, cache_dir, rto, err);
	if (st)
		return st;
	char compute[32] = "RAM";
	if (s->off.device)
		snprintf(compute, sizeof compute, "%s 0",
		         s->off.device == DIT_DEVICE_CUDA ? "CUDA" : "OpenCL");
	dit_profile prof;
	char key[1024];
	dit_plan_req rq;
	dit_session_plan_req(s, sg, &rq);
	int found = dit_predict_find(&prof, key, sizeof key, &rq, s->off.act.chunk_rows, rto);
	dit_prediction pred;
	memset(&pred, 0, sizeof pred);
	snprintf(pred.why, sizeof pred.why,
	         "no step profile of these shapes, workers and tiles (run `ditstar calibrate` "
	         "with the same options)");
	if (s->off.fit_pending || found) {
		/* StarPU starts (no task runs) to count the device's memory and to read its
		 * performance models */
		dit_runtime_opts ro = *rto;
		memcpy(ro.env, s->off.env, sizeof s->off.env);
		ro.check_models = rto->check_models && !s->models_checked;
		dit_runtime *rt = NULL;
		if ((st = dit_runtime_init(&rt, &ro, err)) != DIT_OK) {
			if (found)
				dit_profile_free(&prof);
			return st;
		}
		if (s->off.fit_pending)
			dit_fit_memory(&s->off, dit_fit_node_memory(&s->off, rt->compute_node),
			               s->off.o.prefetch + 1);
		if (found) {
			dit_predict_plan(&s->off, &rq, rto, &prof, rt, &pred);
			dit_profile_path(pred.profile, sizeof pred.profile, key);
			dit_profile_free(&prof);
		}
		dit_runtime_shutdown(rt);
	}
	/* disk mode: where each pool's blocks are read from */
	if (s->off.o.mode == DIT_OFFLOAD_DISK && (st = dit_offload_sources(&s->off, err)) != DIT_OK)
		return st;
	json_object *j = plan_json(&s->off, s->w.desc->name, compute, sg->npasses, sg->nsteps);
	/* the workers, and whether --workers auto chose them */
	json_object_object_add(
	    j, "workers",
	    json_object_new_string(dit_workers_name(dit_workers_resolve(rto->workers))));
	json_object_object_add(j, "workers_auto",
	                       json_object_new_boolean(rto->workers == DIT_WORKERS_AUTO));
	add_prediction(j, &pred, found);
	if (s->auto_used)
		json_object_object_add(j, "auto", json_object_new_string(s->auto_note));
	if (json)
		fprintf(out, "%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY));
	else
		plan_text(out, j);
	json_object_put(j);
	return DIT_OK;
}
