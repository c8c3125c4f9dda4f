/* Every family ditstar knows, in detection order (models/dit_families.def), and the
 * lookups over them. Adding a family: its descriptor files in models/, its lines in
 * dit_families.def, and its block and stage kinds in tasks/ (tasks/dit_kinds.def). */
#include <stdio.h>
#include <string.h>

#include "dit_model_desc.h"

#define DIT_FAMILY(n) extern const dit_model_desc dit_##n;
#define DIT_PRESETS(n)                                                                             \
	extern const dit_preset dit_##n##_presets[];                                               \
	extern const size_t dit_##n##_npresets;
#include "dit_families.def"
#undef DIT_FAMILY
#undef DIT_PRESETS

static const dit_model_desc *const descs[] = {
#define DIT_FAMILY(n) &dit_##n,
#define DIT_PRESETS(n)
#include "dit_families.def"
#undef DIT_FAMILY
#undef DIT_PRESETS
};

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

void dit_model_desc_finish(const dit_model_desc *d, dit_hparams *hp)
{
	if (!d || !d->image_ctx.dim || hp->image_dim)
		return;
	hp->image_dim = d->image_ctx.dim;
	hp->image_tokens = d->image_ctx.tokens;
	hp->image_pos = d->image_ctx.pos;
}

int dit_model_desc_check(const dit_model_desc *d, const dit_hparams *c, char *why, size_t len)
{
	if ((d->image_ctx.dim != 0) != (c->image_dim != 0) ||
	    (c->image_dim && c->image_tokens != d->image_ctx.tokens)) {
		if (c->image_dim && d->image_ctx.dim)
			snprintf(why, len, "%lld image tokens where %s reads %lld",
			         (long long)c->image_tokens, d->name,
			         (long long)d->image_ctx.tokens);
		else
			snprintf(why, len, "%s image embedder, which %s %s",
			         c->image_dim ? "an" : "no", d->name,
			         c->image_dim ? "has none of" : "needs");
		return 0;
	}
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

dit_status dit_model_check_size(const dit_model_desc *d, const dit_hparams *cfg, int64_t frames,
                                int64_t height, int64_t width, dit_error *err)
{
	const int64_t *vs = d->latent.vae_stride;
	if (!dit_model_latent_frames(d, frames))
		return dit_error_set(err, DIT_EUSAGE,
		                     "--frames %lld: must be %lldk+1 (1, %lld, ...)",
		                     (long long)frames, (long long)vs[0], (long long)vs[0] + 1);
	int64_t sh = vs[1] * cfg->patch[1], sw = vs[2] * cfg->patch[2];
	if (height < sh || height % sh)
		return dit_error_set(err, DIT_EUSAGE, "--height %lld: must be a multiple of %lld",
		                     (long long)height, (long long)sh);
	if (width < sw || width % sw)
		return dit_error_set(err, DIT_EUSAGE, "--width %lld: must be a multiple of %lld",
		                     (long long)width, (long long)sw);
	return DIT_OK;
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
#define DIT_FAMILY(n)
#define DIT_PRESETS(n) {dit_##n##_presets, &dit_##n##_npresets},
#include "dit_families.def"
#undef DIT_FAMILY
#undef DIT_PRESETS
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
		dit_model_desc_finish(d, &hp);
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
