#define _POSIX_C_SOURCE 200809L
#include "dit_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_checkpoint.h"

static void shape_str(char *buf, size_t n, int ndim, const int64_t *shape)
{
	size_t used = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < ndim && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "",
		                         (long long)shape[i]);
	if (used < n)
		snprintf(buf + used, n - used, "]");
}

/* Finds name, checks its shape against the rule and converts it into dst. */
static dit_status load_tensor(const dit_checkpoint *ck, const dit_wan_config *cfg,
                              const dit_wan_tensor_rule *rule, const char *name, float *dst,
                              dit_error *err)
{
	const dit_st_file *file;
	const dit_st_tensor *t = dit_checkpoint_find(ck, name, &file);
	if (!t)
		return dit_error_set(
		    err, DIT_ENOTFOUND,
		    "%s: tensor '%s' missing (config.json implies it: %lld blocks, "
		    "dim %lld)",
		    ck->dir, name, (long long)cfg->num_layers, (long long)cfg->dim);
	int64_t want[DIT_WAN_MAX_DIMS];
	int nd = dit_wan_rule_shape(cfg, rule, want);
	int same = t->ndim == nd;
	for (int i = 0; same && i < nd; i++)
		same = t->shape[i] == want[i];
	if (!same) {
		char have_s[128], want_s[128];
		shape_str(have_s, sizeof have_s, t->ndim, t->shape);
		shape_str(want_s, sizeof want_s, nd, want);
		return dit_error_set(err, DIT_ESHAPE,
		                     "%s: tensor '%s' has shape %s, config.json implies %s",
		                     file->path, name, have_s, want_s);
	}
	return dit_st_read_f32(file, t, dst, err);
}

static float *slab_alloc(int64_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, (size_t)n * sizeof(float)) != 0)
		return NULL;
	return p;
}

dit_status dit_model_load(dit_model **out, const char *dir, dit_error *err)
{
	dit_checkpoint *ck = NULL;
	dit_status st = dit_checkpoint_open(&ck, dir, err);
	if (st)
		return st;
	dit_model *m = calloc(1, sizeof *m);
	if (!m) {
		dit_checkpoint_close(ck);
		return dit_error_set(err, DIT_ENOMEM, "out of memory loading %s", dir);
	}
	m->dir = strdup(dir);
	st = dit_wan_config_load(&m->cfg, ck->config_path, err);
	if (st)
		goto fail;
	dit_wan_layout_init(&m->lay, &m->cfg);

	m->globals = slab_alloc(m->lay.global_size);
	m->blocks = calloc((size_t)m->cfg.num_layers, sizeof *m->blocks);
	if (!m->globals || !m->blocks) {
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory for the weights", dir);
		goto fail;
	}
	for (int i = 0; i < DIT_WG_COUNT; i++) {
		st =
		    load_tensor(ck, &m->cfg, &dit_wan_global_rules[i], dit_wan_global_rules[i].name,
		                m->globals + m->lay.global_off[i], err);
		if (st)
			goto fail;
	}
	for (int64_t b = 0; b < m->cfg.num_layers; b++) {
		m->blocks[b] = slab_alloc(m->lay.block_size);
		if (!m->blocks[b]) {
			st = dit_error_set(err, DIT_ENOMEM,
			                   "%s: out of memory for the weights of block %lld", dir,
			                   (long long)b);
			goto fail;
		}
		for (int i = 0; i < DIT_WB_COUNT; i++) {
			char name[160];
			snprintf(name, sizeof name, "blocks.%lld.%s", (long long)b,
			         dit_wan_block_rules[i].name);
			st = load_tensor(ck, &m->cfg, &dit_wan_block_rules[i], name,
			                 m->blocks[b] + m->lay.block_off[i], err);
			if (st)
				goto fail;
		}
	}
	/* One block more than num_layers means the config and the weights disagree. */
	{
		char name[64];
		snprintf(name, sizeof name, "blocks.%lld.modulation", (long long)m->cfg.num_layers);
		if (dit_checkpoint_find(ck, name, NULL)) {
			st = dit_error_set(err, DIT_ESHAPE,
			                   "%s: tensor '%s' exists but config.json says num_layers "
			                   "%lld",
			                   dir, name, (long long)m->cfg.num_layers);
			goto fail;
		}
	}
	dit_checkpoint_close(ck);
	*out = m;
	return DIT_OK;
fail:
	dit_checkpoint_close(ck);
	dit_model_free(m);
	return st;
}

dit_status dit_model_register(dit_model *m, dit_error *err)
{
	/* StarPU vectors count elements in 32 bits. */
	if (m->lay.block_size > (int64_t)UINT32_MAX || m->lay.global_size > (int64_t)UINT32_MAX)
		return dit_error_set(err, DIT_EUNSUPPORTED,
		                     "%s: a weight slab of %lld elements exceeds 2^32", m->dir,
		                     (long long)(m->lay.block_size > m->lay.global_size
		                                     ? m->lay.block_size
		                                     : m->lay.global_size));
	m->h_blocks = calloc((size_t)m->cfg.num_layers, sizeof *m->h_blocks);
	if (!m->h_blocks)
		return dit_error_set(err, DIT_ENOMEM, "out of memory registering the weights");
	starpu_vector_data_register(&m->h_globals, STARPU_MAIN_RAM, (uintptr_t)m->globals,
	                            (uint32_t)m->lay.global_size, sizeof(float));
	starpu_data_set_name(m->h_globals, "globals");
	for (int64_t b = 0; b < m->cfg.num_layers; b++) {
		starpu_vector_data_register(&m->h_blocks[b], STARPU_MAIN_RAM,
		                            (uintptr_t)m->blocks[b], (uint32_t)m->lay.block_size,
		                            sizeof(float));
		starpu_data_set_name(m->h_blocks[b], "block");
		starpu_data_set_coordinates(m->h_blocks[b], 1, (int)b);
	}
	return DIT_OK;
}

void dit_model_free(dit_model *m)
{
	if (!m)
		return;
	if (m->h_blocks) {
		starpu_data_unregister(m->h_globals);
		for (int64_t b = 0; b < m->cfg.num_layers; b++)
			starpu_data_unregister(m->h_blocks[b]);
		free(m->h_blocks);
	}
	if (m->blocks) {
		for (int64_t b = 0; b < m->cfg.num_layers; b++)
			free(m->blocks[b]);
		free(m->blocks);
	}
	free(m->globals);
	free(m->dir);
	free(m);
}

size_t dit_model_block_bytes(const dit_model *m)
{
	return (size_t)m->lay.block_size * sizeof(float);
}

size_t dit_model_global_bytes(const dit_model *m)
{
	return (size_t)m->lay.global_size * sizeof(float);
}
