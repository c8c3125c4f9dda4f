/* One run of a model (see dit_session.h). */
#define _POSIX_C_SOURCE 200809L
#include "dit_session.h"
#include "dit_auto.h"
#include "dit_predict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <starpu.h>

#include "dit_progress.h"
#include "dit_roofline.h"
#include "dit_starpu_env.h"
#include "dit_store.h"
#include "dit_synth.h"
#include "dit_tiles.h"
#include "dit_trace.h"
#include "hunyuan_state.h"

/* Presets with synthetic weights up to this size may be written to the cache. */
#define SYNTH_MAX_BYTES ((size_t)8 << 30)

dit_status dit_session_open(dit_session *s, const char *dir, const char *name,
                            const char *cache_dir, const dit_checkpoint_opts *ck, int shapes,
                            dit_error *err)
{
	memset(s, 0, sizeof *s);
	pthread_mutex_init(&s->guard.lock, NULL);
	if (!dir) {
		const dit_preset *p;
		dit_status st = dit_synth_preset(&p, name, err);
		if (st)
			return st;
		if (shapes) { /* a plan: the sizes are all it needs (LoRA files checked) */
			dit_checkpoint_opts hdr = ck ? *ck : (dit_checkpoint_opts){0};
			hdr.headers_only = 1;
			st = dit_weights_shapes(&s->w, p, err);
			return st ? st : dit_weights_lora(&s->w, &hdr, err);
		}
#ifdef DIT_SIMGRID
		/* a simulation computes nothing: a preset too big for a synthetic checkpoint
		 * (the official sizes) runs on its shapes, its weights address space alone */
		if (dit_synth_bytes(p) > SYNTH_MAX_BYTES) {
			st = dit_weights_shapes(&s->w, p, err);
			for (int e = 0; !st && e < s->w.nexperts; e++)
				s->w.expert[e]->lazy = 1;
			return st;
		}
#endif
		char *root = cache_dir ? strdup(cache_dir) : dit_synth_cache_root();
		st = dit_synth_checkpoint(p, root, SYNTH_MAX_BYTES, &s->synth_dir, err);
		free(root);
		if (st)
			return st;
		dir = s->synth_dir;
	}
	return dit_weights_open_opts(&s->w, dir, ck, err);
}

/* What the stats need from the planner: mode, limits, resident weights, callbacks. */
static void stats_track_offload(dit_stats *st, dit_offload *off)
{
	size_t chunks = dit_offload_chunk_bytes(off), globals = dit_offload_global_bytes(off);
	st->offload_mode = dit_offload_mode_name(off->o.mode);
	st->chunk_size = off->pool[0]->chunk_size;
	st->prefetch = off->o.prefetch;
	st->device_limit = off->device_limit;
	st->device_outside = off->outside_bytes;
	st->host_limit = off->host_limit;
	st->budget = off->budget;
	st->budget_from = off->budget_from == DIT_BUDGET_LIMIT    ? "limit"
	                  : off->budget_from == DIT_BUDGET_MEMORY ? "memory"
	                                                          : NULL;
	st->resident_bytes = dit_fit_resident_bytes(off);
	st->weight_bytes[STARPU_MAIN_RAM] =
	    globals + (off->o.mode == DIT_OFFLOAD_DISK ? 0 : chunks);
	if (off->disk_node >= 0 && off->disk_node < DIT_STATS_MAX_NODES)
		st->weight_bytes[off->disk_node] = chunks;
	st->store = off->store;
	st->store_reused = off->store_reused;
	st->store_note = off->store_note;
	if (off->o.mode == DIT_OFFLOAD_DISK) {
		st->disk_read_bytes = &off->disk.read_bytes;
		st->disk_read_ns = &off->disk.read_ns;
		st->disk_read_cpu_ns = &off->disk.read_cpu_ns;
		st->disk_seq_bytes = off->seq_read_bytes;
		st->disk_seq_ns = off->seq_read_ns;
		st->disk_reads = off->disk.nreads;
		int in = 0, out = 0;
		for (int p = 0; p < off->npools; p++) {
			in += off->inplace[p];
			if (!off->inplace[p] && !out++)
				snprintf(st->disk_source_why, sizeof st->disk_source_why, "%s%s%s",
				         off->pool_label[p], *off->pool_label[p] ? ": " : "",
				         off->source_why[p]);
		}
		snprintf(st->disk_source, sizeof st->disk_source, "%s",
		         in && out ? "checkpoint+store"
		         : in      ? "checkpoint"
		                   : "store");
	}
	off->xfer.on_xfer = dit_stats_on_xfer;
	off->xfer.on_xfer_arg = st;
}

void dit_session_plan_req(dit_session *s, const dit_session_graph *sg, dit_plan_req *rq)
{
	*rq = (dit_plan_req){.w = &s->w,
	                     .grid = sg->grid,
	                     .npasses = sg->npasses,
	                     .time_rows = sg->time_rows,
	                     /* a family that concatenates y always has it (a plan from
	                      * shapes alone counts it all the same) */
	                     .concat = sg->y != NULL || s->w.desc->image == DIT_IMAGE_CONCAT,
	                     .first_frame = sg->z != NULL,
	                     .pooled = sg->pooled != NULL,
	                     .text_valid = sg->text_valid,
	                     .extra_bytes = sg->extra_bytes};
}

dit_status dit_session_plan(dit_session *s, const dit_session_graph *sg,
                            const dit_offload_opts *offload, const char *cache_dir,
                            const dit_runtime_opts *rto, dit_error *err)
{
	dit_plan_req rq;
	dit_session_plan_req(s, sg, &rq);
	if (offload->mode == DIT_OFFLOAD_AUTO) {
		dit_auto_report rep;
		dit_status st = dit_auto_choose(&s->off, &rq, offload, cache_dir, rto,
		                                &s->models_checked, &s->auto_opts, &rep, err);
		if (st)
			return st;
		s->auto_used = 1;
		s->auto_predicted = rep.calibrated ? rep.pred.step_s : 0;
		if (rep.calibrated)
			snprintf(s->auto_note, sizeof s->auto_note,
			         "offload auto: %s, the least predicted of %d plans: %.4f s/step "
			         "(compute %.4f, exposed transfer %.4f)",
			         rep.summary, rep.candidates, rep.pred.step_s, rep.pred.compute_s,
			         rep.pred.exposed_s);
		else
			snprintf(s->auto_note, sizeof s->auto_note, "offload auto: %s (%s)",
			         rep.summary, rep.why);
		return DIT_OK;
	}
	return dit_plan_run(&s->off, &rq, offload, cache_dir, rto, err);
}

dit_status dit_session_trace_steps(dit_session *s, const char *spec, const char *trace_dir,
                                   int nsteps, dit_error *err)
{
	if (!spec)
		return DIT_OK;
	if (!trace_dir)
		return dit_error_set(err, DIT_EUSAGE, "--trace-steps needs --trace DIR");
	int w[2];
	dit_status st = dit_trace_steps_parse(spec, nsteps, w, err);
	if (st)
		return st;
	s->trace_window = 1;
	s->trace_first = w[0];
	s->trace_last = w[1];
	return DIT_OK;
}

void dit_session_after_step(dit_session *s, int step)
{
	if (!s->trace_dir || !s->trace_window)
		return;
	if (step == s->trace_last)
		dit_trace_pause();
	else if (step + 1 == s->trace_first)
		dit_trace_resume();
}

static double mono_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A stage before the first step, shown as the run's progress is once it has lasted a
 * second (DITSTAR_PROGRESS_AFTER seconds): a bar on a terminal redrawn at most five
 * times a second, its first and last lines elsewhere, nothing when quiet. */
static void session_stage(void *arg, const char *name, double done, double total, const char *unit)
{
	dit_session *s = arg;
	double now = mono_now();
	int end = done >= total;
	if (strcmp(s->stage.name, name) != 0) { /* a stage begins */
		snprintf(s->stage.name, sizeof s->stage.name, "%s", name);
		s->stage.t0 = now;
		s->stage.last = -1;
		s->stage.shown = 0;
	}
	if (!s->stage.shown) {
		if (now - s->stage.t0 < s->stage.after) {
			if (end)
				s->stage.name[0] = '\0';
			return;
		}
		s->stage.shown = 1; /* its first line, or the bar empty */
		dit_progress_stage(stderr, (dit_progress_mode)s->stage.mode, name, 0, total, unit,
		                   0);
		if (done <= 0)
			return;
	}
	if (!end && now - s->stage.last < 0.2)
		return;
	s->stage.last = now;
	dit_progress_stage(stderr, (dit_progress_mode)s->stage.mode, name, done, total, unit,
	                   now - s->stage.t0);
	if (end)
		s->stage.name[0] = '\0';
}

/* DITSTAR_PROGRESS_AFTER: how long a stage lasts before it is shown (default 1 s). */
static double stage_after(void)
{
	const char *v = getenv("DITSTAR_PROGRESS_AFTER");
	char *end = NULL;
	double a = v && *v ? strtod(v, &end) : 1.0;
	return v && *v && (*end || !(a >= 0) || a > 1e6) ? 1.0 : a;
}

dit_status dit_session_start(dit_session *s, const dit_session_graph *sg,
                             const dit_offload_opts *offload, const char *cache_dir,
                             const dit_runtime_opts *rto, const char *trace_dir, dit_error *err)
{
	dit_status st = dit_session_plan(s, sg, offload, cache_dir, rto, err);
	s->stage.mode = s->quiet ? DIT_PROGRESS_NONE : sg->progress;
	s->stage.after = stage_after();
	s->off.progress = (dit_stage_progress){.fn = session_stage, .arg = s};
	if (!st)
		st = dit_offload_prepare(&s->off, err);
	if (st)
		return st;
	if (s->auto_used) {
		offload = &s->auto_opts;
		if (!s->quiet)
			fprintf(stderr, "%s\n", s->auto_note);
	}
	dit_runtime_opts ro = *rto;
	memcpy(ro.env, s->off.env, sizeof s->off.env);
	ro.check_models = rto->check_models && !s->models_checked;
	if (trace_dir) {
		if ((st = dit_trace_begin(trace_dir, ro.env + 3, err)) != DIT_OK)
			return st;
		s->trace_dir = trace_dir;
	}
	if ((st = dit_runtime_init(&s->rt, &ro, err)) != DIT_OK)
		return st;
	if (s->trace_dir && s->trace_window && s->trace_first > sg->first_step)
		dit_trace_pause(); /* until step trace_first - 1 is done */
	if ((st = dit_stats_init(&s->stats, sg->command, sg->nsteps, sg->progress, err)) != DIT_OK)
		return st;
	s->stats_ready = 1;
	s->stats.pool = s->rt->pool;
	s->stats.cuda_libs = s->rt->cuda_libs;
	dit_stats_start(&s->stats);
	if ((st = dit_place_register(&s->off, s->rt->where, s->rt->compute_node, err)) != DIT_OK)
		return st;
	stats_track_offload(&s->stats, &s->off);
	s->stats.weights = &s->w;
	s->stats.offload_auto = s->auto_used;
	s->stats.compute_node = s->off.npools ? s->off.compute_node : -1;
	s->stats.predicted_step = s->auto_predicted;
	s->stats.argc = rto->argc;
	s->stats.argv = rto->argv;
	const int64_t *vs = s->w.desc->latent.vae_stride; /* the video the latent decodes to */
	if (sg->grid.f > 0 && vs[0] > 0) {
		s->stats.video[0] = (sg->grid.f - 1) * vs[0] + 1;
		s->stats.video[1] = sg->grid.h * vs[1];
		s->stats.video[2] = sg->grid.w * vs[2];
	}
	dit_grid gr = sg->grid;
	gr.chunk_rows = s->off.act.chunk_rows;
	gr.act_bf16 = s->off.act.act_bf16;
	dit_graph_weights gw;
	dit_place_graph_weights(&s->w, &gw);
	st = dit_graph_init(&s->graph, &gw, &gr, sg->npasses, s->off.act.slots, sg->context,
	                    sg->ctx_rows, sg->time_rows, sg->y, sg->z, err);
	if (st)
		return st;
	s->graph_ready = 1;
	dit_graph_pass_names(&s->graph, sg->pass_names);
	dit_hunyuan_state *hs = dit_hunyuan_state_of(&s->graph);
	if (hs)
		hs->guidance = sg->guidance;
	s->graph.pass_major = offload->pass_major;
	s->graph.priorities = s->rt->priorities == DIT_PRIORITIES_CRITICAL_PATH
	                          ? DIT_PRIO_CRITICAL_PATH
	                      : s->rt->priorities == DIT_PRIORITIES_OP_CLASS ? DIT_PRIO_OP_CLASS
	                                                                     : DIT_PRIO_NONE;
	/* a scheme asked for on a scheduler whose priority range leaves the compute tasks one
	 * value (the top is the weight transfers'): every priority clamps to it and nothing
	 * changes; said, not silent */
	int lo = starpu_sched_get_min_priority(), hi = starpu_sched_get_max_priority();
	if (rto->priorities > DIT_PRIORITIES_NONE && hi - 1 <= lo)
		fprintf(
		    stderr,
		    "ditstar: warning: --priorities %s: scheduler %s takes no priorities "
		    "(its range is [%d, %d], the top kept for the weight transfers): they change "
		    "nothing ('ditstar sched list' marks the schedulers that read them)\n",
		    rto->priorities == DIT_PRIORITIES_CRITICAL_PATH ? "critical-path" : "op-class",
		    s->rt->sched, lo, hi);
	for (int p = 0; p < sg->npasses && (sg->text_valid || sg->pooled); p++)
		if ((st = dit_graph_set_cond(&s->graph, p, sg->text_valid ? sg->text_valid[p] : -1,
		                             sg->pooled ? sg->pooled[p] : NULL,
		                             s->w.expert[0]->cfg.text_dim_2, err)) != DIT_OK)
			return st;

	if (sg->image_fea) {
		const dit_hparams *c = &s->w.expert[0]->cfg;
		size_t n = (size_t)(c->image_tokens * c->image_dim) * sizeof(float);
		if ((st = dit_graph_buffer_fill(&s->graph, -1, s->w.desc->inputs.image,
		                                sg->image_fea, n, err)) != DIT_OK)
			return st;
	}
	s->graph.where = s->rt->where;
	int64_t tile = dit_predict_tile_rows(rto, s->rt->accel, sg->grid.tokens);
	if ((st = dit_graph_set_tiles(&s->graph, tile, err)) != DIT_OK)
		return st;
	if (s->record && s->record->profile) {
		dit_plan_req rq;
		dit_session_plan_req(s, sg, &rq);
		dit_profile_key(s->record->profile_key, sizeof s->record->profile_key, &rq,
		                s->rt->accel, tile, s->off.act.chunk_rows);
		s->record->profile->step = sg->nsteps > 1 ? 1 : 0;
		s->graph.profile = s->record->profile;
	}
	s->graph.xfer = &s->off.xfer;
#ifdef DIT_SIMGRID
	s->graph.use_codelet = dit_roofline_use;
#endif
	if (sg->check_finite)
		s->graph.finite = &s->guard;
	return DIT_OK;
}

dit_status dit_session_close(dit_session *s, dit_status st, dit_error *err)
{
	if (s->rt)
		starpu_task_wait_for_all();
	if (s->graph_ready && s->record) {
		s->record->model_tasks = s->graph.model_tasks;
		s->record->model_uncalibrated = s->graph.model_uncalibrated;
		/* the steady reads, after the first step's (into buffers new to the process,
		 * whose pages fault in), else all */
		if (!s->stats_ready ||
		    !dit_stats_disk_steady(&s->stats, &s->record->disk_read_bytes,
		                           &s->record->disk_read_ns,
		                           &s->record->disk_read_cpu_ns)) {
			s->record->disk_read_bytes = s->off.disk.read_bytes;
			s->record->disk_read_ns = s->off.disk.read_ns;
			s->record->disk_read_cpu_ns = s->off.disk.read_cpu_ns;
		}
		snprintf(s->record->store, sizeof s->record->store, "%s",
		         s->off.store && s->off.o.mode == DIT_OFFLOAD_DISK ? s->off.store : "");
	}
	/* a disk-mode run of a calibrated store adds its steady read rate to the samples
	 * the plan's rate is the median of (calibrate's rounds record theirs above) */
	unsigned long long b, ns, cpu;
	if (st == DIT_OK && s->graph_ready && s->stats_ready && !s->record &&
	    s->stats.steps_done >= 2 && dit_stats_disk_steady(&s->stats, &b, &ns, &cpu) &&
	    b >= (1ull << 20))
		(void)dit_disk_rate_add(dit_disk_rate_of(b, ns, cpu));
	if (s->graph_ready)
		dit_graph_free(&s->graph);
	if (s->stats_ready)
		dit_stats_free(&s->stats);
	if (s->rt) {
		dit_place_release(&s->off);
	} else {
		if (s->off.lock.dir) /* prepared, never registered: a zeroed lock holds nothing */
			dit_store_unlock(&s->off.lock);
		free(s->off.store);
		s->off.store = NULL;
		dit_offload_sources_free(&s->off); /* where a plan or a prepare found the blocks */
	}
	dit_weights_free(&s->w);
	dit_runtime_shutdown(s->rt);
	s->rt = NULL;
	free(s->synth_dir);
	s->synth_dir = NULL;
	pthread_mutex_destroy(&s->guard.lock);
	if (st == DIT_OK && s->trace_dir)
		st = dit_trace_end(s->trace_dir, err);
	return st;
}

void dit_session_vector_in(dit_session *s, starpu_data_handle_t *h, const float *src, int64_t n,
                           const char *name)
{
	dit_graph_vector_fill(&s->graph, h, src, n, name);
}

void dit_session_vector_out(float *dst, starpu_data_handle_t h, int64_t n)
{
	starpu_data_acquire(h, STARPU_R);
	memcpy(dst, (const void *)starpu_vector_get_local_ptr(h), (size_t)n * sizeof(float));
	starpu_data_release(h);
}

static void dims_str(char *buf, size_t len, int ndim, const int64_t *dims)
{
	size_t k = (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < ndim && k < len; i++) {
		if (dims[i] < 0)
			k += (size_t)snprintf(buf + k, len - k, "%s*", i ? ", " : "");
		else
			k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "",
			                      (long long)dims[i]);
	}
	if (k < len)
		snprintf(buf + k, len - k, "]");
}

dit_status dit_read_tensor(const dit_st_file *f, const char *name, int ndim, const int64_t *dims,
                           int required, float **out, int64_t *shape, dit_error *err)
{
	const dit_st_tensor *t = dit_st_find(f, name);
	*out = NULL;
	if (!t)
		return required ? dit_error_set(err, DIT_ENOTFOUND, "%s: tensor '%s' missing",
		                                f->label, name)
		                : DIT_OK;
	/* a leading batch of one, as the official forwards take their inputs, is read as
	 * the tensor it holds */
	int b = t->ndim == ndim + 1 && t->shape[0] == 1;
	int ok = t->ndim == ndim || b;
	for (int i = 0; ok && i < ndim; i++)
		ok = dims[i] < 0 ? t->shape[b + i] >= 1 : t->shape[b + i] == dims[i];
	if (!ok) {
		char want[128];
		dims_str(want, sizeof want, ndim, dims);
		return dit_error_set(err, DIT_ESHAPE,
		                     "%s: tensor '%s' must be %s (* any size; or with a leading "
		                     "batch of 1)",
		                     f->label, name, want);
	}
	if (shape)
		for (int i = 0; i < ndim; i++)
			shape[i] = t->shape[b + i];
	return dit_read_finite(f, t, name, out, err);
}

dit_status dit_read_finite(const dit_st_file *f, const dit_st_tensor *t, const char *name,
                           float **out, dit_error *err)
{
	*out = malloc((size_t)(t->numel ? t->numel : 1) * sizeof(float));
	if (!*out)
		return dit_error_set(err, DIT_ENOMEM, "out of memory reading '%s'", name);
	dit_status st = dit_st_read_f32(f, t, *out, err);
	for (int64_t i = 0; !st && i < t->numel; i++) /* refused now, not after a run */
		if (!isfinite((*out)[i]))
			st = dit_error_set(err, DIT_EINVAL,
			                   "%s: tensor '%s'[%lld] is %g: the inputs must be finite",
			                   f->label, name, (long long)i, (double)(*out)[i]);
	if (st) {
		free(*out);
		*out = NULL;
	}
	return st;
}

/* Reads a 2-D [rows, text_dim] context tensor (1 <= rows <= max_rows). */
dit_status dit_read_context(const dit_st_file *f, const char *name, int64_t text_dim,
                            int64_t max_rows, int required, float **out, int64_t *rows,
                            dit_error *err)
{
	int64_t dims[2] = {-1, text_dim}, shape[2] = {0, 0};
	dit_status st = dit_read_tensor(f, name, 2, dims, required, out, shape, err);
	*rows = shape[0];
	if (!st && *out && *rows > max_rows) { /* the official code refuses them too */
		st = dit_error_set(err, DIT_EINVAL,
		                   "%s: tensor '%s' has %lld rows, more than the model's %lld "
		                   "(text_len; ditstar-encode --text-len %lld makes one it takes)",
		                   f->label, name, (long long)*rows, (long long)max_rows,
		                   (long long)max_rows);
		free(*out);
		*out = NULL;
	}
	return st;
}

dit_status dit_read_text_mask(const dit_st_file *f, const char *name, int64_t rows, int64_t *valid,
                              dit_error *err)
{
	int64_t dims[1] = {rows};
	float *m = NULL;
	dit_status st = dit_read_tensor(f, name, 1, dims, 1, &m, NULL, err);
	if (st)
		return st;
	int64_t n = 0;
	while (n < rows && m[n] == 1.0f)
		n++;
	for (int64_t i = n; i < rows && st == DIT_OK; i++)
		if (m[i] != 0.0f)
			st = dit_error_set(
			    err, DIT_EINVAL,
			    "%s: tensor '%s'[%lld] is %g: a text mask is ones for the "
			    "prompt's tokens, then zeros",
			    f->label, name, (long long)i, (double)m[i]);
	if (!st && n == 0)
		st = dit_error_set(err, DIT_EINVAL, "%s: tensor '%s' masks every token", f->label,
		                   name);
	free(m);
	*valid = n;
	return st;
}
