/* Every family ditstar knows, in detection order, and the lookups over them. Adding a
 * family: its descriptor file in models/, one line in each table here, and its block
 * kind in tasks/. */
#include <stdio.h>
#include <string.h>

#include "dit_model_desc.h"

extern const dit_model_desc dit_wan21_t2v, dit_wan22_t2v_a14b, dit_wan22_i2v_a14b,
    dit_wan22_ti2v_5b, dit_hunyuan_video, dit_ltx2, dit_cosmos_predict25;
extern const dit_preset dit_wan_presets[], dit_hunyuan_presets[], dit_ltx_presets[],
    dit_cosmos_presets[];
extern const size_t dit_wan_npresets, dit_hunyuan_npresets, dit_ltx_npresets,
    dit_cosmos_npresets;

static const dit_model_desc *const descs[] = {&dit_wan21_t2v, &dit_wan22_t2v_a14b,
                                              &dit_wan22_i2v_a14b, &dit_wan22_ti2v_5b,
                                              &dit_hunyuan_video, &dit_ltx2,
                                              &dit_cosmos_predict25};

const dit_model_desc *const *dit_model_descs(size_t *count)
{
	*count = sizeof descs / sizeof descs[0];
	return descs;
}

const dit_model_desc *dit_model_desc_match(const char *model_type, int nexperts)
{
	for (size_t i = 0; i < sizeof descs / sizeof descs[0]; i++)
		if (strcmp(descs[i]->model_type, model_type) == 0 && descs[i]->nexperts == nexperts)
			return descs[i];
	return NULL;
}

const dit_model_desc *dit_model_desc_for_type(const char *model_type)
{
	for (size_t i = 0; i < sizeof descs / sizeof descs[0]; i++)
		if (strcmp(descs[i]->model_type, model_type) == 0)
			return descs[i];
	return NULL;
}

const dit_format_desc *dit_model_desc_format(const dit_model_desc *d, const dit_config_desc *cd)
{
	for (int k = 0; k < DIT_MAX_FORMATS && d->formats[k]; k++)
		if (d->formats[k]->config == cd)
			return d->formats[k];
	return NULL;
}

const dit_model_desc *dit_model_desc_find(const char *name)
{
	for (size_t i = 0; i < sizeof descs / sizeof descs[0]; i++)
		if (strcmp(descs[i]->name, name) == 0)
			return descs[i];
	return NULL;
}

int dit_model_desc_check(const dit_model_desc *d, const dit_hparams *c, char *why, size_t len)
{
	if (d->image == DIT_IMAGE_CONCAT) {
		if (c->in_dim <= c->out_dim) {
			snprintf(why, len, "in_dim %lld must exceed out_dim %lld (%s)",
			         (long long)c->in_dim, (long long)c->out_dim,
			         "the image conditioning is concatenated to the latent");
			return 0;
		}
		return 1;
	}
	if (c->in_dim != c->out_dim) {
		snprintf(why, len, "in_dim %lld != out_dim %lld (model_type '%s' needs them equal)",
		         (long long)c->in_dim, (long long)c->out_dim, d->model_type);
		return 0;
	}
	return 1;
}

int64_t dit_model_latent_frames(const dit_model_desc *d, int64_t frames)
{
	int64_t st = d->latent.vae_stride[0];
	if (frames < 1)
		return 0;
	if (d->latent.causal)
		return (frames - 1) % st ? 0 : (frames - 1) / st + 1;
	return frames % st ? 0 : frames / st;
}

int64_t dit_model_param_count(const dit_model_desc *d, const dit_hparams *hp)
{
	dit_layout lay;
	dit_layout_init(&lay, hp, d->globals, d->nglobals, 0);
	int64_t n = lay.size, blocks;
	int over = n < 0;
	for (int p = 0; p < d->npools && !over; p++) {
		dit_layout_init(&lay, hp, d->pools[p].tensors, d->pools[p].ntensors, 0);
		over = lay.size < 0 || __builtin_mul_overflow(lay.size, hp->layers[p], &blocks) ||
		       __builtin_add_overflow(n, blocks, &n);
	}
	return over ? -1 : n;
}

/* ------------------------------------------------------------------ presets */

static const struct {
	const dit_preset *p;
	const size_t *n;
} preset_tables[] = {
    {dit_wan_presets, &dit_wan_npresets},
    {dit_hunyuan_presets, &dit_hunyuan_npresets},
    {dit_ltx_presets, &dit_ltx_npresets},
    {dit_cosmos_presets, &dit_cosmos_npresets},
};

size_t dit_preset_count(void)
{
	size_t n = 0;
	for (size_t t = 0; t < sizeof preset_tables / sizeof preset_tables[0]; t++)
		n += *preset_tables[t].n;
	return n;
}

const dit_preset *dit_preset_get(size_t i)
{
	for (size_t t = 0; t < sizeof preset_tables / sizeof preset_tables[0]; t++) {
		if (i < *preset_tables[t].n)
			return &preset_tables[t].p[i];
		i -= *preset_tables[t].n;
	}
	return NULL;
}

dit_hparams dit_preset_hparams(const dit_preset *p)
{
	dit_hparams hp = p->hp;
	const dit_model_desc *d = dit_model_desc_find(p->model);
	if (d) {
		hp.config = d->formats[0]->config;
		if (hp.config->derive)
			hp.config->derive(&hp);
	}
	return hp;
}

const dit_preset *dit_preset_find(const char *name)
{
	for (size_t i = 0; i < dit_preset_count(); i++)
		if (strcmp(dit_preset_get(i)->name, name) == 0)
			return dit_preset_get(i);
	return NULL;
}
