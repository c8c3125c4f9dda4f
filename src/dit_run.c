#define _POSIX_C_SOURCE 200809L
#include "dit_run.h"

#include <math.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <xxhash.h>

#include "dit_codelets.h"
#include "dit_graph.h"
#include "dit_planner.h"
#include "dit_rng.h"
#include "dit_safetensors.h"
#include "dit_stats.h"
#include "dit_synth.h"
#include "dit_trace.h"
#include "dit_weights.h"

/* Presets with synthetic weights up to this size may be written to the cache. */
#define SYNTH_MAX_BYTES ((size_t)8 << 30)

void dit_generate_opts_default(dit_generate_opts *o)
{
	memset(o, 0, sizeof *o);
	o->model_name = "tiny";
	o->guidance = 5.0;
	o->shift = 5.0;
	o->seed = 42;
	o->solver = DIT_SOLVER_UNIPC;
	dit_runtime_opts_default(&o->rt);
	dit_offload_opts_default(&o->offload);
}

float *dit_synthetic_context(int64_t text_len, int64_t text_dim, int null_prompt, int64_t *rows)
{
	int64_t r = (text_len + 1) / 2;
	float *c = malloc((size_t)(r * text_dim) * sizeof *c);
	if (!c)
		return NULL;
	dit_rng_fill_normal(c, r * text_dim, 0,
	                    dit_rng_stream(null_prompt ? "context_null" : "context"), 1.0, 0.0);
	*rows = r;
	return c;
}

/* Reads a 2-D [rows, text_dim] tensor name from f into a malloc'd fp32 array. */
static dit_status read_context(const dit_st_file *f, const char *name, int64_t text_dim,
                               int required, float **out, int64_t *rows, dit_error *err)
{
	const dit_st_tensor *t = dit_st_find(f, name);
	*out = NULL;
	if (!t)
		return required ? dit_error_set(err, DIT_ENOTFOUND, "%s: tensor '%s' missing",
		                                f->path, name)
		                : DIT_OK;
	if (t->ndim != 2 || t->shape[1] != text_dim || t->shape[0] < 1)
		return dit_error_set(err, DIT_ESHAPE,
		                     "%s: tensor '%s' must be [L, %lld] (L >= 1), the model's "
		                     "text_dim",
		                     f->path, name, (long long)text_dim);
	*out = malloc((size_t)t->numel * sizeof(float));
	if (!*out)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	*rows = t->shape[0];
	dit_status st = dit_st_read_f32(f, t, *out, err);
	if (st) {
		free(*out);
		*out = NULL;
	}
	return st;
}

/* Registers a StarPU-managed vector and fills it from host data. */
static void vector_from_host(const dit_graph *g, starpu_data_handle_t *h, const float *src,
                             int64_t n, const char *name)
{
	dit_graph_vector(g, h, n, sizeof(float), name);
	starpu_data_acquire(*h, STARPU_W);
	memcpy((void *)starpu_vector_get_local_ptr(*h), src, (size_t)n * sizeof(float));
	starpu_data_release(*h);
}

static void vector_to_host(float *dst, starpu_data_handle_t h, int64_t n)
{
	starpu_data_acquire(h, STARPU_R);
	memcpy(dst, (const void *)starpu_vector_get_local_ptr(h), (size_t)n * sizeof(float));
	starpu_data_release(h);
}

static void mean_std(const float *x, int64_t n, double *mean, double *std)
{
	double s = 0, s2 = 0;
	for (int64_t i = 0; i < n; i++) {
		s += x[i];
		s2 += (double)x[i] * x[i];
	}
	*mean = s / (double)n;
	*std = sqrt(fmax(s2 / (double)n - *mean * *mean, 0.0));
}

/* What the stats need from the planner: mode, limits, resident weights, callbacks. */
static void stats_track_offload(dit_stats *st, dit_offload *off)
{
	const dit_model *m = off->m;
	size_t chunks = dit_model_chunk_bytes(m) * (size_t)m->nchunks;
	st->offload_mode = dit_offload_mode_name(off->o.mode);
	st->chunk_size = m->chunk_size;
	st->prefetch = off->o.prefetch;
	st->device_limit = off->device_limit;
	st->host_limit = off->host_limit;
	st->weight_bytes[STARPU_MAIN_RAM] =
	    dit_model_global_bytes(m) + (off->o.mode == DIT_OFFLOAD_DISK ? 0 : chunks);
	if (off->disk_node >= 0 && off->disk_node < DIT_STATS_MAX_NODES)
		st->weight_bytes[off->disk_node] = chunks;
	st->store = off->store;
	st->store_reused = off->store_reused;
	st->store_note = off->store_note;
	off->on_xfer = dit_stats_on_xfer;
	off->on_xfer_arg = st;
}

typedef struct gen_state {
	dit_model *model;
	dit_offload off;
	dit_runtime *rt;
	dit_graph graph;
	int graph_ready;
	starpu_data_handle_t sbuf[DIT_SBUF_COUNT];
	dit_sampler_plan plan;
	dit_stats stats;
	int stats_ready;
	float *context[2];
	int64_t ctx_rows[2];
	float *noise, *latents;
	char *synth_dir;
	/* resume states */
	char fingerprint[32];
	const char *state_path;
	volatile sig_atomic_t *stop;
	float *saved[DIT_SBUF_COUNT]; /* buffers of a resume state (NULL for V) */
	int next_step;
	int64_t n;
} gen_state;

static void gen_cleanup(gen_state *s)
{
	if (s->rt)
		starpu_task_wait_for_all();
	if (s->graph_ready)
		dit_graph_free(&s->graph);
	for (int i = 0; i < DIT_SBUF_COUNT; i++)
		if (s->sbuf[i])
			starpu_data_unregister(s->sbuf[i]);
	if (s->rt)
		dit_offload_release(&s->off);
	else
		free(s->off.store); /* planned, never registered */
	dit_model_free(s->model);
	dit_runtime_shutdown(s->rt);
	dit_sampler_plan_free(&s->plan);
	if (s->stats_ready)
		dit_stats_free(&s->stats);
	free(s->context[0]);
	free(s->context[1]);
	free(s->noise);
	free(s->latents);
	free(s->synth_dir);
	for (int i = 0; i < DIT_SBUF_COUNT; i++)
		free(s->saved[i]);
}

/* The solver state a resumed run needs: everything but V, which each step rewrites. */
static const char *const state_names[DIT_SBUF_COUNT] = {"x", NULL, "last", "m0", "m1", "m2"};
#define STATE_FORMAT "1"

/* What a resume state must match: the model, the arguments that shape the sampling,
 * and the inputs. Files are identified by path, size and modification time. */
static void fingerprint(char *out, size_t len, const dit_generate_opts *o, const char *dir,
                        const dit_model *m, int64_t frames, int64_t height, int64_t width,
                        int steps)
{
	char buf[8192];
	size_t k = 0;
	struct stat sb;
	const dit_wan_config *c = &m->cfg;
	k += (size_t)snprintf(
	    buf + k, sizeof buf - k,
	    "%s|%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%.17g|%lld,%lld,%lld,%d,%s,"
	    "%.17g,%.17g,%llu|",
	    dir, (long long)c->dim, (long long)c->ffn_dim, (long long)c->num_heads,
	    (long long)c->num_layers, (long long)c->in_dim, (long long)c->text_len,
	    (long long)c->text_dim, (long long)c->freq_dim, c->eps, (long long)frames,
	    (long long)height, (long long)width, steps, dit_solver_name(o->solver), o->guidance,
	    o->shift, (unsigned long long)o->seed);
	for (size_t i = 0; m->ck && i < m->ck->nfiles && k < sizeof buf; i++) {
		const char *p = m->ck->archive ? m->ck->dir : m->ck->files[i]->path;
		if (stat(p, &sb) != 0)
			memset(&sb, 0, sizeof sb);
		k += (size_t)snprintf(buf + k, sizeof buf - k, "%s:%lld:%lld|", p,
		                      (long long)sb.st_size, (long long)sb.st_mtime);
	}
	/* bf16 block weights change the numbers */
	int bf16 = dit_weight_dtype_bf16(o->offload.weight_dtype,
	                                 dit_workers_accel(o->rt.workers) == DIT_WORKERS_CUDA);
	if (bf16 && k < sizeof buf)
		k += (size_t)snprintf(buf + k, sizeof buf - k, "bf16|");
	if (o->context_path && k < sizeof buf) {
		if (stat(o->context_path, &sb) != 0)
			memset(&sb, 0, sizeof sb);
		k += (size_t)snprintf(buf + k, sizeof buf - k, "ctx:%s:%lld:%lld", o->context_path,
		                      (long long)sb.st_size, (long long)sb.st_mtime);
	}
	snprintf(out, len, "%016llx",
	         (unsigned long long)XXH3_64bits(buf, k < sizeof buf ? k : sizeof buf));
}

/* Reads a resume state: checks its fingerprint and keeps its buffers. */
static dit_status load_state(gen_state *s, const char *path, int nsteps, dit_error *err)
{
	dit_st_file *f;
	dit_status st = dit_st_open(&f, path, err);
	if (st)
		return st;
	const char *fmt = dit_st_metadata(f, "ditstar_resume");
	const char *fp = dit_st_metadata(f, "fingerprint");
	const char *next = dit_st_metadata(f, "next_step");
	if (!fmt || strcmp(fmt, STATE_FORMAT) != 0 || !fp || !next) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: not a ditstar resume state", path);
	} else if (strcmp(fp, s->fingerprint) != 0) {
		st = dit_error_set(err, DIT_EINVAL,
		                   "%s: resume state from another model or other arguments "
		                   "(fingerprint %s, this run %s)",
		                   path, fp, s->fingerprint);
	} else {
		char *end;
		long v = strtol(next, &end, 10);
		if (*end || v < 1 || v > nsteps)
			st = dit_error_set(err, DIT_EFORMAT, "%s: next_step '%s' out of range",
			                   path, next);
		s->next_step = (int)v;
	}
	for (int i = 0; !st && i < DIT_SBUF_COUNT; i++) {
		if (!state_names[i])
			continue;
		const dit_st_tensor *t = dit_st_find(f, state_names[i]);
		if (!t || t->numel != s->n) {
			st = dit_error_set(err, DIT_ESHAPE,
			                   "%s: tensor '%s' missing or of the wrong size", path,
			                   state_names[i]);
			break;
		}
		s->saved[i] = malloc((size_t)s->n * sizeof(float));
		if (!s->saved[i])
			st = dit_error_set(err, DIT_ENOMEM, "out of memory");
		else
			st = dit_st_read_f32(f, t, s->saved[i], err);
	}
	dit_st_close(f);
	return st;
}

/* After each step: the solver state, written atomically, so that an interruption
 * (even kill -9) leaves the last finished step's state; then stop if asked to. */
/* Between steps in disk mode: a failed chunk read stops the submission. */
static dit_status io_check(void *arg, dit_error *err)
{
	return dit_offload_io_error(arg, err);
}

static dit_status save_state(void *arg, int step, dit_error *err)
{
	gen_state *s = arg;
	int64_t shape[1] = {s->n};
	char next[16];
	/* a failed chunk read fed this step wrong weights: keep the last good state */
	dit_status st = dit_offload_io_error(&s->off, err);
	if (st)
		return st;
	dit_st_writer *w = dit_st_writer_new();
	float *host = malloc((size_t)s->n * sizeof(float));
	if (!w || !host)
		st = dit_error_set(err, DIT_ENOMEM, "out of memory");
	for (int i = 0; !st && i < DIT_SBUF_COUNT; i++) {
		if (!state_names[i])
			continue;
		vector_to_host(host, s->sbuf[i], s->n);
		st = dit_st_writer_add_f32(w, state_names[i], 1, shape, host, err);
	}
	snprintf(next, sizeof next, "%d", step + 1);
	if (!st)
		st = dit_st_writer_set_metadata(w, "ditstar_resume", STATE_FORMAT, err);
	if (!st)
		st = dit_st_writer_set_metadata(w, "fingerprint", s->fingerprint, err);
	if (!st)
		st = dit_st_writer_set_metadata(w, "next_step", next, err);
	if (!st)
		st = dit_st_writer_commit(w, s->state_path, err);
	dit_st_writer_free(w);
	free(host);
	if (!st && s->stop && *s->stop && step + 1 < s->plan.nsteps)
		st = dit_error_set(
		    err, DIT_EINTERRUPTED,
		    "interrupted after step %d of %d; state saved in %s (continue with "
		    "--resume %s)",
		    step + 1, s->plan.nsteps, s->state_path, s->state_path);
	return st;
}

static dit_status write_latents(const dit_generate_opts *o, const gen_state *s, const dit_grid *gr,
                                dit_error *err)
{
	const dit_wan_config *c = &s->model->cfg;
	int64_t shape[4] = {c->out_dim, gr->f, gr->h, gr->w};
	char buf[64];
	dit_st_writer *w = dit_st_writer_new();
	if (!w)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	dit_status st = dit_st_writer_add_f32(w, "latents", 4, shape, s->latents, err);
	if (!st && o->save_inputs) {
		int64_t c0[2] = {s->ctx_rows[0], c->text_dim},
		        c1[2] = {s->ctx_rows[1], c->text_dim};
		st = dit_st_writer_add_f32(w, "noise", 4, shape, s->noise, err);
		if (!st)
			st = dit_st_writer_add_f32(w, "context", 2, c0, s->context[0], err);
		if (!st)
			st = dit_st_writer_add_f32(w, "context_null", 2, c1, s->context[1], err);
	}
	struct {
		const char *k;
		const char *v;
	} meta[] = {{"model", o->model_dir ? o->model_dir : o->model_name},
	            {"solver", dit_solver_name(o->solver)}};
	for (size_t i = 0; i < sizeof meta / sizeof meta[0] && !st; i++)
		st = dit_st_writer_set_metadata(w, meta[i].k, meta[i].v, err);
	snprintf(buf, sizeof buf, "%d", s->plan.nsteps);
	if (!st)
		st = dit_st_writer_set_metadata(w, "steps", buf, err);
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)o->seed);
	if (!st)
		st = dit_st_writer_set_metadata(w, "seed", buf, err);
	snprintf(buf, sizeof buf, "%.17g", o->guidance);
	if (!st)
		st = dit_st_writer_set_metadata(w, "guidance", buf, err);
	snprintf(buf, sizeof buf, "%.17g", o->shift);
	if (!st)
		st = dit_st_writer_set_metadata(w, "shift", buf, err);
	if (!st)
		st = dit_st_writer_commit(w, o->output, err);
	dit_st_writer_free(w);
	return st;
}

/* The planner's view of the compute node: an accelerator's memory when only
 * accelerators compute. */
static int plan_device(dit_workers w)
{
	switch (w) {
	case DIT_WORKERS_OPENCL: return DIT_DEVICE_OPENCL;
	case DIT_WORKERS_CUDA: return DIT_DEVICE_CUDA;
	default: return DIT_DEVICE_NONE;
	}
}

dit_status dit_generate(const dit_generate_opts *o, dit_error *err)
{
	gen_state s;
	memset(&s, 0, sizeof s);
	dit_status st = DIT_OK;
	const char *dir = o->model_dir;
	int64_t frames = 81, height = 480, width = 832;
	int steps = 50;

#define TRY(call)                                                                                  \
	do {                                                                                       \
		if ((st = (call)) != DIT_OK)                                                       \
			goto out;                                                                  \
	} while (0)

	if (!dir) {
		const dit_wan_preset *p;
		TRY(dit_wan_preset_find(&p, o->model_name, err));
		char *root = o->cache_dir ? strdup(o->cache_dir) : dit_synth_cache_root();
		st = dit_synth_checkpoint(p, root, SYNTH_MAX_BYTES, &s.synth_dir, err);
		free(root);
		if (st)
			goto out;
		dir = s.synth_dir;
		frames = p->frames;
		height = p->height;
		width = p->width;
		steps = p->steps;
	}
	if (o->frames > 0)
		frames = o->frames;
	if (o->height > 0)
		height = o->height;
	if (o->width > 0)
		width = o->width;
	if (o->steps > 0)
		steps = o->steps;
	if (!(o->guidance >= 0.0) || !isfinite(o->guidance)) {
		st = dit_error_set(err, DIT_EINVAL, "--guidance %g: must be a finite number >= 0",
		                   o->guidance);
		goto out;
	}

	TRY(dit_model_open(&s.model, dir, err));
	const dit_wan_config *c = &s.model->cfg;
	if (c->in_dim != c->out_dim) {
		st = dit_error_set(err, DIT_EUNSUPPORTED,
		                   "%s: in_dim %lld != out_dim %lld: not a text-to-video model",
		                   dir, (long long)c->in_dim, (long long)c->out_dim);
		goto out;
	}
	dit_grid gr;
	TRY(dit_grid_from_pixels(&gr, c, frames, height, width, err));
	TRY(dit_graph_check_size(c, &gr, err));
	TRY(dit_sampler_plan_build(&s.plan, o->solver, steps, o->shift, err));

	if (o->context_path) {
		dit_st_file *f;
		TRY(dit_st_open(&f, o->context_path, err));
		st = read_context(f, "context", c->text_dim, 1, &s.context[0], &s.ctx_rows[0], err);
		if (!st)
			st = read_context(f, "context_null", c->text_dim, 0, &s.context[1],
			                  &s.ctx_rows[1], err);
		dit_st_close(f);
		if (st)
			goto out;
		if (!s.context[1]) { /* no negative prompt: one zero row, padded */
			s.context[1] = calloc((size_t)c->text_dim, sizeof(float));
			s.ctx_rows[1] = 1;
		}
	} else {
		s.context[0] = dit_synthetic_context(c->text_len, c->text_dim, 0, &s.ctx_rows[0]);
		s.context[1] = dit_synthetic_context(c->text_len, c->text_dim, 1, &s.ctx_rows[1]);
	}
	int64_t n = c->out_dim * gr.f * gr.h * gr.w;
	s.noise = malloc((size_t)n * sizeof(float));
	s.latents = malloc((size_t)n * sizeof(float));
	if (!s.context[0] || !s.context[1] || !s.noise || !s.latents) {
		st = dit_error_set(err, DIT_ENOMEM, "out of memory");
		goto out;
	}
	dit_rng_fill_normal(s.noise, n, o->seed, dit_rng_stream("noise"), 1.0, 0.0);
	s.n = n;
	fingerprint(s.fingerprint, sizeof s.fingerprint, o, dir, s.model, frames, height, width,
	            s.plan.nsteps);
	s.state_path = o->state_path ? o->state_path : o->resume_path;
	s.stop = o->stop;
	if (o->resume_path)
		TRY(load_state(&s, o->resume_path, s.plan.nsteps, err));

	/* weights: plan where they live, read them (or the chunk store) before StarPU
	 * starts, so that bad input fails fast and the memory limits apply */
	size_t act = dit_graph_activation_bytes(c, &gr, 2) + DIT_SBUF_COUNT * (size_t)n * 4;
	dit_offload_opts oo = o->offload;
	if (!oo.cache_root)
		oo.cache_root = o->cache_dir;
	TRY(dit_offload_plan(&s.off, s.model, &oo, plan_device(o->rt.workers),
	                     dit_workers_accel(o->rt.workers) == DIT_WORKERS_CUDA, act, err));
	TRY(dit_offload_prepare(&s.off, err));

	if (o->trace_dir)
		TRY(dit_trace_begin(o->trace_dir, err));
	TRY(dit_runtime_init(&s.rt, &o->rt, err));
	TRY(dit_stats_init(&s.stats, "generate", s.plan.nsteps, o->progress, err));
	s.stats_ready = 1;
	dit_stats_start(&s.stats);
	TRY(dit_offload_register(&s.off, s.rt->where, s.rt->compute_node, err));
	stats_track_offload(&s.stats, &s.off);
	const float *ctx[2] = {s.context[0], s.context[1]};
	TRY(dit_graph_init(&s.graph, s.model, &gr, 2, ctx, s.ctx_rows, err));
	s.graph_ready = 1;
	s.graph.where = s.rt->where;
	s.graph.off = &s.off;
	dit_finite_guard guard = {.lock = PTHREAD_MUTEX_INITIALIZER};
	if (o->check_finite)
		s.graph.finite = &guard;
	/* the solver state starts from the noise (and zeros), or from a resume state */
	static const char *const sbuf_name[DIT_SBUF_COUNT] = {"X", "V", "last", "m0", "m1", "m2"};
	memset(s.latents, 0, (size_t)n * sizeof(float));
	for (int i = 0; i < DIT_SBUF_COUNT; i++) {
		const float *init = s.saved[i] ? s.saved[i] : i == DIT_SBUF_X ? s.noise : s.latents;
		if (i == DIT_SBUF_V)
			dit_graph_vector(&s.graph, &s.sbuf[i], n, sizeof(float), sbuf_name[i]);
		else
			vector_from_host(&s.graph, &s.sbuf[i], init, n, sbuf_name[i]);
	}
	s.graph.first_step = s.next_step;
	if (s.state_path) {
		s.graph.after_step = save_state;
		s.graph.after_step_arg = &s;
	}
	if (s.off.o.mode == DIT_OFFLOAD_DISK) {
		s.graph.check = io_check;
		s.graph.check_arg = &s.off;
	}

	s.stats.t_submit = dit_runtime_now();
	for (int i = 0; i < s.next_step; i++) /* done before the run was resumed */
		s.stats.step_end[i] = s.stats.t_submit;
	TRY(dit_graph_submit_text(&s.graph, err));
	TRY(dit_graph_submit_sampling(&s.graph, &s.plan, (float)o->guidance, s.sbuf,
	                              dit_stats_on_step, &s.stats, err));
	s.stats.t_submitted = dit_runtime_now();
	starpu_task_wait_for_all();
	s.stats.t_done = dit_runtime_now();
	TRY(dit_offload_io_error(&s.off, err)); /* before anything is written */
	dit_stats_sample(&s.stats);
	vector_to_host(s.latents, s.sbuf[DIT_SBUF_X], n);

	for (int64_t i = 0; i < n; i++) {
		if (!isfinite(s.latents[i])) {
			st = dit_error_set(err, DIT_ERUNTIME,
			                   "latents are not finite (element %lld); nothing written",
			                   (long long)i);
			goto out;
		}
	}
	if (o->output)
		TRY(write_latents(o, &s, &gr, err));
	if (o->stats_json)
		TRY(dit_stats_write_json(&s.stats, &s.graph, o->stats_json, err));
	if (!o->quiet) {
		double mean, sd, total = s.stats.t_done - s.stats.t_submit;
		mean_std(s.latents, n, &mean, &sd);
		printf(
		    "model %s: %lld blocks, dim %lld, %lld tokens (latent %lldx%lldx%lldx%lld)\n",
		    o->model_dir ? o->model_dir : o->model_name, (long long)c->num_layers,
		    (long long)c->dim, (long long)gr.tokens, (long long)c->out_dim, (long long)gr.f,
		    (long long)gr.h, (long long)gr.w);
		printf("%d %s steps, guidance %g, shift %g, seed %llu: %.2f s (%.3f s/step) on %d "
		       "CPU workers, scheduler %s\n",
		       s.plan.nsteps, dit_solver_name(o->solver), o->guidance, o->shift,
		       (unsigned long long)o->seed, total, total / s.plan.nsteps, s.rt->ncpus,
		       s.rt->sched);
		printf("latents mean %.6f std %.6f%s%s\n", mean, sd,
		       o->output ? ", written to " : "", o->output ? o->output : "");
	}
out:
	gen_cleanup(&s);
	if (st == DIT_OK && o->trace_dir)
		st = dit_trace_end(o->trace_dir, err);
	return st;
#undef TRY
}

dit_status dit_forward(const dit_forward_opts *o, dit_error *err)
{
	dit_model *model = NULL;
	dit_offload off;
	memset(&off, 0, sizeof off);
	dit_runtime *rt = NULL;
	dit_st_file *in = NULL;
	dit_graph graph;
	int graph_ready = 0, stats_ready = 0;
	dit_stats stats;
	starpu_data_handle_t latent = NULL;
	float *x = NULL, *y = NULL, *context = NULL;
	int64_t ctx_rows = 0;
	dit_status st;

#define TRY(call)                                                                                  \
	do {                                                                                       \
		if ((st = (call)) != DIT_OK)                                                       \
			goto out;                                                                  \
	} while (0)

	TRY(dit_model_open(&model, o->model_dir, err));
	const dit_wan_config *c = &model->cfg;
	TRY(dit_st_open(&in, o->inputs, err));
	const dit_st_tensor *tx = dit_st_find(in, "x"), *tt = dit_st_find(in, "t");
	if (!tx || !tt) {
		st = dit_error_set(err, DIT_ENOTFOUND, "%s: tensor '%s' missing", o->inputs,
		                   !tx ? "x" : "t");
		goto out;
	}
	if (tx->ndim != 4) {
		st = dit_error_set(err, DIT_ESHAPE, "%s: tensor 'x' must be [C, F, H, W]",
		                   o->inputs);
		goto out;
	}
	if (tt->numel != 1) {
		st =
		    dit_error_set(err, DIT_ESHAPE, "%s: tensor 't' must hold one value", o->inputs);
		goto out;
	}
	dit_grid gr;
	TRY(dit_grid_from_latent(&gr, c, tx->shape[0], tx->shape[1], tx->shape[2], tx->shape[3],
	                         err));
	float t;
	TRY(dit_st_read_f32(in, tt, &t, err));
	TRY(read_context(in, "context", c->text_dim, 1, &context, &ctx_rows, err));
	x = malloc((size_t)tx->numel * sizeof *x);
	int64_t ny = c->out_dim * gr.f * gr.h * gr.w;
	y = malloc((size_t)ny * sizeof *y);
	if (!x || !y) {
		st = dit_error_set(err, DIT_ENOMEM, "out of memory");
		goto out;
	}
	TRY(dit_st_read_f32(in, tx, x, err));

	if (o->trace_dir)
		TRY(dit_trace_begin(o->trace_dir, err));
	size_t act = dit_graph_activation_bytes(c, &gr, 1) + (size_t)(tx->numel + ny) * 4;
	TRY(dit_offload_plan(&off, model, &o->offload, plan_device(o->rt.workers),
	                     dit_workers_accel(o->rt.workers) == DIT_WORKERS_CUDA, act, err));
	TRY(dit_offload_prepare(&off, err));
	TRY(dit_runtime_init(&rt, &o->rt, err));
	TRY(dit_stats_init(&stats, "forward", 0, 0, err));
	stats_ready = 1;
	dit_stats_start(&stats);
	TRY(dit_offload_register(&off, rt->where, rt->compute_node, err));
	stats_track_offload(&stats, &off);
	const float *ctx[1] = {context};
	TRY(dit_graph_init(&graph, model, &gr, 1, ctx, &ctx_rows, err));
	graph_ready = 1;
	graph.where = rt->where;
	graph.off = &off;
	dit_finite_guard guard = {.lock = PTHREAD_MUTEX_INITIALIZER};
	if (o->check_finite)
		graph.finite = &guard;
	vector_from_host(&graph, &latent, x, tx->numel, "latent");
	stats.t_submit = dit_runtime_now();
	TRY(dit_graph_submit_text(&graph, err));
	TRY(dit_graph_submit_time(&graph, (double)t, err));
	TRY(dit_graph_submit_passes(&graph, latent, err));
	stats.t_submitted = dit_runtime_now();
	starpu_task_wait_for_all();
	stats.t_done = dit_runtime_now();
	TRY(dit_offload_io_error(&off, err));
	TRY(dit_graph_finite_error(&graph, err));
	dit_stats_sample(&stats);
	vector_to_host(y, graph.pass[0].out, ny);
	{
		int64_t shape[4] = {c->out_dim, gr.f, gr.h, gr.w};
		dit_st_writer *w = dit_st_writer_new();
		if (!w) {
			st = dit_error_set(err, DIT_ENOMEM, "out of memory");
			goto out;
		}
		st = dit_st_writer_add_f32(w, "y", 4, shape, y, err);
		if (!st)
			st = dit_st_writer_commit(w, o->output, err);
		dit_st_writer_free(w);
		if (st)
			goto out;
	}
	if (o->stats_json)
		TRY(dit_stats_write_json(&stats, &graph, o->stats_json, err));
out:
	if (rt)
		starpu_task_wait_for_all();
	if (latent)
		starpu_data_unregister(latent);
	if (graph_ready)
		dit_graph_free(&graph);
	if (stats_ready)
		dit_stats_free(&stats);
	if (rt)
		dit_offload_release(&off);
	else
		free(off.store); /* planned, never registered */
	dit_model_free(model);
	dit_runtime_shutdown(rt);
	dit_st_close(in);
	free(x);
	free(y);
	free(context);
	if (st == DIT_OK && o->trace_dir)
		st = dit_trace_end(o->trace_dir, err);
	return st;
#undef TRY
}
