/* A model's weights opened from a path (see dit_weights.h): a checkpoint folder, file
 * or archive, a format's sub-folder, or a two-expert model's folders or files; the
 * experts checked to make one known model. */
#define _POSIX_C_SOURCE 200809L
#include "dit_weights.h"
#include "dit_config.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dit_checkpoint.h"
#include "dit_ck_pair.h"
#include "dit_io.h"
#include "dit_lora.h"
#include "dit_wtensor.h"

static int is_file(const char *dir, const char *name)
{
	char *p = dit_io_join(dir, name);
	struct stat sb;
	int ok = p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
	free(p);
	return ok;
}

static int is_dir(const char *dir, const char *name)
{
	char *p = dit_io_join(dir, name);
	struct stat sb;
	int ok = p && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
	free(p);
	return ok;
}

/* A two-expert layout: no config.json at the top, one in the first expert's folder
 * of some format (where that folder is also a one-checkpoint format's home, the
 * second expert's folder must be there too). */
static void find_experts(const char *dir, const dit_model_desc **two, const dit_format_desc **fmt)
{
	size_t nd;
	const dit_model_desc *const *all = dit_model_descs(&nd);
	for (size_t i = 0; i < nd && !*two; i++) {
		for (int k = 0; all[i]->nexperts > 1 && k < DIT_MAX_FORMATS && all[i]->formats[k];
		     k++) {
			const dit_format_desc *f = all[i]->formats[k];
			char *sub = dit_io_join(dir, f->expert[0]);
			int found = sub && is_file(sub, "config.json") &&
			            !(f->subdir && strcmp(f->subdir, f->expert[0]) == 0 &&
			              !is_dir(dir, f->expert[1]));
			free(sub);
			if (found) {
				*two = all[i];
				*fmt = f;
				break;
			}
		}
	}
}

/* The two-expert family whose experts come as one file each without config.json
 * (its config_from_shapes tells T2V from I2V; the config's model_type then picks the
 * model, as with the experts' folders). */
static const dit_model_desc *pair_desc(void)
{
	size_t nd;
	const dit_model_desc *const *all = dit_model_descs(&nd);
	for (size_t i = 0; i < nd; i++)
		if (all[i]->nexperts > 1 && all[i]->shapes_one_file && all[i]->config_from_shapes)
			return all[i];
	return NULL;
}

/* A PyTorch checkpoint file (not a *_map.pt) directly in dir. */
static int has_pt(const char *dir)
{
	DIR *d = opendir(dir);
	int found = 0;
	for (struct dirent *e; d && !found && (e = readdir(d));) {
		size_t n = strlen(e->d_name);
		found = n > 3 && strcmp(e->d_name + n - 3, ".pt") == 0 &&
		        !(n > 7 && strcmp(e->d_name + n - 7, "_map.pt") == 0);
	}
	if (d)
		closedir(d);
	return found;
}

/* A one-checkpoint model in a format's sub-folder (a diffusers pipeline's
 * transformer/, the official HunyuanVideo download's transformers/ holding its .pt
 * alone): that folder, else NULL. */
static char *find_subdir(const char *dir)
{
	size_t nd;
	const dit_model_desc *const *all = dit_model_descs(&nd);
	for (size_t i = 0; i < nd; i++)
		for (int k = 0; k < DIT_MAX_FORMATS && all[i]->formats[k]; k++) {
			const char *s = all[i]->formats[k]->subdir;
			char *sub = s ? dit_io_join(dir, s) : NULL;
			if (sub &&
			    (is_file(sub, "config.json") || (all[i]->probe_tensor && has_pt(sub))))
				return sub;
			free(sub);
		}
	return NULL;
}

/* Where the experts of the model at dir are: *two and *fmt a two-expert family and the
 * format of its experts' folders; else *one the sub-folder of a one-checkpoint format;
 * else pair the files of two one-file experts; else dir itself. */
static dit_status experts_find(const char *dir, const dit_model_desc **two,
                               const dit_format_desc **fmt, char **one, char *pair[2],
                               dit_error *err)
{
	struct stat sb;
	int folder = stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
	if (folder && !is_file(dir, "config.json")) {
		find_experts(dir, two, fmt);
		if (!*two)
			*one = find_subdir(dir);
	}
	if (!*two && !*one) { /* two one-file experts (dit_ck_pair.h) */
		dit_status pst = dit_ck_pair_find(dir, pair, err);
		if (pst)
			return pst;
		if (pair[0] && (*two = pair_desc()) != NULL)
			*fmt = (*two)->formats[0];
	}
	return DIT_OK;
}

/* Expert e of w opened from sub. Of two experts in folders (files 0), the folder must
 * be there and hold the layout's format. */
static dit_status expert_open(dit_weights *w, int e, const char *dir, const char *sub,
                              const dit_model_desc *two, const dit_format_desc *fmt, int files,
                              const dit_checkpoint_opts *ck, dit_error *err)
{
	struct stat sb;
	dit_status st;
	if (two && !files && !(stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode)))
		st = dit_error_set(err, DIT_ENOTFOUND,
		                   "%s: folder '%s' missing (a two-expert model holds %s/ "
		                   "and %s/)",
		                   dir, fmt->expert[e], fmt->expert[0], fmt->expert[1]);
	else
		st = dit_model_open(&w->expert[e], sub, two, ck, err);
	if (!st && two && w->expert[e]->fmt != fmt)
		st =
		    dit_error_set(err, DIT_EFORMAT, "%s: a %s config.json in a %s layout (%s/)",
		                  w->expert[e]->ck->config_path,
		                  w->expert[e]->fmt->config->class_name, fmt->name, fmt->expert[e]);
	return st;
}

/* The n experts of w share one config, which names a known model of n experts (into
 * w->desc); none holds a tensor the model refuses, each passes the model's check. */
static dit_status experts_check(dit_weights *w, int n, dit_error *err)
{
	const dit_hparams *c = &w->expert[0]->cfg;
	for (int e = 1; e < n; e++) {
		char diff[160];
		if (dit_config_diff(c, &w->expert[e]->cfg, diff, sizeof diff))
			return dit_error_set(err, DIT_EFORMAT,
			                     "%s and %s disagree (%s): the experts "
			                     "of one model must share a config",
			                     w->expert[0]->ck->config_path,
			                     w->expert[e]->ck->config_path, diff);
	}
	w->desc = dit_model_desc_match(c->model_type, n);
	if (!w->desc)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: model_type '%s' %s is not a known model (%s)",
		                     w->expert[0]->ck->config_path, c->model_type,
		                     n > 1 ? "with two experts" : "in a single checkpoint",
		                     n > 1 ? "two experts: wan2.2 t2v, i2v"
		                           : "one checkpoint: wan2.1 t2v, wan2.2 ti2v");
	for (int e = 0; e < n; e++) {
		const dit_model *m = w->expert[e];
		char why[200];
		if (w->desc->refuse_tensor && dit_model_find(m, w->desc->refuse_tensor))
			return dit_error_set(err, DIT_EUNSUPPORTED, "%s: tensor '%s' means %s",
			                     m->dir,
			                     dit_wt_format_name(m->fmt, w->desc->refuse_tensor),
			                     w->desc->refuse_why);
		if (!dit_model_desc_check(w->desc, &m->cfg, why, sizeof why))
			return dit_error_set(err, DIT_EFORMAT, "%s: %s", m->ck->config_path, why);
	}
	return DIT_OK;
}

/* Whether LoRA spec sp goes to expert e of w; a label no expert has is refused. */
static dit_status lora_expert(const dit_weights *w, const dit_lora_spec *sp, int e, int *yes,
                              dit_error *err)
{
	*yes = !sp->expert;
	if (!sp->expert)
		return DIT_OK;
	int known = 0;
	for (int k = 0; k < w->nexperts && w->nexperts > 1; k++)
		if (w->desc->expert_label[k] && !strcmp(w->desc->expert_label[k], sp->expert)) {
			known = 1;
			*yes = k == e;
		}
	if (known)
		return DIT_OK;
	if (w->nexperts < 2)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--lora %s=%s: %s has one expert (give the file alone)",
		                     sp->expert, sp->path, w->desc->name);
	return dit_error_set(err, DIT_EUSAGE, "--lora %s=%s: %s's experts are %s and %s",
	                     sp->expert, sp->path, w->desc->name, w->desc->expert_label[0],
	                     w->desc->expert_label[1]);
}

dit_status dit_weights_lora(dit_weights *w, const dit_checkpoint_opts *ck, dit_error *err)
{
	for (int e = 0; ck && ck->nlora && e < w->nexperts; e++) {
		dit_model *m = w->expert[e];
		const dit_lora_spec *mine[DIT_MAX_LORAS];
		int n = 0;
		for (int i = 0; i < ck->nlora; i++) {
			int yes;
			dit_status st = lora_expert(w, &ck->lora[i], e, &yes, err);
			if (st)
				return st;
			if (yes)
				mine[n++] = &ck->lora[i];
		}
		dit_lora_model lm = {m->desc, &m->cfg};
		dit_status st = dit_lora_open(&m->lora, &lm, mine, n, ck->lora_ignore_unmatched,
		                              !ck->headers_only, err);
		/* the non-block weights now; the blocks' as they are read */
		for (int i = 0; !st && m->lora && m->globals && i < m->desc->nglobals; i++)
			if (dit_lora_touches(m->lora, -1, 0, i))
				st = dit_lora_merge(m->lora, -1, 0, i, m->globals + m->glob.off[i],
				                    m->desc->globals[i].name, err);
		if (st)
			return st;
	}
	return DIT_OK;
}

dit_status dit_weights_open(dit_weights *w, const char *dir, dit_error *err)
{
	return dit_weights_open_opts(w, dir, NULL, err);
}

dit_status dit_weights_open_opts(dit_weights *w, const char *dir, const dit_checkpoint_opts *ck,
                                 dit_error *err)
{
	memset(w, 0, sizeof *w);
	const dit_model_desc *two = NULL;
	const dit_format_desc *fmt = NULL;
	char *one = NULL;
	char *pair[2] = {NULL, NULL};
	dit_status st = experts_find(dir, &two, &fmt, &one, pair, err);
	if (st)
		return st;
	int n = two ? two->nexperts : 1;
	for (int e = 0; e < n && !st; e++) {
		char *sub = pair[0] ? strdup(pair[e])
		            : two   ? dit_io_join(dir, fmt->expert[e])
		                    : strdup(one ? one : dir);
		if (!sub) {
			free(one);
			free(pair[0]);
			free(pair[1]);
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		}
		st = expert_open(w, e, dir, sub, two, fmt, pair[0] != NULL, ck, err);
		free(sub);
		w->nexperts = e + 1;
	}
	free(one);
	free(pair[0]);
	free(pair[1]);
	if (!st)
		st = experts_check(w, n, err);
	if (!st)
		st = dit_weights_lora(w, ck, err);
	if (st) {
		dit_weights_free(w);
		return st;
	}
	return DIT_OK;
}
