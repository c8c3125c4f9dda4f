/* See dit_gen_frames.h. */
#define _POSIX_C_SOURCE 200809L
#include "dit_gen_frames.h"

#include <stdlib.h>
#include <string.h>

dit_status dit_gen_frames_load(dit_gen_frames *fr, const dit_model_desc *d, const dit_hparams *c,
                               const dit_grid *gr, const char *path, int64_t k, dit_error *err)
{
	memset(fr, 0, sizeof *fr);
	(void)d;
	int64_t extra = c->in_dim - c->out_dim, hw = gr->h * gr->w, fhw = gr->f * hw;
	if (k < 0 || k >= gr->f)
		return dit_error_set(
		    err, DIT_EUSAGE,
		    "--condition-frames %lld: 0..%lld (the latent has %lld frames)", (long long)k,
		    (long long)gr->f - 1, (long long)gr->f);
	if (k > 0 && !path)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--condition-frames %lld needs --condition-latent FILE ('gt' "
		                     "[%lld, %lld, %lld, %lld])",
		                     (long long)k, (long long)c->out_dim, (long long)gr->f,
		                     (long long)gr->h, (long long)gr->w);
	if (path && k == 0)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--condition-latent needs --condition-frames N (1 or more)");
	if (!(fr->y = calloc((size_t)(extra * fhw), sizeof *fr->y)))
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	for (int64_t i = 0; i < k * hw; i++) /* the condition mask: 1 on the first k frames */
		fr->y[i] = 1.0f;
	fr->k = k;
	if (!path)
		return DIT_OK;
	dit_st_file *f;
	dit_status st = dit_st_open(&f, path, err);
	if (st)
		return st;
	int64_t dims[4] = {c->out_dim, gr->f, gr->h, gr->w};
	st = dit_read_tensor(f, "gt", 4, dims, 1, &fr->gt, NULL, err);
	dit_st_close(f);
	return st;
}

dit_status dit_gen_frames_start(dit_gen_frames *fr, dit_session *ses, const float *noise,
                                double cond_t, dit_error *err)
{
	dit_graph *g = &ses->graph;
	const dit_grid *gr = &g->grid;
	int64_t C = gr->c, kw = fr->k * gr->h * gr->w, fhw = gr->f * gr->h * gr->w;
	float *gt = malloc((size_t)(C * kw) * sizeof *gt),
	      *v = malloc((size_t)(C * kw) * sizeof *v);
	if (!gt || !v) {
		free(gt);
		free(v);
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	}
	for (int64_t ch = 0; ch < C; ch++)
		for (int64_t i = 0; i < kw; i++) {
			gt[ch * kw + i] = fr->gt[ch * fhw + i];
			v[ch * kw + i] = noise[ch * fhw + i] - fr->gt[ch * fhw + i];
		}
	dit_graph_vector_fill(g, &g->img.cond_gt, gt, C * kw, "condition_gt");
	dit_graph_vector_fill(g, &g->img.cond_v, v, C * kw, "condition_velocity");
	g->img.cond_frames = fr->k;
	g->img.cond_t = cond_t > 0 ? cond_t : -1.0;
	free(gt);
	free(v);
	return DIT_OK;
}

void dit_gen_frames_free(dit_gen_frames *fr)
{
	free(fr->y);
	free(fr->gt);
	memset(fr, 0, sizeof *fr);
}
