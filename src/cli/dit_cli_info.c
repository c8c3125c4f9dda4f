/* `ditstar info`: a model's descriptor, config and sizes, printed. */
#define _POSIX_C_SOURCE 200809L
#include "dit_cli_info.h"
#include "dit_sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_synth.h"
#include "dit_weights.h"

/* The model as its descriptor and config say: family, experts, pools, bytes per block
 * and the tokens of a size (default: the family's official one). */
/* The family's config keys, as its table reads them, with their values. */
static void print_config(const dit_config_desc *cd, const dit_hparams *cfg)
{
	for (int i = 0; i < cd->nkeys; i++) {
		const dit_config_key *k = &cd->keys[i];
		const char *v = (const char *)cfg + k->off;
		if (k->kind == DIT_CK_REAL)
			printf("%-12s %g\n", k->key, *(const double *)v);
		else if (k->kind == DIT_CK_REAL3)
			printf("%-12s %g, %g, %g\n", k->key, ((const double *)v)[0],
			       ((const double *)v)[1], ((const double *)v)[2]);
		else if (k->kind == DIT_CK_INT3)
			printf("%-12s %lld x %lld x %lld\n", k->key,
			       (long long)((const int64_t *)v)[0],
			       (long long)((const int64_t *)v)[1],
			       (long long)((const int64_t *)v)[2]);
		else
			printf("%-12s %lld\n", k->key, (long long)*(const int64_t *)v);
	}
}

/* The sizes: width, parameters, each pool's blocks, the non-block weights, the latent. */
static void print_sizes(const dit_model_desc *d, const dit_hparams *cfg)
{
	int64_t params = dit_model_param_count(d, cfg);
	printf("width        %lld = %lld heads x %lld\n", (long long)cfg->dim,
	       (long long)cfg->num_heads, (long long)cfg->head_dim);
	if (params < 0 || params > INT64_MAX / d->nexperts)
		printf("parameters   more than 2^63 (the config's sizes overflow 64 bits)\n");
	else
		printf("parameters   %lld (%.3f B)%s\n", (long long)params * d->nexperts,
		       (double)params * d->nexperts / 1e9, d->nexperts > 1 ? ", both experts" : "");
	for (int p = 0; p < d->npools; p++) {
		dit_layout lay;
		dit_layout_init(&lay, cfg, d->pools[p].tensors, d->pools[p].ntensors, 0);
		printf("pool         %sN.*: %lld blocks of kind '%s'%s\n", d->pools[p].prefix,
		       (long long)cfg->layers[p], d->pools[p].kind,
		       d->nexperts > 1 ? ", in each expert" : "");
		printf("per block    %lld params: %.1f MiB fp32, %.1f MiB bf16\n",
		       (long long)lay.size, (double)lay.size * 4 / 1048576.0,
		       (double)lay.size * 2 / 1048576.0);
	}
	dit_layout glob;
	dit_layout_init(&glob, cfg, d->globals, d->nglobals, 0);
	printf("non-block    %lld params: %.1f MiB fp32%s\n", (long long)glob.size,
	       (double)glob.size * 4 / 1048576.0, d->nexperts > 1 ? " per expert" : "");
	printf("latent       %lld channels, VAE stride %lld/%lld/%lld, frames %lldk+1\n",
	       (long long)cfg->out_dim, (long long)d->latent.vae_stride[0],
	       (long long)d->latent.vae_stride[1], (long long)d->latent.vae_stride[2],
	       (long long)d->latent.vae_stride[0]);
}

/* The sampler's defaults (LTX-2's by the config's generation). */
static void print_sampling(const dit_model_desc *d, const dit_hparams *cfg)
{
	if (d->guidance == DIT_GUIDANCE_MULTI) { /* LTX-2: by the config's generation */
		int later = cfg->ca_adaln || cfg->gated_attn;
		const dit_multi_desc *md = &d->sched.multi;
		printf(
		    "sampling     euler over LTX2Scheduler sigmas, %d steps, video CFG %g, audio "
		    "CFG %g, STG %g on block %lld, rescale %g, modality %g (4 passes a step)\n",
		    later ? md->steps_later : d->sched.steps, md->video[0], md->audio[0],
		    md->video[1], (long long)(later ? md->stg_block_later : md->stg_block),
		    md->video[2], md->video[3]);
	} else {
		printf("sampling     %s, %d steps, shift %g", dit_solver_name(d->sched.solver),
		       d->sched.steps, d->sched.shift);
		if (d->sched.shift_480 > 0)
			printf(" (%g at 832*480)", d->sched.shift_480);
		printf(", guidance %g", d->sched.guidance[0]);
		if (d->nexperts > 1)
			printf(" (%s) / %g (%s)", d->expert_label[0], d->sched.guidance[1],
			       d->expert_label[1]);
		if (d->guidance == DIT_GUIDANCE_EMBEDDED)
			printf(" (no CFG pass), embedded guidance %g", d->sched.embedded);
		printf("\n");
	}
}

static void print_model(const dit_model_desc *d, const dit_hparams *cfg, int64_t frames,
                        int64_t height, int64_t width, char *const *files)
{
	const dit_format_desc *fmt = cfg->config ? dit_model_desc_format(d, cfg->config) : NULL;
	if (!fmt)
		fmt = d->formats[0];
	printf("family       %s: %s\n", d->name, d->about);
	printf("format       %s\n", fmt->name);
	printf("model_type   %s\n", cfg->model_type);
	if (d->nexperts > 1 && files && files[0] && files[1]) /* two one-file experts */
		printf("experts      %d: %s (%s noise), %s (%s noise); boundary %g\n", d->nexperts,
		       files[0], d->expert_label[0], files[1], d->expert_label[1],
		       d->sched.boundary);
	else if (d->nexperts > 1)
		printf("experts      %d: %s/ (%s noise), %s/ (%s noise); boundary %g\n",
		       d->nexperts, fmt->expert[0], d->expert_label[0], fmt->expert[1],
		       d->expert_label[1], d->sched.boundary);
	print_config(fmt->config, cfg);
	print_sizes(d, cfg);
	print_sampling(d, cfg);
	printf("inputs      ");
	for (int i = 0; i < d->nconds; i++)
		printf(" %s %s%s", d->conds[i].name, d->conds[i].shape,
		       i + 1 < d->nconds ? "," : "\n");
	int64_t f = dit_model_latent_frames(d, frames);
	int64_t h = height / d->latent.vae_stride[1], w = width / d->latent.vae_stride[2];
	int64_t tokens = (f / cfg->patch[0]) * (h / cfg->patch[1]) * (w / cfg->patch[2]);
	printf("tokens       %lld at %lld frames %lldx%lld (latent %lldx%lldx%lldx%lld)\n",
	       (long long)tokens, (long long)frames, (long long)height, (long long)width,
	       (long long)cfg->out_dim, (long long)f, (long long)h, (long long)w);
}

/* The block matrices a run keeps as the checkpoint stores them (--weight-dtype auto):
 * their dtypes and the bytes of a block so, beside bf16's and fp32's. */
static void print_compact(dit_model *m, dit_error *err)
{
	if (dit_model_set_weight_dtype(m, DIT_WDT_F32, 1, err) != DIT_OK)
		return;
	for (int p = 0; p < m->npools; p++) {
		const dit_pool *pl = &m->pool[p];
		char tag[48];
		dit_layout_tag(&pl->lay, pl->d->tensors, tag, sizeof tag);
		if (!pl->lay.narrow)
			continue;
		dit_layout b16, f32;
		dit_layout_init(&b16, &m->cfg, pl->d->tensors, pl->d->ntensors, 1);
		dit_layout_init(&f32, &m->cfg, pl->d->tensors, pl->d->ntensors, 0);
		printf("compact      %sN.*: matrices kept as %s (--weight-dtype auto), %.2f MiB a "
		       "block (bf16 %.2f, fp32 %.2f)\n",
		       pl->d->prefix, tag, (double)pl->lay.size * 4 / 1048576.0,
		       (double)b16.size * 4 / 1048576.0, (double)f32.size * 4 / 1048576.0);
	}
}

dit_status dit_cli_info(const char *model_dir, const char *model_name,
                        const dit_checkpoint_opts *ck, int64_t frames_opt, int64_t height_opt,
                        int64_t width_opt, dit_error *err)
{
	const dit_model_desc *d = NULL;
	const dit_preset *p = NULL;
	dit_hparams cfg;
	char *files[2] = {NULL, NULL}; /* a two-expert model's one-file experts */
	if (model_dir) {
		dit_weights w;
		dit_status st = dit_weights_open_opts(&w, model_dir, ck, err);
		if (st)
			return st;
		for (int e = 0; e < w.nexperts; e++) {
			const dit_checkpoint *ck = w.expert[e]->ck;
			size_t ntensors = 0;
			for (size_t i = 0; i < ck->nfiles; i++)
				ntensors += ck->files[i]->ntensors;
			printf("checkpoint   %s (%zu file%s, %zu tensors)\n", ck->dir, ck->nfiles,
			       ck->nfiles == 1 ? "" : "s", ntensors);
			char dts[160];
			dit_model_stored_dtypes(w.expert[e], dts, sizeof dts);
			printf("stored       %s (tensors read, by dtype)\n", dts);
			print_compact(w.expert[e], err);
			if (w.expert[e]->assumed && w.desc->config_from_shapes)
				printf("config       read from the tensor shapes (no config.json), "
				       "checked against every tensor\n");
			else if (w.expert[e]->assumed)
				printf("config       assumed (no config.json): the released %s "
				       "configuration, preset %s, checked against every tensor\n",
				       w.desc->release_name, w.expert[e]->assumed->name);
		}
		d = w.desc;
		cfg = w.expert[0]->cfg;
		for (int e = 0; e < w.nexperts && w.nexperts == 2; e++)
			if (w.expert[e]->ck->one_file &&
			    !(files[e] = strdup(w.expert[e]->ck->dir))) {
				free(files[0]);
				dit_weights_free(&w);
				return dit_error_set(err, DIT_ENOMEM, "out of memory");
			}
		dit_weights_free(&w);
	} else {
		dit_status st = dit_synth_preset(&p, model_name, err);
		if (st)
			return st;
		d = dit_model_desc_find(p->model);
		cfg = dit_preset_hparams(p);
	}
	int64_t frames = p ? p->frames : d->sched.frames, height = p ? p->height : d->sched.height;
	int64_t width = p ? p->width : d->sched.width;
	frames = frames_opt > 0 ? frames_opt : frames;
	height = height_opt > 0 ? height_opt : height;
	width = width_opt > 0 ? width_opt : width;
	dit_status st = dit_model_check_size(d, &cfg, frames, height, width, err);
	if (!st) {
		if (p)
			printf("preset       %s: %s\n", p->name, p->about);
		print_model(d, &cfg, frames, height, width, files);
	}
	free(files[0]);
	free(files[1]);
	return st;
}
