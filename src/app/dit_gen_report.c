/* What `ditstar generate` prints on stdout (see dit_gen_report.h). */
#include "dit_gen_report.h"

#include "dit_io.h"
#include "dit_runtime.h"
#include "dit_cuda_libs.h"

#include <math.h>

void dit_gen_report_model(FILE *f, const char *label, const dit_model_desc *d, const dit_hparams *c,
                          int nexperts, const dit_grid *gr)
{
	char blocks[64] = "";
	for (int i = 0, k = 0; i < d->npools; i++)
		k += snprintf(blocks + k, sizeof blocks - (size_t)k, "%s%lld", i ? " + " : "",
		              (long long)c->layers[i]);
	fprintf(f,
	        "model %s (%s): %s blocks%s, dim %lld, %lld tokens (latent %lldx%lldx%lldx%lld)\n",
	        label, d->name, blocks, nexperts > 1 ? " per expert" : "", (long long)c->dim,
	        (long long)gr->tokens, (long long)c->out_dim, (long long)gr->f, (long long)gr->h,
	        (long long)gr->w);
	fflush(f);
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

/* "2 CPU workers", "1 CUDA GPU", "2 CPU workers and 1 OpenCL device", then "
 * (--workers auto)" when that default chose them. */
static void workers_text(char *buf, size_t len, const dit_gen_report *r)
{
	const dit_runtime *rt = r->rt;
	int ncpu =
	    rt && rt->workers != DIT_WORKERS_ALL && rt->accel != DIT_WORKERS_CPU ? 0 : r->ncpus;
	int nacc = !rt ? 0 : rt->accel == DIT_WORKERS_CUDA ? rt->ncuda : rt->nopencl;
	const char *kind = rt && rt->accel == DIT_WORKERS_CUDA ? "CUDA GPU" : "OpenCL device";
	size_t k = 0;
	if (ncpu || !nacc)
		k += (size_t)snprintf(buf, len, "%d CPU worker%s", ncpu, ncpu == 1 ? "" : "s");
	if (nacc && k < len)
		k += (size_t)snprintf(buf + k, len - k, "%s%d %s%s", k ? " and " : "", nacc, kind,
		                      nacc == 1 ? "" : "s");
	if (rt && rt->opts.workers_auto && k < len)
		snprintf(buf + k, len - k, " (--workers auto)");
}

/* "  attention: cuDNN 9.19.0: 80 of 84 tasks; own kernel 4 (fp32 activations: 4)". */
static void path_line(FILE *f, const char *op, const char *lib, const dit_cuda_path *p)
{
	fprintf(f, "  %s: %s: %lld of %lld tasks", op, lib, (long long)p->lib,
	        (long long)(p->lib + p->own));
	for (int i = 0; i < DIT_CUDA_LIBS_REASONS && p->why[i]; i++)
		fprintf(f, "%s%s: %lld", i ? "; " : "; own kernel (", p->why[i],
		        (long long)p->why_n[i]);
	fprintf(f, "%s\n", p->why[0] ? ")" : "");
}

/* Which library computed the CUDA workers' attention and GEMMs, and where not why. */
static void cuda_libs_line(FILE *f, const dit_cuda_libs *L)
{
	dit_cuda_path att, gemm;
	dit_cuda_libs_sum(L, &att, &gemm);
	char a[256], g[256];
	dit_cuda_libs_attention_name(L, a, sizeof a);
	dit_cuda_libs_gemm_name(L, g, sizeof g);
	fprintf(f, "CUDA libraries:\n");
	path_line(f, "attention", a, &att);
	path_line(f, "linear", g, &gemm);
}

void dit_gen_report_run(FILE *f, const dit_gen_report *r)
{
	char on[128];
	workers_text(on, sizeof on, r);
	char guide[96];
	if (r->nexperts > 1)
		snprintf(guide, sizeof guide, "guidance %g/%g (high/low), %d+%d steps", r->guide[0],
		         r->guide[1], r->expert_steps[0], r->expert_steps[1]);
	else if (r->d->guidance == DIT_GUIDANCE_EMBEDDED)
		snprintf(guide, sizeof guide, "guidance %g%s, embedded guidance %g", r->guide[0],
		         r->guide[0] > 1.0 ? "" : " (no CFG pass)", r->embedded);
	else
		snprintf(guide, sizeof guide, "guidance %g", r->guide[0]);
	char sched[48];
	if (r->karras)
		snprintf(sched, sizeof sched, "Karras sigmas");
	else
		snprintf(sched, sizeof sched, "shift %g", r->plan->shift);
#ifdef DIT_SIMGRID
	/* the latents are not computed: only the time is the run's */
	fprintf(f, "%d %s steps, %s, %s: simulated %.2f s (%.3f s/step) on %s, scheduler %s\n",
	        r->plan->nsteps, dit_solver_name(r->plan->solver), guide, sched, r->seconds,
	        r->seconds / r->plan->nsteps, on, r->sched);
	return;
#endif
	fprintf(f, "%d %s steps, %s, %s, seed %llu: %.2f s (%.3f s/step) on %s, scheduler %s\n",
	        r->plan->nsteps, dit_solver_name(r->plan->solver), guide, sched,
	        (unsigned long long)r->seed, r->seconds, r->seconds / r->plan->nsteps, on,
	        r->sched);
	if (r->rt && r->rt->cuda_libs)
		cuda_libs_line(f, r->rt->cuda_libs);
	double mean, sd;
	mean_std(r->latents, r->n, &mean, &sd);
	const char *to = dit_io_is_stdout(r->output) ? "standard output" : r->output;
	fprintf(f, "latents mean %.6f std %.6f%s%s\n", mean, sd, to ? ", written to " : "",
	        to ? to : "");
}

FILE *dit_gen_report_file(const char *const *outputs, int n)
{
	for (int i = 0; i < n; i++)
		if (dit_io_is_stdout(outputs[i]))
			return stderr;
	return stdout;
}
