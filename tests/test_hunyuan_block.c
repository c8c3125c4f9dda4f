/* Runs HunyuanVideo's stages and blocks one kind at a time as StarPU tasks and writes
 * what each produced, for tests/test_hunyuan_kinds.sh to compare with the NumPy
 * reference's per-kind outputs:
 *
 *   test_hunyuan_block MODEL_DIR INPUTS OUTPUT
 *
 * INPUTS holds x, t, text_states, text_mask, text_states_2, guidance (forward's
 * inputs). OUTPUT gets img_in [Li, D] (the patch embedding) and txt_refined
 * [text_len, D] (the token refiner's output), then img_d0 [Li, D] and txt_d0
 * [text_len, D] after double block 0, then, after every double block and single block
 * 0, x_s0 [Li + text_len, D]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>

#include "dit_place.h"
#include "dit_graph.h"
#include "hunyuan_state.h"
#include "dit_runtime.h"
#include "dit_safetensors.h"
#include "dit_test_io.h"
#include "dit_weights.h"

/* Adds buffer h [rows, D] of the graph to w as name. */
static dit_status put(dit_st_writer *w, const char *name, starpu_data_handle_t h, int64_t rows,
                      int64_t D, dit_error *err)
{
	float *d = malloc((size_t)(rows * D) * sizeof *d);
	if (!d)
		return dit_error_set(err, DIT_ENOMEM, "out of memory");
	dit_test_fetch(d, h, (size_t)(rows * D));
	int64_t shape[2] = {rows, D};
	dit_status st = dit_st_writer_add_f32(w, name, 2, shape, d, err);
	free(d);
	return st;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: test_hunyuan_block MODEL_DIR INPUTS OUTPUT\n");
		return 2;
	}
	dit_error err;
	dit_model *m;
	dit_st_file *in;
	dit_runtime *rt;
	dit_graph g;
	dit_grid gr;
	const dit_st_tensor *tx, *tt, *tc, *tm, *tp, *tg;
	dit_st_writer *w = NULL;

	if (dit_model_load(&m, argv[1], &err) || dit_st_open(&in, argv[2], &err))
		goto fail;
	const dit_hparams *c = &m->cfg;
	float *x = dit_test_read_all(in, "x", &tx), *t = dit_test_read_all(in, "t", &tt);
	float *ctx = dit_test_read_all(in, "text_states", &tc),
	      *mask = dit_test_read_all(in, "text_mask", &tm);
	float *pooled = dit_test_read_all(in, "text_states_2", &tp),
	      *guid = dit_test_read_all(in, "guidance", &tg);
	if (!x || !t || !ctx || !mask || !pooled || !guid ||
	    strcmp(m->desc->name, "hunyuan-video")) {
		fprintf(stderr,
		        "test_hunyuan_block: bad inputs or not a HunyuanVideo checkpoint\n");
		return 1;
	}
	int64_t valid = 0;
	while (valid < tm->numel && mask[valid] == 1.0f)
		valid++;
	if (dit_grid_from_latent(&gr, c, tx->shape[0], tx->shape[1], tx->shape[2], tx->shape[3],
	                         &err) ||
	    dit_runtime_init(&rt, NULL, &err) || dit_model_register(m, &err))
		goto fail;
	const float *ctxs[1] = {ctx};
	int64_t rows = tc->shape[0];
	dit_weights wt = {.desc = m->desc, .nexperts = 1, .expert = {m}};
	dit_graph_weights gw;
	dit_place_graph_weights(&wt, &gw);
	if (dit_graph_init(&g, &gw, &gr, 1, 1, ctxs, &rows, 1, NULL, NULL, &err) ||
	    dit_graph_set_cond(&g, 0, valid, pooled, tp->numel, &err))
		goto fail;
	dit_hunyuan_state_of(&g)->guidance = guid[0];

	int64_t Li = gr.tokens, Lt = c->text_len, D = c->dim;
	starpu_data_handle_t latent;
	dit_graph_vector(&g, &latent, tx->numel, sizeof(float), "latent");
	starpu_data_acquire(latent, STARPU_W);
	memcpy((void *)starpu_vector_get_local_ptr(latent), x, (size_t)tx->numel * sizeof(float));
	starpu_data_release(latent);

	/* the stages before the blocks (the refiner is in the embedding stage) */
	if (dit_graph_submit_text(&g, &err) || dit_graph_submit_time(&g, t[0], &err) ||
	    dit_graph_submit_patch_embed(&g, 0, latent, &err))
		goto fail;
	w = dit_st_writer_new();
	starpu_data_handle_t txt = dit_graph_buffer(&g, 0, "txt"),
	                     xj = dit_graph_buffer(&g, 0, "xj");
	if (!w || !txt || !xj || put(w, "img_in", g.pass[0].x, Li, D, &err) ||
	    put(w, "txt_refined", txt, Lt, D, &err))
		goto fail;
	/* one double block, then the others and one single block */
	if (dit_graph_submit_block(&g, 0, 0, 0, NULL, NULL, &err) ||
	    put(w, "img_d0", g.pass[0].x, Li, D, &err) || put(w, "txt_d0", txt, Lt, D, &err))
		goto fail;
	for (int64_t b = 1; b < c->layers[0]; b++)
		if (dit_graph_submit_block(&g, 0, 0, b, NULL, NULL, &err))
			goto fail;
	if (dit_graph_submit_block(&g, 1, 0, 0, NULL, NULL, &err) ||
	    put(w, "x_s0", xj, Li + Lt, D, &err) || dit_st_writer_commit(w, argv[3], &err))
		goto fail;
	dit_st_writer_free(w);
	starpu_task_wait_for_all();
	starpu_data_unregister(latent);
	dit_graph_free(&g);
	dit_model_free(m);
	dit_runtime_shutdown(rt);
	dit_st_close(in);
	free(x);
	free(t);
	free(ctx);
	free(mask);
	free(pooled);
	free(guid);
	return 0;
fail:
	fprintf(stderr, "test_hunyuan_block: %s\n", err.msg);
	return 1;
}
