/* A checkpoint without config.json: its family from a probe tensor, and that family's
 * released configuration (see dit_release.h). */
#include "dit_release.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "dit_config.h"
#include "dit_gguf.h"

/* The shape of a checkpoint tensor for a family's config_from_shapes. */
static int release_shape(void *arg, const char *name, int64_t *dims)
{
	const dit_st_tensor *t = dit_checkpoint_find(arg, name, NULL);
	if (!t)
		return 0;
	for (int i = 0; i < t->ndim && i < 8; i++)
		dims[i] = t->shape[i];
	return t->ndim;
}

/* A GGUF file's general.architecture, when it has one, must be the family's. */
static int release_arch_ok(const dit_checkpoint *ck, const dit_model_desc *d)
{
	const char *arch = ck->nfiles ? dit_st_metadata(ck->files[0], DIT_GGUF_META_ARCH) : NULL;
	return !arch || !d->gguf_arch || strcmp(arch, d->gguf_arch) == 0;
}

/* A one-file checkpoint without a config and of no family that reads one from its
 * tensors. */
static dit_status release_no_family(const dit_checkpoint *ck, dit_error *err)
{
	const char *arch = dit_st_metadata(ck->files[0], DIT_GGUF_META_ARCH);
	char q[200];
	if (arch)
		dit_error_quote(q, sizeof q, arch, strlen(arch), 40);
	return dit_error_set(
	    err, DIT_ENOTFOUND,
	    "%s: no config: the file has no 'config' in its header and no "
	    "config.json beside it, and its tensors are of no family whose "
	    "configuration ditstar reads from the shapes (Wan, HunyuanVideo)%s%s%s",
	    ck->dir, arch ? "; general.architecture '" : "", arch ? q : "", arch ? "'" : "");
}

const dit_model_desc *dit_release_probe(const dit_checkpoint *ck, const dit_model_desc *want)
{
	size_t n;
	const dit_model_desc *const *all = dit_model_descs(&n);
	for (size_t i = 0; ck && i < n; i++) {
		const dit_model_desc *d = all[i];
		if ((want ? d != want : d->nexperts != 1) || !d->release_preset || !d->probe_tensor)
			continue;
		if ((d->shapes_one_file && !ck->one_file) || !release_arch_ok(ck, d))
			continue;
		/* the probe after the official format's prefix, or its alternative one */
		const dit_format_desc *f = d->formats[0];
		const char *pre[2] = {f->name_prefix ? f->name_prefix : "", f->alt_prefix};
		for (int k = 0; k < 2; k++) {
			char name[256];
			if (pre[k] &&
			    (size_t)snprintf(name, sizeof name, "%s%s", pre[k], d->probe_tensor) <
			        sizeof name &&
			    dit_checkpoint_find(ck, name, NULL))
				return d;
		}
	}
	return NULL;
}

dit_status dit_release_assume(const dit_checkpoint *ck, const dit_model_desc *want,
                              dit_hparams *cfg, const dit_model_desc **family,
                              const dit_preset **assumed, dit_error *err)
{
	if (family)
		*family = NULL;
	if (assumed)
		*assumed = NULL;
	if (!ck || !ck->config_missing)
		return dit_checkpoint_load_config(ck, cfg, err);
	const dit_model_desc *d = dit_release_probe(ck, want);
	if (!d && ck->one_file && ck->nfiles == 1)
		return release_no_family(ck, err);
	if (!d)
		return dit_checkpoint_load_config(ck, cfg, err);
	const dit_preset *p = dit_preset_find(d->release_preset);
	if (!p)
		return dit_error_set(err, DIT_ERUNTIME,
		                     "%s: family %s names release preset '%s', which is not "
		                     "built in",
		                     ck->dir, d->name, d->release_preset);
	*cfg = dit_preset_hparams(p);
	if (d->config_from_shapes) {
		char why[320];
		if (!d->config_from_shapes(release_shape, (void *)ck, cfg, why, sizeof why))
			return dit_error_set(err, DIT_EFORMAT, "%s: no config.json, and %s",
			                     ck->dir, why);
		if (cfg->config && cfg->config->derive)
			cfg->config->derive(cfg);
		dit_status st = dit_config_check(cfg, NULL, err);
		if (st)
			return st;
		/* the shapes may tell another family of the same tables (Wan2.2 TI2V-5B) */
		const dit_model_desc *by = want ? NULL : dit_model_desc_match(cfg->model_type, 1);
		if (by && by->globals == d->globals && by->pools == d->pools)
			d = by;
	}
	if (family)
		*family = d;
	if (assumed)
		*assumed = p;
	return DIT_OK;
}
