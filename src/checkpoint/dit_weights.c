#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "dit_weights.h"
#include "dit_stage.h"
#include "dit_config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dit_checkpoint.h"
#include "dit_bf16.h"
#include "dit_io.h"
#include "dit_lora.h"
#include "dit_release.h"
#include "dit_wquant.h"
#include "dit_wtensor.h"

static float *slab_alloc(int64_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, (size_t)n * sizeof(float)) != 0)
		return NULL;
	return p;
}

/* A lazy model's memory: address space only, pages made (zero) if ever touched. */
static float *lazy_alloc(int64_t n)
{
	void *p = mmap(NULL, (size_t)n * sizeof(float), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void model_mem_free(const dit_model *m, float *p, int64_t n)
{
	if (!p)
		return;
	if (m->lazy)
		munmap(p, (size_t)n * sizeof(float));
	else
		free(p);
}

/* Checks presence and shape of a tensor without reading data. */
static dit_status check_tensor(const dit_model *m, const dit_tensor_desc *rule, const char *prefix,
                               dit_error *err)
{
	return dit_wt_load(m, rule, prefix, NULL, 0, err);
}

/* "<prefix>b." as the checkpoint's format names the pool. */
void dit_pool_block_prefix(const dit_pool *pl, int64_t b, char *buf, size_t len)
{
	const char *p = pl->model->fmt->pool_prefix[pl->index];
	snprintf(buf, len, "%s%lld.", p ? p : pl->d->prefix, (long long)b);
}

/* The pool's layout: its matrices in dtype wdt (fp32 or bf16), or with compact those
 * that can keep the checkpoint's compact dtype so (dit_wt_compact). */
static void pool_layout(dit_pool *pl, int wdt, int compact)
{
	unsigned char w[DIT_MAX_TENSORS];
	for (int i = 0; i < pl->d->ntensors && i < DIT_MAX_TENSORS; i++) {
		int c = compact ? dit_wt_compact(pl->model, pl, i) : -1;
		w[i] = (unsigned char)(c >= 0 ? c : wdt);
	}
	dit_layout_init_wdt(&pl->lay, &pl->model->cfg, pl->d->tensors, pl->d->ntensors, w);
	/* 4 KiB = 1024 floats between blocks */
	pl->block_stride = (pl->lay.size + 1023) / 1024 * 1024;
}

/* Checks every tensor of every block of the pool, and that there is no block more. */
static dit_status pool_check(dit_pool *pl, dit_error *err)
{
	const dit_model *m = pl->model;
	const dit_pool_desc *pd = pl->d;
	char prefix[96];
	for (int64_t b = 0; b < pl->nblocks; b++) {
		dit_pool_block_prefix(pl, b, prefix, sizeof prefix);
		for (int i = 0; i < pd->ntensors; i++) {
			dit_status st = check_tensor(m, &pd->tensors[i], prefix, err);
			if (st)
				return st;
		}
	}
	/* One block more than the config's count means the config and the weights
	 * disagree. */
	dit_pool_block_prefix(pl, pl->nblocks, prefix, sizeof prefix);
	int probe = 0; /* a tensor stored whole in this format */
	while (probe + 1 < pd->ntensors && dit_wt_join(m->fmt, pd->tensors[probe].name))
		probe++;
	if (!dit_wt_find(m->ck, m->fmt, prefix, pd->tensors[probe].name, NULL))
		return DIT_OK;
	const char *key = "the block count"; /* the config key of the pool's count */
	size_t off = offsetof(dit_hparams, layers) + (size_t)pl->index * sizeof(int64_t);
	for (int i = 0; i < m->fmt->config->nkeys; i++)
		if (m->fmt->config->keys[i].off == off)
			key = m->fmt->config->keys[i].key;
	dit_wt_source_buf src;
	return dit_error_set(err, DIT_ESHAPE, "%s: tensor '%s%s' exists but %s says %s %lld",
	                     m->dir, prefix, dit_wt_format_name(m->fmt, pd->tensors[probe].name),
	                     dit_wt_source(m, &src), key, (long long)pl->nblocks);
}

dit_status dit_model_open(dit_model **out, const char *dir, const dit_model_desc *desc,
                          const dit_checkpoint_opts *ck, dit_error *err)
{
	dit_model *m = calloc(1, sizeof *m);
	if (!m)
		return dit_error_set(err, DIT_ENOMEM, "out of memory loading %s", dir);
	dit_status st = dit_checkpoint_open_opts(&m->ck, dir, ck, err);
	if (st)
		goto fail;
	m->dir = strdup(dir);
	/* config.json, or without one the released configuration of the family whose
	 * tensors these are (checked below like any config) */
	st = dit_release_assume(m->ck, desc, &m->cfg, &m->desc, &m->assumed, err);
	if (st)
		goto fail;
	if (!m->desc)
		m->desc = desc;
	if (!m->desc)
		m->desc = dit_model_desc_match(m->cfg.model_type, 1);
	if (!m->desc) /* the family's tables; dit_weights_open refuses the layout */
		m->desc = dit_model_desc_for_type(m->cfg.model_type);
	dit_model_desc_finish(m->desc, &m->cfg);
	m->fmt = dit_model_desc_format(m->desc, m->cfg.config);
	if (!m->fmt) {
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: a %s config.json, but %s's experts are laid out in "
		                   "another format",
		                   m->ck->config_path, m->cfg.config->class_name, m->desc->name);
		goto fail;
	}
	if (m->desc->need_tensor && !dit_wt_find(m->ck, m->fmt, "", m->desc->need_tensor, NULL)) {
		st = dit_error_set(err, DIT_EFORMAT, "%s: no tensor '%s': %s", dir,
		                   dit_wt_format_name(m->fmt, m->desc->need_tensor),
		                   m->desc->need_why);
		goto fail;
	}
	dit_layout_init(&m->glob, &m->cfg, m->desc->globals, m->desc->nglobals, 0);
	if (dit_model_param_count(m->desc, &m->cfg) < 0) {
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: the sizes of config.json overflow 64 bits in the tensor "
		                   "shapes",
		                   m->ck->config_path);
		goto fail;
	}
	/* the shapes first: a checkpoint that does not hold what its config says is named
	 * as such, before memory for the config's sizes is asked for (a plan reads nothing
	 * more) */
	for (int i = 0; i < m->desc->nglobals && !st; i++)
		st = check_tensor(m, &m->desc->globals[i], "", err);
	if (st)
		goto fail;
	if (!(ck && ck->headers_only)) {
		m->globals = slab_alloc(m->glob.size);
		if (!m->globals) {
			st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory for the weights",
			                   dir);
			goto fail;
		}
		for (int i = 0; i < m->desc->nglobals; i++) {
			st = dit_wt_load(m, &m->desc->globals[i], "", m->globals + m->glob.off[i],
			                 0, err);
			if (st)
				goto fail;
		}
	}
	m->npools = m->desc->npools;
	for (int p = 0; p < m->npools; p++) {
		dit_pool *pl = &m->pool[p];
		pl->d = &m->desc->pools[p];
		pl->model = m;
		pl->index = p;
		pl->nblocks = m->cfg.layers[p];
		pool_layout(pl, DIT_WDT_F32, 0);
		if ((st = pool_check(pl, err)) != DIT_OK ||
		    (st = dit_pool_set_chunks(pl, 1, err)) != DIT_OK)
			goto fail;
	}
	dit_wt_count_dtypes(m);
	*out = m;
	return DIT_OK;
fail:
	dit_model_free(m);
	return st;
}

dit_status dit_model_set_weight_dtype(dit_model *m, int wdt, int compact, dit_error *err)
{
	for (int p = 0; p < m->npools; p++) {
		if (m->pool[p].chunks)
			return dit_error_set(err, DIT_EINVAL, "weights already read");
		pool_layout(&m->pool[p], wdt, compact);
	}
	return DIT_OK;
}

dit_status dit_model_set_weight_bf16(dit_model *m, int bf16, dit_error *err)
{
	return dit_model_set_weight_dtype(m, bf16 ? DIT_WDT_BF16 : DIT_WDT_F32, 0, err);
}

dit_status dit_pool_set_chunks(dit_pool *pl, int64_t chunk_size, dit_error *err)
{
	int64_t n = pl->nblocks;
	if (chunk_size < 1 || chunk_size > n || n % chunk_size)
		return dit_error_set(err, DIT_EUSAGE,
		                     "--offload-chunk-size %lld does not divide the %lld blocks "
		                     "of %s%s%s%s",
		                     (long long)chunk_size, (long long)n,
		                     pl->model->npools > 1 ? "pool " : "",
		                     pl->model->npools > 1 ? pl->d->prefix : "",
		                     pl->model->npools > 1 ? "* in " : "", pl->model->dir);
	if (pl->chunks)
		return dit_error_set(err, DIT_EINVAL, "chunks already read");
	pl->chunk_size = chunk_size;
	pl->nchunks = n / chunk_size;
	return DIT_OK;
}

/* Tensor i of block b with its LoRA deltas: read in fp32, merged, then rounded once to
 * the slot's dtype (bf16; a compact one: fp16, f8 with the tensor's own scale, q8_0
 * requantised per block). */
static dit_status read_merged(const dit_pool *pl, int64_t b, int i, const char *prefix, float *dst,
                              dit_error *err)
{
	const dit_model *m = pl->model;
	int64_t n = pl->lay.numel[i];
	int wdt = pl->lay.wdt[i];
	float *w = wdt != DIT_WDT_F32 ? malloc((size_t)n * sizeof *w) : dst;
	if (!w)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory merging a LoRA", m->dir);
	char name[160];
	snprintf(name, sizeof name, "%s%lld.%s", pl->d->prefix, (long long)b,
	         pl->d->tensors[i].name);
	dit_status st = dit_wt_load(m, &pl->d->tensors[i], prefix, w, DIT_WDT_F32, err);
	if (!st)
		st = dit_lora_merge(m->lora, pl->index, b, i, w, name, err);
	if (!st && wdt != DIT_WDT_F32) {
		const dit_st_tensor *t =
		    dit_wt_find(m->ck, m->fmt, prefix, pl->d->tensors[i].name, NULL);
		dit_wquant(wdt, w, n, t ? t->scale : 1.0f, dst);
	}
	if (w != dst)
		free(w);
	return st;
}

dit_status dit_pool_read_block(const dit_pool *pl, int64_t b, float *dst, dit_error *err)
{
	const dit_model *m = pl->model;
	if (!m->ck)
		return dit_error_set(err, DIT_EINVAL, "%s: checkpoint already closed", m->dir);
	const dit_pool_desc *pd = pl->d;
	char prefix[96];
	dit_pool_block_prefix(pl, b, prefix, sizeof prefix);
	/* the bytes between and after narrow tensors, and the slots of tensors the config
	 * leaves out, are zero: a block's bytes are a function of the checkpoint (its
	 * checksum, a read where it lies) */
	memset(dst, 0, (size_t)pl->lay.size * sizeof *dst);
	for (int i = 0; i < pd->ntensors; i++) {
		dit_status st = dit_lora_touches(m->lora, pl->index, b, i)
		                    ? read_merged(pl, b, i, prefix, dst + pl->lay.off[i], err)
		                    : dit_wt_load(m, &pd->tensors[i], prefix, dst + pl->lay.off[i],
		                                  pl->lay.wdt[i], err);
		if (st)
			return st;
	}
	/* padding up to the stride stays zero */
	memset(dst + pl->lay.size, 0, (size_t)(pl->block_stride - pl->lay.size) * sizeof *dst);
	return DIT_OK;
}

/* Reads every block of pool pl, the model's blocks before it being *done of total. */
static dit_status pool_read_all(dit_pool *pl, int64_t *done, int64_t total, dit_error *err)
{
	pl->chunks = calloc((size_t)pl->nchunks, sizeof *pl->chunks);
	pl->blocks = calloc((size_t)pl->nblocks, sizeof *pl->blocks);
	if (!pl->chunks || !pl->blocks)
		return dit_error_set(err, DIT_ENOMEM, "%s: out of memory for the weights",
		                     pl->model->dir);
	for (int64_t k = 0; k < pl->nchunks; k++) {
		int lazy = pl->model->lazy;
		pl->chunks[k] = (lazy ? lazy_alloc : slab_alloc)(pl->chunk_size * pl->block_stride);
		if (!pl->chunks[k])
			return dit_error_set(err, DIT_ENOMEM,
			                     "%s: out of memory for the weights of chunk %lld (%zu "
			                     "bytes)",
			                     pl->model->dir, (long long)k,
			                     dit_pool_chunk_bytes(pl));
		for (int64_t j = 0; j < pl->chunk_size; j++) {
			int64_t b = k * pl->chunk_size + j;
			pl->blocks[b] = pl->chunks[k] + j * pl->block_stride;
			if (lazy)
				continue;
			dit_status st = dit_pool_read_block(pl, b, pl->blocks[b], err);
			if (st)
				return st;
			++*done;
			dit_stage_report(pl->model->progress, "loading the weights", (double)*done,
			                 (double)total, "blocks");
		}
	}
	return DIT_OK;
}

dit_status dit_model_read_all(dit_model *m, dit_error *err)
{
	if (m->lazy && !m->globals && !(m->globals = lazy_alloc(m->glob.size)))
		return dit_error_set(err, DIT_ENOMEM, "%s: out of address space for the weights",
		                     m->dir);
	int64_t done = 0, total = 0;
	for (int p = 0; p < m->npools; p++)
		total += m->pool[p].nblocks;
	if (!m->lazy)
		dit_stage_report(m->progress, "loading the weights", 0, (double)total, "blocks");
	for (int p = 0; p < m->npools; p++) {
		dit_status st = pool_read_all(&m->pool[p], &done, total, err);
		if (st)
			return st;
	}
	return DIT_OK;
}

void dit_model_close_checkpoint(dit_model *m)
{
	dit_checkpoint_close(m->ck);
	m->ck = NULL;
}

dit_status dit_model_load(dit_model **out, const char *dir, dit_error *err)
{
	dit_model *m;
	dit_status st = dit_model_open(&m, dir, NULL, NULL, err);
	if (st)
		return st;
	st = dit_model_read_all(m, err);
	if (st) {
		dit_model_free(m);
		return st;
	}
	dit_model_close_checkpoint(m);
	*out = m;
	return DIT_OK;
}

dit_status dit_model_check_sizes(const dit_model *m, dit_error *err)
{
	/* StarPU vectors count elements in 32 bits. */
	if (m->glob.size > (int64_t)UINT32_MAX)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: the non-block weights (%lld elements) exceed 2^32",
		                     m->dir, (long long)m->glob.size);
	return DIT_OK;
}

void dit_model_register_globals(dit_model *m)
{
	starpu_vector_data_register(&m->h_globals, STARPU_MAIN_RAM, (uintptr_t)m->globals,
	                            (uint32_t)m->glob.size, sizeof(float));
	starpu_data_set_name(m->h_globals, "globals");
}

dit_status dit_model_register(dit_model *m, dit_error *err)
{
	dit_status st = dit_model_check_sizes(m, err);
	if (st)
		return st;
	for (int p = 0; p < m->npools; p++) {
		dit_pool *pl = &m->pool[p];
		if (!pl->chunks)
			return dit_error_set(err, DIT_EINVAL, "%s: weights not in memory", m->dir);
		pl->h_chunks = calloc((size_t)pl->nchunks, sizeof *pl->h_chunks);
		if (!pl->h_chunks)
			return dit_error_set(err, DIT_ENOMEM,
			                     "out of memory registering the weights");
	}
	dit_model_register_globals(m);
	for (int p = 0; p < m->npools; p++) {
		dit_pool *pl = &m->pool[p];
		for (int64_t k = 0; k < pl->nchunks; k++) {
			starpu_vector_data_register(
			    &pl->h_chunks[k], STARPU_MAIN_RAM, (uintptr_t)pl->chunks[k],
			    (uint32_t)pl->chunk_size, (size_t)pl->block_stride * sizeof(float));
			starpu_data_set_coordinates(pl->h_chunks[k], 2, (int)k, p);
		}
	}
	return DIT_OK;
}

starpu_data_handle_t dit_pool_block_handle(const dit_pool *pl, int64_t b, int64_t *base)
{
	*base = (b % pl->chunk_size) * pl->block_stride;
	return pl->h_chunks[b / pl->chunk_size];
}

void dit_model_unregister(dit_model *m)
{
	if (m->h_globals) {
		starpu_data_unregister(m->h_globals);
		m->h_globals = NULL;
	}
	for (int p = 0; p < m->npools; p++) {
		dit_pool *pl = &m->pool[p];
		if (!pl->h_chunks)
			continue;
		for (int64_t k = 0; k < pl->nchunks; k++)
			if (pl->h_chunks[k])
				starpu_data_unregister(pl->h_chunks[k]);
		free(pl->h_chunks);
		pl->h_chunks = NULL;
	}
}

void dit_model_free(dit_model *m)
{
	if (!m)
		return;
	dit_model_unregister(m);
	for (int p = 0; p < m->npools; p++) {
		dit_pool *pl = &m->pool[p];
		if (pl->chunks) {
			for (int64_t k = 0; k < pl->nchunks; k++)
				model_mem_free(m, pl->chunks[k], pl->chunk_size * pl->block_stride);
			free(pl->chunks);
		}
		free(pl->blocks);
	}
	model_mem_free(m, m->globals, m->glob.size);
	dit_lora_free(m->lora);
	dit_checkpoint_close(m->ck);
	free(m->dir);
	free(m);
}

size_t dit_pool_block_bytes(const dit_pool *pl)
{
	return (size_t)pl->lay.size * sizeof(float);
}

size_t dit_pool_chunk_bytes(const dit_pool *pl)
{
	return (size_t)(pl->chunk_size * pl->block_stride) * sizeof(float);
}

size_t dit_pool_bytes(const dit_pool *pl)
{
	return dit_pool_chunk_bytes(pl) * (size_t)pl->nchunks;
}

size_t dit_model_global_bytes(const dit_model *m)
{
	return (size_t)m->glob.size * sizeof(float);
}

dit_status dit_weights_shapes(dit_weights *w, const dit_preset *p, dit_error *err)
{
	memset(w, 0, sizeof *w);
	const dit_model_desc *d = dit_model_desc_find(p->model);
	if (!d)
		return dit_error_set(err, DIT_ERUNTIME, "preset %s names family '%s', not built in",
		                     p->name, p->model);
	w->desc = d;
	for (int e = 0; e < d->nexperts; e++) {
		dit_model *m = calloc(1, sizeof *m);
		if (!m || !(m->dir = malloc(strlen(p->name) + 16))) {
			free(m);
			dit_weights_free(w);
			return dit_error_set(err, DIT_ENOMEM, "out of memory");
		}
		sprintf(m->dir, "(preset %s)", p->name);
		w->expert[e] = m;
		w->nexperts = e + 1;
		/* the preset as its checkpoint's config.json reads back: what the run of
		 * the preset sees (a key the family's config does not hold takes the
		 * family's default, as HunyuanVideo's text length) */
		dit_hparams hp = dit_preset_hparams(p);
		char text[2048];
		size_t len = 0;
		dit_status cst = dit_config_text(&hp, m->dir, text, sizeof text, &len, err);
		if (!cst)
			cst = dit_config_parse_text(&m->cfg, m->dir, text, len, err);
		if (cst) {
			dit_weights_free(w);
			return cst;
		}
		m->desc = d;
		m->fmt = d->formats[0];
		dit_layout_init(&m->glob, &m->cfg, d->globals, d->nglobals, 0);
		m->npools = d->npools;
		for (int i = 0; i < m->npools; i++) {
			dit_pool *pl = &m->pool[i];
			pl->d = &d->pools[i];
			pl->model = m;
			pl->index = i;
			pl->nblocks = m->cfg.layers[i];
			pool_layout(pl, DIT_WDT_F32, 0);
			dit_status st = dit_pool_set_chunks(pl, 1, err);
			if (st) {
				dit_weights_free(w);
				return st;
			}
		}
	}
	return DIT_OK;
}

void dit_weights_free(dit_weights *w)
{
	for (int e = 0; e < DIT_MAX_EXPERTS; e++)
		dit_model_free(w->expert[e]);
	memset(w, 0, sizeof *w);
}
