#define _POSIX_C_SOURCE 200809L
#include "dit_synth.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dit_config.h"
#include "dit_io.h"
#include "dit_rng.h"
#include "dit_safetensors.h"

#define SYNTH_SEED 0x57414e32ull /* "WAN2" */

char *dit_synth_cache_root(void)
{
	const char *env = getenv("DITSTAR_CACHE");
	char buf[4096];
	if (env && *env)
		return strdup(env);
	env = getenv("XDG_CACHE_HOME");
	if (env && *env) {
		snprintf(buf, sizeof buf, "%s/ditstar", env);
		return strdup(buf);
	}
	env = getenv("HOME");
	snprintf(buf, sizeof buf, "%s/.cache/ditstar", env && *env ? env : "/tmp");
	return strdup(buf);
}

/* Scale and shift of the synthetic values of one tensor, from its name and shape. */
static void init_rule(const char *name, const int64_t *shape, int ndim, int64_t dim, double *scale,
                      double *shift)
{
	size_t n = strlen(name);
	int is_bias = n > 5 && strcmp(name + n - 5, ".bias") == 0;
	int is_norm = strstr(name, "norm") != NULL;
	*shift = 0.0;
	if (strstr(name, "modulation")) {
		*scale = 1.0 / sqrt((double)dim);
	} else if (is_norm && !is_bias) {
		*scale = 0.1;
		*shift = 1.0;
	} else if (is_bias) {
		*scale = 0.02;
	} else {
		int64_t fan_in = 1;
		for (int i = 1; i < ndim; i++)
			fan_in *= shape[i];
		*scale = 1.0 / sqrt((double)fan_in);
	}
}

static dit_status add_tensor(dit_st_writer *w, const dit_hparams *cfg, const dit_tensor_desc *r,
                             const char *name, uint64_t seed, dit_error *err)
{
	int64_t shape[DIT_T_MAX_DIMS], n = 1;
	int nd = dit_tensor_shape(cfg, r, shape);
	for (int i = 0; i < nd; i++)
		n *= shape[i];
	float *data = malloc((size_t)n * sizeof *data);
	if (!data)
		return dit_error_set(err, DIT_ENOMEM, "out of memory for synthetic '%s'", name);
	double scale, shift;
	init_rule(name, shape, nd, cfg->dim, &scale, &shift);
	dit_rng_fill_normal(data, n, seed, dit_rng_stream(name), scale, shift);
	dit_status st = dit_st_writer_add_f32(w, name, nd, shape, data, err);
	free(data);
	return st;
}

/* One checkpoint (config.json written last) in folder path, with seed. */
/* Whether a preset's checkpoint in the cache is the one this build writes and whole:
 * its config as the preset's, its weights a safetensors file that opens (every tensor
 * within the file) and names the preset. */
static int synth_intact(const char *cfg_path, const char *st_path, const dit_hparams *cfg,
                        const char *name)
{
	dit_hparams have;
	char diff[160];
	if (dit_config_load(&have, cfg_path, NULL) != DIT_OK ||
	    dit_config_diff(&have, cfg, diff, sizeof diff))
		return 0;
	dit_st_file *f = NULL;
	if (dit_st_open(&f, st_path, NULL) != DIT_OK)
		return 0;
	const char *v = dit_st_metadata(f, "ditstar_synthetic");
	int ok = v && strcmp(v, name) == 0;
	dit_st_close(f);
	return ok;
}

static dit_status write_checkpoint(const char *path, const dit_model_desc *d,
                                   const dit_hparams *cfg, uint64_t seed, const char *name,
                                   dit_error *err)
{
	char cfg_path[4300], st_path[4300];
	snprintf(cfg_path, sizeof cfg_path, "%s/config.json", path);
	snprintf(st_path, sizeof st_path, "%s/diffusion_pytorch_model.safetensors", path);
	if (access(cfg_path, R_OK) == 0 && access(st_path, R_OK) == 0) {
		if (synth_intact(cfg_path, st_path, cfg, name))
			return DIT_OK;
		/* written for another version of the preset, or cut short: write it again */
		unlink(cfg_path);
	}
	dit_status st = dit_io_mkdir_p(path, err);
	if (st)
		return st;
	dit_st_writer *w = dit_st_writer_new();
	if (!w)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	/* the names of the family's official format */
	const char *np = d->formats[0]->name_prefix ? d->formats[0]->name_prefix : "";
	for (int i = 0; i < d->nglobals && !st; i++) {
		char tname[256];
		snprintf(tname, sizeof tname, "%s%s", np, d->globals[i].name);
		if (dit_tensor_present(cfg, &d->globals[i]))
			st = add_tensor(w, cfg, &d->globals[i], tname, seed, err);
	}
	for (int p = 0; p < d->npools && !st; p++) {
		const dit_pool_desc *pd = &d->pools[p];
		for (int64_t b = 0; b < cfg->layers[p] && !st; b++) {
			for (int i = 0; i < pd->ntensors && !st; i++) {
				char tname[256];
				if (!dit_tensor_present(cfg, &pd->tensors[i]))
					continue;
				snprintf(tname, sizeof tname, "%s%s%lld.%s", np, pd->prefix,
				         (long long)b, pd->tensors[i].name);
				st = add_tensor(w, cfg, &pd->tensors[i], tname, seed, err);
			}
		}
	}
	if (!st)
		st = dit_st_writer_set_metadata(w, "ditstar_synthetic", name, err);
	if (!st)
		st = dit_st_writer_commit(w, st_path, err);
	dit_st_writer_free(w);
	if (!st)
		st = dit_config_save(cfg, cfg_path, err);
	return st;
}

dit_status dit_synth_preset(const dit_preset **out, const char *name, dit_error *err)
{
	*out = dit_preset_find(name);
	if (*out)
		return DIT_OK;
	return dit_error_set(err, DIT_EUSAGE,
	                     "--model %s: unknown model preset (see 'ditstar info --list')", name);
}

size_t dit_synth_bytes(const dit_preset *p)
{
	dit_hparams hp = dit_preset_hparams(p);
	const dit_model_desc *d = dit_model_desc_find(p->model);
	if (!d)
		return 0;
	int n = d->nexperts;
	int64_t params = dit_model_param_count(d, &hp);
	return params < 0 || (uint64_t)params > SIZE_MAX / 8 / (size_t)n
	           ? SIZE_MAX
	           : (size_t)n * (size_t)params * sizeof(float);
}

dit_status dit_synth_checkpoint(const dit_preset *p, const char *root, size_t max_bytes, char **dir,
                                dit_error *err)
{
	dit_hparams hp = dit_preset_hparams(p);
	const dit_hparams *cfg = &hp;
	const dit_model_desc *d = dit_model_desc_find(p->model);
	if (!d)
		return dit_error_set(err, DIT_EINVAL, "preset '%s' names no model ('%s')", p->name,
		                     p->model);
	size_t bytes = dit_synth_bytes(p);
	int n = d->nexperts;
	char path[4096];
	snprintf(path, sizeof path, "%s/%s-synth-v1", root, p->name);
	if (bytes > max_bytes)
		return dit_error_set(
		    err, DIT_EINVAL,
		    "synthetic weights for '%s' would take %.1f GB; use --model-dir "
		    "with a real checkpoint",
		    p->name, (double)bytes / 1e9);
	dit_status st = DIT_OK;
	for (int e = 0; e < n && !st; e++) {
		char sub[4200];
		/* the released layout: each expert in its own folder, with its own weights */
		if (n > 1)
			snprintf(sub, sizeof sub, "%s/%s", path, d->formats[0]->expert[e]);
		else
			snprintf(sub, sizeof sub, "%s", path);
		st = write_checkpoint(sub, d, cfg, SYNTH_SEED + (uint64_t)e, p->name, err);
	}
	if (st)
		return st;
	*dir = strdup(path);
	return *dir ? DIT_OK : dit_error_set(err, DIT_ENOMEM, "out of memory");
}
